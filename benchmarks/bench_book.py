"""The whole book's time from an empty artifact store, as ``make book`` runs it (``python -m overinterp
book``, default ``--jobs 2``, the committed models pack unpacked): the store, its access log and the data
cache start empty in a fresh folder; the seconds of each stage come from the build's ``timings.json``.
Writes ``benchmarks/results/book-<profile>-<device>.json`` and keeps the measurement it replaces under
``previous``. Time it with nothing else running: the budget is 45 minutes on the slower 2-core CPU.

    python benchmarks/bench_book.py                              # quick, CPU
    python benchmarks/bench_book.py --reuse DIR                  # a build made that way: DIR is its --out,
                                                                 # DIR/book.log its output
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_MINUTES = 45


def command(out: Path, profile: str) -> tuple[list[str], dict]:
    """The book's command line and environment for a build into ``out`` from an empty store."""
    env = {**os.environ, "OVERINTERP_PROFILE": profile, "OVERINTERP_ARTIFACTS": str(out / "artifacts"),
           "OVERINTERP_STORE_LOG": str(out / "store-log.jsonl"), "OVERINTERP_DATA": str(out / "data")}
    return [sys.executable, "-m", "overinterp", "book", "--out", str(out)], env


def summary(out: Path, total: float) -> dict:
    """Seconds per stage, execution, rendering and total of the build in ``out``; what it unpacked."""
    record = json.loads((out / "timings.json").read_text())
    seconds, wall = record["seconds"], record.get("wall_seconds", {})
    log = (out / "book.log").read_text() if (out / "book.log").is_file() else ""
    unpacked = re.search(r"\[book\] (unpacked \d+ trained models from \S+)", log)
    render = wall.get("render")             # None: a build that did not record it
    return {"commit": record.get("commit"), "seconds": seconds, "chapters_wall_seconds": wall.get("chapters"),
            "execute_seconds": round(total - (render or 0.0), 1), "render_seconds": render,
            "total_seconds": round(total, 1), "total_minutes": round(total / 60, 1),
            "within_45_minutes": total / 60 <= BUDGET_MINUTES,
            "models": unpacked.group(1) if unpacked else "trained by the build (no pack unpacked)"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--reuse", type=Path, default=None, help="a build's --out folder, with its book.log")
    ap.add_argument("--note", action="append", default=[], help="a note kept with the measurement")
    ap.add_argument("--out", type=Path, default=None, help="the JSON to write")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from overinterp.store import code_version
    from overinterp.zoo.train import device_name
    if args.reuse:
        out = args.reuse
        total = float(re.search(r"\[book\] total (\d+) s", (out / "book.log").read_text()).group(1))
    else:
        out = Path(tempfile.mkdtemp(prefix="bench-book-"))
        cmd, env = command(out, args.profile)
        t0 = time.perf_counter()
        with open(out / "book.log", "w") as log:
            subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.DEVNULL, check=True)
        total = time.perf_counter() - t0
    target = args.out or ROOT / "benchmarks" / "results" / f"book-{args.profile}-cpu.json"
    previous = json.loads(target.read_text()) if target.is_file() else None
    if previous:
        previous.pop("previous", None)
    doc = {"what": "every chapter executed with papermill from an empty artifact store and data cache, then "
                   "rendered by Jupyter Book, as `make book` runs it after setup (benchmarks/bench_book.py)",
           "command": "python -m overinterp book --out DIR (OVERINTERP_ARTIFACTS, OVERINTERP_STORE_LOG and "
                      "OVERINTERP_DATA empty folders in DIR)",
           "device": f"{device_name('cpu')}, {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"),
           "profile": args.profile, "dataset": "fashion-mnist", **summary(out, total), "notes": args.note,
           "previous": previous}
    doc["commit"] = doc["commit"] or code_version()
    target.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("total_minutes", "within_45_minutes", "models")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
