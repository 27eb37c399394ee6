"""Figures that compare models' SIS sizes: chapter 8 "Does SIS size predict accuracy?" (``book/08_sis_accuracy``;
paper 4.4, Figure 5 and S3), chapter 9 "Adversarially robust models" (``book/09_robust``; paper 4.5,
Figure 1 "Adv. Robust") and chapters 10 and 11 on ensembles and input dropout
(``book/10_ensembles``, ``book/11_input_dropout``; paper 4.6, Figure 6).

Each function takes what an experiment returned (:mod:`overinterp.experiments.sis_accuracy`,
``.robust``, ``.mitigation``) and returns a matplotlib figure (:func:`sizes_figure`: its axes);
:func:`overinterp.pages.chapter.figure` glues it. Thresholds are drawn at equal spacing (0.95 and 0.99
would crowd on a linear axis).

    fig5, figs3 = increase_figure(inc), confidence_figure(images)    # chapter 8
    ax = sizes_figure(sizes)                                         # chapter 9
    fig6 = sis_figure(means, accuracy)                               # chapters 10 and 11
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
import numpy as np
import pandas as pd
import seaborn as sns

from overinterp.experiments.sis_accuracy import CONF
from overinterp.pages.plots import note_figure
from overinterp.paper.numbers import SIS_MEAN_SIZE_BELOW

__all__ = ["increase_figure", "confidence_figure", "no_sis_figure", "sizes_figure", "sis_figure"]


def _tau_axis(ax, taus: Sequence[float]) -> None:
    """Thresholds at equal spacing (0.95 and 0.99 would crowd on a linear axis)."""
    ax.set_xticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel("SIS threshold τ")


# ----------------------------------------------------------------------------- does SIS size predict accuracy? (chapter 8)

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


# ----------------------------------------------------------------------------- adversarially robust models (chapter 9)

def no_sis_figure(tau: float):
    """The figure in place of the gallery when no image has an SIS of the robust model."""
    return note_figure(f"no image has an SIS of the robust model at τ = {tau:g}")


def sizes_figure(sizes: pd.DataFrame):
    """SIS size (% of the pixels) per image with an SIS, per model (colour: replicate); dotted: the
    paper's bound on the mean (4.1). Drawn on the current axes; the strip's jitter is seaborn's draw
    from numpy's global generator, seeded here (and restored after) so that the figure is the same
    on every execution."""
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


# ----------------------------------------------------------------------------- ensembles and input dropout (chapters 10, 11)

#: Line style per kind of model of Figure 6 (:func:`overinterp.experiments.mitigation.sis_table`'s "kind").
_STYLE = {"single": dict(ls="--", lw=1.0, marker="o", ms=2), "ensemble": dict(ls="-", lw=2.2, marker="s", ms=3),
          "input dropout": dict(ls=":", lw=1.8, marker="^", ms=3),
          "input dropout, no masks": dict(ls="-.", lw=1.2, marker="v", ms=3),
          "standard through masks": dict(ls="--", lw=1.8, marker="x", ms=3)}


def sis_figure(means: pd.DataFrame, accuracy: Mapping[str, float] | None = None, ax=None):
    """Fig. 6: mean SIS size (% of the pixels) against tau, one line per model with its 95%
    interval shaded (:func:`overinterp.experiments.mitigation.mean_sizes`); colour by architecture
    (black: the ensemble of all), dashed single models, thick ensembles, dotted input dropout;
    ``accuracy`` (model -> test accuracy, %; :func:`overinterp.experiments.mitigation.dropout_legend`)
    goes in the legend. Thresholds at equal spacing (0.95 and 0.99 would crowd)."""
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
