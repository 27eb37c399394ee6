"""The verdicts of :func:`overinterp.experiments.claims.verdicts` for a terminal, as JSON, and as the book's
reproduction report: what ``python -m overinterp verdicts`` prints and writes, what
``benchmarks/bench_verdicts.py`` reads, the introduction's bottom line and its table of every verdict, and
the report page (``book/18_report``).

    print(text(rows))          # one line per claim and model: estimate [95% interval], margin, outcome

**Editions of the verdicts.** A verdicts document (:func:`document`) holds one execution's rows: the
committed ``standard`` edition's (``editions/fashion-mnist-standard/verdicts-seed0.json``) or this
execution's, computed from the artifact store the chapters filled (:func:`this_execution`). The pages set
them side by side, ``{label: document or None}`` in order of scale, largest first:

    docs = {"standard edition": load(STANDARD / "verdicts-seed0.json"), "this execution (quick)": here}
    verdict_table(docs)                    # every claim, grouped by part: the paper's number, ours, margin
    forest_figure(docs)                    # every estimate and interval against its margin
    bottom_line(docs["standard edition"], "std")   # glue values: claims per outcome, as words and counts

A claim an edition did not compute is "—" there (:data:`overinterp.paper.formatting.MISSING`). Every
sentence around these values is the notebook's; the values here are numbers, names, lists and single words.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from overinterp.paper.deviations import profile_deviations
from overinterp.paper.claims import CLAIMS, PARTS, of_the_paper, quoted
from overinterp.paper.formatting import MISSING, and_list, count, number, span
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.store import code_version
from overinterp.paper.verdicts import FAILS, HOLDS, INCONCLUSIVE, MARKS, UNTESTABLE

__all__ = ["text", "document", "write", "load", "table", "edition_view", "ROOT", "STANDARD", "RESULTS", "READING",
           "group", "edition_verdicts", "this_execution", "by_claim", "stale", "blank_failures", "causes", "second_seed", "bottom_line", "agreement", "FLIP", "seed_rows", "overlapping",
           "seed_values", "seed_doc", "seed_table", "seed_changes", "SEEDS", "accuracy_values",
           "verdict_frame", "verdict_table", "glance_frame", "glance_table", "headline", "forest_figure", "forest_figures", "forest_part", "FOREST_PARTS", "results_table", "scope_table", "deviations_frame",
           "compute_frame", "compute_values", "engine_values", "control_values", "citation", "citation_values",
           "standard_accuracies", "zoo_accuracies", "scale_values", "data_values", "gpu_values", "paper_values",
           "NOTES", "MARK"]

ROOT = Path(__file__).resolve().parents[2]
#: the committed standard edition: executed chapters, manifest.json, compute.json, verdicts-seed<seed>.json
STANDARD = ROOT / "editions" / "fashion-mnist-standard"
#: the committed benchmark results (the quick book's times, the standard models, the engine benchmark)
RESULTS = ROOT / "benchmarks" / "results"

#: how a claim of the paper reads in a reproduction report, per verdict
READING = {HOLDS: "reproduced", FAILS: "not reproduced", INCONCLUSIVE: "inconclusive", UNTESTABLE: "not testable here"}

#: what decides a verdict beside its numbers: the footnote marks of the table, by claim (the notes are the
#: page's Markdown): the backward-selection engine behind the claim's subsets (every claim the registry gives
#: one), the strength of the control a difference is measured against, class information leaking through the
#: mask's shape, and the blank image of the models the claim feeds masked inputs
NOTES = {"engine": tuple(c for c, claim in CLAIMS.items() if claim.engine),
         "control": ("transfer", "beats", "road", "dilated_beats", "insertion"),
         "leakage": ("beats", "near", "road", "dilated_beats", "dilated_near", "mask_shape"),
         "blank": tuple(c for c, claim in CLAIMS.items() if claim.blank)}
MARK = {"engine": "a", "control": "b", "leakage": "c", "blank": "d"}


#: the one line the verdicts command prints first for the tiny profile, and the mark of each of its rows
TINY_WARNING = ("warning: profile tiny is a smoke test of the pipeline (seconds of training on a handful of "
                "images): its numbers are not findings; use --profile quick or larger for results")
TINY_MARK = "[tiny: smoke test] "


def text(rows: list[dict], profile: str = "") -> str:
    """What ``verdicts`` prints: per part, per claim a line with its outcome, the source's number and its
    chapter (the sidebar's number), then per model a line naming the measure and its unit: the estimate, its
    95% interval, the margin, the outcome and the replicates and images behind it. The tiny profile's rows
    are marked, after a first line saying that its numbers are a smoke test."""
    from overinterp.config.chapters import chapter_label
    tiny = profile == "tiny"
    out, part, claim = [TINY_WARNING] if tiny else [], None, None
    for r in rows:
        c = CLAIMS[r["claim"]]
        if c.part != part:
            part = c.part
            out.append(f"{PARTS[part]}")
        if r["claim"] != claim:
            claim = r["claim"]
            out.append(f"  {MARKS.get(r['verdict'], '  ')}{c.id} ({c.section}): {c.short} — {r['verdict']} "
                       f"[paper: {c.paper}; {chapter_label(c.chapter)}]")
        name, unit = c.measured
        d = c.digits
        ends = ("no 95% interval" if r["low"] is None and r["high"] is None
                else f"95% interval [{number(r['low'], d)}, {number(r['high'], d)}]")
        n = ", ".join(f"{int(r[k])} {k if int(r[k]) != 1 else k[:-1]}" for k in ("replicates", "images")
                      if r.get(k) is not None)
        out.append(f"      {TINY_MARK if tiny else ''}{r['model']}: {name} ({unit}) {number(r['estimate'], d)}, {ends}"
                   + (f", margin {r['margin']}" if r["margin"] else "") + (f", {r['outcome']}" if r["outcome"] else "")
                   + (f" ({n})" if n else "")
                   + (f"; {r['to decide']} replicates would decide it" if r.get("to decide") else ""))
    return "\n".join(out)


def document(run, rows: list[dict], seconds: dict, device: str) -> dict:
    """The JSON of one ``verdicts`` run: what produced it and every row."""
    return {"schema": 1, "dataset": run.dataset, "profile": run.profile.name, "seed": run.seed, "device": device,
            "commit": code_version(), "seconds": seconds, "rows": rows}


def write(path, doc: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def same_run(old: dict, new: dict) -> None:
    """A ValueError naming the first of dataset, profile and seed in which two verdicts documents differ."""
    for key in ("dataset", "profile", "seed"):
        if old.get(key) != new.get(key):
            raise ValueError(f"cannot merge verdicts of {key} {new.get(key)!r} into a file of {key} {old.get(key)!r}")


def merge(old: dict, new: dict) -> dict:
    """``old`` with the rows of ``new``'s claims replaced by ``new``'s (both one profile and seed): a claim
    computed later (a chapter executed after the file) joins the file without recomputing the others. The
    rows keep the registry's order; ``merged`` lists each later command (claims, commit, device, seconds),
    while ``commit`` and ``device`` stay the first command's."""
    same_run(old, new)
    claims = list(dict.fromkeys(r["claim"] for r in new["rows"]))
    order = {c: i for i, c in enumerate(CLAIMS)}
    rows = sorted([r for r in old["rows"] if r["claim"] not in claims] + new["rows"],
                  key=lambda r: order.get(r["claim"], len(order)))   # stable: models keep their order
    earlier = old.get("merged", [])
    return {**old, "rows": rows, "seconds": {**old.get("seconds", {}), **new.get("seconds", {})},
            "merged": ([earlier] if isinstance(earlier, str) else list(earlier))
            + [{"claims": claims, "commit": new.get("commit"), "device": new.get("device"),
                "seconds": new.get("seconds", {})}]}


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
    for r in (r for rows in by_claim(doc).values() for r in rows):
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
                        "(hours on a CPU: see docs/editions.md).\n:::")
    doc = load(path)
    return captioned(table(doc), f"{caption} Profile {doc['profile']}, dataset {doc['dataset']}, seed {doc['seed']}, "
                                 f"{doc['device']}, commit {str(doc['commit'])[:12]}.")


