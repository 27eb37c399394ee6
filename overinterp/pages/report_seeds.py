"""The same claims at two seeds: the rows ``benchmarks/bench_verdicts.py`` writes, and the report page's values
and tables of an edition's two-seed check."""
import pandas as pd

from overinterp.paper.claims import CLAIMS
from overinterp.paper.formatting import MISSING, span
from overinterp.paper.verdicts import FAILS, HOLDS
from overinterp.store import read_json

#: two outcomes that contradict each other; "inconclusive at this scale" beside either is not a flip
FLIP = frozenset({HOLDS, FAILS})
#: an edition's two-seed check (``benchmarks/bench_verdicts.py --out``), in the edition's folder
SEEDS = "verdicts-seeds.json"


def seed_rows(by_seed: dict[int, list[dict]]) -> list[dict]:
    """A row per (claim, model) of ``{seed: verdicts rows}``: ``seeds`` ({seed: row or None}) and ``flip``."""
    keys = list(dict.fromkeys((r["claim"], r["model"]) for recs in by_seed.values() for r in recs))
    rows = []
    for claim, model in keys:
        per = {str(s): next((r for r in recs if (r["claim"], r["model"]) == (claim, model)), None)
               for s, recs in by_seed.items()}
        outcomes = {r["outcome"] for r in per.values() if r}
        rows.append({"claim": claim, "model": model, "seeds": per, "flip": FLIP <= outcomes})
    return rows


def overlapping(seeds: list[int], replicates: int) -> list[tuple[int, int]]:
    """Pairs of seeds whose replicates (seed, ..., seed + replicates - 1) overlap: not independent checks."""
    return [(a, b) for i, a in enumerate(seeds) for b in seeds[i + 1:] if abs(a - b) < replicates]


def _replicates(doc: dict) -> int | None:
    """A two-seed document's replicates per seed, else its profile's (the quick check has none); None if unknown."""
    from overinterp.config.profiles import PROFILES
    return doc.get("replicates") or (PROFILES[doc["profile"]].replicates if doc.get("profile") in PROFILES else None)


def _compared(doc: dict) -> tuple[str, str, list[dict], list[dict]]:
    """(first seed, second seed, the rows both computed, those of them whose outcome differs)."""
    s0, s1 = (str(s) for s in doc["seeds"][:2])
    rows = [r for r in doc["rows"] if r["seeds"].get(s0) and r["seeds"].get(s1)]
    return s0, s1, rows, [r for r in rows if r["seeds"][s0]["outcome"] != r["seeds"][s1]["outcome"]]


def _short(claim: str) -> str:
    return CLAIMS[claim].short if claim in CLAIMS else claim


def seed_values(doc: dict | None, prefix: str) -> dict:
    """Glue values ``<prefix>_*`` of a two-seed document's first two seeds: seeds, replicates ('0–4 and 5–9'),
    outcomes compared, changed and flipped; "—" without a document."""
    keys = ("seeds", "replicates", "rows", "changed", "changed_which", "flips", "flips_which")
    if not doc or not doc.get("rows"):
        return {f"{prefix}_{k}": MISSING for k in keys}
    s0, s1, rows, changed = _compared(doc)
    flips = [r for r in changed if {r["seeds"][s0]["outcome"], r["seeds"][s1]["outcome"]} == FLIP]

    def which(rs):
        return "; ".join(f"{_short(r['claim'])}, {r['model']}: “{r['seeds'][s0]['outcome']}” then "
                         f"“{r['seeds'][s1]['outcome']}”" for r in rs) or "none"
    n = _replicates(doc)
    return {f"{prefix}_seeds": f"{s0} and {s1}",
            f"{prefix}_replicates": f"{span([int(s0), int(s0) + n - 1], 0)} and {span([int(s1), int(s1) + n - 1], 0)}"
            if n else MISSING,
            f"{prefix}_rows": len(rows), f"{prefix}_changed": len(changed), f"{prefix}_changed_which": which(changed),
            f"{prefix}_flips": len(flips), f"{prefix}_flips_which": which(flips)}


seed_doc = read_json  # the two-seed check at a path, or None


def seed_table(files: dict) -> pd.DataFrame:
    """A column of short facts per two-seed check of ``files`` ({label: path}); changes are in :func:`seed_changes`."""
    out = {}
    for label, path in files.items():
        doc = seed_doc(path)
        v = seed_values(doc, "s")
        n = _replicates(doc) if doc else None
        overlap = bool(n and overlapping(doc.get("seeds", [])[:2], n))
        out[label] = {"seeds": v["s_seeds"],
                      "replicates": v["s_replicates"] + (" (overlapping: not independent)" if overlap else ""),
                      "outcomes compared": v["s_rows"], "changed": v["s_changed"], "flipped": v["s_flips"],
                      "device": (doc or {}).get("device", MISSING), "date": (doc or {}).get("date", MISSING)}
    return pd.DataFrame(out, columns=list(files), dtype=object)


def _unbroken(outcome: str) -> str:
    """A short outcome with non-breaking spaces, so it stays on one line."""
    return outcome.replace(" ", "\u00a0") if len(outcome) <= 16 else outcome


def seed_changes(files: dict) -> pd.DataFrame:
    """A row per outcome that changed between the two seeds of each check of ``files`` ("(flip)" where they
    contradict); a placeholder row per check without changes or without a file."""
    out = []
    for label, path in files.items():
        doc = seed_doc(path)
        if not doc or not doc.get("rows"):
            out.append([label] + [MISSING] * 4)
            continue
        s0, s1, _, changed = _compared(doc)
        for r in changed:
            a, b = r["seeds"][s0]["outcome"], r["seeds"][s1]["outcome"]
            out.append([label, _short(r["claim"]), r["model"], _unbroken(a),
                        _unbroken(b) + (" (flip)" if {a, b} == FLIP else "")])
        if not changed:
            out.append([label, "no outcome changed"] + [MISSING] * 3)
    frame = pd.DataFrame(out, columns=["edition", "claim", "model", "1st seed", "2nd seed"])
    # no row labels: their column would squeeze the claims to one letter wide
    frame.index = [""] * len(frame)
    return frame
