"""The compute an edition cost, per stage and in all, from what ``prepare`` recorded: the JSON lines of
``prepare --log FILE`` and the JSON that ``prepare`` prints when it ends (its log files), deduplicated
by unit (a unit computed twice, e.g. by a killed run and its resumption, counts the time of each run
that finished it).

    python scripts/compute_report.py --device "AMD EPYC, 2 cores" --out editions/x/compute.json LOG...
"""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

STAGES = {"model": "model zoo", "backselect": "backward selection", "retrained": "retraining"}


def units(paths) -> list[dict]:
    """Every finished unit in ``paths``: {"unit", "kind", "seconds", "source"}."""
    out = []
    for path in map(Path, paths):
        text = path.read_text(errors="replace")
        if path.suffix == ".jsonl":
            out += [{**json.loads(line), "source": path.name} for line in text.splitlines() if line.strip()]
            continue
        for block in re.findall(r"^\{\n.*?^\}", text, flags=re.S | re.M):   # prepare's closing JSON
            doc = json.loads(block)
            out += [{"unit": name.split(": ", 1)[1], "kind": name.split(": ", 1)[0], "seconds": s,
                     "study": doc.get("study", "chapters"), "source": path.name}
                    for name, s in doc.get("seconds", {}).items()]
    return out


def stage(u: dict) -> str:
    if u["kind"] == "backselect" and "SIS sizes" in u["unit"]:
        return "SIS sizes (pruned)"
    if u["kind"] == "model" and "masked training" in u["unit"]:
        return "counterfactual fine-tuning"
    return ("scale study: " if u.get("study") == "scale" else "") + STAGES.get(u["kind"], u["kind"])


def report(rows: list[dict], device: str) -> dict:
    """Units and process-seconds per stage: a unit counted once however many runs list it (a resumed run lists
    the units it found stored, at the seconds of loading them), its seconds summed over those runs."""
    by = defaultdict(lambda: {"units": set(), "process_seconds": 0.0})
    for u in rows:
        s = by[stage(u)]
        s["units"].add((u.get("study", "chapters"), u["kind"], u["unit"]))
        s["process_seconds"] += u["seconds"]
    by = {k: {**v, "units": len(v["units"])} for k, v in by.items()}
    total = sum(s["process_seconds"] for s in by.values())
    return {"what": "seconds of the prepare processes per stage (sum over processes: two 1-thread processes on "
                    "2 cores run side by side, so the wall time is about half the sum)",
            "device": device, "stages": {k: {**v, "process_seconds": round(v["process_seconds"], 1),
                                              "process_hours": round(v["process_seconds"] / 3600, 2)}
                                         for k, v in by.items()},
            "total_process_hours": round(total / 3600, 2), "units": sum(s["units"] for s in by.values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", help="prepare logs (printed JSON) or --log JSON-lines files (.jsonl)")
    ap.add_argument("--device", required=True, help="the machine, in words")
    ap.add_argument("--out", default=None, help="write the report here (JSON); else print it")
    args = ap.parse_args(argv)
    doc = report(units(args.logs), args.device)
    text = json.dumps(doc, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