# ----------------------------------------------------------------------------- editions of the verdicts

def group(claim: str) -> str:
    """The group of the verdict table that ``claim`` sits in: its part, the tests of the paper's published
    critiques (chapter 07b, in Part I) apart from the paper's own claims."""
    c = CLAIMS[claim]
    return "Part I: the paper against its critiques" if c.chapter == "07b_critiques" else PARTS[c.part]


def edition_verdicts(folder=STANDARD) -> dict | None:
    """The verdicts document (:func:`load`) of the committed edition in ``folder`` for its manifest's seed
    (``verdicts-seed<seed>.json``), with the manifest under ``"manifest"``; None where there is none."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").is_file() else {}
    path = folder / f"verdicts-seed{manifest.get('parameters', {}).get('seed', 0)}.json"
    return {**load(path), "manifest": manifest} if path.is_file() else None


def this_execution(run) -> dict:
    """This execution's verdicts document: every claim of the registry computed by
    :func:`overinterp.experiments.claims.verdicts` from the artifact store that the chapters executed before
    this page filled (what it lacks is computed and stored), with chapter 3's controlled conditions, and the
    Verdicts under ``"verdicts"``."""
    from overinterp.experiments import claims as EC
    from overinterp.zoo.train import device_name
    vs = EC.verdicts(run, progress=False, controls=True)
    return {**document(run, EC.table(vs), vs.seconds, device_name(run.device)), "verdicts": vs}


def by_claim(doc: dict | None) -> dict[str, list[dict]]:
    """The rows of a verdicts document by claim, in the registry's order ({} for None), without the rows of
    an earlier revision of a claim's measure or margin (:attr:`overinterp.paper.claims.Claim.revision`; a row
    without one is of revision 1): the document did not compute the claim as it now stands."""
    rows = {}
    for r in (doc or {}).get("rows", []):
        if r["claim"] in CLAIMS and r.get("revision", 1) == CLAIMS[r["claim"]].revision:
            rows.setdefault(r["claim"], []).append(r)
    return {c: rows[c] for c in CLAIMS if c in rows}


def stale(doc: dict | None) -> list[str]:
    """The claims ``doc`` computed under an earlier revision of their measure or margin (:func:`by_claim`
    leaves their rows out)."""
    return list(dict.fromkeys(r["claim"] for r in (doc or {}).get("rows", []) if r["claim"] in CLAIMS
                              and r.get("revision", 1) != CLAIMS[r["claim"]].revision))


def _label(claim: str) -> str:
    """'mean SIS size below 5% (4.1)': a claim in a list of the bottom line."""
    c = CLAIMS[claim]
    return f"{c.short} ({c.section.split(',')[0]})"


def blank_failures(doc: dict | None) -> list[str]:
    """The architectures whose fully masked input under the paper's mask is not uninformative in ``doc``: from
    its rows' ``blank passes`` where it has them, else from the rows of the ``blank`` claim (chapter 7)."""
    rows = {c: [r for r in rs if not r.get("condition")] for c, rs in by_claim(doc).items()}   # the paper's mask
    names = {r["model"].split(",")[0].split(" / ")[0] for c in rows for r in rows[c] if r.get("blank passes") is False}
    flagged = names & set(ARCH_NAMES.values())
    if flagged or any("blank passes" in r for c in rows for r in rows[c]):
        return sorted(flagged)
    return [r["model"].split(",")[0] for r in rows.get("blank", []) if "mean pixel" in r["model"]
            and r["outcome"] != HOLDS]


def causes(doc: dict | None) -> dict[str, str]:
    """Claim -> what a chapter measured beside a verdict, in a few words: where a controlled condition of the
    claim (chapter 3: the blank's class set aside, masked-trained models) reads otherwise than the paper's
    protocol, '<condition>: <reading>'; else, where the claim feeds the zoo masked inputs
    (:attr:`overinterp.paper.claims.Claim.blank`) and a model's blank is informative (:func:`blank_failures`),
    "models' blank informative" (the precondition, not a measured cause)."""
    rows, failing, out = by_claim(doc), blank_failures(doc), {}
    for c, rs in rows.items():
        main = rs[0]["verdict"]
        other = {r["condition"]: r["verdict"] for r in rs if r.get("condition") and r["verdict"] != main}
        if other:
            out[c] = "; ".join(f"{k}: {READING[v]}" for k, v in other.items())
        elif CLAIMS[c].blank and failing:
            out[c] = "models' blank informative"
    return out


def second_seed(path) -> dict | None:
    """The verdicts of the same edition at its other seed: the one other ``verdicts-seed*.json`` beside
    ``path`` (None where there is none)."""
    path = Path(path)
    others = sorted(q for q in path.parent.glob("verdicts-seed[0-9]*.json") if q.name != path.name)
    return load(others[0]) if len(others) == 1 else None


def bottom_line(doc: dict | None, prefix: str, other: dict | None = None) -> dict:
    """Glue values of one edition for the introduction's opening paragraph, ``<prefix>_<name>``: of the
    paper's claims (:func:`overinterp.paper.claims.of_the_paper`) the number tested and not computed here,
    and per outcome the list of claims read as ``reproduced``, ``not`` (reproduced), ``inconclusive`` and
    ``untestable`` ("none" for none) with their counts (``_n``), each with the cause a chapter found
    (:func:`causes`); of the tests the book adds, the number and how many hold (``added_holds``) and do not
    (``added_fails``). With ``other`` (the same edition at a second seed) a claim is listed under an outcome
    only where both seeds computed it and agree, and under ``differ`` ('claim (4.1): reproduced at seed 0,
    inconclusive at seed 5') where they do not; ``seeds`` names them ('0 and 5', '0 alone'), ``stale`` the
    paper's claims computed under an earlier revision of their criterion (:func:`stale`). ``blank_fails`` counts the architectures whose blank
    is informative, ``blank_archs`` names them ("none")."""
    rows, more = by_claim(doc), by_claim(other)
    why = causes(doc)
    paper = [c for c in CLAIMS if of_the_paper(c)]
    added = [c for c in CLAIMS if not of_the_paper(c) and c in rows]

    def label(c):
        return _label(c) + (f" ({why[c]})" if c in why else "")

    def outcome(c):
        first = rows[c][0]["verdict"]
        return first if other is None or (c in more and more[c][0]["verdict"] == first) else None
    out = {f"{prefix}_paper": len(paper), f"{prefix}_tested": sum(c in rows for c in paper),
           f"{prefix}_missing": sum(c not in rows for c in paper), f"{prefix}_added": len(added)}
    for result, key in ((HOLDS, "reproduced"), (FAILS, "not"), (INCONCLUSIVE, "inconclusive"),
                        (UNTESTABLE, "untestable")):
        names = [label(c) for c in paper if c in rows and outcome(c) == result]
        out[f"{prefix}_{key}"] = "; ".join(names) or "none"
        out[f"{prefix}_{key}_n"] = len(names)
    seeds = [(doc or {}).get("seed"), (other or {}).get("seed")]
    split = [c for c in paper if c in rows and outcome(c) is None]

    def at_other(c):
        return f"{READING[more[c][0]['verdict']]} at seed {seeds[1]}" if c in more else f"not computed at seed {seeds[1]}"
    out[f"{prefix}_differ"] = "; ".join(f"{label(c)}: {READING[rows[c][0]['verdict']]} at seed {seeds[0]}, "
                                        f"{at_other(c)}" for c in split) or "none"
    out[f"{prefix}_differ_n"] = len(split)
    shown = [str(x) for x in seeds if x is not None]
    out[f"{prefix}_seeds"] = " and ".join(shown) if len(shown) > 1 else f"{shown[0]} alone" if shown else "none"
    out[f"{prefix}_stale"] = "; ".join(_label(c) for c in stale(doc) if of_the_paper(c)) or "none"
    failing = blank_failures(doc)
    out[f"{prefix}_blank_fails"] = len(failing)
    out[f"{prefix}_blank_archs"] = ", ".join(failing) or "none"
    out[f"{prefix}_blank_p"] = span([r["estimate"] for r in by_claim(doc).get("blank", [])
                                     if "mean pixel" in r["model"]], 2)
    for result, key in ((HOLDS, "holds"), (FAILS, "fails"), (INCONCLUSIVE, "inconclusive"),
                        (UNTESTABLE, "untestable")):
        out[f"{prefix}_added_{key}"] = sum(rows[c][0]["verdict"] == result for c in added)
    return out


