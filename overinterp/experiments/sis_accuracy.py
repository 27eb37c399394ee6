"""SIS size predicts accuracy (paper 4.4, Figure 5, S3): per architecture and tau, the images with an SIS
split into correct and incorrect, and Figure 5 plots 100 (mean size correct / mean size incorrect - 1) with a
95% interval (S3: the groups' mean confidence). The paper finds it positive at every tau, although
misclassified images are less confident (which alone enlarges their SIS). FindSIS at every tau on chapter
4's stored selections (test and OOD, every replicate); the interval is ``replicate_interval``'s.

    images = image_table(run, taus)        # one row per (model, replicate, set, image, tau with an SIS)
    groups = group_means(images)           # per replicate: images, mean SIS size, mean confidence
    inc = percentage_increase(images)      # Figure 5's numbers with their 95% intervals
"""
import math
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from overinterp.experiments import runs as runs_module
from overinterp.experiments.runs import extremes
from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import find_sis
from overinterp.paper.formatting import MISSING, count, number, span
from overinterp.paper.intervals import replicate_interval
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.paper import verdicts, claims as paper_claims

TAUS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)   # the chapter's thresholds
KEYS = ["model", "replicate", "set"]            # what one backward-selection run is
SIZE, CONF = "SIS size (%)", "confidence"        # per image: % of the pixels; f on the full image


def sis_rows(result: BackSelectResult, labels: torch.Tensor, taus: Sequence[float]) -> pd.DataFrame:
    """Per (image, tau) with an SIS: image (batch position), tau, correct, confidence, :data:`SIZE` (% of
    pixels; empty SIS 0%)."""
    correct = (result.pred.cpu() == labels.cpu()).numpy()
    conf = result.confidence.cpu().numpy()
    pixels = result.image_size[0] * result.image_size[1]
    frames = []
    for tau in taus:
        sis = find_sis(result, tau)
        has = (sis.size >= 0).cpu().numpy()
        size = 100 * sis.mask.flatten(1).sum(1).cpu().numpy() / pixels
        idx = np.flatnonzero(has)
        frames.append(pd.DataFrame({"image": idx, "tau": float(tau), "correct": correct[idx],
                                    CONF: conf[idx], SIZE: size[idx]}))
    return pd.concat(frames, ignore_index=True)


def image_table(run, taus: Sequence[float] = TAUS, archs=None) -> pd.DataFrame:
    """:func:`sis_rows` of every replicate and architecture on test and OOD, with :data:`KEYS` first."""
    frames = []
    for arch in archs or run.profile.archs:
        for r in range(run.profile.replicates):
            for name, sel in runs_module.eval_selections(run).items():
                res = runs_module.backselect_set(run, arch, sel, run.seed + r, progress=False)
                rows = sis_rows(res, sel.load()[1], taus)
                frames.append(rows.assign(model=ARCH_NAMES.get(arch, arch), replicate=r, set=name))
    out = pd.concat(frames, ignore_index=True)
    return out[KEYS + [c for c in out.columns if c not in KEYS]]


def group_means(images: pd.DataFrame, taus: Sequence[float] | None = None) -> pd.DataFrame:
    """Per (model, replicate, set, tau, correct): images, mean SIS size (%), empty SIS (%), mean
    confidence (Fig. 5, S3); missing groups 0 images, NaN."""
    keys = KEYS + ["tau", "correct"]
    out = images.assign(empty=100 * (images[SIZE] == 0)).groupby(keys, sort=True).agg(
        images=(SIZE, "size"), **{"mean " + SIZE: (SIZE, "mean"), "empty SIS (%)": ("empty", "mean"),
                                  "mean " + CONF: (CONF, "mean")})
    runs = images[KEYS].drop_duplicates().itertuples(index=False)
    taus = sorted(float(t) for t in (images["tau"].unique() if taus is None else taus))
    full = [(*r, t, c) for r in runs for t in taus for c in (True, False)]
    out = out.reindex(pd.MultiIndex.from_tuples(full, names=keys))
    out["images"] = out["images"].fillna(0).astype(int)
    return out.reset_index()


