"""Figures, tables and glue values of the chapter "Is the model reading the pixels or the mask?"
(:mod:`overinterp.experiments.critiques`); figures show the mean (and sd) over replicates.
"""
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from overinterp.experiments.critiques import BS, INPUTS, MASKS, ORDERS, SIS
from overinterp.methods.critiques import REGIONS
from overinterp.pages.plots import gallery, text_pt
from overinterp.paper.formatting import MISSING, number, span


def kernel_label(k: int) -> str:
    """'as selected' for kernel 1, else 'k×k'."""
    return "as selected" if int(k) == 1 else f"{int(k)}×{int(k)}"


def _model_columns(frame: pd.DataFrame, rows: int, height: float, **kw):
    """(architectures, text size, figure, axes): a column (2.8 in) per architecture, ``rows`` rows, ``height`` in."""
    models = list(dict.fromkeys(frame["model"]))
    width = 2.8 * len(models)
    fig, axes = plt.subplots(rows, len(models), figsize=(width, height), squeeze=False, **kw)
    return models, text_pt(width), fig, axes


def _replicate_means(df: pd.DataFrame, by: list, columns: list) -> pd.DataFrame:
    """Each replicate's mean over its images of ``columns``, per ``by``."""
    return df.groupby([*by, "replicate"], sort=False)[columns].mean().reset_index()


def _style(ax, pt: float, title: str = "", xlabel: str = "", ylabel: str = "") -> None:
    ax.set_title(title, fontsize=pt)
    ax.set_xlabel(xlabel, fontsize=pt)
    ax.set_ylabel(ylabel, fontsize=pt)
    ax.tick_params(labelsize=pt)


def _legend_below(fig, axes, pt: float, title: str | None = None) -> None:
    """One legend for every panel, under them, where it covers no data."""
    handles, labels = axes.flat[0].get_legend_handles_labels()
    for ax in axes.flat:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=pt, title=title, title_fontsize=pt,
               frameon=False, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.08, 1, 1))


def examples_figure(images, keeps: dict, random, mean, std, col_titles=None, pct: str = "5"):
    """Gallery: test images, their BS subsets as selected and dilated (``keeps``: {kernel: (n, H, W) keep-mask}),
    and ``random`` masks as large as the first dilation."""
    ks = sorted(keeps)
    rows = {(f"{pct}% BS subset" if k == 1 else f"dilated {kernel_label(k)}"): keeps[k] for k in ks}
    rows[f"random, as many\nas {kernel_label(ks[1])}" if len(ks) > 1 else "random"] = random
    return gallery(images, rows, mean, std, col_titles=col_titles)


# ----------------------------------------------------------------------------- dilation

def dilation_figure(df: pd.DataFrame):
    """Share (%) of images classified as on the full image per kernel and mask; a panel per model and subset."""
    reps = _replicate_means(df, ["model", "subset", "mask", "kernel"], ["prediction kept"])
    reps["prediction kept (%)"] = 100 * reps["prediction kept"]
    reps["kernel"] = reps["kernel"].map(kernel_label)
    subsets = [s for s in (BS, SIS) if s in set(df["subset"])]
    models, pt, fig, axes = _model_columns(df, len(subsets), 2.6 * len(subsets) + 0.5, sharey=True)
    for i, s in enumerate(subsets):
        for j, m in enumerate(models):
            ax = axes[i, j]
            d = reps[(reps["model"] == m) & (reps["subset"] == s)]
            sns.barplot(data=d, x="kernel", y="prediction kept (%)", hue="mask", hue_order=list(MASKS), ax=ax,
                        errorbar="sd", capsize=0.1, err_kws={"linewidth": 1})
            _style(ax, pt, f"{m}, {s}", "dilation" if i == len(subsets) - 1 else "",
                   "classified as on the full image (%)" if j == 0 else "")
            ax.set_ylim(0, 105)
    _legend_below(fig, axes, pt)
    return fig