def agreement(first: dict | None, second: dict | None, prefix: str) -> dict:
    """Glue values setting the verdicts of ``second`` (a smaller scale) beside those of ``first`` on the paper's
    claims, ``<prefix>_<name>``: ``both`` (claims both computed), ``agree`` (of those, with the same verdict),
    ``differ`` ('claim (4.1): not reproduced → inconclusive; ...', first's reading then second's, or "none");
    and of the claims only ``second`` computed, ``only`` (how many) and per outcome the list
    ``only_reproduced``, ``only_not``, ``only_inconclusive``, ``only_untestable`` ("none" for none)."""
    a, b = by_claim(first), by_claim(second)
    paper = [c for c in CLAIMS if of_the_paper(c)]
    both = [c for c in paper if c in a and c in b]
    differ = [c for c in both if a[c][0]["verdict"] != b[c][0]["verdict"]]
    only = [c for c in paper if c in b and c not in a]
    out = {f"{prefix}_both": len(both), f"{prefix}_agree": len(both) - len(differ), f"{prefix}_only": len(only),
           f"{prefix}_differ": "; ".join(f"{_label(c)}: {READING[a[c][0]['verdict']]} → {READING[b[c][0]['verdict']]}"
                                         for c in differ) or "none"}
    for outcome, key in ((HOLDS, "reproduced"), (FAILS, "not"), (INCONCLUSIVE, "inconclusive"),
                         (UNTESTABLE, "untestable")):
        out[f"{prefix}_only_{key}"] = "; ".join(_label(c) for c in only if b[c][0]["verdict"] == outcome) or "none"
    return out


# ----------------------------------------------------------------------------- the same claims at two seeds

#: two outcomes that contradict each other; "inconclusive at this scale" beside either is not a flip
FLIP = frozenset({HOLDS, FAILS})


def seed_rows(by_seed: dict[int, list[dict]]) -> list[dict]:
    """One row per (claim, model) of the verdicts rows of each seed (``{seed: rows}``): ``seeds`` (each
    seed's row, None where it lacks one) and ``flip`` (one seed "holds", another "does not hold"). The rows
    of the two-seed JSON that ``benchmarks/bench_verdicts.py`` writes."""
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
    """A two-seed document's replicates per seed, or its profile's (a file of schema < 3 does not record them)."""
    from overinterp.config.profiles import PROFILES
    return doc.get("replicates") or (PROFILES[doc["profile"]].replicates if doc.get("profile") in PROFILES else None)


def _span(first: int, n: int) -> str:
    return f"{first}–{first + n - 1}" if n > 1 else f"{first}"


def seed_values(doc: dict | None, prefix: str) -> dict:
    """Glue values of a two-seed document (``benchmarks/bench_verdicts.py``: ``seeds``, ``replicates``,
    ``rows`` of :func:`seed_rows`), its first two seeds compared, ``<prefix>_<name>``: ``seeds`` ('0 and 5'),
    ``replicates`` ('0–4 and 5–9'), ``rows`` ((claim, model) outcomes both computed), ``changed`` (of those,
    outcomes that differ) and ``changed_which`` ('claim, model: “holds” then “inconclusive ...”; ...' or
    "none"), ``flips`` (changes from "holds" to "does not hold" or back) and ``flips_which``; "—" for every
    value without a document."""
    keys = ("seeds", "replicates", "rows", "changed", "changed_which", "flips", "flips_which")
    if not doc or not doc.get("rows"):
        return {f"{prefix}_{k}": MISSING for k in keys}
    s0, s1 = (str(s) for s in doc["seeds"][:2])
    rows = [r for r in doc["rows"] if r["seeds"].get(s0) and r["seeds"].get(s1)]
    changed = [r for r in rows if r["seeds"][s0]["outcome"] != r["seeds"][s1]["outcome"]]
    flips = [r for r in changed if {r["seeds"][s0]["outcome"], r["seeds"][s1]["outcome"]} == FLIP]

    def which(rs):
        return "; ".join(f"{CLAIMS[r['claim']].short if r['claim'] in CLAIMS else r['claim']}, {r['model']}: "
                         f"“{r['seeds'][s0]['outcome']}” then “{r['seeds'][s1]['outcome']}”" for r in rs) or "none"
    n = _replicates(doc)
    return {f"{prefix}_seeds": f"{s0} and {s1}",
            f"{prefix}_replicates": f"{_span(int(s0), n)} and {_span(int(s1), n)}" if n else MISSING,
            f"{prefix}_rows": len(rows), f"{prefix}_changed": len(changed), f"{prefix}_changed_which": which(changed),
            f"{prefix}_flips": len(flips), f"{prefix}_flips_which": which(flips)}


#: an edition's two-seed check (``benchmarks/bench_verdicts.py --out``), in the edition's folder
SEEDS = "verdicts-seeds.json"


def seed_doc(path) -> dict | None:
    """The two-seed check at ``path`` (``benchmarks/bench_verdicts.py --out``), None where none is committed."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def seed_table(files: dict) -> "pd.DataFrame":
    """Each two-seed check of ``files`` ({label: path of a ``bench_verdicts.py`` JSON}) in a column of short
    cells, one row per fact: the seeds, their replicates (marked where they overlap: not independent
    checks), the (claim, model) outcomes both seeds computed, how many changed and how many flipped
    (:func:`seed_values`), the device and the date of the check; "—" for a check that is not committed.
    Which outcomes changed is :func:`seed_changes`' table: a list in a cell would not fit the page."""
    import pandas as pd
    out = {}
    for label, path in files.items():
        doc = seed_doc(path)
        v = seed_values(doc, "s")
        n = _replicates(doc) if doc else None
        overlap = bool(n and overlapping(doc.get("seeds", [])[:2], n))
        out[label] = {"seeds": v["s_seeds"],
                      "replicates": v["s_replicates"] + (" (overlapping: not independent)" if overlap else ""),
                      "outcomes compared": v["s_rows"], "changed": v["s_changed"], "flipped": v["s_flips"],
                      "device": doc.get("device", MISSING) if doc else MISSING,
                      "date": doc.get("date", MISSING) if doc else MISSING}
    return pd.DataFrame(out, columns=list(files), dtype=object)


def _unbroken(outcome: str) -> str:
    """An outcome of a few short words ("does not hold") kept on one line; "inconclusive at this scale" may wrap."""
    return outcome.replace(" ", "\u00a0") if len(outcome) <= 16 else outcome


def seed_changes(files: dict) -> "pd.DataFrame":
    """The (claim, model) outcomes that changed between the two seeds of each check of ``files`` (as
    :func:`seed_table`'s), one row each: the edition, the claim (in short), the model, and its
    outcome at the first seed and at the second, the latter marked "(flip)" where the two contradict each
    other (:data:`FLIP`). An edition whose outcomes all agree has one row saying so; one whose check is not
    committed, one row of "—"."""
    import pandas as pd
    out = []
    for label, path in files.items():
        doc = seed_doc(path)
        if not doc or not doc.get("rows"):
            out.append({"edition": label, "claim": MISSING, "model": MISSING, "1st seed": MISSING,
                        "2nd seed": MISSING})
            continue
        s0, s1 = (str(s) for s in doc["seeds"][:2])
        changed = [r for r in doc["rows"] if r["seeds"].get(s0) and r["seeds"].get(s1)
                   and r["seeds"][s0]["outcome"] != r["seeds"][s1]["outcome"]]
        for r in changed:
            a, b = r["seeds"][s0]["outcome"], r["seeds"][s1]["outcome"]
            out.append({"edition": label, "claim": CLAIMS[r["claim"]].short if r["claim"] in CLAIMS else r["claim"],
                        "model": r["model"], "1st seed": _unbroken(a),
                        "2nd seed": _unbroken(b) + (" (flip)" if {a, b} == FLIP else "")})
        if not changed:
            out.append({"edition": label, "claim": "no outcome changed", "model": MISSING, "1st seed": MISSING,
                        "2nd seed": MISSING})
    frame = pd.DataFrame(out, columns=["edition", "claim", "model", "1st seed", "2nd seed"])
    # no row labels: a column of labels is laid out as narrow as one letter beside the claims, and breaks them
    frame.index = [""] * len(frame)
    return frame


