"""The verdicts of :func:`overinterp.experiments.claims.verdicts` for a terminal and as JSON: what
``python -m overinterp verdicts`` prints and writes, and what ``benchmarks/bench_verdicts.py`` reads.

    print(text(rows))          # one line per claim and model: estimate [95% interval], margin, outcome
"""
from __future__ import annotations

import json
from pathlib import Path

from overinterp.paper.claims import CLAIMS, PARTS
from overinterp.paper.formatting import number
from overinterp.store import code_version
from overinterp.paper.verdicts import MARKS

__all__ = ["text", "document", "write"]


def text(rows: list[dict]) -> str:
    """One line per row of :func:`overinterp.experiments.claims.table`, grouped by part, and a line per
    claim with its own outcome."""
    out, part, claim = [], None, None
    for r in rows:
        c = CLAIMS[r["claim"]]
        if c.part != part:
            part = c.part
            out.append(f"\n{PARTS[part]}")
        if r["claim"] != claim:
            claim = r["claim"]
            out.append(f"  {MARKS.get(r['verdict'], '  ')}{c.id} ({c.section}): {c.short} — {r['verdict']} "
                       f"[paper: {c.paper}; chapter {c.chapter[:2]}]")
        d = c.digits
        ends = "" if r["low"] is None else f" [{number(r['low'], d)}, {number(r['high'], d)}]"
        n = ", ".join(f"{int(r[k])} {k if int(r[k]) != 1 else k[:-1]}" for k in ("replicates", "images")
                      if r.get(k) is not None)
        out.append(f"      {r['model']}: {number(r['estimate'], d)}{ends}"
                   + (f", margin {r['margin']}" if r["margin"] else "") + (f", {r['outcome']}" if r["outcome"] else "")
                   + (f" ({n})" if n else "")
                   + (f"; {r['to decide']} replicates would decide it" if r.get("to decide") else ""))
    return "\n".join(out).lstrip("\n")


def document(run, rows: list[dict], seconds: dict, device: str) -> dict:
    """The JSON of one ``verdicts`` run: what produced it and every row."""
    return {"schema": 1, "dataset": run.dataset, "profile": run.profile.name, "seed": run.seed, "device": device,
            "commit": code_version(), "seconds": seconds, "rows": rows}


def write(path, doc: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
