"""Figures of the chapters on related methods: input reduction (chapter 15; Feng et al. 2018, their
Figures 3, 4 and 7 on our data), Shared Interest (chapter 14; Boggust et al.: the regions and the
gallery of the eight cases) and Bayes-TrEx (chapter 16; Booth et al. 2021: the VAEs, the samples of
each target and the SIS of sampled images). Each function takes what an experiment returned
(:mod:`overinterp.experiments.input_reduction`, ``.shared_interest``, ``.bayes_trex``) and returns a
matplotlib figure; :func:`overinterp.pages.chapter.figure` glues it.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from overinterp.engine.backselect import apply_keep
from overinterp.experiments.input_reduction import MODELS
from overinterp.experiments.shared_interest import ranked
from overinterp.methods.bayes_trex import VAE, Chains, Target, spread_samples
from overinterp.methods.shared_interest import CASES, EC, GTC, IOU
from overinterp.pages.plots import gallery as subset_gallery, text_pt

__all__ = ["size_figure", "confidence_figure", "examples_figure", "regions_figure", "gallery", "case_galleries",
           "vae_figure", "samples_figure", "sis_figure"]


# ----------------------------------------------------------------------------- input reduction (chapter 15)
def size_figure(images: pd.DataFrame, pixels: int):
    """Their Figure 3 on our data: histogram of the reduced sizes (pixels, log-spaced bins) of the
    original and the fine-tuned models' reductions, replicates pooled; the mean in the legend."""
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    bins = np.unique(np.geomspace(1, pixels, 25).round())
    for name, color in zip(MODELS, ("C0", "C1")):
        v = images.loc[images["model"] == name, "reduced size"]
        ax.hist(v, bins=bins, alpha=0.55, color=color, weights=np.full(len(v), 1 / len(v)),
                label=f"{name} model (mean {v.mean():.1f})")
    ax.axvline(pixels, color="k", ls=":", lw=1)
    ax.text(pixels, ax.get_ylim()[1] * 0.95, f"original: {pixels} ", ha="right", va="top", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("pixels left in the reduced input")
    ax.set_ylabel("frequency")
    ax.legend(fontsize=8, frameon=False, loc="upper center")
    return fig


def confidence_figure(images: pd.DataFrame):
    """Their Figure 4 on our data: distribution of the confidence in the predicted class on the
    original and on the reduced inputs, one panel per model, replicates pooled."""
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.8), sharey=True, layout="constrained")
    bins = np.linspace(0, 1, 21)
    for ax, name in zip(axes, MODELS):
        g = images[images["model"] == name]
        for col, color, label in (("confidence (original)", "C2", "original input"),
                                  ("confidence (reduced)", "C3", "reduced input")):
            ax.hist(g[col], bins=bins, alpha=0.55, color=color, weights=np.full(len(g), 1 / len(g)),
                    label=f"{label} (mean {g[col].mean():.2f})")
        ax.set_title(f"{name} model", fontsize=9)
        ax.set_xlabel("confidence in the predicted class")
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    axes[0].set_ylabel("frequency")
    return fig


def examples_figure(images: torch.Tensor, reductions: dict, n: int = 6, mask_value=0.0):
    """Their Figure 7 on images: the first ``n`` images (top), reduced by the original model (middle)
    and by the fine-tuned one (bottom), replicate 0; pixels removed show the mask value."""
    n = min(n, len(images))
    H, W = images.shape[2:]
    rows = [("image", images[:n])] + [(f"reduced,\n{name}", apply_keep(images[:n], reductions[(0, name)].keep[:n]
                                                                     .view(-1, H, W), mask_value)) for name in MODELS]
    lo, hi = images.min().item(), images.max().item()
    fig, axes = plt.subplots(3, n, figsize=(1.2 * n, 3.9), squeeze=False, layout="constrained")
    for i, (label, x) in enumerate(rows):
        for j in range(n):
            ax = axes[i, j]
            ax.imshow(x[j].mean(0), cmap="gray", vmin=lo, vmax=hi)
            ax.set_xticks([]), ax.set_yticks([])
            if i:
                ax.set_title(f"{int(reductions[(0, MODELS[i - 1])].size[j])} px", fontsize=7)
        axes[i, 0].set_ylabel(label, fontsize=8)
    return fig



# ----------------------------------------------------------------------------- Shared Interest (chapter 14)

def gallery(pixels: np.ndarray, G: torch.Tensor, E: torch.Tensor, table: pd.DataFrame, k: int = 6,
            classes=None, size: float = 1.25):
    """One row per case of :data:`CASES`, its ``k`` top-ranked images (:func:`ranked`) of one
    (model, replicate, method) ``table``: the image in grey, the explanation region E in orange,
    the silhouette G outlined in cyan; titles give the label → prediction and IoU / GTC / EC."""
    fig, axes = plt.subplots(len(CASES), k, figsize=(size * k + 1.2, size * len(CASES) * 1.12), squeeze=False)
    pt = text_pt(size * k + 1.2)
    for row, c in zip(axes, CASES):
        top = ranked(table, c.name, k)
        for j, ax in enumerate(row):
            ax.set_xticks([]), ax.set_yticks([])
            for s in ax.spines.values():
                s.set_visible(False)
            if j == 0:
                ax.set_ylabel(f"{c.name}\n({len(table[table['case'] == c.name])})", fontsize=pt)
            if j >= len(top):
                continue
            r = top.iloc[j]
            i = int(r["image"])
            img = np.repeat(pixels[i][..., None], 3, axis=2) * 0.75
            e = E[i].numpy()
            img[e] = 0.35 * img[e] + 0.65 * np.array([1.0, 0.55, 0.0])
            ax.imshow(img, interpolation="nearest")
            ax.contour(G[i].numpy().astype(float), levels=[0.5], colors="cyan", linewidths=0.7)
            lab = classes[int(r["label"])] if classes else int(r["label"])
            pr = classes[int(r["pred"])] if classes else int(r["pred"])
            ax.set_title(f"{lab}→{pr}\n{r[IOU]:.2f}/{r[GTC]:.2f}/{r[EC]:.2f}", fontsize=pt)
    fig.tight_layout(h_pad=0.3, w_pad=0.2)
    return fig