def accuracy_values(measured: tuple, prefix: str) -> dict:
    """Glue values of ``measured`` = (the models' test accuracies in %, the test images they were measured on;
    :func:`standard_accuracies` or :func:`zoo_accuracies`): ``<prefix>_acc`` ('90.0–92.3', one decimal),
    ``<prefix>_models`` (how many) and ``<prefix>_acc_images`` ('10,000')."""
    acc, images = [float(a) for a in measured[0]], measured[1]
    return {f"{prefix}_acc": span(acc, 1), f"{prefix}_models": len(acc),
            f"{prefix}_acc_images": MISSING if images is None else f"{images:,}"}


def standard_accuracies(path=RESULTS / "models-standard-cpu.json") -> tuple[list[float], int | None]:
    """(test accuracy in % of every standard zoo model, the test images measured) from the committed
    ``benchmarks/bench_models.py`` file ([] and None when it is absent)."""
    path = Path(path)
    if not path.is_file():
        return [], None
    doc = json.loads(path.read_text())
    m = re.search(r"all (\d+) test images", doc.get("what", ""))
    return [m_["test_acc"] for m_ in doc.get("models", []) if m_.get("test_acc") is not None], \
        (int(m.group(1)) if m else None)


def zoo_accuracies(run) -> tuple[list[float], int]:
    """(test accuracy in % of every zoo model of ``run`` on its seeded test sample, the sample's size):
    the models the chapters trained, loaded from the store."""
    from overinterp.experiments import runs as A
    X, Y = A.selection(run, "test").load()
    return [100 * float(A.correct(m, X, Y, run.device).mean()) for ms in A.zoo(run).values() for m in ms], len(Y)


# ----------------------------------------------------------------------------- the table of every verdict

