"""Verdicts that survive a rerun: execute the Part I chapters at two seeds and compare their verdicts.

Issue 20: a verdict must not depend on the seed that ran it. This executes the chapters of Part I
(``_toc.yml``) with papermill at each seed (default 0 and 1, the quick profile), reads the per-model
records every verdict glues (``res_<claim>_json``: estimate, 95% interval, margin, outcome; see
:func:`overinterp.pages.chapter.record`), and writes ``benchmarks/results/verdicts-<profile>-<device>.json``:
per claim and architecture, each seed's estimate, interval and outcome, and whether the two outcomes
*flip* (one "holds", the other "does not hold"; "inconclusive at this scale" beside either is not a
flip). Exit code 1 on a flip.

    python benchmarks/bench_verdicts.py                       # seeds 0 and 1, quick, CPU
    python benchmarks/bench_verdicts.py --reuse 0=_build/stage # seed 0 from an executed book's stage

Every seed changes the model replicates (seed, seed + 1, ...), the training order and the
bootstrap's generator; the test selection and the random subsets are fixed by the profile.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import time
from pathlib import Path

from overinterp.pages import build
from overinterp.zoo.train import device_name

ROOT = Path(__file__).resolve().parents[1]
FLIP = {"holds", "does not hold"}


def part_one(root: Path = ROOT) -> list[str]:
    """The stems of the Part I chapters of ``_toc.yml``, in reading order."""
    import yaml
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    part = next(p for p in toc["parts"] if p["caption"].startswith("Part I:"))
    return [Path(c["file"]).name for c in part["chapters"]]


def records(stage: Path) -> list[dict]:
    """Every ``res_<claim>_json`` record glued in the executed notebooks under ``stage``."""
    out = []
    for nb in sorted((stage / "book").glob("*.ipynb")):   # glue records: papermill's mime prefix, or none
        for cell in json.loads(nb.read_text())["cells"]:
            for o in cell.get("outputs", []):
                name = o.get("metadata", {}).get("scrapbook", {}).get("name", "")
                if name.startswith("res_") and name.endswith("_json"):
                    data = {k.replace("application/papermill.record/", ""): v for k, v in o["data"].items()}
                    text = "".join(data["text/plain"]) if isinstance(data["text/plain"], list) else data["text/plain"]
                    out += [{**r, "chapter": nb.stem} for r in json.loads(ast.literal_eval(text))]
    return out


def compare(by_seed: dict[int, list[dict]]) -> list[dict]:
    """One row per (claim, model): each seed's record and whether the outcomes flip."""
    keys = list(dict.fromkeys((r["claim"], r["model"]) for recs in by_seed.values() for r in recs))
    rows = []
    for claim, model in keys:
        per = {str(s): next((r for r in recs if (r["claim"], r["model"]) == (claim, model)), None)
               for s, recs in by_seed.items()}
        outcomes = {r["outcome"] for r in per.values() if r}
        rows.append({"claim": claim, "model": model, "seeds": per, "flip": FLIP <= outcomes})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--profile", default="quick")
    p.add_argument("--dataset", default="fashion-mnist")
    p.add_argument("--device", default="cpu")
    p.add_argument("--stage", default="_build/verdicts", help="folder for the executed chapters, one per seed")
    p.add_argument("--reuse", nargs="*", default=[], metavar="SEED=STAGE",
                   help="read a seed's chapters from an executed stage (e.g. 0=_build/stage) instead of executing")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    reuse = {int(k): Path(v) for k, v in (r.split("=", 1) for r in a.reuse)}
    chapters, by_seed, seconds = part_one(), {}, {}
    for seed in a.seeds:
        stage = reuse.get(seed, Path(a.stage) / f"seed{seed}")
        if seed not in reuse:
            t0 = time.perf_counter()
            build.execute({"dataset": a.dataset, "profile": a.profile, "device": a.device, "seed": seed}, stage,
                          only=chapters)
            seconds[str(seed)] = round(time.perf_counter() - t0, 1)
        by_seed[seed] = records(stage)
        if not by_seed[seed]:
            raise SystemExit(f"no verdict records in {stage}/book: were chapters {', '.join(chapters)} executed?")
    rows = compare(by_seed)
    flips = [r for r in rows if r["flip"]]
    out = Path(a.out or ROOT / "benchmarks" / "results" / f"verdicts-{a.profile}-{a.device}.json")
    out.write_text(json.dumps({
        "what": "Part I verdicts at two seeds: per claim and model, estimate, 95% interval, margin and outcome",
        "command": "python benchmarks/bench_verdicts.py " + " ".join(os.sys.argv[1:]),
        "schema": 2, "device": device_name(a.device), "date": time.strftime("%Y-%m-%d"), "profile": a.profile,
        "dataset": a.dataset, "seeds": a.seeds, "chapters": chapters, "seconds": seconds,
        "flips": len(flips), "rows": rows}, indent=1) + "\n")
    for r in rows:
        outs = " | ".join(f"seed {s}: {v['outcome'] if v else '—'}" for s, v in r["seeds"].items())
        print(f"{r['claim']:>9} {r['model']:<10} {outs}{'   FLIP' if r['flip'] else ''}")
    print(f"wrote {out}; {len(flips)} flip(s)")
    raise SystemExit(1 if flips else 0)


if __name__ == "__main__":
    main()
