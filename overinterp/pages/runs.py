"""The zoo presented (:mod:`overinterp.experiments.runs`; chapters 1 to 3): the paper's full-image rows and the glued
values of the prose.
"""
import numpy as np
import pandas as pd
import torch.nn as nn

from overinterp.experiments.runs import CONFIDENT, pooled
from overinterp.paper import numbers as paper
from overinterp.paper.formatting import MISSING, extremes, number
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.paper.verdicts import Verdict
from overinterp.zoo import data
from overinterp.zoo.train import plateaued


#: the row of the paper's ensemble of five ResNet18 (Table 1) beside ours, which ensemble the profile's replicates
PAPER_ENSEMBLE = "5× ResNet18 ensemble (paper)"


def training_values(run, histories: dict[str, list[dict]]) -> dict:
    """Chapter 2's prose on training: models, how many plateaued, the profile's epochs."""
    return {"n_models": len(histories), "n_plateau": sum(plateaued(h) for h in histories.values()),
            "epochs": run.profile.train.epochs}


def zoo_values(stats: pd.DataFrame) -> dict:
    """Chapter 2's prose: ranges of the models' mean confidence and share of confident test images."""
    return {**extremes("conf", stats[("mean confidence", "mean")], 2),
            **extremes("share", stats[(CONFIDENT, "mean")], 0, spread=True)}


def criterion_values(run, whole: dict[str, list[tuple[float, float]]]) -> dict:
    """Chapter 1's prose on :func:`~overinterp.experiments.runs.whole_test`: ranges and models meeting the profile's
    criterion."""
    p, rows = run.profile, [v for vs in whole.values() for v in vs]
    acc, conf = [r[0] for r in rows], [r[1] for r in rows]
    meets = [(p.min_accuracy is None or a >= p.min_accuracy) and (p.min_confident is None or c >= p.min_confident)
             for a, c in rows]
    stated = p.min_accuracy is not None or p.min_confident is not None
    return {"n_whole_test": len(data.load(run.dataset, "test")), **extremes("whole", acc),
            **extremes("whole_conf", conf, 0),
            "min_accuracy": MISSING if p.min_accuracy is None else number(p.min_accuracy, 0, suffix="%"),
            "min_confident": MISSING if p.min_confident is None else number(p.min_confident, 0, suffix="%"),
            "n_meet": sum(meets) if stated else MISSING, "n_whole_models": len(rows), "whole_tau": f"{p.sis_threshold:g}"}


def zoo_paper_rows(models: dict[str, list[nn.Module]]) -> dict[str, dict]:
    """The paper's full-image rows, with its 5-ResNet18 ensemble as a row of its own."""
    rows = {ARCH_NAMES[a]: paper.table1(a, "full", "full") for a in models}
    if len(models.get("resnet18", ())) > 1:
        rows[PAPER_ENSEMBLE] = paper.table1("ensemble 5x resnet18", "full", "full")
    return rows


def accuracy_values(acc: pd.DataFrame, singles: list[str], ensembles: list[str]) -> dict:
    """Chapter 2's prose: best architecture and ensemble, models less accurate out of distribution."""
    test = acc[("test", "mean")]
    single, ens = test[singles], test[ensembles]
    ood = [c for c in dict.fromkeys(c for c, _ in acc.columns) if c != "test"]
    lower = pd.DataFrame({c: acc[(c, "mean")] < test for c in ood}, index=test.index).all(axis=1)
    return {"best_arch": single.idxmax(), "best_acc": number(single.max()),
            "ens_name": ens.idxmax(), "ens_acc": number(ens.max()),
            "ood_lower_n": int(lower.sum()), "ood_rows_n": len(test)}


def empty_values(by_replicate: dict[str, list]) -> dict:
    """Chapter 3's prose: range over architectures of the share (%) of empty SIS (blank reaches tau)."""
    shares = [100 * float(np.mean(v[~np.isnan(v)] == 0)) for v in pooled(by_replicate).values()
              if (~np.isnan(v)).any()]
    return extremes("sis_empty", shares, 0, spread=True)


def sis_values(verdict: Verdict) -> dict:
    """Chapter 3's prose on the SIS-size verdict: range of mean SIS size (%), the verdict."""
    n = verdict.numbers
    return {**extremes("sis_mean", n["mean SIS size (%)"]), "sis_below_5": verdict.word,
            "sis_high_max": number(n['95% high'].max()), "sis_images_min": int(n["images"].min()),
            "sis_images_max": int(n["images"].max()), "sis_replicates": int(n["replicates"].max())}


def beside_paper(ours: pd.DataFrame, paper: dict[str, dict], ours_label: str) -> pd.DataFrame:
    """The paper's CIFAR-10 columns beside ours by row label, paper-only rows last, '—' where missing."""
    extra = [k for k, row in paper.items() if row and k not in ours.index]
    if extra:
        ours = ours.reindex(list(ours.index) + extra).fillna(MISSING)
    p = pd.DataFrame.from_dict(paper, orient="index").reindex(ours.index)
    p = p.reindex(columns=list(dict.fromkeys(c for row in paper.values() for c in row))).fillna(MISSING)
    return pd.concat({"paper (CIFAR-10)": p, ours_label: ours}, axis=1)