def _finite(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _value(r: dict, digits: int) -> str:
    """'8.0 [5.2, 10.8] (5 replicates, 200 images)': a row's estimate, 95% interval (one-sided: its lowest
    end) and the replicates and images behind it, each piece unbroken; "—" for an estimate that does not
    exist."""
    est, lo, hi = (_finite(r.get(k)) for k in ("estimate", "low", "high"))
    parts = [number(est, digits)]
    if lo is not None and hi is not None:
        parts.append(f"[{number(lo, digits)}, {number(hi, digits)}]")
    elif lo is not None:
        parts.append(f"(lowest 95% end {number(lo, digits)})")
    # the counts in the verdict boxes' words: "images" is per replicate where the replicates share their test
    # images and in all where each has its own (the SIS of its confident images), so never "R × N"
    n = [f"{int(r[k])} {k if int(r[k]) != 1 else k[:-1]}" for k in ("replicates", "images")
         if _finite(r.get(k)) is not None]
    text = " ".join(p.replace(" ", "\u00a0") for p in parts)
    return text + (" (" + ", ".join(x.replace(" ", "\u00a0") for x in n) + ")" if n else "")


def _cell(rows: list[dict] | None, digits: int) -> str:
    """One edition's cell of a claim: its verdict, then each model's value with the mark of its outcome."""
    if not rows:
        return MISSING
    lines = [f"<b>{MARKS.get(rows[0]['verdict'], '')}{rows[0]['verdict']}</b>"]
    lines += [f"{MARKS.get(r.get('outcome') or '', '')}{_html(r['model'])}: {_value(r, digits)}" for r in rows]
    return "<br>".join(lines)


def _html(text) -> str:
    """``text`` safe inside an HTML cell (``<``, ``>`` and ``&`` escaped; quotes kept)."""
    from html import escape
    return escape(str(text), quote=False)


def _chapter_link(stem: str) -> str:
    """'<a href="03_sis.html">chapter 2</a>': the chapter of a claim by the number of the sidebar."""
    from overinterp.pages.chapter import chapter_number
    n = chapter_number(stem)
    text = f"chapter\u00a0{n}" if n else stem
    return f'<a href="{stem}.html">{text}</a>'


def _marks(claim: str) -> str:
    marks = [MARK[k] for k, claims in NOTES.items() if claim in claims]
    return f"<sup>{','.join(marks)}</sup>" if marks else ""


def verdict_frame(docs: dict) -> "pd.DataFrame":
    """Every claim of the registry in its order, with its group (:func:`group`): the claim (with the marks
    of its notes, :data:`NOTES`, its section and our measure), the source's number as quoted (one we derive
    marked †), the margin, per edition of ``docs`` ({label: verdicts document or None}) the verdict with each
    model's estimate [95% interval] (replicates, images), and the chapter; cells are HTML."""
    import pandas as pd
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    out = []
    for c in CLAIMS:
        claim = CLAIMS[c]
        said, derived = quoted(c)
        margins = list(dict.fromkeys(r["margin"] for per in rows.values() for r in per.get(c, []) if r.get("margin")))
        out.append({"group": group(c),
                    "claim": f"{_html(claim.short)}{_marks(c)}<br><small>{_html(claim.section)}; ours: "
                             f"{_html(claim.measure)}</small>",
                    "the source's number": _html(said) + ("†" if derived else ""),
                    "margin": " / ".join(m.replace(" ", "\u00a0") for m in margins) or MISSING,
                    **{label: _cell(per.get(c), claim.digits) for label, per in rows.items()},
                    "chapter": _chapter_link(claim.chapter)})
    return pd.DataFrame(out)


def verdict_table(docs: dict):
    """:func:`verdict_frame` as one HTML table (an IPython ``HTML``), one body per group opened by a row
    that names it. It carries no "Table N." caption: it is pasted into the introduction from the report
    page, and the prose above it says what it is."""
    from html import escape
    from IPython.display import HTML
    frame = verdict_frame(docs)
    columns = [c for c in frame.columns if c != "group"]
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    bodies = []
    for name, part in frame.groupby("group", sort=False):
        rows = "".join("<tr>" + "".join(f"<td>{r[c]}</td>" for c in columns) + "</tr>" for _, r in part.iterrows())
        bodies.append(f'<tbody><tr><th colspan="{len(columns)}" class="group">{escape(name)}</th></tr>{rows}</tbody>')
    return HTML(f'<table class="dataframe overinterp-verdicts"><thead><tr>{head}</tr></thead>{"".join(bodies)}</table>')


def headline(first: dict | None, second: dict | None = None, scale: str = "standard") -> str:
    """The answer in one sentence: whether the paper's claims reproduce in the edition ``first`` (with
    ``second``, the same edition at another seed: a claim counts under an outcome only where both seeds
    give it), and how many claims fall under each outcome, under 'differ between the seeds', under an
    earlier criterion awaiting recomputation, and not computed; reads as English at every count."""
    if first is None:
        return f"No {scale} edition is committed with this book, so it states no verdict at the {scale} scale."
    b = bottom_line(first, "x", second)
    stale_n = sum(of_the_paper(c) for c in stale(first))
    both = lambda text: text if second else ""
    parts = [(b["x_reproduced_n"], "{n} {is} reproduced" + both(" at both seeds")),
             (b["x_not_n"], "{n} {is} not reproduced" + both(" at either")),
             (b["x_inconclusive_n"], "{n} {is} inconclusive" + both(" at both")),
             (b["x_untestable_n"], "{n} cannot be tested at this scale"),
             (b["x_differ_n"], "{n} {is} decided differently at the two seeds"),
             (stale_n, "{n} {was} computed under an earlier criterion and {awaits} recomputation"),
             (b["x_missing"] - stale_n, "{n} {was} not computed at this scale")]
    listed = [text.format(n=n, **({"is": "is", "was": "was", "awaits": "awaits"} if n == 1 else
                                  {"is": "are", "was": "were", "awaits": "await"})) for n, text in parts if n]
    answer = ("yes" if b["x_reproduced_n"] == b["x_paper"] else "no" if not b["x_reproduced_n"] else "in part")
    return (f"Does the paper reproduce on Fashion-MNIST at the {scale} scale? {answer.capitalize()}: of its "
            f"{b['x_paper']} claims, {and_list(listed)}.")


def _mark(rows: dict, c: str, stale_ids: list[str]) -> str:
    """A claim's outcome in an edition as its mark ('✔' ...), 'earlier criterion' where the edition computed
    it under an earlier revision, :data:`MISSING` where it did not compute it."""
    if c in rows:
        return MARKS[rows[c][0]["verdict"]].strip()
    return "earlier criterion" if c in stale_ids else "not computed"


def glance_frame(first: dict | None, second: dict | None, here: dict | None, here_label: str) -> "pd.DataFrame":
    """The paper's claims at a glance: the claim and its section, the paper's number (CIFAR-10), the
    standard edition's outcome at each of its seeds (``first``, ``second``), this execution's (``here``,
    column ``here_label``), and one short reason: the cause a chapter found (:func:`causes`), a
    disagreement of the seeds, or an earlier criterion awaiting recomputation."""
    import pandas as pd
    docs = [first, second, here]
    rows, stale_ids, why = [by_claim(d) for d in docs], [stale(d) for d in docs], causes(first)
    why_here = causes(here)
    seed = lambda d, default: f"standard, seed {d['seed']}" if d and d.get("seed") is not None else default
    out = []
    for c in (c for c in CLAIMS if of_the_paper(c)):
        marks = [_mark(r, c, s) for r, s in zip(rows, stale_ids)]
        said, derived = quoted(c)
        if marks[0] in "✔✘≈–" and marks[1] in "✔✘≈–" and marks[0] != marks[1]:
            reason = "the two seeds disagree"
        elif c in why:
            reason = why[c]
        elif marks[0] == "earlier criterion":
            reason = "standard recomputation under way" + (f"; this execution: {why_here[c]}" if c in why_here else "")
        else:
            reason = why_here.get(c, "")
        out.append({"claim": f"{CLAIMS[c].short} ({CLAIMS[c].section.split(',')[0]})",
                    "paper (CIFAR-10)": said + ("†" if derived else ""),
                    seed(first, "standard, seed 0"): marks[0], seed(second, "standard, second seed"): marks[1],
                    here_label: marks[2], "why": reason})
    return pd.DataFrame(out)


def glance_table(first: dict | None, second: dict | None, here: dict | None, here_label: str):
    """:func:`glance_frame` as an HTML table without index (an IPython ``HTML``), for the introduction's
    first screen; the prose above it gives the legend."""
    from IPython.display import HTML
    frame = glance_frame(first, second, here, here_label)
    return HTML(frame.to_html(index=False, classes="dataframe overinterp-glance", border=0))


def _margin(rows: list[dict]) -> tuple[float, float] | None:
    """The region where a claim holds, from its rows' margin ('≤ 5', '≥ 10', '0 to 5'); None without one."""
    for r in rows:
        m = str(r.get("margin") or "").strip()
        if (x := re.fullmatch(r"≤ (\S+)", m)) and _finite(x.group(1)) is not None:
            return -math.inf, float(x.group(1))
        if (x := re.fullmatch(r"≥ (\S+)", m)) and _finite(x.group(1)) is not None:
            return float(x.group(1)), math.inf
        if (x := re.fullmatch(r"(\S+) to (\S+)", m)) and None not in (_finite(x.group(1)), _finite(x.group(2))):
            return float(x.group(1)), float(x.group(2))
    return None


COLORS = ("#1b4f8a", "#d95f02", "#7570b3")     # one per edition, in the order of ``docs``
MARKERS = ("o", "s", "D")
#: the colour of the margin's shade and edges
MARGIN_COLOR = "#2ca02c"


def _bounds(claim: str) -> tuple[float, float]:
    """The range ``claim``'s measure can take, from its measure and unit, as the
    verdicts clip their intervals to it (:meth:`overinterp.paper.intervals.Interval.clipped`): a percentage
    0 to 100 and a difference of two (points) -100 to 100, a relative increase (%) at least -100 (a mean
    size cannot fall below 0), a probability or a fraction of the pixels 0 to 1 and a difference of two
    -1 to 1, a ratio at least 0; unbounded otherwise (a share of a lift, a number of pixels)."""
    c = CLAIMS[claim]
    name, unit = c.measure, getattr(c, "unit", "")
    if not unit and (x := re.fullmatch(r"(.+) \(([^()]+)\)", c.measure)):
        name, unit = x.groups()                         # "drop (points)": the unit in parentheses
    change = any(w in name for w in ("drop", "increase", "change", "difference", "excess", "−"))
    if unit == "points":
        return -100.0, 100.0
    if unit == "%":
        return (-100.0, math.inf) if change else (0.0, 100.0)
    if unit in ("probability", "probability of the predicted class", "fraction of the pixels"):
        return (-1.0, 1.0) if change else (0.0, 1.0)
    if unit == "ratio":
        return 0.0, math.inf
    return -math.inf, math.inf


def _xlim(claim: str, rows: list[dict]) -> tuple[float, float]:
    """The x axis of ``claim``'s panel: its estimates, the finite edges of its margin (:func:`_margin`) and
    its intervals' ends, padded, within the measure's bounds (:func:`_bounds`). An interval's end counts
    only up to twice the larger of the spread of the estimates and margin edges and the intervals' median
    width beyond them, so that one wide interval of a measure without bounds cannot squash the others; a
    panel draws the part of an interval beyond its axis as an arrow at the axis' end."""
    b_lo, b_hi = _bounds(claim)
    margin = _margin(rows)
    core = [v for r in rows if (v := _finite(r.get("estimate"))) is not None]
    core += [e for e in (margin or ()) if math.isfinite(e)]
    ends, widths = [], []
    for r in rows:
        est, lo, hi = (_finite(r.get(k)) for k in ("estimate", "low", "high"))
        lo, hi = (None if v is None else min(max(v, b_lo), b_hi) for v in (lo, hi))
        ends += [v for v in (lo, hi) if v is not None]
        if lo is not None and (hi if hi is not None else est) is not None:
            widths.append((hi if hi is not None else est) - lo)
    core = core or ends
    if not core:
        return (max(-1.0, b_lo), min(1.0, b_hi)) if b_lo < 0 else (b_lo, b_lo + 1.0)
    widths.sort()
    w = max(max(core) - min(core), widths[len(widths) // 2] if widths else 0.0)
    lo_x = min(core + [e for e in ends if e >= min(core) - 2 * w])
    hi_x = max(core + [e for e in ends if e <= max(core) + 2 * w])
    pad = 0.06 * (hi_x - lo_x) or 0.1 * abs(hi_x) or 1.0
    left, right = max(lo_x - pad, b_lo), min(hi_x + pad, b_hi)
    return (left, right) if right > left else (left - 1.0, right + 1.0)   # a single value at a bound: no empty axis


def forest_part(claim: str) -> str:
    """The key of the figure of :func:`forest_figures` that draws ``claim``: its part ("I", "II", "III"),
    with Part I's tests of the paper's published critiques apart ("I_critiques"), as the verdict table
    groups them (:func:`group`)."""
    c = CLAIMS[claim]
    return c.part if group(claim) == PARTS[c.part] else f"{c.part}_critiques"


#: the figures of :func:`forest_figures`, by key (:func:`forest_part`), with the group of the verdict table each draws
FOREST_PARTS = {k: next(group(c) for c in CLAIMS if forest_part(c) == k)
                for k in dict.fromkeys(forest_part(c) for c in CLAIMS)}


def forest_figure(docs: dict, columns: int = 2, width: float = 9.0):
    """Every estimate and 95% interval of every claim against its margin, in one figure: :func:`forest_figures`'
    panels of every part, one below the other (:func:`forest_figures` draws one figure per part)."""
    return _forest(docs, list(CLAIMS), columns, width)


def forest_figures(docs: dict, columns: int = 2, width: float = 9.0) -> dict:
    """Every estimate and 95% interval of every claim against its margin, one figure per part of the
    registry (:data:`FOREST_PARTS`, keyed by :func:`forest_part`; Part I's tests of its critiques apart):
    one panel per claim with a number in some edition, one line per model and edition (``docs``:
    {label: verdicts document or None}; a marker at the estimate), the region where the claim holds shaded,
    its finite edges dashed; a one-sided interval drawn dotted from its lowest end to the estimate. Each
    panel's axis spans the estimates, the margin's edges and the intervals within the measure's bounds
    (:func:`_xlim`); an interval that runs past the axis ends in an arrow there. Every part has a figure,
    saying so where no edition has an estimate in it."""
    return {k: _forest(docs, [c for c in CLAIMS if forest_part(c) == k], columns, width) for k in FOREST_PARTS}


def _forest(docs: dict, claims: list[str], columns: int, width: float):
    """The forest figure of ``claims`` (those with an estimate in some edition of ``docs``)."""
    import textwrap
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    claims = [c for c in claims if any(_finite(r.get("estimate")) is not None for per in rows.values()
                                       for r in per.get(c, []))]
    if not claims:
        fig, ax = plt.subplots(figsize=(width, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no edition has an estimate", ha="center", va="center", fontsize=10)
        return fig
    models = {c: list(dict.fromkeys(textwrap.fill(r["model"], 26) for per in rows.values() for r in per.get(c, [])))
              for c in claims}
    lines = {c: sum(m.count("\n") + 1 for m in models[c]) for c in claims}
    titles = {c: _forest_title(c).count("\n") + 1 for c in claims}
    grid = [claims[i:i + columns] for i in range(0, len(claims), columns)]
    # inches per row of panels: the model labels' lines, the title's lines, the axis' ticks and label
    heights = [max(0.28 * max(lines[c], 2) + 0.17 * titles[c] for c in row) + 0.55 for row in grid]
    fig = plt.figure(figsize=(width, sum(heights) + 0.4), dpi=100, layout="constrained")
    fig.get_layout_engine().set(h_pad=0.06, hspace=0.04, wspace=0.06)
    gs = fig.add_gridspec(len(grid), columns, height_ratios=heights)
    beyond = False
    for i, row in enumerate(grid):
        for j, c in enumerate(row):
            ax = fig.add_subplot(gs[i, j])
            beyond |= _forest_panel(ax, c, models[c], {label: per.get(c, []) for label, per in rows.items()})
    handles = [Line2D([], [], color=COLORS[k % 3], marker=MARKERS[k % 3], lw=1.6, label=label)
               for k, label in enumerate(docs) if any(rows[label].get(c) for c in claims)]   # the editions drawn
    handles.append(Patch(color=MARGIN_COLOR, alpha=0.15, label="margin: where the claim holds"))
    if beyond:
        handles.append(Line2D([], [], color="0.25", marker=">", lw=1.6, label="interval runs past the axis"))
    # one row of entries where their labels fit the figure's width (about 13 characters an inch at 9 pt), else two
    wide = sum(len(h.get_label()) + 6 for h in handles) > 12 * width
    fig.legend(handles=handles, loc="outside upper center", ncol=-(-len(handles) // 2) if wide else len(handles),
               fontsize=9, frameon=False)
    return fig


def _forest_title(claim: str) -> str:
    """A panel's title: where the source states the claim, and the claim in short, on lines of 44 characters."""
    import textwrap
    c = CLAIMS[claim]
    return textwrap.fill(f"{c.section.split(',')[0]}: {c.short}", 44)


def _forest_panel(ax, claim: str, models: list[str], rows: dict) -> bool:
    """One claim's panel of the forest figure (``rows``: {edition label: that edition's rows of the claim}):
    a line per interval, a marker per estimate, each edition's models shifted apart; the axis from
    :func:`_xlim`, an arrow at its end where an interval (or an estimate) lies beyond it. True where one does."""
    import textwrap
    c = CLAIMS[claim]
    y = {m: -k for k, m in enumerate(models)}
    every = [r for per in rows.values() for r in per]
    left, right = _xlim(claim, every)
    ax.set_xlim(left, right)
    editions = [label for label in rows if rows[label]]
    shift = {label: 0.0 if len(editions) < 2 else 0.15 - 0.3 * i / (len(editions) - 1)
             for i, label in enumerate(editions)}
    beyond = False
    for k, label in enumerate(rows):
        color, marker = COLORS[k % 3], MARKERS[k % 3]
        for r in rows[label]:
            yy = y[textwrap.fill(r["model"], 26)] + shift[label]
            est, lo, hi = (_finite(r.get(key)) for key in ("estimate", "low", "high"))
            if lo is not None and (hi is not None or est is not None):
                a, b = lo, hi if hi is not None else est
                ax.plot([min(max(a, left), right), max(min(b, right), left)], [yy, yy], color=color, lw=1.6,
                        ls="-" if hi is not None else ":")
                for end, edge, arrow in ((a, left, "<"), (b, right, ">")):
                    if (end < left) if arrow == "<" else (end > right):
                        ax.plot([edge], [yy], marker=arrow, color=color, ms=6, lw=0, clip_on=False)
                        beyond = True
            if est is not None and left <= est <= right:
                ax.plot([est], [yy], marker=marker, color=color, ms=5, lw=0)
            elif est is not None:
                ax.plot([left if est < left else right], [yy], marker="<" if est < left else ">", color=color,
                        ms=6, lw=0, clip_on=False)
                beyond = True
    margin = _margin(every)
    if margin and margin[0] < right and margin[1] > left:
        ax.axvspan(max(margin[0], left), min(margin[1], right), color=MARGIN_COLOR, alpha=0.15, lw=0)
    for e in (margin or ()):
        if left <= e <= right:
            ax.axvline(e, color=MARGIN_COLOR, ls="--", lw=1)
    ax.set_yticks(list(y.values()), list(y.keys()), fontsize=8)
    ax.set_ylim(min(y.values()) - 0.6, 0.6)
    ax.tick_params(axis="x", labelsize=8)
    ax.locator_params(axis="x", nbins=6)
    unit = getattr(c, "unit", "")
    ax.set_xlabel(f"{c.measure} ({unit})" if unit and unit not in c.measure else c.measure, fontsize=8)
    ax.set_title(_forest_title(claim), fontsize=9, loc="left")
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    return beyond


# ----------------------------------------------------------------------------- the report page

def results_table(docs: dict):
    """Per claim (grouped by :func:`group`): who states it (the paper, or the book: its controls, the
    critiques it tests, related methods), its result (a claim of the paper: reproduced, not reproduced,
    inconclusive, not testable here; a test the book adds: its verdict), the edition that decided it (the
    largest scale that computed it: the first of ``docs`` that has it), its verdict in each edition of ``docs``
    ("—" where the edition did not compute it) and the chapter."""
    import pandas as pd
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    index, out = [], []
    for c in CLAIMS:
        have = [(label, per[c][0]["verdict"]) for label, per in rows.items() if c in per]
        word = have[0][1] if have else None
        index.append((group(c), f"{CLAIMS[c].short} ({CLAIMS[c].section})"))
        out.append({"stated by": "the paper" if of_the_paper(c) else "the book",
                    "result": MISSING if word is None else READING[word] if of_the_paper(c) else word,
                    "decided by": have[0][0] if have else MISSING,
                    **{label: f"{MARKS.get(per[c][0]['verdict'], '')}{per[c][0]['verdict']}" if c in per else MISSING
                       for label, per in rows.items()},
                    "chapter": _chapter_link(CLAIMS[c].chapter)})
    return pd.DataFrame(out, index=pd.MultiIndex.from_tuples(index))


def scope_table():
    """The paper's claims the book tests: section, claim, the paper's number (as quoted; † derived by us)
    and the measure of ours that tests it."""
    import pandas as pd
    out = []
    for c in (c for c in CLAIMS if of_the_paper(c)):
        said, derived = quoted(c)
        out.append({"section": CLAIMS[c].section, "claim": CLAIMS[c].short, "the paper's number": said + ("†" if derived else ""),
                    "our measure": CLAIMS[c].measure, "chapter": _chapter_link(CLAIMS[c].chapter)})
    return pd.DataFrame(out).set_index("section").rename_axis(None)


TOPICS = {"models": "models", "evaluation": "evaluation", "backselect": "backward selection", "retraining": "retraining"}


def deviations_frame(profiles: list) -> "pd.DataFrame":
    """Every deviation of ``profiles`` (:class:`overinterp.config.profiles.Profile`) from the paper's protocol,
    by topic in :data:`TOPICS`' order, with the profiles that make it
    (:func:`overinterp.paper.deviations.profile_deviations`)."""
    import pandas as pd
    seen: dict[tuple, list[str]] = {}
    for t, name in TOPICS.items():
        for p in profiles:
            for d in profile_deviations(p, t):
                names = seen.setdefault((name, d), [])
                if p.name not in names:
                    names.append(p.name)
    topics = [t for t, _ in seen]
    return pd.DataFrame({"deviation": [d for _, d in seen], "profiles": [", ".join(v) for v in seen.values()]},
                        index=[t if i == 0 or topics[i - 1] != t else "" for i, t in enumerate(topics)])


def compute_frame(standard=STANDARD / "compute.json", book=RESULTS / "book-quick-cpu.json",
                  chapters=RESULTS / "chapters-quick-cpu.json") -> "pd.DataFrame":
    """The compute each edition took, per run, from the committed files (the standard edition's ``seeds``:
    the prepare and verdicts of its two-seed check's other seed), runs that were discarded
    included: hours, on which machine, whether they are process hours (summed over processes running side
    by side) or wall-clock hours, and what became of the run."""
    import pandas as pd
    out = []
    if Path(standard).is_file():
        d = json.loads(Path(standard).read_text())
        for stage, v in d.get("stages", {}).items():
            out.append({"edition": "standard", "run": f"prepare: {stage} ({v['units']} units)", "machine": d["device"],
                        "hours": v["process_seconds"] / 3600, "clock": "process", "kept": "yes"})
        chapters_s = sum(d.get("edition_chapters_seconds", {}).values())
        out.append({"edition": "standard", "run": "the edition's chapters executed", "machine": d["device"],
                    "hours": chapters_s / 3600, "clock": "wall", "kept": "yes"})
        if d.get("verdicts_seconds") is not None:
            out.append({"edition": "standard", "run": "python -m overinterp verdicts", "machine": d["device"],
                        "hours": d["verdicts_seconds"] / 3600, "clock": "wall", "kept": "yes"})
        for seed, extra in d.get("seeds", {}).items():     # the two-seed check's other replicates
            for stage, v in extra.get("stages", {}).items():
                out.append({"edition": "standard", "run": f"prepare at seed {seed}: {stage} ({v['units']} units)",
                            "machine": d["device"], "hours": v["process_seconds"] / 3600, "clock": "process",
                            "kept": "yes"})
            if extra.get("verdicts_seconds") is not None:
                out.append({"edition": "standard", "run": f"python -m overinterp verdicts --seed {seed}",
                            "machine": d["device"], "hours": extra["verdicts_seconds"] / 3600, "clock": "wall",
                            "kept": "yes"})
        if d.get("not_recorded"):
            out.append({"edition": "standard", "run": d["not_recorded"].split(";")[0], "machine": d["device"], "hours": math.nan,
                        "clock": "process", "kept": "no: stopped"})
    if Path(book).is_file():
        d = json.loads(Path(book).read_text())
        out.append({"edition": d.get("profile", "quick"), "run": f"the whole book from an empty store (make book, "
                    f"{d.get('date', 'undated')})",
                    "machine": d["device"], "hours": d["total_minutes"] / 60, "clock": "wall", "kept": "yes"})
        e = d.get("earlier_run_same_machine")
        if e:
            out.append({"edition": d.get("profile", "quick"), "run": e.get("notes", "an earlier run").split(":")[0],
                        "machine": d["device"], "hours": e["execute_seconds"] / 3600, "clock": "wall",
                        "kept": "no: superseded"})
    if Path(chapters).is_file():
        d = json.loads(Path(chapters).read_text())
        out.append({"edition": d.get("profile", "quick"), "run": "each chapter timed alone from a full store "
                    f"(benchmarks/bench_chapters.py, {d.get('date', 'undated')})", "machine": d["device"],
                    "hours": d["bench_seconds"] / 3600,
                    "clock": "wall", "kept": "a measurement"})
    if not out:
        return pd.DataFrame()
    frame = pd.DataFrame(out)
    where = list(zip(frame["edition"], frame["machine"]))     # named on the first of its rows
    frame.index = [f"{e}: {m}" if i == 0 or where[i - 1] != (e, m) else "" for i, (e, m) in enumerate(where)]
    return frame


def compute_values(frame, editions=("standard", "quick")) -> dict:
    """Glue values of :func:`compute_frame`, per edition (at least ``editions``; "—" where a file is absent):
    the hours of the runs kept, process hours (``<edition>_process_hours``) and wall-clock hours
    (``<edition>_wall_hours``) apart, two decimals; the number of runs not kept (``<edition>_discarded``);
    the machine of its first run (``<edition>_device``)."""
    out = {f"{e}_{k}": MISSING for e in editions for k in ("process_hours", "wall_hours", "discarded", "device")}
    if len(frame):
        for edition, part in frame.groupby("edition", sort=False):
            kept = part[part["kept"] == "yes"]
            for clock in ("process", "wall"):
                hours = kept.loc[kept["clock"] == clock, "hours"]
                out[f"{edition}_{clock}_hours"] = number(hours.sum(), 2) if len(hours) else MISSING
            out[f"{edition}_discarded"] = int(part["kept"].str.startswith("no").sum())
            out[f"{edition}_device"] = part["machine"].iloc[0]
    return out


def engine_values(engines: dict, tau: float = 0.99, path=RESULTS / "backselect-cpu.json") -> dict:
    """Glue values of the engine benchmark's fidelity runs (``benchmarks/bench_backselect.py --only
    fidelity``: mean SIS size at ``tau`` against exact backward selection on the same images): per
    ``name: BackSelectConfig`` of ``engines``, ``<name>_engine`` (its description) and ``<name>_ratio``
    (its ratio, "—" where the benchmark did not run it) and ``<name>_size`` (the ratio in words); ``gradient_ratios`` (the range over the gradient
    runs), ``gradient_ks``, ``fidelity_images``, ``fidelity_tau`` and ``exact_seconds`` (seconds per image
    of exact)."""
    runs = []
    if Path(path).is_file():
        fid = json.loads(Path(path).read_text()).get("fidelity", {})
        runs = fid.get("runs", [])
    def ratio(run):
        return next((s["mean_size_ratio_vs_exact"] for s in run.get("sis", []) if abs(s["tau"] - tau) < 1e-9), None)
    out = {}
    for name, cfg in engines.items():
        match = [r for r in runs if r["method"] == cfg.method and (cfg.method == "exact" or
                 r.get("k" if cfg.method == "gradient" else "m") == (cfg.k if cfg.method == "gradient" else cfg.m))]
        out[f"{name}_engine"] = cfg.describe()
        out[f"{name}_ratio"] = number(ratio(match[0]) if match else None, 2)
        out[f"{name}_size"] = (f"{out[f'{name}_ratio']} times exact's mean SIS size on the benchmark's images"
                               if out[f"{name}_ratio"] != MISSING else "an engine the benchmark did not run")
    grad = [r for r in runs if r["method"] == "gradient" and ratio(r) is not None]
    out["gradient_ratios"] = span([ratio(r) for r in grad], 2)
    out["gradient_ks"] = ", ".join(str(r["k"]) for r in grad) or MISSING
    exact = [r for r in runs if r["method"] == "exact"]
    out["fidelity_images"] = fid.get("images", MISSING) if runs else MISSING
    out["fidelity_tau"] = f"{tau:g}"
    out["exact_seconds"] = number(exact[0]["s_per_image"], 0) if exact else MISSING
    return out


def control_values(verdicts: dict, prefix: str = "exec") -> dict:
    """Glue values of what a verdict is measured against, from this execution's Verdicts: the random-subset
    models' test accuracy (``<prefix>_random_acc``) beside the BS-subset models' (``_bs_acc``) of 4.2, and the
    lift above random subsets that 4.1's transfer shares (``_own_acc``, ``_random_subsets``: accuracy on own
    BS subsets and on random subsets), each a range over the models in %."""
    out = {}
    beats = verdicts.get("beats")
    if beats is not None:
        n = beats.numbers
        out[f"{prefix}_random_acc"] = span(n["random subsets"], 1) if "random subsets" in n else MISSING
        out[f"{prefix}_bs_acc"] = span(n["BS subsets"], 1) if "BS subsets" in n else MISSING
    transfer = verdicts.get("transfer")
    if transfer is not None:
        n = transfer.numbers
        out[f"{prefix}_own_acc"] = span(n["own accuracy"], 1) if "own accuracy" in n else MISSING
        out[f"{prefix}_random_subsets"] = span(n["random subsets"], 1) if "random subsets" in n else MISSING
    return {**{f"{prefix}_{k}": MISSING for k in ("random_acc", "bs_acc", "own_acc", "random_subsets")}, **out}


def citation(path=ROOT / "CITATION.cff") -> dict:
    """The book's ``CITATION.cff`` (Citation File Format 1.2.0) as a dict."""
    import yaml
    return yaml.safe_load(Path(path).read_text())


def _bibtex(kind: str, key: str, fields: dict, width: int = 72) -> str:
    """A BibTeX entry with its values wrapped at ``width`` columns (a value may span lines), so that it
    fits the page's column."""
    import textwrap
    pad = max(map(len, fields)) + 2
    lines = []
    for name, value in fields.items():
        if value in (None, ""):
            continue
        head = f"  {name.ljust(pad - 2)} = "
        lines.append(textwrap.fill(f"{{{value}}}", width, initial_indent=head, subsequent_indent=" " * len(head),
                                   break_on_hyphens=False))
    return f"@{kind}{{{key},\n" + ",\n".join(lines) + "\n}"


def citation_values(cff: dict) -> dict:
    """Glue values of the citation: the book's title, version and authors, and the BibTeX entries of the
    book (``bibtex_book``) and of the paper it reproduces (``bibtex_paper``, the first of ``references``)."""
    def names(authors):
        return " and ".join(f"{{{a['name']}}}" if a.get("name") else   # an entity, kept whole by BibTeX
                            f"{a.get('family-names', '')}, {a.get('given-names', '')}".strip(", ") for a in authors)
    book = _bibtex("software", "overinterp", {"title": cff["title"], "author": names(cff["authors"]),
                                              "version": cff.get("version"), "url": cff.get("repository-code"),
                                              "year": str(cff.get("date-released") or "")[:4]})
    refs = cff.get("references") or []
    paper = ""
    if refs:
        r = refs[0]
        paper = _bibtex("inproceedings", "carter2021overinterpretation", {
            "author": names(r["authors"]), "title": r["title"], "booktitle": r.get("collection-title"),
            "volume": r.get("volume"), "pages": f"{r['start']}--{r['end']}" if r.get("start") else None,
            "year": r.get("year"), "url": r.get("url")})
    return {"cite_title": cff["title"], "cite_version": str(cff.get("version", MISSING)),
            "cite_authors": names(cff["authors"]).replace("{", "").replace("}", ""), "bibtex_book": book,
            "bibtex_paper": paper}


def scale_values(profile, dataset: str, prefix: str) -> dict:
    """Glue values naming the scale of ``profile`` (:class:`overinterp.config.profiles.Profile`) on ``dataset``:
    ``<prefix>_profile``, ``_archs`` ('ResNet20, ResNet18 and VGG16'), ``_widths`` (their initial filters,
    '8'; "the paper's" where the profile keeps them), ``_replicates``, ``_train`` ('all 60,000' or '1,500 of
    the 60,000'), ``_epochs`` and ``_test`` (the test images of its verdicts)."""
    from overinterp.paper.numbers import ARCH_NAMES
    from overinterp.zoo import data as D
    names = [ARCH_NAMES.get(a, a) for a in profile.archs]
    total = len(D.load(dataset, "train"))
    widths = sorted({w for _, w in profile.widths})
    return {f"{prefix}_profile": profile.name,
            f"{prefix}_archs": ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0],
            f"{prefix}_widths": ", ".join(map(str, widths)) if widths else "the paper's",
            f"{prefix}_replicates": profile.replicates,
            f"{prefix}_train": f"all {total:,}" if not profile.train_size or profile.train_size >= total
            else f"{profile.train_size:,} of the {total:,}",
            f"{prefix}_epochs": profile.train.epochs,
            f"{prefix}_test": "all" if profile.test_size is None else f"{profile.test_size:,}"}


def data_values(dataset: str) -> dict:
    """Glue values naming ``dataset``: ``data_size`` ('28 × 28'), ``data_classes``, ``data_train`` and
    ``data_test`` (its images, '60,000')."""
    from overinterp.zoo import data as D
    train, test = D.load(dataset, "train"), D.load(dataset, "test")
    return {"data_size": " × ".join(map(str, train.images.shape[-2:])), "data_classes": len(train.classes),
            "data_train": f"{len(train):,}", "data_test": f"{len(test):,}"}


def gpu_values(folder=ROOT / "editions", cost=ROOT / "benchmarks" / "results" / "gpu-profile-cuda.json") -> dict:
    """``gpu_editions``: the committed editions executed on a GPU (their names), or "none yet";
    ``gpu_hours``: the ``gpu`` profile's cost in GPU-hours as ``benchmarks/bench_gpu_profile.py``
    projected it from its units measured on a GPU (``gpu_device``), or the missing-value dash."""
    names = []
    for m in sorted(Path(folder).glob("*/manifest.json")):
        e = json.loads(m.read_text())
        if re.search(r"cuda|gpu|h100|h200|a100|nvidia", str(e.get("device", "")), re.I):
            names.append(e.get("name", m.parent.name))
    out = {"gpu_editions": ", ".join(names) or "none yet", "gpu_hours": MISSING, "gpu_device": MISSING}
    if Path(cost).is_file():
        c = json.loads(Path(cost).read_text())
        out.update(gpu_hours=number(sum(c["projection"]["total_s"].values()) / 3600, 0),
                   gpu_device=c["info"].get("gpu", c["info"]["device"]))
    return out


def paper_values(dataset: str) -> dict:
    """``paper_acc``: the range of the paper's CIFAR-10 test accuracies of its three architectures on full
    images (Table 1, %); ``chance``: the accuracy of a guess on ``dataset`` (%, 100 / classes)."""
    from overinterp.paper import numbers as paper
    from overinterp.zoo.data import CLASSES
    acc = [paper.table1_test(a, "full", "full")[0] for a in ("resnet20", "resnet18", "vgg16")]
    parent = "cifar10" if dataset.startswith("cifar10") else dataset
    return {"paper_acc": span(acc, 1), "chance": number(100 / len(CLASSES[parent]), 0)}
