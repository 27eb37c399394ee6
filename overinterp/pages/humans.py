"""The human benchmark presented (:mod:`overinterp.experiments.humans`; paper 4.3, Table 2): our models beside the
paper's humans.
"""
import pandas as pd
import torch

from overinterp.experiments.humans import Benchmark
from overinterp.paper.formatting import MISSING, number
from overinterp.paper.numbers import ARCH_NAMES, HUMANS_SPLIT, TABLE2
from overinterp.zoo import data


def accuracy_table(bench: Benchmark) -> pd.DataFrame:
    """Per level: the paper's humans (CIFAR-10, Table 2) beside our models on their own subsets."""
    ours = f"ours: model that made the subset, {bench.dataset}/{bench.profile} (%)"
    rows = {}
    for lvl, f in enumerate(bench.fracs):
        paper = TABLE2.get(round(f, 4))
        row = {"paper: humans, CIFAR-10 (%)": f"{paper[0]} ± {paper[1]}" if paper else MISSING,
               ours: number(bench.model_accuracy[f])}
        for a in bench.counts():
            m = torch.tensor([x == a for x in bench.arch])
            acc = 100 * bench.model_correct[lvl, m].float().mean().item()
            row[f"ours: {arch_name(a)} only (n={int(m.sum())})"] = number(acc)
        rows[f"{100 * f:g}% of pixels ({_pixels(bench, lvl)} px)"] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def arch_name(arch: str) -> str:
    return ARCH_NAMES.get(arch, arch)


def _pixels(bench: Benchmark, lvl: int) -> int:
    """Pixels kept per image at level ``lvl`` (mean over images; equal unless an image has fewer features)."""
    return round(bench.keep[lvl].sum(dim=(1, 2)).float().mean().item())


def summary(bench: Benchmark) -> dict:
    """Glue keys -> values for the prose (``humans_*``)."""
    H, W = bench.keep.shape[2:]
    classes, found = data.CLASSES[bench.dataset], bench.counts("class")
    out = {"humans_n": len(bench), "humans_per_class": bench.per_class, "humans_threshold": bench.threshold,
           "humans_below": bench.below_threshold, "humans_hw": f"{H}×{W}", "humans_pixels": H * W,
           "humans_split": ", ".join(f"{n} {arch_name(a)}" for a, n in bench.counts().items()),
           "humans_levels": len(bench.fracs), "humans_engine": bench.engine,
           "humans_paper_split": ", ".join(f"{n} {arch_name(a)}" for a, n in HUMANS_SPLIT.items()),     # S4
           "humans_short_n": len(bench.short), "humans_n_classes": len(classes),
           "humans_class_counts": ", ".join(f"{name} {found.get(c, 0)}" for c, name in enumerate(classes))}
    for lvl, f in enumerate(bench.fracs):
        out[f"humans_frac_{lvl}"] = f"{100 * f:g}%"
        out[f"humans_px_{lvl}"] = _pixels(bench, lvl)
        out[f"humans_model_{lvl}"] = number(bench.model_accuracy[f], suffix="%")
    return out
