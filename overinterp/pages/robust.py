"""Adversarially robust models presented (:mod:`overinterp.experiments.robust`; paper 4.5): accuracy tables beside
Madry et al.'s and the glued values of the prose.
"""
from typing import Sequence

import pandas as pd
import torch
import torch.nn as nn

from overinterp.experiments.robust import epsilon, model_name, training_attack
from overinterp.experiments.runs import mean_std
from overinterp.paper.formatting import MISSING, bounds, count, number
from overinterp.paper.numbers import MADRY_ACCURACY, MADRY_TRAINING
from overinterp.zoo.train import plateaued


def accuracy_table(acc: pd.DataFrame) -> pd.DataFrame:
    """:func:`~overinterp.experiments.robust.attack_accuracies` mean and std per model, columns (measure, 'mean' |
    'std')."""
    cols = ["clean accuracy (%)", "PGD accuracy (%)"]
    return pd.DataFrame({m: mean_std(g[cols].reset_index(drop=True)) for m, g in acc.groupby("model", sort=False)}).T


def _summed(per: str) -> str:
    """'13 + 1' (images per replicate) as '14 (13 + 1)': a count that reads with its plural noun."""
    parts = str(per).split(" + ")
    try:
        total = sum(int(x) for x in parts)
    except ValueError:
        return str(per)
    return str(per) if len(parts) < 2 else f"{total} ({per})"


def setup_values(run, tau: float) -> dict:
    """Glue name -> value of the setup: tau, attacks, robust training."""
    cfg, p = run.profile.robust, run.profile
    eps = epsilon(run.dataset, cfg)
    return {"tau": tau, "eps": f"{eps:.4g}", "eps255": number(255 * eps), "train_steps": count(cfg.steps, "step"),
            "train_step": f"{training_attack(run).step_size:.4g}", "eval_steps": count(cfg.eval_steps, "step"),
            "eval_restarts": count(cfg.eval_restarts, "random start"), "arch_name": model_name(cfg.arch, False),
            "train_size": cfg.train_size or p.train_size or "all", "epochs": count(cfg.epochs or p.train.epochs, "epoch")}


def training_values(robust: Sequence[nn.Module]) -> dict:
    """Glue name -> value: robust replicates, how many plateaued."""
    return {"n_replicates": len(robust), "n_robust_plateau": sum(plateaued(m.info["history"]) for m in robust)}


def paper_accuracy_table() -> pd.DataFrame:
    """Madry et al.'s clean and white-box leaderboard (MadryLab/cifar10_challenge) PGD accuracy, one row."""
    paper, eps = MADRY_ACCURACY, number(255 * MADRY_TRAINING["epsilon"], 0)
    return pd.DataFrame({"clean accuracy (%)": [f"{paper['clean accuracy (%)']:g}"],
                         "PGD accuracy (%)": [f"{paper['PGD-20 accuracy (%)']:g} (20 steps); "
                                              f"{paper['PGD-20, 10 restarts accuracy (%)']:g} (10 restarts)"]},
                        index=[f"Madry et al.'s model (CIFAR-10, ε = {eps}/255)"])


def accuracy_values(table: pd.DataFrame, n_images: int, arch: str) -> dict:
    """Glue name -> value: attacked images, robust and standard mean clean and PGD accuracy (%)."""
    return {"n_eval": n_images, **{f"{who}_{key}": number(table.loc[model_name(arch, robust), (col, "mean")])
                                   for who, robust in [("robust", True), ("standard", False)]
                                   for col, key in [("clean accuracy (%)", "clean"), ("PGD accuracy (%)", "pgd")]}}


def sis_values(sizes: pd.DataFrame, labels: torch.Tensor, robust_name: str, classes: Sequence[str]) -> dict:
    """Glue name -> value: images and classes compared, robust SIS share (%) and mean confidence."""
    has = sizes.assign(has=sizes["SIS size (%)"].notna()).groupby("model", sort=False)["has"].mean()
    present = [classes[c] for c in sorted(set(labels.tolist()))]
    return {"n_sis_images": len(labels), "robust_has_sis": number(100 * has[robust_name], 0),
            "robust_conf": number(sizes[sizes.model == robust_name].confidence.mean(), 3),
            "sis_sample": f"{count(len(labels), 'image')} of {count(len(present), 'class', 'classes')}",
            "sel_classes": ", ".join(present)}


def verdict_values(sparse, difference: pd.DataFrame, n_pairs: int) -> dict:
    """Glue name -> value of the verdict and of :func:`~overinterp.experiments.robust.size_difference`'s first row, and
    the same in clauses that read where a number does not exist (``sparse_text``, ``diff_text``)."""
    row, d = sparse.numbers.iloc[0], difference.iloc[0]
    per = str(row["per replicate"])
    mean, iv = number(row["mean SIS size (%)"]), bounds(row["95% low"], row["95% high"])
    diff, diff_iv = number(d["difference (points)"], sign=True), bounds(d["95% low"], d["95% high"], sign=True)
    sis_images = f"{_summed(per)} images with an SIS over"
    pairs = f"{_summed(d['images per replicate'])} images over {count(int(d['replicates']), 'replicate pair')}"
    counted = f"counted: {sis_images} {count(len(per.split(' + ')), 'replicate')}"
    where = f"{count(n_pairs, 'image')} where both have an SIS"

    def interval(text: str) -> str:
        return "no interval" if text == MISSING else "95% interval " + text
    return {"n_pairs": n_pairs, "sparse_word": sparse.word, "robust_mean_sis": mean,
            "sparse_low": number(row["95% low"]), "sparse_high": number(row["95% high"]), "sparse_interval": iv,
            "sparse_counted": f"{sis_images} {len(per.split(' + '))} replicates", "diff": diff,
            "diff_low": number(d["95% low"], sign=True), "diff_high": number(d["95% high"], sign=True),
            "diff_interval": diff_iv, "diff_counted": pairs,
            "sparse_text": (f"cannot be measured: no robust model's image has an SIS ({counted})" if mean == MISSING
                            else f"is {mean}% of the pixels ({interval(iv)}; {counted})"),
            "diff_text": ("no image where both have an SIS, so there is no difference to report" if n_pairs == 0
                          else f"{where}, too few for a mean difference" if diff == MISSING
                          else f"{where}: robust minus standard, {diff} points of the image ({interval(diff_iv)}; "
                               f"{pairs})")}
