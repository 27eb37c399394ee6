"""SIS size against accuracy presented (:mod:`overinterp.experiments.sis_accuracy`; paper 4.4): display tables and
the glued values of the prose.
"""
from typing import Sequence

import pandas as pd

from overinterp.experiments import runs as runs_module
from overinterp.experiments.sis_accuracy import CONF, SIZE, group_means
from overinterp.paper import claims as paper_claims, verdicts
from overinterp.paper.formatting import MISSING, count, extremes, number, span


def setup_values(run, taus: Sequence[float], n_resamples: int, min_images: int) -> dict:
    """Glue name -> value of the chapter's setup: thresholds, engine, sample sizes, OOD sets."""
    sets = list(runs_module.eval_selections(run))
    return {"taus": ", ".join(f"{t:g}" for t in taus), "method": run.profile.backselect.describe(),
            "n_eval": run.profile.test_size or "all", "replicates": run.profile.replicates,
            "ood": ", ".join(sets[1:]), "n_resamples": n_resamples, "min_images": min_images}


def _cell(r) -> str:
    """'+12 [3, 25]': an increase (%) with its interval; '—' where undefined."""
    if pd.isna(r["increase (%)"]):
        return MISSING
    ci = "" if pd.isna(r["low"]) else f" [{r['low']:.0f}, {r['high']:.0f}]"
    return f"{r['increase (%)']:+.0f}{ci}"


def increase_table(inc: pd.DataFrame, sets: Sequence[str], values: str = "shown") -> pd.DataFrame:
    """:func:`~overinterp.experiments.sis_accuracy.percentage_increase` for display: ``values`` "shown" or "groups" per
    tau."""
    shown = inc.assign(shown=inc.apply(_cell, axis=1),
                       groups=inc["correct images"].astype(str) + " / " + inc["incorrect images"].astype(str))
    order = pd.MultiIndex.from_tuples([(s, m) for s in sets for m in inc["model"].unique()], names=["set", "model"])
    table = shown.pivot(index=["set", "model"], columns="tau", values=values).reindex(order)
    return table.rename(columns=lambda t: f"τ = {t:g}").rename_axis(columns=None)


def verdict_values(verdict) -> dict:
    """Glue name -> value of the verdict: word, rows tested against the margin, increase ranges."""
    nums = verdict.numbers
    tested = nums[nums["outcome"] != verdicts.UNTESTABLE]
    test, ood = (tested[tested.index.get_level_values("set") == "test"],
                 tested[tested.index.get_level_values("set") != "test"])
    return {"verdict": verdict.word, "verdict_taus": ", ".join(f"{t:g}" for t in verdicts.SIS_ACCURACY_TAUS),
            "min_increase": f"{paper_claims.SIS_ACCURACY_MIN_INCREASE:g}", "cells": len(nums), "tested": len(tested),
            "above": int((tested["outcome"] == verdicts.HOLDS).sum()), "below": int((tested["outcome"] == verdicts.FAILS).sum()),
            "within": int((tested["outcome"] == verdicts.INCONCLUSIVE).sum()),
            "test_range": prose_range(test["increase (%)"]), "ood_range": prose_range(ood["increase (%)"]),
            # the same in sentences that read at 0, 1 and many rows tested
            "tested_text": {0: "none has", 1: "1 has"}.get(len(tested), f"{len(tested)} have"),
            "tested_sentences": _tested_sentences(tested, test["increase (%)"], ood["increase (%)"])}


def _tested_sentences(tested: pd.DataFrame, test: pd.Series, ood: pd.Series) -> str:
    """The tested rows in words: counts against the margin and the increases' range per sample."""
    if tested.empty:
        return "Without a tested row there is no increase to compare with the margin."
    n = tested["outcome"].value_counts()
    margin = f"the margin of {paper_claims.SIS_ACCURACY_MIN_INCREASE:g}%"
    if len(tested) == 1:
        where = {verdicts.HOLDS: f"lies at or above {margin}", verdicts.INCONCLUSIVE: f"straddles {margin}",
                 verdicts.FAILS: f"lies wholly below {margin}"}.get(tested["outcome"].iloc[0], f"is not read against {margin}")
        first = f"Its 95% interval of the increase {where}."
    else:
        first = (f"Of those, the 95% interval of the increase lies at or above {margin} at {n.get(verdicts.HOLDS, 0)}, "
                 f"straddles it at {n.get(verdicts.INCONCLUSIVE, 0)} and lies wholly below it at "
                 f"{n.get(verdicts.FAILS, 0)}.")
    clauses = {"on the test sample": increase_clause(test, "on the test sample"),
               "out of distribution": increase_clause(ood, "out of distribution")}
    shown = [c for c in clauses.values() if c]
    missing = [w for w, c in clauses.items() if not c]
    second = f"The tested increase {' and '.join(shown)}" + (f"; no row {missing[0]} is tested." if missing else ".")
    return f"{first} {second}"


