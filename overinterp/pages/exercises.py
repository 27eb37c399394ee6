"""The chapters' exercises: :func:`exercises` indexes a chapter's ``{exercise}`` directives (for the instructors'
page), and :func:`sweep_values` (``06_why``) and :func:`threshold_values` (``10_ensembles``) glue the numbers
the solutions quote through cross-document glue (``{glue:text}`06_why.ipynb::ex_mask_C1:s```).

    glue_all(sweep_values({"method": methods, "mask": masks, "epochs": epochs, "width": widths}))
"""
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

HEADING = "## Exercises"     # first line of a chapter's last Markdown cell, when it has exercises
_EXERCISE = re.compile(r"^(`{3,})\{exercise\} ?([^\n]*)\n:label: (\S+)\n(.*?)^\1$", re.S | re.M)
_BLOCK = re.compile(r"^```[a-z]*\n(.*?)^```$", re.S | re.M)


@dataclass(frozen=True)
class Exercise:
    """One ``{exercise}``: chapter stem, label, title, and what it runs (papermill parameters like ``-p seed 3``,
    else its first code block's innermost library call, e.g. ``F.mask_sweep(…)``)."""
    chapter: str
    label: str
    title: str
    runs: str


def exercises(stem: str, book: Path | None = None) -> list[Exercise]:
    """The exercises of chapter ``stem`` (in ``book``, default book/), in order; [] without an Exercises section."""
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


def _along(rows: pd.DataFrame, column: str, setting: str = "setting", factor: str | None = None,
           digits: int = 1, missing: str = MISSING) -> str:
    """``column`` of each row with its setting: "52.8 (1 epoch), 50.1 (2 epochs)"; NaN reads ``missing``."""
    show = _SHOW.get(factor or setting, str)
    return ", ".join(f"{missing if pd.isna(v) or math.isinf(v) else f'{v:.{digits}f}'} ({show(s)})"
                     for s, v in zip(rows[setting], rows[column]))


def sweep_values(sweeps: dict[str, pd.DataFrame]) -> dict:
    """Glue values ``ex_<factor>_<claim>`` (claims C1-C3 along each sweep of chapter 6), ``..._words`` (same, for
    a sentence) and ``ex_<factor>_confident`` (share of confidently classified images) where models were trained."""
    out = {}
    for factor, sweep in sweeps.items():
        # every method on the same, smallest sample
        rows = sweep[sweep["sample size"] == sweep["sample size"].min()] if "sample size" in sweep else sweep
        for claim, (column, _) in MEASURES.items():
            digits = 2 if claim == "C3" else 1
            out[f"ex_{factor}_{claim}"] = _along(rows, column, factor=factor, digits=digits)
            out[f"ex_{factor}_{claim}_words"] = _along(rows, column, factor=factor, digits=digits,
                                                       missing="no estimate")
        if CONFIDENT in rows:
            out[f"ex_{factor}_confident"] = _along(rows, CONFIDENT, factor=factor)
    return out


def threshold_values(means: pd.DataFrame) -> dict:
    """Glue values ``ex_tau_{model,ensemble}`` and ``..._sizes`` from chapter 10's mean SIS sizes: the first single
    model and the all-model ensemble, and their mean SIS size (%) along τ (Figure 6)."""
    single = list(means.loc[means["kind"] == "single", "model"].unique())
    ensembles = means[means["kind"] == "ensemble"]
    everything = list(ensembles.loc[ensembles["arch"] == "all", "model"].unique()) or list(ensembles["model"].unique())
    out = {}
    for key, names in (("model", single[:1]), ("ensemble", everything[-1:])):
        out[f"ex_tau_{key}"] = names[0] if names else "no such model"
        out[f"ex_tau_{key}_sizes"] = (_along(means[means["model"] == names[0]].sort_values("tau"), "mean", "tau")
                                      if names else MISSING)
    return out