def _relative_increase(m: dict) -> np.ndarray:
    """100 (c / i - 1) of the means ``m["c"]``, ``m["i"]``, elementwise (inf / NaN where i = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * (m["c"] / m["i"] - 1)


def _increase(c: np.ndarray, i: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`_relative_increase` of the means of ``c`` and ``i`` along ``axis``."""
    return _relative_increase({"c": c.mean(axis), "i": i.mean(axis)})


def percentage_increase(images: pd.DataFrame, by: Sequence[str] = ("model", "set", "tau"),
                        taus: Sequence[float] | None = None, confidence_level: float = 0.95,
                        n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Figure 5: per ``by`` group, the correct over incorrect mean SIS size increase (%), mean over
    replicates with both groups >= 2 images and incorrect mean > 0, and ``replicate_interval``'s 95% interval
    (one replicate: bootstrap). A row per tau of ``taus``; no counting replicate: pooled increase, NaN interval."""
    by = list(by)
    groups = dict(iter(images.groupby(by, sort=False)))
    keys = list(groups)
    if taus is not None and "tau" in by:   # every (others, tau), in the order the others appear
        j = by.index("tau")
        others = dict.fromkeys(k[:j] + k[j + 1:] for k in keys)
        keys = [o[:j] + (float(t),) + o[j:] for o in others for t in sorted(taus)]
    rows = []
    for key in keys:
        g = groups.get(key, images.iloc[:0])
        c, i = g.loc[g["correct"], SIZE].to_numpy(float), g.loc[~g["correct"], SIZE].to_numpy(float)
        row = dict(zip(by, key), **{"correct images": len(c), "incorrect images": len(i),
                                    "correct mean " + SIZE: c.mean() if len(c) else np.nan,
                                    "incorrect mean " + SIZE: i.mean() if len(i) else np.nan})
        reps = [(gr.loc[gr["correct"], SIZE].to_numpy(float), gr.loc[~gr["correct"], SIZE].to_numpy(float))
                for _, gr in g.groupby("replicate", sort=True)]
        reps = [(rc, ri) for rc, ri in reps if len(rc) >= 2 and len(ri) >= 2 and ri.mean() > 0]
        est = float(_increase(c, i)) if len(c) and len(i) and i.mean() > 0 else np.nan
        low = high = np.nan
        if reps:
            iv = replicate_interval({"c": [rc for rc, _ in reps], "i": [ri for _, ri in reps]},
                                    _relative_increase, paired_images=False,
                                    n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
                                    bounds=(-100.0, math.inf))     # a mean size cannot fall below 0
            est, low, high = iv.estimate, iv.low, iv.high
        rows.append({**row, "replicates": len(reps), "increase (%)": est, "low": low, "high": high})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the chapter's tables and prose

def prose_range(values: pd.Series, digits: int = 0, none: str = "nowhere (no threshold tested)") -> str:
    """'from 12% to 40%' over ``values`` (NaN left out); ``none`` where there is none."""
    v = values.dropna()
    return none if v.empty else f"from {v.min():.{digits}f}% to {v.max():.{digits}f}%"


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
    """:func:`percentage_increase` for display: ``values`` "shown" or "groups" per tau."""
    shown = inc.assign(shown=inc.apply(_cell, axis=1),
                       groups=inc["correct images"].astype(str) + " / " + inc["incorrect images"].astype(str))
    order = pd.MultiIndex.from_tuples([(s, m) for s in sets for m in inc["model"].unique()], names=["set", "model"])
    table = shown.pivot(index=["set", "model"], columns="tau", values=values).reindex(order)
    return table.rename(columns=lambda t: f"τ = {t:g}").rename_axis(columns=None)


def verdict_input(run, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`percentage_increase` at the verdict's thresholds without empty SIS (the blank's class)."""
    taus = verdicts.SIS_ACCURACY_TAUS
    images = image_table(run, taus)
    return percentage_increase(images[images[SIZE] > 0], taus=taus, n_resamples=n_resamples, seed=seed)


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


def _increase_clause(values: pd.Series, where: str) -> str | None:
    """'ranges from -25% to -7% on the test sample', 'is 12% on the test sample'; None without a value."""
    v = values.dropna()
    if v.empty:
        return None
    lo, hi = f"{v.min():.0f}%", f"{v.max():.0f}%"
    return f"is {lo} {where}" if lo == hi else f"ranges from {lo} to {hi} {where}"


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
    clauses = {"on the test sample": _increase_clause(test, "on the test sample"),
               "out of distribution": _increase_clause(ood, "out of distribution")}
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


def pooled_empty(images: pd.DataFrame) -> pd.DataFrame:
    """Per (set, model, correct, tau), replicates pooled: images and the share (%) with an empty SIS."""
    return images.assign(empty=100 * (images[SIZE] == 0)).groupby(
        ["set", "model", "correct", "tau"], sort=False).agg(images=("empty", "size"), empty=("empty", "mean"))


def empty_table(pooled: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """:func:`pooled_empty` for display: rows (set, model, group), one column per tau, '—' where empty."""
    shares = pooled["empty"].unstack("tau").reindex(columns=list(taus)).rename(
        columns=lambda t: f"τ = {t:g}").rename_axis(columns=None)
    shares.index = shares.index.set_levels(
        shares.index.levels[2].map({True: "correct", False: "misclassified"}.get), level=2).rename("group", level=2)
    return shares.map(lambda v: number(v, 0))


def empty_values(images: pd.DataFrame, pooled: pd.DataFrame, taus: Sequence[float], min_images: int,
                 n_resamples: int, seed: int) -> dict:
    """Glue name -> value: empty-SIS share ranges, and the increase without empty SIS."""
    out = {}
    big = pooled[pooled["images"] >= min_images].reset_index()
    for where, rows in {"test": big["set"] == "test", "ood": big["set"] != "test"}.items():
        for group, flag in {"c": True, "i": False}.items():
            e = big.loc[rows & (big["correct"] == flag), "empty"]
            out.update(extremes(f"empty_{where}_{group}", e, 0, spread=True))
            out[f"empty_{where}_{group}_share"] = (span(e, 0, suffix="%") if len(e) else
                                                   "not measured (no group that large)")
    t = percentage_increase(images[images[SIZE] > 0], taus=taus, n_resamples=n_resamples, seed=seed)
    nonempty = t[(t["correct images"] >= min_images) & (t["incorrect images"] >= min_images)]
    words = []                              # the increase without empty SIS as a clause per sample: ne_text
    for (where, rows), said in zip({"test": nonempty["set"] == "test", "ood": nonempty["set"] != "test"}.items(),
                                   ("on the test sample", "out of distribution")):
        inc, above, n = nonempty.loc[rows, "increase (%)"], int((nonempty.loc[rows, "low"] > 0).sum()), int(rows.sum())
        out.update({**extremes(f"ne_{where}", inc, 0), f"ne_{where}_above": above, f"ne_{where}_n": n,
                    f"ne_{where}_range": prose_range(inc, none="nowhere (no such threshold)")})
        clause = _increase_clause(inc, said)
        words.append(f"the increase {clause}, its interval above zero at {above} of {count(n, 'point')}" if clause
                     else f"{said} no threshold keeps at least {min_images} images in both groups")
    return {**out, "ne_text": "; ".join(words)}


def confidence_values(images: pd.DataFrame) -> dict:
    """Points where misclassified images are the less confident (Figure S3)."""
    pooled = images.groupby(["model", "set", "tau", "correct"])[CONF].mean().unstack("correct").dropna()
    return {"conf_lower": int((pooled[False] < pooled[True]).sum()), "conf_n": len(pooled)}
