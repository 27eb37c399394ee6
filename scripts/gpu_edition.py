"""The paper-scale edition of the book on one GPU machine, in calls of under 10 minutes.

    python scripts/gpu_edition.py OUT [--profile gpu] [--device cuda] [--budget-s 420]

Every call continues where the previous one stopped -- the work lives in the artifact
store (``artifacts/``) and in ``editions/`` -- and does, in order, what is not done yet:

1. ``prepare``: every unit of ``python -m overinterp prepare --list`` (models, backward
   selections, retrained models), until ``--budget-s`` seconds have passed (at least one
   unit per call; a stored unit costs only its check);
2. ``book``: once every unit is stored, execute all chapters at the profile and save
   them as the edition ``editions/<dataset>-<profile>/`` (notebooks + manifest);
3. ``bench``: ``benchmarks/bench_train.py`` and ``benchmarks/bench_backselect.py`` on the
   device, JSON into the artifact store (``<store>/edition-<name>/``; commit them to
   ``benchmarks/results/`` once back).

Then it writes into OUT what a reader needs back: the edition as a ``.tar.gz`` cut into
parts of at most 16 MiB, the benchmark JSON, and ``status.json`` (stages done, units
left, seconds). Exit code 0 when everything is done, 3 when the budget ran out first
(call again). On the device tool's machine (torch only): carry the Fashion-MNIST files
and the wheels the chapters need (``scripts/carry_for_gpu.sh`` prepares both) and start
the command with ``bash scripts/gpu_edition.sh``, which installs them and calls this.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PART = 16 * 2**20 - 4096  # bytes per file brought back


def split_file(path: Path, out: Path) -> list[str]:
    """Copy ``path`` into ``out`` as ``name.partNN`` pieces of at most PART bytes (one piece: ``name``)."""
    data, names = path.read_bytes(), []
    pieces = [data[i:i + PART] for i in range(0, len(data), PART)] or [b""]
    for i, piece in enumerate(pieces):
        name = path.name if len(pieces) == 1 else f"{path.name}.part{i:02d}"
        (out / name).write_bytes(piece)
        names.append(name)
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder for the files to bring back")
    p.add_argument("--profile", default="gpu")
    p.add_argument("--dataset", default="fashion-mnist")
    p.add_argument("--device", default="cuda")
    p.add_argument("--no-bench", action="store_true", help="skip the benchmarks (e.g. to try the script on a CPU)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="start no new unit or stage after this many seconds (default 420: a call stays under 10 min)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    left = lambda: a.budget_s - (time.perf_counter() - t0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    from overinterp.config.context import Run
    from overinterp.pages.build import build, editions
    from overinterp.experiments.prepare import plan
    from overinterp.config.profiles import get_profile
    from overinterp.zoo.train import resolve_device
    run = Run(a.dataset, get_profile(a.profile), resolve_device(a.device), 0)
    status = {"profile": a.profile, "dataset": a.dataset, "device": str(run.device), "units": {}, "stages": []}
    units = plan(run)
    done = 0
    for i, u in enumerate(units):
        if left() <= 0 and status["units"]:  # at least one unit per call: every call makes progress
            break
        ts = time.perf_counter()
        u.run()
        status["units"][f"{i} {u.kind}: {u.name}"] = round(time.perf_counter() - ts, 1)
        done = i + 1
    status["units_left"] = len(units) - done
    name = f"{a.dataset}-{a.profile}"
    edition = [e for e in editions() if e["name"] == name]
    if not status["units_left"] and not edition and left() > 0:
        ts = time.perf_counter()
        build({"dataset": a.dataset, "profile": a.profile, "device": a.device, "seed": 0}, edition=True)
        status["stages"].append({"book": round(time.perf_counter() - ts, 1)})
        edition = [e for e in editions() if e["name"] == name]
    from overinterp.store import Store
    results = Store().root / f"edition-{name}"
    results.mkdir(parents=True, exist_ok=True)
    dev = run.device.type
    for script, result in (("bench_train.py", f"train-{dev}.json"), ("bench_backselect.py", f"backselect-{dev}.json")):
        if edition and not a.no_bench and not (results / result).exists() and left() > 0:
            ts = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--device", a.device,
                            "--out", str(results / result)], check=True, cwd=ROOT)
            status["stages"].append({script: round(time.perf_counter() - ts, 1)})
    files = []
    if edition:
        tar = Path("/tmp") / f"edition-{name}.tar.gz"
        with tarfile.open(tar, "w:gz") as t:
            t.add(edition[0]["path"], arcname=f"editions/{name}")
        files += split_file(tar, out)
    for result in (f"train-{dev}.json", f"backselect-{dev}.json"):
        if (results / result).exists():
            files += split_file(results / result, out)
    complete = bool(edition) and (a.no_bench or all((results / r).exists()
                                                    for r in (f"train-{dev}.json", f"backselect-{dev}.json")))
    status.update(files=files, complete=complete, seconds=round(time.perf_counter() - t0, 1))
    (out / "status.json").write_text(json.dumps(status, indent=2))
    print(json.dumps({k: v for k, v in status.items() if k != "units"}, indent=2))
    return 0 if complete else 3


if __name__ == "__main__":
    sys.exit(main())
