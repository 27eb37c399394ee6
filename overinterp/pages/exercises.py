"""The chapters' exercises: where they are, and the numbers their solutions quote.

:func:`exercises` reads a chapter's Exercises section (its last Markdown cell) into one
:class:`Exercise` per ``{exercise}`` directive, which the instructors' page indexes with run times
(:mod:`overinterp.pages.instructors`). The numbers a solution quotes are a measure read along the
settings a chapter varied, glued so that another chapter's solution shows it with myst-nb's
cross-document glue (``{glue:text}`06_why.ipynb::ex_mask_C1:s```), never written by hand.

The exercises themselves are Markdown at the end of the chapters of Part I and of ``08_sis_accuracy``,
``10_ensembles`` and ``14_shared_interest`` (``{exercise}`` and ``{solution}`` directives of
sphinx-exercise, solutions folded with ``:class: dropdown``). Two chapters append a cell that glues what
the others quote:

* ``06_why``: :func:`sweep_values`, each claim's measure along each one-factor sweep
  (backward-selection method, mask value, training length, width) and the share of confidently
  classified test images along the training length and the width;
* ``10_ensembles``: :func:`threshold_values`, the mean SIS size against τ of one model
  and of the ensemble of all models (Figure 6).

    glue_all(sweep_values({"method": methods, "mask": masks, "epochs": epochs, "width": widths}))
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from overinterp.config.chapters import ROOT
from overinterp.experiments.factors import MEASURES
from overinterp.experiments.runs import CONFIDENT
from overinterp.paper.formatting import MISSING

__all__ = ["Exercise", "exercises", "along", "sweep_values", "threshold_values"]

HEADING = "## Exercises"     # the first line of a chapter's Exercises section
_EXERCISE = re.compile(r"^(`{3,})\{exercise\} ?([^\n]*)\n:label: (\S+)\n(.*?)^\1$", re.S | re.M)
_BLOCK = re.compile(r"^```[a-z]*\n(.*?)^```$", re.S | re.M)


@dataclass(frozen=True)
class Exercise:
    """One ``{exercise}`` of a chapter: its chapter (notebook stem), label, title and what it runs:
    the parameters of its papermill command (``-p seed 3``), else the innermost library call of the
    first line of its first code block that calls one (``F.mask_sweep(…)`` of ``F.table(F.mask_sweep(run))``)."""
    chapter: str
    label: str
    title: str
    runs: str


def exercises(stem: str, book: Path | None = None) -> list[Exercise]:
    """The exercises of chapter ``stem`` (a notebook of ``book``, default the repository's book/), in
    their order; none where the notebook does not end with an Exercises section."""
    cells = json.loads(((book or ROOT / "book") / f"{stem}.ipynb").read_text())["cells"]
    text = "".join(cells[-1]["source"]) if cells and cells[-1]["cell_type"] == "markdown" else ""
    if not text.startswith(HEADING):
        return []
    out = []
    for _, title, label, body in _EXERCISE.findall(text):
        blocks = _BLOCK.findall(body)
        papermill = [line for b in blocks for line in b.splitlines() if line.startswith("papermill ")]
        calls = [c for line in (blocks[0] if blocks else "").splitlines()
                 for c in re.findall(r"\b([a-z_]\w*\.\w+)\(", line)[-1:]]
        runs = papermill[0].split(" out.ipynb ", 1)[-1] if papermill else (f"{calls[0]}(…)" if calls else "")
        out.append(Exercise(stem, label, title.strip(), runs))
    return out


#: how a sweep's setting reads in a sentence
_SHOW = {"epochs": lambda s: f"{s} epoch{'' if str(s) == '1' else 's'}", "width": lambda s: f"{s} filters",
         "tau": lambda s: f"τ = {float(s):g}"}


def along(rows: pd.DataFrame, column: str, setting: str = "setting", factor: str | None = None,
          digits: int = 1, missing: str = "—") -> str:
    """``column`` of each row with its setting, in the rows' order: "52.8 (1 epoch), 50.1 (2 epochs)";
    an undefined value (NaN) reads ``missing`` ("—" in a table's cell; "no estimate" in a sentence)."""
    show = _SHOW.get(factor or setting, str)
    return ", ".join(f"{missing if pd.isna(v) or math.isinf(v) else f'{v:.{digits}f}'} ({show(s)})"
                     for s, v in zip(rows[setting], rows[column]))


def sweep_values(sweeps: dict[str, pd.DataFrame]) -> dict:
    """``ex_<factor>_<claim>`` for each sweep of chapter 6 and each claim C1-C3 (its measure along the
    settings; the method sweep on the sample every method ran on; ``ex_<factor>_<claim>_words``, the
    same with "no estimate" where a measure is undefined, for a sentence), and ``ex_<factor>_confident``
    (the share of confidently classified test images) where the sweep trained models."""
    out = {}
    for factor, sweep in sweeps.items():
        rows = sweep
        if "sample size" in sweep:                      # every method on the same, smallest sample
            rows = sweep[sweep["sample size"] == sweep["sample size"].min()]
        for claim, (column, _) in MEASURES.items():
            out[f"ex_{factor}_{claim}"] = along(rows, column, factor=factor, digits=2 if claim == "C3" else 1)
            # for a sentence: an undefined measure in words
            out[f"ex_{factor}_{claim}_words"] = along(rows, column, factor=factor, digits=2 if claim == "C3" else 1,
                                                      missing="no estimate")
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
