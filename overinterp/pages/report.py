"""Verdicts as text and JSON (``python -m overinterp verdicts``), and editions' verdicts read for the
introduction's bottom line and the report page (``book/18_report``; with ``report_tables``, ``report_forest``,
``report_seeds``, ``report_values``).

    print(text(rows))                              # one line per claim and model
    bottom_line(edition_verdicts(STANDARD), "std")   # glue values: claims per outcome, as words and counts
"""
import json
from pathlib import Path

from overinterp.pages.report_values import (RESULTS, STANDARD, accuracy_values, control_values, data_values,
                                            engine_values, gpu_values, paper_values, scale_values,
                                            standard_accuracies, zoo_accuracies)
from overinterp.paper.claims import CLAIMS, MASKED_ALL, MASKED_TRAINED, PARTS, of_the_paper
from overinterp.paper.formatting import and_list, finite, number, span
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.paper.verdicts import FAILS, HOLDS, INCONCLUSIVE, MARKS, UNTESTABLE
from overinterp.store import code_version

#: how a claim of the paper reads in a reproduction report, per verdict
READING = {HOLDS: "reproduced", FAILS: "not reproduced", INCONCLUSIVE: "inconclusive", UNTESTABLE: "not testable here"}
#: the glue name of each verdict of the paper's claims (:func:`bottom_line`, :func:`agreement`)
OUTCOMES = {HOLDS: "reproduced", FAILS: "not", INCONCLUSIVE: "inconclusive", UNTESTABLE: "untestable"}

#: the tiny profile's warning line and the mark on each of its rows
TINY_WARNING = ("warning: profile tiny is a smoke test of the pipeline (seconds of training on a handful of "
                "images): its numbers are not findings; use --profile quick or larger for results")
TINY_MARK = "[tiny: smoke test] "


def counts(r: dict) -> list[str]:
    """['5 replicates', '1 image']: what a row records of the replicates and images behind it."""
    return [f"{int(r[k])} {k if int(r[k]) != 1 else k[:-1]}" for k in ("replicates", "images")
            if finite(r.get(k)) is not None]


def text(rows: list[dict], profile: str = "") -> str:
    """What ``verdicts`` prints: per claim a line (verdict, paper's number, chapter), then one per model."""
    from overinterp.config.chapters import chapter_label
    tiny = profile == "tiny"
    out, part, claim = [TINY_WARNING] if tiny else [], None, None
    for r in rows:
        c = CLAIMS[r["claim"]]
        if c.part != part:
            part = c.part
            out.append(PARTS[part])
        if r["claim"] != claim:
            claim = r["claim"]
            out.append(f"  {MARKS.get(r['verdict'], '  ')}{c.id} ({c.section}): {c.short} — {r['verdict']} "
                       f"[paper: {c.paper}; {chapter_label(c.chapter)}]")
        name, unit = c.measured
        ends = ("no 95% interval" if r["low"] is None and r["high"] is None
                else f"95% interval [{number(r['low'], c.digits)}, {number(r['high'], c.digits)}]")
        n = ", ".join(counts(r))
        out.append(f"      {TINY_MARK if tiny else ''}{r['model']}: {name} ({unit}) {number(r['estimate'], c.digits)}, "
                   f"{ends}" + (f", margin {r['margin']}" if r["margin"] else "")
                   + (f", {r['outcome']}" if r["outcome"] else "") + (f" ({n})" if n else "")
                   + (f"; {r['to decide']} replicates would decide it" if r.get("to decide") else ""))
    return "\n".join(out)


def document(run, rows: list[dict], seconds: dict, device: str) -> dict:
    """The JSON of one ``verdicts`` run: what produced it and every row."""
    return {"schema": 1, "dataset": run.dataset, "profile": run.profile.name, "seed": run.seed, "device": device,
            "commit": code_version(), "seconds": seconds, "rows": rows}


def same_run(old: dict, new: dict) -> None:
    """Raise ValueError naming the first of dataset, profile and seed in which two verdicts documents differ."""
    for key in ("dataset", "profile", "seed"):
        if old.get(key) != new.get(key):
            raise ValueError(f"cannot merge verdicts of {key} {new.get(key)!r} into a file of {key} {old.get(key)!r}")