def replicate_values(images: pd.DataFrame, taus: Sequence[float], min_images: int) -> dict:
    """Points with ``min_images`` per group where correct images have the larger mean SIS."""
    groups = group_means(images, taus)
    wide = groups.pivot_table(index=["model", "replicate", "set", "tau"], columns="correct",
                              values=["images", "mean " + SIZE])
    enough = (wide["images"] >= min_images).all(axis=1)
    larger = wide["mean " + SIZE][True] > wide["mean " + SIZE][False]
    return {"rep_pos": int(larger[enough].sum()), "rep_n": int(enough.sum())}


def empty_table(pooled: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """:func:`~overinterp.experiments.sis_accuracy.pooled_empty` for display: rows (set, model, group), one column per
    tau, '—' where empty."""
    shares = pooled["empty"].unstack("tau").reindex(columns=list(taus)).rename(
        columns=lambda t: f"τ = {t:g}").rename_axis(columns=None)
    shares.index = shares.index.set_levels(
        shares.index.levels[2].map({True: "correct", False: "misclassified"}.get), level=2).rename("group", level=2)
    return shares.map(lambda v: number(v, 0))


def confidence_values(images: pd.DataFrame) -> dict:
    """Points where misclassified images are the less confident (Figure S3)."""
    pooled = images.groupby(["model", "set", "tau", "correct"])[CONF].mean().unstack("correct").dropna()
    return {"conf_lower": int((pooled[False] < pooled[True]).sum()), "conf_n": len(pooled)}


def empty_values(pooled: pd.DataFrame, nonempty: pd.DataFrame, min_images: int) -> dict:
    """Glue name -> value: empty-SIS share ranges (:func:`~overinterp.experiments.sis_accuracy.pooled_empty`), and
    the increase without empty SIS (:func:`~overinterp.experiments.sis_accuracy.nonempty_increase`)."""
    out = {}
    big = pooled[pooled["images"] >= min_images].reset_index()
    for where, rows in {"test": big["set"] == "test", "ood": big["set"] != "test"}.items():
        for group, flag in {"c": True, "i": False}.items():
            e = big.loc[rows & (big["correct"] == flag), "empty"]
            out.update(extremes(f"empty_{where}_{group}", e, 0, spread=True))
            out[f"empty_{where}_{group}_share"] = (span(e, 0, suffix="%") if len(e) else
                                                   "not measured (no group that large)")
    words = []                              # the increase without empty SIS as a clause per sample: ne_text
    for (where, rows), said in zip({"test": nonempty["set"] == "test", "ood": nonempty["set"] != "test"}.items(),
                                   ("on the test sample", "out of distribution")):
        inc, above, n = nonempty.loc[rows, "increase (%)"], int((nonempty.loc[rows, "low"] > 0).sum()), int(rows.sum())
        out.update({**extremes(f"ne_{where}", inc, 0), f"ne_{where}_above": above, f"ne_{where}_n": n,
                    f"ne_{where}_range": prose_range(inc, none="nowhere (no such threshold)")})
        clause = increase_clause(inc, said)
        words.append(f"the increase {clause}, its interval above zero at {above} of {count(n, 'point')}" if clause
                     else f"{said} no threshold keeps at least {min_images} images in both groups")
    return {**out, "ne_text": "; ".join(words)}


def prose_range(values: pd.Series, digits: int = 0, none: str = "nowhere (no threshold tested)") -> str:
    """'from 12% to 40%' over ``values`` (NaN left out); ``none`` where there is none."""
    v = values.dropna()
    return none if v.empty else f"from {v.min():.{digits}f}% to {v.max():.{digits}f}%"


def increase_clause(values: pd.Series, where: str) -> str | None:
    """'ranges from -25% to -7% on the test sample', 'is 12% on the test sample'; None without a value."""
    v = values.dropna()
    if v.empty:
        return None
    lo, hi = f"{v.min():.0f}%", f"{v.max():.0f}%"
    return f"is {lo} {where}" if lo == hi else f"ranges from {lo} to {hi} {where}"
