"""Verdicts that survive a rerun: every claim's verdict at two seeds, and whether one flips.

A verdict must not depend on the seed that ran it. For each seed this computes every claim of the
registry (:data:`overinterp.paper.claims.CLAIMS`) with :func:`overinterp.experiments.claims.verdicts`,
from the artifact store (computing and storing what it lacks; no notebook is executed), or reads a
seed's rows from the JSON that ``python -m overinterp verdicts --json`` wrote (``--reuse``). It writes
``benchmarks/results/verdicts-<profile>-<device>.json``: per claim and model, each seed's estimate,
interval and outcome, and whether the two outcomes *flip* (one "holds", the other "does not hold";
"inconclusive at this scale" beside either is not a flip). Exit code 1 on a flip.

    python benchmarks/bench_verdicts.py --profile quick --seeds 0 3                # replicates 0-2 and 3-5
    python benchmarks/bench_verdicts.py --profile standard --seeds 0 5 --artifacts ~/.cache/overinterp/artifacts
    python benchmarks/bench_verdicts.py --profile standard --seeds 0 5 --reuse \
        0=editions/fashion-mnist-standard/verdicts-seed0.json 5=editions/fashion-mnist-standard/verdicts-seed5.json \
        --out editions/fashion-mnist-standard/verdicts-seeds.json     # the standard edition's two-seed check

Seeds whose replicates overlap (seed, seed + 1, ... for each) are not independent checks: choose
seeds at least the profile's replicates apart (the script warns otherwise).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from overinterp.config.context import make_run
from overinterp.experiments import claims
from overinterp.pages.report_seeds import overlapping, seed_rows
from overinterp.store import Store
from overinterp.zoo.train import device_name

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 3])
    p.add_argument("--profile", default="quick")
    p.add_argument("--dataset", default="fashion-mnist")
    p.add_argument("--device", default="cpu")
    p.add_argument("--only", nargs="*", default=None, help="only these claims (default all)")
    p.add_argument("--artifacts", default=None, help="artifact store (default $OVERINTERP_ARTIFACTS or ./artifacts)")
    p.add_argument("--reuse", nargs="*", default=[], metavar="SEED=JSON",
                   help="read a seed's rows from the JSON of `python -m overinterp verdicts --json` instead")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    reuse = {int(k): Path(v) for k, v in (r.split("=", 1) for r in a.reuse)}
    seeds = sorted(set(a.seeds) | set(reuse))
    run0 = make_run(a.dataset, a.profile, a.device, seeds[0])
    for s, t in overlapping(seeds, run0.profile.replicates):
        print(f"warning: seeds {s} and {t} share replicates: not independent checks", file=sys.stderr)
    by_seed, seconds, devices = {}, {}, {}
    with Store.using(a.artifacts):
        for seed in seeds:
            if seed in reuse:
                doc = json.loads(reuse[seed].read_text())
                by_seed[seed], devices[seed] = doc["rows"], doc.get("device", "not recorded")
                continue
            devices[seed] = device_name(a.device)
            t0 = time.perf_counter()
            vs = claims.verdicts(make_run(a.dataset, a.profile, a.device, seed), a.only)
            by_seed[seed] = claims.table(vs)
            seconds[str(seed)] = {"total": round(time.perf_counter() - t0, 1), **vs.seconds}
    rows = seed_rows(by_seed)
    flips = [r for r in rows if r["flip"]]
    out = Path(a.out or ROOT / "benchmarks" / "results" / f"verdicts-{a.profile}-{a.device}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "what": "every claim's verdict at two seeds: per claim and model, estimate, 95% interval, margin and outcome",
        "command": "python benchmarks/bench_verdicts.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "schema": 3, "device": "; ".join(dict.fromkeys(devices.values())),   # where each seed's verdicts ran
        "date": time.strftime("%Y-%m-%d"), "profile": a.profile,
        "dataset": a.dataset, "seeds": seeds, "replicates": run0.profile.replicates,
        "overlapping_seeds": overlapping(seeds, run0.profile.replicates), "seconds": seconds,
        "flips": len(flips), "rows": rows}, indent=1, ensure_ascii=False) + "\n")
    for r in rows:
        outs = " | ".join(f"seed {s}: {v['outcome'] if v else '—'}" for s, v in r["seeds"].items())
        print(f"{r['claim']:>17} {r['model']:<28} {outs}{'   FLIP' if r['flip'] else ''}")
    print(f"wrote {out}; {len(flips)} flip(s)")
    return 1 if flips else 0


if __name__ == "__main__":
    sys.exit(main())