def dilation_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per model, subset, mask and kernel: kept pixels (%), share as on the full image (%), mean confidence."""
    reps = _replicate_means(df, ["model", "subset", "mask", "kernel"], ["kept pixels (%)", "prediction kept",
                                                                       "confidence"])
    out = reps.groupby(["model", "subset", "mask", "kernel"], sort=False)[["kept pixels (%)", "prediction kept",
                                                                             "confidence"]].mean()
    out["prediction kept"] *= 100
    out = out.rename(columns={"prediction kept": "as on the full image (%)", "confidence": "mean confidence"})
    return out.rename(index=kernel_label, level="kernel")


def retraining_table(correct: dict) -> pd.DataFrame:
    """Test accuracy (%) of retrained models per architecture and training images, mean over replicates."""
    names = {"bs": "dilated BS subsets", "random": "random, as many pixels", "full": "full images (chapter 5)"}
    return pd.DataFrame({names[k]: {m: 100 * np.mean([c.mean() for c in v[k]]) for m, v in correct.items()}
                         for k in names})


# ----------------------------------------------------------------------------- saliency

def shares_figure(shares: pd.DataFrame):
    """Per architecture: each region's share (%) of the SmoothGrad attribution beside its share of the area."""
    reps = _replicate_means(shares, ["model", "region"], ["attribution share", "area share"])
    long = reps.melt(id_vars=["model", "region", "replicate"], value_vars=["attribution share", "area share"],
                     var_name="share of", value_name="share (%)")
    long["share (%)"] *= 100
    long["share of"] = long["share of"].map({"attribution share": "the attribution", "area share": "the area"})
    models, pt, fig, axes = _model_columns(shares, 1, 3.0, sharey=True)
    for j, m in enumerate(models):
        ax = axes[0, j]
        sns.barplot(data=long[long["model"] == m], x="region", y="share (%)", hue="share of", order=list(REGIONS),
                    ax=ax, errorbar="sd", capsize=0.1, err_kws={"linewidth": 1})
        _style(ax, pt, m, "", "share (%)" if j == 0 else "")
        ax.tick_params(axis="x", labelrotation=20)
    _legend_below(fig, axes, pt, "share of")
    return fig


def shares_table(shares: pd.DataFrame) -> pd.DataFrame:
    """Per architecture and region: share (%) of attribution and of area, and their ratio (1: uniform)."""
    reps = _replicate_means(shares, ["model", "region"], ["attribution share", "area share"])
    out = 100 * reps.groupby(["model", "region"], sort=False)[["attribution share", "area share"]].mean()
    out.columns = ["share of the attribution (%)", "share of the area (%)"]
    out["attribution per area"] = out.iloc[:, 0] / out.iloc[:, 1]
    return out


# ----------------------------------------------------------------------------- the fully masked input, mask shape

def blank_table(blank: pd.DataFrame) -> pd.DataFrame:
    """The fully masked image's class, probability and prior, per architecture, replicate and mask value."""
    return blank.set_index(["model", "replicate", "mask"])


def blank_values(blank: pd.DataFrame) -> dict:
    """Glue values ``blank_{mean,black}_{classes,conf}``: fully masked images' classes and probability range."""
    out = {}
    for mask, key in (("mean pixel", "mean"), ("black", "black")):
        g = blank[blank["mask"] == mask]
        out[f"blank_{key}_classes"] = ", ".join(dict.fromkeys(g["class"])) or MISSING
        out[f"blank_{key}_conf"] = _range(g["confidence"], 2)
    return out


def shape_table(shape: pd.DataFrame) -> pd.DataFrame:
    """Per model and fill: share (%) of mask-shape inputs given the subset's class, blank's, prior, excess."""
    cols = ["same class", "blank same", "class prior"]
    reps = _replicate_means(shape, ["model", "fill"], cols)
    out = 100 * reps.groupby(["model", "fill"], sort=False)[cols].mean()
    out.columns = ["same class as the subset (%)", "blank's class the subset's (%)", "class prior (%)"]
    out["excess over the blank (points)"] = out.iloc[:, 0] - out.iloc[:, 1]
    return out


# ----------------------------------------------------------------------------- calibration