def regions_figure(images: torch.Tensor, labels: torch.Tensor, G: torch.Tensor, regions: dict, model: str,
                   methods: Sequence[str], split, n: int = 8):
    """The first ``n`` test images (top row), their silhouettes G and the explanation regions of
    replicate 0 of ``model`` for each of ``methods`` (:func:`overinterp.pages.plots.gallery`)."""
    show = slice(0, n)
    masks = {"silhouette G": G[show], **{m: regions[(model, 0, m)][show] for m in methods}}
    return subset_gallery(images[show], masks, split.mean, split.std,
                          col_titles=[split.classes[int(y)] for y in labels[show]], original="image")


def case_galleries(images: torch.Tensor, G: torch.Tensor, regions: dict, table: pd.DataFrame, model: str, k: int,
                   split) -> dict:
    """method -> :func:`gallery` of replicate 0 of ``model`` (its display name), one per method in
    ``table`` (in table order), on the images' pixels."""
    pixels = split.denormalise(images)[:, 0].clamp(0, 1).numpy()
    out = {}
    for m in dict.fromkeys(table["method"]):
        t = table[(table["model"] == model) & (table["replicate"] == 0) & (table["method"] == m) & table["has"]]
        out[m] = gallery(pixels, G, regions[(model, 0, m)], t, k, split.classes)
    return out


# ----------------------------------------------------------------------------- Bayes-TrEx (chapter 16)
@torch.no_grad()
def vae_figure(vaes: dict[str, VAE], images: torch.Tensor, labels: torch.Tensor, classes: Sequence[str],
               held_out: int, n: int = 10, seed: int = 0):
    """Rows: the first test image of each class, its reconstruction by the VAE of all classes, ``n``
    prior samples of each VAE (seeded)."""
    first = torch.stack([(labels == c).nonzero()[0, 0] for c in range(len(classes))])
    dev = next(vaes["all"].parameters()).device
    x = images[first].to(dev)
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, vaes["all"].mu.out_features, generator=gen).to(dev)
    rows = {"test image": x, "reconstruction": vaes["all"].reconstruct(x), "sample (all classes)": vaes["all"].decode(z),
            f"sample (no {classes[held_out]})": vaes["held out"].decode(z)}
    cols = max(len(x), n)
    fig, axes = plt.subplots(len(rows), cols, figsize=(1.0 * cols, 1.05 * len(rows) + 0.3), squeeze=False)
    for r, (label, imgs) in enumerate(rows.items()):
        for c in range(cols):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c, 0].cpu(), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            if c == 0:
                ax.set_ylabel(label, fontsize=7)
            if r == 0:
                ax.set_title(classes[c], fontsize=7)
    fig.tight_layout()
    return fig


@torch.no_grad()
def samples_figure(vaes: dict[str, VAE], chains: dict[str, Chains], logits: dict[str, torch.Tensor],
                   targets: dict[str, Target], classes: Sequence[str], n: int = 8):
    """One row per target: ``n`` decoded samples spread over its chains, titled with the classifier's
    confidence in the target class(es)."""
    cols = max(1, min(n, min(c.z.shape[0] * c.z.shape[1] for c in chains.values())))
    fig, axes = plt.subplots(len(chains), cols, figsize=(1.05 * cols, 1.25 * len(chains) + 0.2), squeeze=False)
    for r, (name, ch) in enumerate(chains.items()):
        idx = spread_samples(ch.z.shape[0] * ch.z.shape[1], cols)
        vae = vaes[name]
        imgs = vae.decode(ch.flat()[idx].to(next(vae.parameters()).device)).cpu()
        p = torch.softmax(logits[name][idx].double(), 1)[:, list(targets[name].classes)]
        for c in range(cols):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c, 0], cmap="gray", vmin=0, vmax=1, interpolation="nearest")
                ax.set_title(" / ".join(f"{v:.2f}" for v in p[c].tolist()), fontsize=6)
            if c == 0:
                ax.set_ylabel(name.replace(" (", "\n("), fontsize=6)
    fig.tight_layout()
    return fig


def sis_figure(comparison: dict, split, tau: float, n: int):
    """Sampled high-confidence images that have an SIS at ``tau`` (top; the target above each) and
    their SIS (:func:`overinterp.pages.plots.gallery`); ``comparison`` from
    :func:`overinterp.experiments.bayes_trex.sis_comparison`."""
    Xs, sis, which = comparison["images"], comparison["sis"], comparison["which"]
    show = [i for i in range(len(Xs)) if sis.found[i]][:n]
    return subset_gallery(Xs[show], {f"SIS at τ = {tau:g}": sis.mask[show]}, split.mean, split.std,
                          col_titles=[which[i] for i in show], original="sampled")
