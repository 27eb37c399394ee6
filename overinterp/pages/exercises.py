"""Numbers the chapters' exercise solutions quote (issue 22): a measure read along the settings a
chapter varied, glued so that another chapter's solution shows it with myst-nb's cross-document glue
(``{glue:text}`06_why.ipynb::ex_mask_C1:s```), never written by hand.

The exercises themselves are Markdown at the end of chapters 2-8, 10 and 14 (``{exercise}`` and
``{solution}`` directives of sphinx-exercise, solutions folded with ``:class: dropdown``). Two chapters
append a cell that glues what the others quote:

* chapter 6 (``06_why``): :func:`sweep_values`, each claim's measure along each one-factor sweep
  (backward-selection method, mask value, training length, width) and the share of confidently
  classified test images along the training length and the width;
* chapter 10 (``10_ensembles``): :func:`threshold_values`, the mean SIS size against τ of one model
  and of the ensemble of all models (Figure 6).

    glue_all(sweep_values({"method": methods, "mask": masks, "epochs": epochs, "width": widths}))
"""
from __future__ import annotations

import math

import pandas as pd

from overinterp.experiments.factors import MEASURES
from overinterp.experiments.runs import CONFIDENT

__all__ = ["along", "sweep_values", "threshold_values"]

#: how a sweep's setting reads in a sentence
_SHOW = {"epochs": lambda s: f"{s} epoch{'' if str(s) == '1' else 's'}", "width": lambda s: f"{s} filters",
         "tau": lambda s: f"τ = {float(s):g}"}


def along(rows: pd.DataFrame, column: str, setting: str = "setting", factor: str | None = None,
          digits: int = 1) -> str:
    """``column`` of each row with its setting, in the rows' order: "52.8 (1 epoch), 50.1 (2 epochs)";
    an undefined value (NaN) reads "—"."""
    show = _SHOW.get(factor or setting, str)
    return ", ".join(f"{'—' if pd.isna(v) or math.isinf(v) else f'{v:.{digits}f}'} ({show(s)})"
                     for s, v in zip(rows[setting], rows[column]))


def sweep_values(sweeps: dict[str, pd.DataFrame]) -> dict:
    """``ex_<factor>_<claim>`` for each sweep of chapter 6 and each claim C1-C3 (its measure along the
    settings; the method sweep on the sample every method ran on), and ``ex_<factor>_confident``
    (the share of confidently classified test images) where the sweep trained models."""
    out = {}
    for factor, sweep in sweeps.items():
        rows = sweep
        if "sample size" in sweep:                      # every method on the same, smallest sample
            rows = sweep[sweep["sample size"] == sweep["sample size"].min()]
        for claim, (column, _) in MEASURES.items():
            out[f"ex_{factor}_{claim}"] = along(rows, column, factor=factor, digits=2 if claim == "C3" else 1)
        if CONFIDENT in rows:
            out[f"ex_{factor}_confident"] = along(rows, CONFIDENT, factor=factor)
    return out


def threshold_values(means: pd.DataFrame) -> dict:
    """From chapter 10's mean SIS sizes (:func:`overinterp.experiments.mitigation.mean_sizes`): the
    first single model and the ensemble of all models (``arch`` "all"; else the last ensemble), their
    names (``ex_tau_model``, ``ex_tau_ensemble``) and their mean SIS size (%) along τ
    (``ex_tau_model_sizes``, ``ex_tau_ensemble_sizes``)."""
    single = list(means.loc[means["kind"] == "single", "model"].unique())
    ensembles = means[means["kind"] == "ensemble"]
    everything = list(ensembles.loc[ensembles["arch"] == "all", "model"].unique()) or list(ensembles["model"].unique())
    out = {}
    for key, names in (("model", single[:1]), ("ensemble", everything[-1:])):
        out[f"ex_tau_{key}"] = names[0] if names else "no such model"
        out[f"ex_tau_{key}_sizes"] = (along(means[means["model"] == names[0]].sort_values("tau"), "mean", "tau")
                                      if names else MISSING)
    return out