def reliability_figure(bins: pd.DataFrame):
    """Reliability diagrams per architecture: a line per input, replicates pooled; dotted: perfect calibration."""
    models, pt, fig, axes = _model_columns(bins, 1, 3.1, sharey=True)
    for j, m in enumerate(models):
        ax = axes[0, j]
        ax.plot([0, 1], [0, 1], color="k", ls=":", lw=1)
        for i in INPUTS:
            d = bins[(bins["model"] == m) & (bins["input"] == i) & (bins["images"] > 0)]
            ax.plot(d["mean confidence"], d["accuracy"], marker="o", ms=3, lw=1, label=i)
        _style(ax, pt, m, "mean confidence in the bin", "accuracy in the bin" if j == 0 else "")
        ax.set_xlim(0, 1.02), ax.set_ylim(0, 1.02)
    _legend_below(fig, axes, pt)
    return fig


def calibration_table(errors: pd.DataFrame) -> pd.DataFrame:
    """Per architecture and input: the calibration measures, means over replicates."""
    cols = [c for c in errors.columns if c not in ("model", "replicate", "input")]
    return errors.groupby(["model", "input"], sort=False)[cols].mean()


# ----------------------------------------------------------------------------- insertion curves

def insertion_figure(curves: pd.DataFrame):
    """Accuracy (%) and confidence in the full image's class against the kept fraction (log), a line per order."""
    reps = _replicate_means(curves, ["model", "order", "fraction"], ["correct", "confidence"])
    reps["accuracy (%)"] = 100 * reps["correct"]
    reps["kept (%)"] = 100 * reps["fraction"]
    models, pt, fig, axes = _model_columns(curves, 2, 5.2, sharex=True)
    for j, m in enumerate(models):
        for i, y in enumerate(("accuracy (%)", "confidence")):
            ax = axes[i, j]
            sns.lineplot(data=reps[reps["model"] == m], x="kept (%)", y=y, hue="order", hue_order=list(ORDERS),
                         ax=ax, errorbar="sd", marker="o", markersize=3, linewidth=1)
            ax.set_xscale("log")
            _style(ax, pt, m if i == 0 else "", "pixels kept (%)" if i == 1 else "",
                   ("accuracy (%)" if i == 0 else "confidence in the full image's class") if j == 0 else "")
    _legend_below(fig, axes, pt)
    return fig


def insertion_table(curves: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) per architecture and order (rows) at each kept fraction (columns), mean over replicates."""
    reps = _replicate_means(curves, ["model", "order", "fraction"], ["correct"])
    out = 100 * reps.groupby(["model", "order", "fraction"], sort=False)["correct"].mean().unstack("fraction")
    out.columns = [f"{100 * f:g}%" for f in out.columns]
    return out


# ----------------------------------------------------------------------------- glue values

#: 'lo to hi' of the finite values (one value where both read the same); '—' where none is finite
_range = partial(span, sep=" to ")


def headroom_range(verdict) -> str:
    """Range over architectures of the dilated retraining's headroom (full images minus random subsets, points)."""
    return _range(verdict.numbers["headroom (points)"])


def verdict_values(prefix: str, verdict, column: str, digits: int = 1) -> dict:
    """Glue values ``<prefix>_verdict``, ``_range`` (of ``column``), ``_low``/``_high`` (interval ends), ``_margin``."""
    n = verdict.numbers
    margins = list(dict.fromkeys(n["margin"])) if "margin" in n else []
    return {f"{prefix}_verdict": verdict.word, f"{prefix}_range": _range(n[column], digits),
            f"{prefix}_low": number(n["95% low"].min() if "95% low" in n else None, digits),
            f"{prefix}_high": number(n["95% high"].max() if "95% high" in n else None, digits),
            f"{prefix}_margin": ", ".join(margins) or MISSING}


def setup_values(run, p) -> dict:
    """Glue values of this execution's settings (τ, kept %, kernels, SmoothGrad, bins, sizes)."""
    ks = [int(k) for k in p.kernels]
    return {"tau": f"{p.tau:g}", "pct": f"{100 * p.frac:g}", "kernel": kernel_label(ks[0]),
            "kernels": ", ".join(kernel_label(k) for k in ks), "sg_samples": int(p.smoothgrad_samples),
            "sg_sigma": f"{p.smoothgrad_sigma:g}", "sg_images": int(p.saliency_images), "bins": int(p.bins),
            "n_test": run.profile.test_size or "all", "replicates": run.profile.replicates,
            "n_train": run.profile.retrain_images or "all",
            "retrain_replicates": run.profile.retrain_replicates or run.profile.replicates,
            "fractions": ", ".join(f"{100 * f:g}%" for f in p.fractions)}
