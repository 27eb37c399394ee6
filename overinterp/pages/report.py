"""The verdicts of :func:`overinterp.experiments.claims.verdicts` for a terminal and as JSON: what
``python -m overinterp verdicts`` prints and writes, and what ``benchmarks/bench_verdicts.py`` reads.

    print(text(rows))          # one line per claim and model: estimate [95% interval], margin, outcome
"""
from __future__ import annotations

import json
from pathlib import Path

from overinterp.paper.claims import CLAIMS, PARTS
from overinterp.paper.formatting import MISSING, number
from overinterp.store import code_version
from overinterp.paper.verdicts import MARKS

__all__ = ["text", "document", "write", "load", "table", "edition_view"]


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


def load(path) -> dict:
    """A :func:`document` from ``path`` (a clear error naming the file when it is missing or not one)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no verdicts at {path}: run python -m overinterp verdicts --json {path}")
    doc = json.loads(path.read_text())
    if "rows" not in doc or "profile" not in doc:
        raise ValueError(f"{path} is not the JSON of python -m overinterp verdicts")
    return doc


def table(doc: dict):
    """One row per claim and model of a :func:`document`, in five columns that fit a page: the claim
    (section, the paper's number as quoted, the claim's verdict; on its first row only), the model, ours
    (estimate [95% interval], replicates × images), the margin, and the row's outcome (with how many
    replicates would decide an inconclusive one)."""
    import pandas as pd
    out, seen = [], set()
    for r in doc["rows"]:
        c = CLAIMS[r["claim"]]
        d = c.digits
        ends = "" if r["low"] is None else f" [{number(r['low'], d)}, {number(r['high'], d)}]"
        n = " × ".join(str(int(r[k])) for k in ("replicates", "images") if r.get(k) is not None)
        first = r["claim"] not in seen
        seen.add(r["claim"])
        out.append({"claim": f"{c.short} ({c.section}; paper: {c.paper}): {r['verdict']}" if first else "",
                    "model": r["model"], "ours [95%] (replicates × images)": number(r["estimate"], d) + ends
                    + (f" ({n})" if n else ""), "margin": r["margin"] or MISSING,
                    "outcome": (r["outcome"] or MISSING) + (f" ({r['to decide']} replicates to decide)"
                                                             if r.get("to decide") else "")})
    return pd.DataFrame(out)


def edition_view(path, caption: str):
    """The committed edition's verdicts at ``path`` as a numbered table (``caption``, then what produced
    them: profile, seed, device, commit), or a note saying that none is committed there yet."""
    from IPython.display import Markdown
    from overinterp.pages.chapter import captioned
    if not Path(path).is_file():
        return Markdown(f":::{{note}}\nNo edition's verdicts are committed at `{Path(path).name}` yet; "
                        f"`python -m overinterp verdicts --profile standard --json {Path(path).name}` computes them "
                        "(hours on a CPU: see the README's profile table).\n:::")
    doc = load(path)
    return captioned(table(doc), f"{caption} Profile {doc['profile']}, dataset {doc['dataset']}, seed {doc['seed']}, "
                                 f"{doc['device']}, commit {str(doc['commit'])[:12]}.")
