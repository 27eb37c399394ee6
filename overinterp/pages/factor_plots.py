"""Figures of the chapter "Why it holds or fails here": each claim's measure against one factor
(:mod:`overinterp.experiments.factors`) with its criterion's line, and the engine benchmark's exact backward
selection (:func:`exact_benchmark`, paper section 3.3).

    fig = sweep_figure(factors.epochs_sweep(run), "epochs", tau=0.99)
"""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from overinterp.paper import numbers as paper, claims as paper_claims
from overinterp.experiments.factors import ACC, MEASURES, sample
from overinterp.experiments.runs import model_key
from overinterp.pages import bench_results
from overinterp.paper.formatting import MISSING


def _panel(ax, df: pd.DataFrame, x: str, y: str, hue: str | None, joined: bool, reference: float | None,
           title: str) -> None:
    """Mean (and sd) of ``y`` per ``x``, a dotted line at ``reference``; the title says what it is."""
    sns.pointplot(data=df, x=x, y=y, hue=hue, ax=ax, errorbar="sd", capsize=0.1, markersize=4, linewidth=1,
                  linestyle="-" if joined else "none", dodge=0.2 if hue and df[hue].nunique() > 1 else False)
    if reference is not None:
        ax.axhline(reference, color="k", ls=":", lw=1)
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(labelsize=7)
    if df[x].astype(str).str.len().max() > 6:  # long category names: slanted ticks
        ax.tick_params(axis="x", labelrotation=35)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")


def sweep_figure(sweep: pd.DataFrame, xlabel: str, tau: float, hue: str | None = None, joined: bool = False):
    """C1-C3 (and the share of confident test images, if present) against the sweep's setting in a 2 x 2 grid,
    criteria dotted; ``hue``: a column of the sweep, its legend in a free panel; ``joined`` for ordered factors."""
    panels = [(MEASURES["C1"][0], f"C1: mean SIS size at τ = {tau:g} (%)\ndotted: the paper's bound, "
               f"{100 * paper.SIS_MEAN_SIZE_BELOW:g}%", 100 * paper.SIS_MEAN_SIZE_BELOW),
              (MEASURES["C2"][0], "C2: accuracy drop on own BS subsets (points)\ndotted: the criterion's "
               f"{paper_claims.TOLERANCE_POINTS:g}", paper_claims.TOLERANCE_POINTS),
              (MEASURES["C3"][0], "C3: share of the lift other models recover\ndotted: the criterion's ½", 0.5)]
    if "confident test images (%)" in sweep:
        panels.append(("confident test images (%)", f"test images at confidence ≥ {tau:g} (%)\n(the models' "
                       "confidence)", None))
    fig, axes = plt.subplots(2, 2, figsize=(8.4, 6.4))
    axes = axes.flatten()
    for ax, (y, title, ref) in zip(axes, panels):
        _panel(ax, sweep, "setting", y, hue, joined, ref, title)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[:len(panels)]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.set_xlabel(xlabel, fontsize=8)
    for ax in axes[len(panels):]:            # a free panel holds the legend, never the data
        ax.axis("off")
        if hue:
            ax.legend(handles, labels, title=hue, fontsize=8, title_fontsize=8, loc="center", frameon=False)
    fig.tight_layout()
    return fig


def controls_figure(controls: pd.DataFrame, num_classes: int):
    """C4: test accuracy (%) of the models retrained on each control, mean and sd; dotted: chance."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    _panel(ax, controls, "control", ACC, None, False, 100 / num_classes,
           f"test accuracy of the retrained models (%), dotted: chance ({100 / num_classes:g}%)")
    fig.tight_layout()
    return fig


def exact_benchmark(run, results: str) -> tuple[dict, pd.DataFrame | None]:
    """({glue name: value}, table per (method, setting) or None) of exact backward selection's C1 and C2 from
    the engine benchmark's files in ``results``; the table is None without results."""
    try:
        res = bench_results.load_results(results)
    except FileNotFoundError:
        res = {}
    f, tau = run.profile.factors, run.profile.sis_threshold
    source_key = model_key(run.dataset, f.arch, run.profile.name, run.seed)
    facts = bench_results.exact_facts(res, tau, 100 * paper.SIS_MEAN_SIZE_BELOW, source_key, sample(run).key())
    bench = bench_results.claim_measures(res, tau)
    table = bench.drop(columns="device").set_index(["method", "setting"]).round(1) if len(bench) else None
    return {**{f"bench_{key}": value for key, value in facts.items()}, "bench_sis_text": _sis_words(facts, tau)}, table


def _sis_words(facts: dict, tau: float) -> str:
    """A clause comparing exact's mean SIS size with the paper's bound and the coarsest gradient setting."""
    head = f"the mean SIS at τ = {tau:g}"
    if facts["exact_sis"] == MISSING:
        return f"{head} has no number: the benchmark records no image with an SIS at that threshold"
    n = facts["n"]
    coarse = ("" if facts["coarse_sis"] == MISSING else
              f", against {facts['coarse_sis']}% with {facts['coarse']}")
    return (f"{head} covers {facts['exact_sis']}% of the pixels ({n} confident image{'' if n == '1' else 's'}), "
            f"{facts['bound']} the paper's {100 * paper.SIS_MEAN_SIZE_BELOW:g}% bound{coarse}")