def merge(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s claims' rows replacing its own, in registry order; ``merged`` lists each later run."""
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
    """The :func:`document` at ``path``; FileNotFoundError or ValueError naming it otherwise."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no verdicts at {path}: run python -m overinterp verdicts --json {path}")
    doc = json.loads(path.read_text())
    if "rows" not in doc or "profile" not in doc:
        raise ValueError(f"{path} is not the JSON of python -m overinterp verdicts")
    return doc


# ----------------------------------------------------------------------------- reading an edition's verdicts

def group(claim: str) -> str:
    """``claim``'s group in the verdict table: its part, with the critique tests apart."""
    c = CLAIMS[claim]
    return "Part I: the paper against its critiques" if c.chapter == "07b_critiques" else PARTS[c.part]


def edition_verdicts(folder=STANDARD) -> dict | None:
    """The edition's verdicts at its manifest's seed, with its ``"manifest"``; None if absent."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").is_file() else {}
    path = folder / f"verdicts-seed{manifest.get('parameters', {}).get('seed', 0)}.json"
    return {**load(path), "manifest": manifest} if path.is_file() else None


def this_execution(run) -> dict:
    """This execution's verdicts document from the store, the Verdicts under ``"verdicts"``."""
    from overinterp.experiments import claims
    from overinterp.zoo.train import device_name
    vs = claims.verdicts(run, progress=False, controls=True)
    return {**document(run, claims.table(vs), vs.seconds, device_name(run.device)), "verdicts": vs}


def second_seed(path) -> dict | None:
    """The edition's verdicts at its other seed (the one other ``verdicts-seed*.json`` beside ``path``), or None."""
    path = Path(path)
    others = sorted(q for q in path.parent.glob("verdicts-seed[0-9]*.json") if q.name != path.name)
    return load(others[0]) if len(others) == 1 else None


def by_claim(doc: dict | None) -> dict[str, list[dict]]:
    """A verdicts document's rows by claim, in registry order, without rows of an earlier claim revision."""
    rows = {}
    for r in (doc or {}).get("rows", []):
        if r["claim"] in CLAIMS and r.get("revision", 1) == CLAIMS[r["claim"]].revision:
            rows.setdefault(r["claim"], []).append(r)
    return {c: rows[c] for c in CLAIMS if c in rows}


def stale(doc: dict | None) -> list[str]:
    """The claims ``doc`` computed under an earlier revision (:func:`by_claim` leaves their rows out)."""
    return list(dict.fromkeys(r["claim"] for r in (doc or {}).get("rows", []) if r["claim"] in CLAIMS
                              and r.get("revision", 1) != CLAIMS[r["claim"]].revision))


def claim_label(claim: str) -> str:
    """'mean SIS size below 5% (4.1)': a claim in a list or a row."""
    c = CLAIMS[claim]
    return f"{c.short} ({c.section.split(',')[0]})"


def blank_failures(doc: dict | None) -> list[str]:
    """The architectures whose blank (fully masked) input is informative under the paper's mask."""
    rows = {c: [r for r in rs if not r.get("condition")] for c, rs in by_claim(doc).items()}   # the paper's mask
    names = {r["model"].split(",")[0].split(" / ")[0] for c in rows for r in rows[c] if r.get("blank passes") is False}
    flagged = names & set(ARCH_NAMES.values())
    if flagged or any("blank passes" in r for c in rows for r in rows[c]):
        return sorted(flagged)
    return [r["model"].split(",")[0] for r in rows.get("blank", []) if "mean pixel" in r["model"]
            and r["outcome"] != HOLDS]


def causes(doc: dict | None) -> dict[str, str]:
    """{claim: caveat}: an informative blank for a claim on masked inputs, then each controlled condition whose
    verdict reads otherwise than the paper's protocol's; a claim that fails on the accepted masked-trained
    models too, whose blank is uninformative, says so (the blank is then not the whole cause)."""
    failing, out = blank_failures(doc), {}
    for c, rs in by_claim(doc).items():
        main = rs[0]["verdict"]
        parts = ["models' blank informative"] if CLAIMS[c].blank and failing else []
        conditions = {r["condition"]: r["verdict"] for r in rs if r.get("condition")}
        trained = conditions.get(MASKED_TRAINED)
        if trained and conditions.get(MASKED_ALL) == trained:
            conditions = {(f"{k} (acceptance waived too)" if k == MASKED_TRAINED else k): v
                          for k, v in conditions.items() if k != MASKED_ALL}      # one reading, said once
        parts += [f"{k}: {READING[v]}" for k, v in conditions.items() if v != main]
        if main == FAILS and trained == FAILS:
            parts.append(f"{READING[FAILS]} on masked-trained models either, whose blank is uninformative")
        if parts:
            out[c] = "; ".join(parts)
    return out


def masked_sentence(doc: dict | None) -> str:
    """One sentence: section 4.1's claims on subsets for the counterfactually trained models of ``doc``, on the
    accepted ones and, acceptance waived, on all of them (chapter 3)."""
    rows = by_claim(doc)
    got = {cond: {c: [r for r in rows.get(c, []) if r.get("condition") == cond] for c in ("accurate", "kept")}
           for cond in (MASKED_TRAINED, MASKED_ALL)}
    if not any(got[MASKED_ALL].values()):
        return "This edition has not computed the counterfactually trained models." if doc else \
            "No edition is committed, so no counterfactually trained models are shown."

    def read(cond):
        verdicts = {f"“{CLAIMS[c].short}”": rs[0]["verdict"] for c, rs in got[cond].items() if rs}
        by = {}
        for claim, v in verdicts.items():
            by.setdefault(READING[v], []).append(claim)
        return and_list([f"{and_list(cs)} {'is' if len(cs) == 1 else 'are'} {reading}" for reading, cs in by.items()])
    models = [int(sum(r.get("replicates") or 0 for r in got[cond]["accurate"])) for cond in (MASKED_TRAINED, MASKED_ALL)]
    accepted = ("none passed the acceptance check, so the claims cannot be tested on accepted models" if not models[0]
                else f"{models[0]} passed the acceptance check, and on them {read(MASKED_TRAINED)}")
    waived = ("the readings are the same" if models[0] and read(MASKED_ALL) == read(MASKED_TRAINED)
              else read(MASKED_ALL))
    return (f"Of {models[1]} models fine-tuned so that masked inputs are in distribution (counterfactual training, "
            f"chapter 3; seed {doc.get('seed')}), {accepted}; with acceptance waived (a sensitivity analysis), "
            f"{waived}.")


# ----------------------------------------------------------------------------- the bottom line

def bottom_line(doc: dict | None, prefix: str, other: dict | None = None) -> dict:
    """Glue values ``<prefix>_*`` of one edition: the paper's claims per outcome (with ``other``, a second seed,
    disagreements under ``_differ``), what was not computed, the blank check and added tests."""
    rows, more, why = by_claim(doc), by_claim(other), causes(doc)
    paper = [c for c in CLAIMS if of_the_paper(c)]
    added = [c for c in CLAIMS if not of_the_paper(c) and c in rows]

    def label(c):
        return claim_label(c) + (f" ({why[c]})" if c in why else "")

    def outcome(c):             # None: the seeds disagree; "one seed": the other seed has no current row
        first = rows[c][0]["verdict"]
        if other is None:
            return first
        return "one seed" if c not in more else first if more[c][0]["verdict"] == first else None
    out = {f"{prefix}_paper": len(paper), f"{prefix}_tested": sum(c in rows for c in paper),
           f"{prefix}_decided": sum(c in rows and rows[c][0]["verdict"] != UNTESTABLE for c in paper),
           f"{prefix}_missing": sum(c not in rows for c in paper), f"{prefix}_added": len(added)}
    for result, key in OUTCOMES.items():
        names = [label(c) for c in paper if c in rows and outcome(c) == result]
        out[f"{prefix}_{key}"] = "; ".join(names) or "none"
        out[f"{prefix}_{key}_n"] = len(names)
    seeds = [(doc or {}).get("seed"), (other or {}).get("seed")]
    split = [c for c in paper if c in rows and outcome(c) is None]
    out[f"{prefix}_differ"] = "; ".join(f"{label(c)}: {READING[rows[c][0]['verdict']]} at seed {seeds[0]}, "
                                        f"{READING[more[c][0]['verdict']]} at seed {seeds[1]}" for c in split) or "none"
    out[f"{prefix}_differ_n"] = len(split)
    single = [c for c in paper if c in rows and outcome(c) == "one seed"]
    out[f"{prefix}_one_seed"] = "; ".join(f"{label(c)}: {READING[rows[c][0]['verdict']]}" for c in single) or "none"
    out[f"{prefix}_one_seed_n"] = len(single)
    shown = [str(x) for x in seeds if x is not None]
    out[f"{prefix}_seeds"] = " and ".join(shown) if len(shown) > 1 else f"{shown[0]} alone" if shown else "none"
    out[f"{prefix}_stale"] = "; ".join(claim_label(c) for c in stale(doc) if of_the_paper(c)) or "none"
    failing = blank_failures(doc)
    out[f"{prefix}_blank_fails"] = len(failing)
    out[f"{prefix}_blank_archs"] = and_list(failing)
    out[f"{prefix}_blank_p"] = span([r["estimate"] for r in rows.get("blank", []) if "mean pixel" in r["model"]], 2)
    for result, key in zip(OUTCOMES, ("holds", "fails", "inconclusive", "untestable")):
        out[f"{prefix}_added_{key}"] = sum(rows[c][0]["verdict"] == result for c in added)
    return out


def agreement(first: dict | None, second: dict | None, prefix: str) -> dict:
    """Glue values comparing ``second``'s verdicts with ``first``'s: agreement, differences, claims only it has."""
    a, b = by_claim(first), by_claim(second)
    paper = [c for c in CLAIMS if of_the_paper(c)]
    both = [c for c in paper if c in a and c in b]
    differ = [c for c in both if a[c][0]["verdict"] != b[c][0]["verdict"]]
    only = [c for c in paper if c in b and c not in a]
    out = {f"{prefix}_both": len(both), f"{prefix}_agree": len(both) - len(differ), f"{prefix}_only": len(only),
           f"{prefix}_differ": "; ".join(f"{claim_label(c)}: {READING[a[c][0]['verdict']]} → "
                                         f"{READING[b[c][0]['verdict']]}" for c in differ) or "none"}
    groups = {reading: [claim_label(c) for c in only if b[c][0]["verdict"] == result]
              for result, reading in READING.items()}
    said = "; ".join(f"{and_list(g)} {'is' if len(g) == 1 else 'are'} {reading}" for reading, g in groups.items() if g)
    out[f"{prefix}_only_words"] = (f"Of the {len(only)} that only it computed, {said}." if only else
                                   "It computed no claim that the other did not.")
    return out


def headline(first: dict | None, second: dict | None = None, scale: str = "standard") -> str:
    """One sentence: whether the paper reproduces in ``first`` (and ``second``, another seed), counts per outcome."""
    if first is None:
        return f"No {scale} edition is committed with this book, so it states no verdict at the {scale} scale."
    b = bottom_line(first, "x", second)
    stale_n = sum(of_the_paper(c) for c in stale(first))
    both = " at both seeds" if second else ""
    parts = [(b["x_reproduced_n"], "{n} {is} reproduced" + both),
             (b["x_not_n"], "{n} {is} not reproduced" + (" at either" if second else "")),
             (b["x_inconclusive_n"], "{n} {is} inconclusive" + (" at both" if second else "")),
             (b["x_untestable_n"], "{n} cannot be tested at this scale"),
             (b["x_differ_n"], "{n} {is} decided differently at the two seeds"),
             (b["x_one_seed_n"], f"{{n}} {{is}} decided at seed {first.get('seed')} alone (seed "
                                 f"{(second or {}).get('seed')}'s rows await recomputation)"),
             (stale_n, "{n} {was} computed under an earlier criterion and {awaits} recomputation"),
             (b["x_missing"] - stale_n, "{n} {was} not computed at this scale")]
    one, many = {"is": "is", "was": "was", "awaits": "awaits"}, {"is": "are", "was": "were", "awaits": "await"}
    listed = [part.format(n=n, **(one if n == 1 else many)) for n, part in parts if n]
    answer = "yes" if b["x_reproduced_n"] == b["x_paper"] else "no" if not b["x_reproduced_n"] else "in part"
    return (f"Does the paper reproduce on Fashion-MNIST at the {scale} scale? {answer.capitalize()}: of its "
            f"{b['x_paper']} claims, {and_list(listed)}.")


def edition_values(run, standard: dict | None, second: dict | None, results=RESULTS) -> dict:
    """The glue values the introduction and the report page share: the standard edition's bottom line at its two
    seeds, both scales, the standard zoo's accuracy, both engines, the GPU cost and the paper's accuracy."""
    from overinterp.config.profiles import get_profile
    std = get_profile(standard["profile"] if standard else "standard")
    engines = {"std": std.sis_engine or std.backselect, "exec": run.profile.sis_engine or run.profile.backselect}
    return {**bottom_line(standard, "std", second), "std_masked": masked_sentence(standard),
            "std_masked_second": masked_sentence(second) if second else "",
            **scale_values(std, run.dataset, "std"),
            **scale_values(run.profile, run.dataset, "exec"),
            **accuracy_values(standard_accuracies(Path(results) / "models-standard-cpu.json"), "std"),
            **engine_values(engines, path=Path(results) / "backselect-cpu.json"), **gpu_values(),
            **paper_values(run.dataset)}


def values(run, p, standard: dict | None, here: dict) -> dict:
    """Every glue value of the report page (and ``glance_table``) from edition ``standard`` and execution ``here``."""
    from overinterp.pages.report_tables import glance_table
    second = second_seed(Path(p.standard) / f"verdicts-seed{standard['seed']}.json") if standard else None
    return {**edition_values(run, standard, second, p.results), **bottom_line(here, "exec"),
            **agreement(standard, here, "cmp"), **accuracy_values(zoo_accuracies(run), "exec"),
            **control_values(here["verdicts"]), **data_values(run.dataset),
            "exec_verdict_seconds": number(sum(here["seconds"].values()), 0),
            "glance_table": glance_table(standard, second, here, f"this execution ({run.profile.name})")}
