"""Figures comparing models' SIS sizes: SIS size against accuracy (chapter 8; paper section 4.4, Figures 5
and S3), adversarially robust models (chapter 9; section 4.5) and ensembles and input dropout (chapters 10-11;
section 4.6, Figure 6), from :mod:`overinterp.experiments.sis_accuracy`, ``.robust`` and ``.mitigation``.

    fig5, figs3 = increase_figure(inc), confidence_figure(images)    # chapter 8
    ax = sizes_figure(sizes)                                         # chapter 9
    fig6 = sis_figure(means, accuracy)                               # chapters 10 and 11
"""
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
import numpy as np
import pandas as pd
import seaborn as sns

from overinterp.experiments.sis_accuracy import CONF
from overinterp.pages.plots import note_figure
from overinterp.paper.numbers import SIS_MEAN_SIZE_BELOW


def _tau_axis(ax, taus: Sequence[float]) -> None:
    """Thresholds at equal spacing (0.95 and 0.99 would crowd on a linear axis)."""
    ax.set_xticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel("SIS threshold τ")


# ------------------------------------------------------------------------ does SIS size predict accuracy? (chapter 8)

def increase_figure(increase: pd.DataFrame, sets: Sequence[str] | None = None, size: float = 4.0):
    """Figure 5: percentage increase against τ with 95% intervals, a line per model, a panel per set; y symlog
    above ±100% (a small misclassified mean makes increases of thousands of percent)."""
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
    """Figure S3: mean full-image confidence of correct (solid) and incorrect (dashed) images with an SIS at each
    τ, bootstrap 95% intervals, a colour per model, a panel per set."""
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


# ---------------------------------------------------------------------------- adversarially robust models (chapter 9)

def no_sis_figure(tau: float):
    """The figure in place of the gallery when no image has an SIS of the robust model."""
    return note_figure(f"no image has an SIS of the robust model at τ = {tau:g}")


def sizes_figure(sizes: pd.DataFrame):
    """Strip plot on the current axes (returned) of SIS size (%) per model and replicate; dotted: the paper's
    bound (section 4.1). Seeds numpy's global generator (restored after) so seaborn's jitter is reproducible."""
    state = np.random.get_state()
    np.random.seed(0)
    try:
        ax = sns.stripplot(data=sizes.dropna(), x="model", y="SIS size (%)", hue="replicate", dodge=True, size=4,
                           palette="deep")
    finally:
        np.random.set_state(state)
    ax.axhline(100 * SIS_MEAN_SIZE_BELOW, color="k", ls=":", lw=1)
    ax.set_xlabel("")
    ax.set_ylabel("SIS size (% of pixels)")
    ax.legend(title="replicate", fontsize=9, title_fontsize=9, loc="upper left", bbox_to_anchor=(1, 1))
    ax.figure.set_size_inches(5, 3.2)
    ax.figure.tight_layout()
    return ax


# ---------------------------------------------------------------------- ensembles and input dropout (chapters 10, 11)

#: line style per kind of model of Figure 6
_STYLE = {"single": dict(ls="--", lw=1.0, marker="o", ms=2), "ensemble": dict(ls="-", lw=2.2, marker="s", ms=3),
          "input dropout": dict(ls=":", lw=1.8, marker="^", ms=3),
          "input dropout, no masks": dict(ls="-.", lw=1.2, marker="v", ms=3),
          "standard through masks": dict(ls="--", lw=1.8, marker="x", ms=3)}


def sis_figure(means: pd.DataFrame, accuracy: Mapping[str, float] | None = None, ax=None):
    """Figure 6: mean SIS size (%) against τ, a line per model with its 95% interval shaded, colour by
    architecture, style by kind; ``accuracy`` ({model: test accuracy %}) goes in the legend."""
    ax = ax or plt.subplots(figsize=(7.5, 4.2), layout="constrained")[1]
    taus = sorted(means["tau"].unique())
    pos = {t: k for k, t in enumerate(taus)}
    archs = [a for a in means["arch"].unique() if a != "all"]
    colors = {**dict(zip(archs, sns.color_palette())), "all": (0, 0, 0)}
    for model, g in means.groupby("model", sort=False):
        kind, arch = g["kind"].iloc[0], g["arch"].iloc[0]
        x = g["tau"].map(pos)
        label = model if accuracy is None or model not in accuracy else f"{model}: {accuracy[model]:.1f}%"
        ax.plot(x, g["mean"], color=colors[arch], label=label, **_STYLE[kind])
        ax.fill_between(x, g["low"], g["high"], color=colors[arch], alpha=0.12 if kind == "single" else 0.2, lw=0)
    _tau_axis(ax, taus)
    ax.set_ylabel("mean SIS size (% of pixels)")
    ax.legend(title="model: test accuracy" if accuracy else None, fontsize=7, title_fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax.figure
