"""Figures of the book: SIS panels (paper Fig. 1, S1), backward-selection curves,
pixel-location heatmaps (Fig. 2), training curves and numeric tables formatted for display.

Images come in normalised (the models' input); ``to_pixels`` turns them back
into [0, 1] pixels with the dataset's mean/std. Masked pixels are drawn in a
neutral colour that no real pixel has (light blue-grey), so a reader sees
exactly which pixels a subset keeps.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch

__all__ = ["to_pixels", "show_masked", "image_rows", "backselect_curves", "heatmaps", "training_curves",
           "mean_std", "MASK_RGB"]

MASK_RGB = (0.78, 0.84, 0.92)  # what a masked pixel is drawn as


def to_pixels(images: torch.Tensor, mean, std) -> np.ndarray:
    """Normalised (N, C, H, W) -> (N, H, W, 3) floats in [0, 1] for imshow."""
    m = torch.as_tensor(mean, dtype=images.dtype).view(1, -1, 1, 1)
    s = torch.as_tensor(std, dtype=images.dtype).view(1, -1, 1, 1)
    x = (images.detach().cpu() * s + m).clamp(0, 1)
    x = x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x
    return x.permute(0, 2, 3, 1).numpy()


def show_masked(images: torch.Tensor, keep: torch.Tensor | None, mean, std) -> np.ndarray:
    """Pixels of ``images`` where ``keep`` (N, H, W) is True, :data:`MASK_RGB` elsewhere."""
    px = to_pixels(images, mean, std)
    if keep is None:
        return px
    k = keep.detach().cpu().numpy()[..., None]
    return np.where(k, px, np.asarray(MASK_RGB, dtype=px.dtype))


def image_rows(rows: dict[str, np.ndarray], col_titles=None, size: float = 1.3):
    """A grid with one labelled row per entry of ``rows`` ((N, H, W, 3) each)."""
    n = max(len(v) for v in rows.values())
    fig, axes = plt.subplots(len(rows), n, figsize=(size * n, size * len(rows) + 0.3), squeeze=False)
    for r, (label, imgs) in enumerate(rows.items()):
        for c in range(n):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c], interpolation="nearest")
            else:
                ax.axis("off")
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            if r == 0 and col_titles is not None and c < len(col_titles):
                ax.set_title(col_titles[c], fontsize=7)
    fig.tight_layout()
    return fig


def backselect_curves(values: torch.Tensor, confidence: torch.Tensor, labels=None, threshold: float | None = None,
                      ax=None):
    """Confidence f vs fraction of features remaining, one line per image (values (N, P))."""
    ax = ax or plt.subplots(figsize=(5, 3.2))[1]
    v = torch.cat([confidence[:, None], values], 1).detach().cpu().float()  # (N, P+1): 0..P removed
    P = values.shape[1]
    remaining = 1 - torch.arange(P + 1) / P
    for i in range(len(v)):
        ok = ~torch.isnan(v[i])
        ax.plot(remaining[ok], v[i][ok], lw=1, label=None if labels is None else labels[i])
    if threshold is not None:
        ax.axhline(threshold, color="k", ls=":", lw=1, label=f"τ = {threshold}")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("fraction of pixels remaining (log scale)")
    ax.set_ylabel("confidence f (predicted class)")
    if labels is not None or threshold is not None:
        ax.legend(fontsize=7)
    return ax


def heatmaps(freqs: dict[str, torch.Tensor], titles: dict[str, str] | None = None, size: float = 2.6):
    """One heatmap per model of the fraction of subsets containing each pixel (paper Fig. 2)."""
    fig, axes = plt.subplots(1, len(freqs), figsize=(size * len(freqs), size), squeeze=False)
    vmax = max(float(f.max()) for f in freqs.values())
    for ax, (name, f) in zip(axes[0], freqs.items()):
        sns.heatmap(f.cpu().numpy(), ax=ax, vmin=0, vmax=vmax, cmap="viridis", square=True, xticklabels=False,
                    yticklabels=False, cbar_kws={"shrink": 0.7})
        ax.set_title((titles or {}).get(name, name), fontsize=8)
    fig.tight_layout()
    return fig


def training_curves(histories: dict[str, list[dict]], key: str = "loss", ax=None, ylabel: str = "training loss"):
    """One line per model of a per-epoch statistic of :func:`overinterp.train.fit`'s history."""
    ax = ax or plt.subplots(figsize=(5, 3.2))[1]
    for name, h in histories.items():
        ax.plot([e["epoch"] for e in h], [e[key] for e in h], marker=".", lw=1, label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    if key == "loss":
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    return ax


def mean_std(table, digits: int = 2):
    """A table with numeric (column, 'mean' | 'std') pairs, formatted 'mean ± std' for display
    (just the mean where the std is NaN: a single replicate)."""
    import pandas as pd
    cols = list(dict.fromkeys(c[0] for c in table.columns))
    out = {}
    for c in cols:
        m, s = table[(c, "mean")], table[(c, "std")]
        out[c] = [f"{a:.{digits}f}" if np.isnan(b) else f"{a:.{digits}f} ± {b:.{digits}f}" for a, b in zip(m, s)]
    return pd.DataFrame(out, index=table.index)
