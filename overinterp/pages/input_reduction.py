"""Input reduction presented (:mod:`overinterp.experiments.input_reduction`; chapter 15): the SIS table and the glued
values of the prose.
"""
import pandas as pd
import torch

from overinterp.experiments.input_reduction import MODELS
from overinterp.paper.formatting import number, rate
from overinterp.paper.numbers import ARCH_NAMES, FENG_BEAM, FENG_TABLE2


def sis_table(images: pd.DataFrame) -> pd.DataFrame:
    """Per replicate: images with an SIS and their mean SIS size (pixels), original and fine-tuned model."""
    has = images[images["SIS size"] >= 0]
    sis = has.pivot_table(index="replicate", columns="model", values="SIS size", aggfunc=["mean", "count"])
    return pd.DataFrame({"images with an SIS, original": sis[("count", "original")],
                         "images with an SIS, fine-tuned": sis[("count", "fine-tuned")],
                         "mean SIS size (pixels), original": sis[("mean", "original")],
                         "mean SIS size (pixels), fine-tuned": sis[("mean", "fine-tuned")]})


def setup_values(run, p, images: torch.Tensor) -> dict:
    """The chapter's setup for the prose; ``images`` (N, C, H, W): the reduced test images."""
    cfg = run.profile.input_reduction
    return {"arch": ARCH_NAMES.get(cfg.arch, cfg.arch), "beam": cfg.beam, "feng_beam": FENG_BEAM,
            "n_images": len(images), "replicates": run.profile.replicates,
            "pixels": images.shape[2] * images.shape[3], "train_images": cfg.train_images,
            "train_beam": cfg.train_beam, "ft_steps": cfg.steps, "batch": cfg.batch_size, "lam": f"{cfg.lam:g}",
            "lr": rate(cfg.lr), "tau": f"{run.profile.sis_threshold:g}", "min_images": int(p.min_images),
            "method": run.profile.backselect.describe(), "fraction": f"{cfg.fraction:g}",
            "fraction_pct": f"{100 * cfg.fraction:g}"}


def size_values(images: pd.DataFrame, pixels: int) -> dict:
    """Reduced sizes of the original models' reductions (their Figure 3), and the fine-tuned mean."""
    orig, tuned = (images.loc[images["model"] == m, "reduced size"] for m in MODELS)
    return {"size_orig": number(orig.mean()), "size_orig_pct": number(100 * orig.mean() / pixels),
            "size_orig_median": number(orig.median(), 0), "n_one": int((orig == 1).sum()), "n_rows": len(orig),
            "size_tuned": number(tuned.mean())}


def confidence_values(images: pd.DataFrame) -> dict:
    """Mean confidence on original and reduced inputs (their Figure 4); reduced inputs gaining confidence."""
    orig, tuned = (images[images["model"] == m] for m in MODELS)
    out = {"n_more": int((orig["confidence (reduced)"] > orig["confidence (original)"]).sum())}
    for name, g in (("orig", orig), ("tuned", tuned)):
        out[f"conf_full_{name}"] = number(g["confidence (original)"].mean(), 2)
        out[f"conf_red_{name}"] = number(g["confidence (reduced)"].mean(), 2)
    return out


def table2_values(summary: pd.DataFrame) -> dict:
    """The means of :func:`~overinterp.experiments.input_reduction.table2_summary`, glued as accuracy_before, ...,
    reduced_size_after."""
    return {col.replace(" ", "_"): number(summary[(col, "mean")].iloc[0])
            for col in ("accuracy before", "accuracy after", "reduced size before", "reduced size after")}


def beside_feng(ours: pd.DataFrame, label: str) -> pd.DataFrame:
    """Their Table 2 (NLP validation sets, lengths in words) above our rows (lengths in pixels)."""
    cols = list(ours.columns)
    feng = pd.DataFrame.from_dict({f"Feng et al.: {k} (words)": [number(v, 2) for v in vals]
                                   for k, vals in FENG_TABLE2.items()}, orient="index", columns=cols)
    return pd.concat([feng, ours.set_axis([f"{label}: {i} (pixels)" for i in ours.index])])
