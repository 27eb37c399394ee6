"""SIS size predicts accuracy (paper 4.4, Figure 5, S3).

The paper compares the SIS of the images a model classifies correctly with those of the
images it misclassifies. At a threshold tau only the images whose confidence on the full
image reaches tau have an SIS (section 3.3; S3: "the set of images that originally were
classified with at least that level of confidence"); they split into a *correct* group
(predicted class = label) and an *incorrect* one. Figure 5 plots, per architecture and
tau, the percentage increase of the mean SIS size of the correct group over the incorrect
one,

    increase = 100 * (mean size correct - mean size incorrect) / mean size incorrect,

with a 95% interval, on the test set and on CIFAR-10-C; Figure S3 the mean confidence on
the full image of the same two groups. The paper finds the increase positive and
significant at every tau, although the misclassified images are the less confident ones
(which alone would make their SIS larger).

No backward selection is run here: the SIS at every tau come from FindSIS on the backward
selections the chapter on 5% subsets makes (:func:`overinterp.experiments.runs.backselect_set` of the
profile's test and OOD samples, every replicate), loaded from the artifact store. The
intervals are seeded percentile bootstraps (:func:`overinterp.paper.intervals.bootstrap`) that
resample the correct and the incorrect images independently, pooled over the replicates of an
architecture.

    images = image_table(run, taus)        # one row per (model, replicate, set, image, tau with an SIS)
    groups = group_means(images)           # per replicate: images, mean SIS size, mean confidence
    inc = percentage_increase(images)      # Figure 5's numbers with their 95% intervals
    fig5, figs3 = increase_figure(inc), confidence_figure(images)

The chapter's tables and prose numbers (``book/08_sis_accuracy.ipynb``) come from
:func:`increase_table`, :func:`empty_table` and the ``*_values`` functions (glue name -> value).
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from overinterp.experiments import runs as A
from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import find_sis
from overinterp.paper.intervals import bootstrap
from overinterp.paper.numbers import ARCH_NAMES

__all__ = ["TAUS", "KEYS", "SIZE", "CONF", "sis_rows", "image_table", "group_means", "percentage_increase",
           "increase_figure", "confidence_figure", "thresholds", "prose_number", "prose_range", "setup_values", "increase_table",
           "verdict_values", "replicate_values", "pooled_empty", "empty_table", "empty_values", "confidence_values"]

TAUS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)   # thresholds of the chapter (the 0.5 to 0.99)
KEYS = ["model", "replicate", "set"]            # what one backward-selection run is
SIZE, CONF = "SIS size (%)", "confidence"        # per image: % of the pixels; f on the full image


def sis_rows(result: BackSelectResult, labels: torch.Tensor, taus: Sequence[float]) -> pd.DataFrame:
    """One row per (image, tau) where the image has an SIS at tau (confidence on the full image
    >= tau): columns image (position in the batch), tau, correct (``result.pred`` == label),
    confidence (softmax probability of the predicted class on the full image) and
    :data:`SIZE`, the SIS's pixels in % of the image's (an empty SIS counts as 0%)."""
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
    """:func:`sis_rows` of every replicate of every architecture of ``run``'s profile on its test
    and OOD samples (:func:`overinterp.experiments.runs.eval_selections`), from the backward selections
    of :func:`overinterp.experiments.runs.backselect_set` with seed run.seed + replicate (loaded from the
    artifact store when chapter 4 made them). Columns :data:`KEYS` (model by its paper name),
    then those of :func:`sis_rows`."""
    frames = []
    for arch in archs or run.profile.archs:
        for r in range(run.profile.replicates):
            for name, sel in A.eval_selections(run).items():
                res = A.backselect_set(run, arch, sel, run.seed + r, progress=False)
                rows = sis_rows(res, sel.load()[1], taus)
                frames.append(rows.assign(model=ARCH_NAMES.get(arch, arch), replicate=r, set=name))
    out = pd.concat(frames, ignore_index=True)
    return out[KEYS + [c for c in out.columns if c not in KEYS]]


def group_means(images: pd.DataFrame, taus: Sequence[float] | None = None) -> pd.DataFrame:
    """Per (model, replicate, set, tau, correct): images with an SIS, their mean SIS size (%),
    the share (%) of them whose SIS is empty (the fully masked image already reaches tau) and
    their mean confidence (paper Fig. 5, S3). Every tau of ``taus`` (default: those in
    ``images``) has both groups; a group without images has 0 images and NaN means."""
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


def _increase(c: np.ndarray, i: np.ndarray, axis: int = -1) -> np.ndarray:
    """100 (mean(c) - mean(i)) / mean(i) along ``axis`` (inf / NaN where mean(i) = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * (c.mean(axis) / i.mean(axis) - 1)


def percentage_increase(images: pd.DataFrame, by: Sequence[str] = ("model", "set", "tau"),
                        taus: Sequence[float] | None = None, confidence_level: float = 0.95,
                        n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Figure 5: per group of ``by`` (replicates pooled), the percentage increase of the mean SIS
    size of the correct images over the incorrect ones, with a percentile bootstrap interval
    (``n_resamples`` resamples of each group independently, seeded with ``seed`` per row).

    Columns: ``by``, correct images, incorrect images, mean SIS size of each (%), increase (%),
    low, high; a row for every tau of ``taus`` (default: those in ``images``). The increase is
    NaN where a group is empty or the incorrect images' mean SIS is 0%; the interval is NaN
    where a group has fewer than 2 images."""
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
        est = float(_increase(c, i)) if len(c) and len(i) and i.mean() > 0 else np.nan
        low = high = np.nan
        if len(c) >= 2 and len(i) >= 2 and np.isfinite(est):
            low, high = bootstrap((c, i), _increase, n_resamples, confidence_level, seed, undefined=np.inf)
        rows.append({**row, "increase (%)": est, "low": low, "high": high})
    return pd.DataFrame(rows)


def _tau_axis(ax, taus: Sequence[float]) -> None:
    """Thresholds at equal spacing (0.95 and 0.99 would crowd on a linear axis)."""
    ax.set_xticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel("SIS threshold τ")


def increase_figure(increase: pd.DataFrame, sets: Sequence[str] | None = None, size: float = 4.0):
    """Figure 5: percentage increase vs tau with its 95% interval (error bars), one line per
    model (side by side at each tau), one panel per set; dotted at 0 (no difference). The y axis
    is linear from -100% to +100% and logarithmic above (a small misclassified mean makes
    increases of thousands of percent)."""
    sets = list(sets or increase["set"].unique())
    taus = sorted(increase["tau"].unique())
    pos = {t: k for k, t in enumerate(taus)}
    models = list(increase["model"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(size * len(sets), 3.2), squeeze=False, layout="constrained")
    for ax, s in zip(axes[0], sets):
        for k, (color, model) in enumerate(zip(sns.color_palette(), models)):
            g = increase[(increase["set"] == s) & (increase["model"] == model)]
            x = g["tau"].map(pos) + 0.1 * (k - (len(models) - 1) / 2)
            y = g["increase (%)"]
            ax.errorbar(x, y, yerr=[y - g["low"], g["high"] - y], marker="o", ms=3, lw=1.2, capsize=2,
                        elinewidth=0.8, color=color, label=model)
        ax.axhline(0, color="k", ls=":", lw=1)
        ax.set_yscale("symlog", linthresh=100, linscale=1.5)
        ax.yaxis.set_major_locator(FixedLocator([-100, -50, 0, 50, 100, 300, 1000, 3000, 10000, 30000]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+.0f}" if v else "0"))
        ax.yaxis.set_minor_locator(NullLocator())
        _tau_axis(ax, taus)
        ax.set_title(s, fontsize=9)
        ax.set_ylabel("increase of mean SIS size,\ncorrect over incorrect (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8, frameon=False)
    return fig


def confidence_figure(images: pd.DataFrame, sets: Sequence[str] | None = None, taus: Sequence[float] | None = None,
                      size: float = 4.0, seed: int = 0):
    """Figure S3: mean confidence on the full image of the correct (solid) and incorrect (dashed)
    images with an SIS at each tau (axis: ``taus``, default those in ``images``), with a bootstrap
    95% interval, one colour per model, one panel per set (replicates pooled)."""
    sets = list(sets or images["set"].unique())
    taus = sorted(images["tau"].unique() if taus is None else taus)
    df = images.assign(x=images["tau"].map({t: k for k, t in enumerate(taus)}),
                       prediction=np.where(images["correct"], "correct", "incorrect"))
    fig, axes = plt.subplots(1, len(sets), figsize=(size * len(sets), 3.2), squeeze=False, layout="constrained",
                             sharey=True)
    for ax, s in zip(axes[0], sets):
        sns.lineplot(data=df[df["set"] == s], x="x", y=CONF, hue="model", style="prediction",
                     style_order=["correct", "incorrect"], errorbar=("ci", 95), seed=seed, marker="o",
                     markersize=3, lw=1.2, ax=ax)
        _tau_axis(ax, taus)
        ax.set_title(s, fontsize=9)
        ax.set_ylabel("mean confidence on the full image")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes[0]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8, frameon=False)
    return fig


# ----------------------------------------------------------------------------- the chapter's tables and prose

def thresholds(taus: Sequence[float]) -> tuple:
    """The chapter's thresholds: ``taus`` as floats, increasing."""
    return tuple(sorted(float(t) for t in taus))


def prose_number(x, digits: int = 1) -> str:
    """A number for the prose; '—' where it is undefined."""
    return "—" if pd.isna(x) else f"{x:.{digits}f}"


def prose_range(values: pd.Series, digits: int = 0, none: str = "nowhere (no threshold tested)") -> str:
    """'from 12% to 40%' over ``values`` (NaN left out); ``none`` where there is none."""
    v = values.dropna()
    return none if v.empty else f"from {v.min():.{digits}f}% to {v.max():.{digits}f}%"


def setup_values(run, taus: Sequence[float], n_resamples: int, min_images: int) -> dict:
    """Glue name -> value of the chapter's setup: thresholds, engine, sample sizes, OOD sets."""
    sets = list(A.eval_selections(run))
    return {"taus": ", ".join(f"{t:g}" for t in taus), "method": run.profile.backselect.describe(),
            "n_eval": run.profile.test_size or "all", "replicates": run.profile.replicates,
            "ood": ", ".join(sets[1:]), "n_resamples": n_resamples, "min_images": min_images}


def _cell(r) -> str:
    """'+12 [3, 25]': an increase (%) with its interval; '—' where undefined."""
    if pd.isna(r["increase (%)"]):
        return "—"
    ci = "" if pd.isna(r["low"]) else f" [{r['low']:.0f}, {r['high']:.0f}]"
    return f"{r['increase (%)']:+.0f}{ci}"


def increase_table(inc: pd.DataFrame, sets: Sequence[str], values: str = "shown") -> pd.DataFrame:
    """:func:`percentage_increase` for display, rows (set, model) in the order of ``sets``, one
    column per tau: ``values`` "shown" (the increase with its interval) or "groups" (correct /
    incorrect images)."""
    shown = inc.assign(shown=inc.apply(_cell, axis=1),
                       groups=inc["correct images"].astype(str) + " / " + inc["incorrect images"].astype(str))
    order = pd.MultiIndex.from_tuples([(s, m) for s in sets for m in inc["model"].unique()], names=["set", "model"])
    table = shown.pivot(index=["set", "model"], columns="tau", values=values).reindex(order)
    return table.rename(columns=lambda t: f"τ = {t:g}").rename_axis(columns=None)


def verdict_values(verdict) -> dict:
    """Glue name -> value of the verdict (:func:`overinterp.paper.verdicts.sis_predicts_accuracy`):
    its word, the points tested and their intervals, the range of the tested increases."""
    nums = verdict.numbers
    test = nums.xs("test", level="set")
    ood = nums[nums.index.get_level_values("set") != "test"]
    return {"verdict": verdict.word, "tested": int(nums["tested"].sum()), "cells": int(nums["thresholds"].sum()),
            "above": int(nums["interval above 0"].sum()), "below": int(nums["interval below 0"].sum()),
            "test_min": prose_number(test["smallest increase (%)"].min(), 0),
            "test_max": prose_number(test["largest increase (%)"].max(), 0),
            "ood_min": prose_number(ood["smallest increase (%)"].min(), 0),
            "ood_max": prose_number(ood["largest increase (%)"].max(), 0),
            "test_range": prose_range(pd.concat([test["smallest increase (%)"], test["largest increase (%)"]])),
            "ood_range": prose_range(pd.concat([ood["smallest increase (%)"], ood["largest increase (%)"]]))}


def replicate_values(images: pd.DataFrame, taus: Sequence[float], min_images: int) -> dict:
    """Replicate by replicate: at how many (replicate, model, set, tau) points where both groups
    hold ``min_images`` images the correct group has the larger mean SIS (rep_pos of rep_n)."""
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
    return shares.apply(lambda col: col.map(lambda v: "—" if pd.isna(v) else f"{v:.0f}"))


def empty_values(images: pd.DataFrame, pooled: pd.DataFrame, taus: Sequence[float], min_images: int,
                 n_resamples: int, seed: int) -> dict:
    """Glue name -> value: the range of the shares of empty SIS (groups of at least ``min_images``
    images) per set and group, then :func:`percentage_increase` without the empty SIS at the
    thresholds where both groups keep ``min_images`` images: its range and intervals above 0."""
    out = {}
    big = pooled[pooled["images"] >= min_images].reset_index()
    for where, rows in {"test": big["set"] == "test", "ood": big["set"] != "test"}.items():
        for group, flag in {"c": True, "i": False}.items():
            e = big.loc[rows & (big["correct"] == flag), "empty"]
            out[f"empty_{where}_{group}_min"] = prose_number(e.min(), 0)
            out[f"empty_{where}_{group}_max"] = prose_number(e.max(), 0)
    t = percentage_increase(images[images[SIZE] > 0], taus=taus, n_resamples=n_resamples, seed=seed)
    nonempty = t[(t["correct images"] >= min_images) & (t["incorrect images"] >= min_images)]
    for where, rows in {"test": nonempty["set"] == "test", "ood": nonempty["set"] != "test"}.items():
        out[f"ne_{where}_min"] = prose_number(nonempty.loc[rows, "increase (%)"].min(), 0)
        out[f"ne_{where}_max"] = prose_number(nonempty.loc[rows, "increase (%)"].max(), 0)
        out[f"ne_{where}_range"] = prose_range(nonempty.loc[rows, "increase (%)"], none="nowhere (no such threshold)")
        out[f"ne_{where}_above"] = int((nonempty.loc[rows, "low"] > 0).sum())
        out[f"ne_{where}_n"] = int(rows.sum())
    return out


def confidence_values(images: pd.DataFrame) -> dict:
    """At how many (model, set, tau) points with both groups the misclassified images are the less
    confident on the full image (conf_lower of conf_n; Figure S3)."""
    pooled = images.groupby(["model", "set", "tau", "correct"])[CONF].mean().unstack("correct").dropna()
    return {"conf_lower": int((pooled[False] < pooled[True]).sum()), "conf_n": len(pooled)}
