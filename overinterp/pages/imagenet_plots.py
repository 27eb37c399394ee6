"""Figures of the chapter "Overinterpretation on ImageNet" (paper section 4.1.1): images with their SIS
(Figure 3) and the frequency of SIS pixel locations (Figure 4), titled from
:mod:`overinterp.experiments.imagenet_chapter`'s numbers; a note-only figure where there is nothing to draw.
"""
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from overinterp.experiments import imagenet, imagenet_chapter
from overinterp.pages.plots import note_figure, to_pixels
from overinterp.paper.formatting import number


def examples_figure(images: torch.Tensor, masks: torch.Tensor, titles: Sequence[str], size: float = 1.9):
    """Figure 3: per image (columns) the image, its SIS in red, and the SIS alone (the rest grey)."""
    px = to_pixels(images, imagenet.MEAN, imagenet.STD)
    k = masks.cpu().numpy()[..., None]
    red = np.where(k, np.array([1.0, 0.0, 0.0]), 0.35 * px + 0.65)
    masked = np.where(k, px, 0.5)
    n = len(px)
    fig, axes = plt.subplots(3, n, figsize=(size * n, size * 3 + 0.4), squeeze=False)
    for c in range(n):
        for r, (label, img) in enumerate([("image", px), ("SIS location", red), ("SIS alone", masked)]):
            ax = axes[r, c]
            ax.imshow(img[c], interpolation="nearest")
            ax.set_xticks([]), ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
        axes[0, c].set_title(titles[c], fontsize=7)
    fig.tight_layout()
    return fig


def heatmap_figure(freqs: dict[str, torch.Tensor], band: torch.Tensor | None = None):
    """Figure 4: a heatmap per ``freqs`` entry of the fraction of SIS holding each pixel; ``band``'s edge dotted."""
    fig, axes = plt.subplots(1, len(freqs), figsize=(2.8 * len(freqs) + 0.6, 2.8), squeeze=False, layout="constrained")
    for ax, (name, f) in zip(axes[0], freqs.items()):
        im = ax.imshow(f.cpu().numpy(), vmin=0, vmax=max(float(f.max()), 1e-9), cmap="viridis")
        if band is not None:
            ax.contour((~band).numpy().astype(float), levels=[0.5], colors="w", linewidths=0.8, linestyles=":")
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_title(name, fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.75, label="fraction of SIS")
    return fig


def examples(s: imagenet_chapter.Sample, sel: imagenet_chapter.Selected):
    """Figure 3: each image at the highest threshold where it has an SIS, titled with class and confidence."""
    panels = imagenet_chapter.example_panels(s, sel)
    if panels is None:
        return note_figure("no image has an SIS at these thresholds")
    images, masks, about = panels
    titles = [f"{r.image}: {r.predicted} ({number(r.confidence, 2)})\nSIS at τ = {r.tau:g}"
              for r in about.itertuples()]
    return examples_figure(images, masks, titles)


def heatmap(sel: imagenet_chapter.Selected, taus, band: torch.Tensor):
    """Figure 4: the frequency of SIS pixel locations, a panel per threshold with at least one SIS."""
    freqs = {f"τ = {t:g} (n = {n})": f for t, (n, f) in imagenet_chapter.heatmap_freqs(sel, taus).items()}
    return heatmap_figure(freqs, band) if freqs else note_figure("no SIS at these thresholds")
