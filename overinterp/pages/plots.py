"""Shared figures of the book (SIS panels, paper Figs. 1-2 and S1; backward-selection curves; training curves;
Table 1 bars) and display tables. Images come normalised; masked pixels are drawn in :data:`MASK_RGB`.
"""
import io
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from overinterp.paper import numbers as paper
from overinterp.experiments.runs import CONFIDENT

MASK_RGB = (0.78, 0.84, 0.92)  # what a masked pixel is drawn as
FONT_KEY = "overinterp-fonts"  # the PNG text chunk holding a figure's font record (tools/page_audit.py reads it)
PAGE_PX = 768                  # width (px) at which the book's page shows a wide figure (sphinx-book-theme)


def text_sizes(fig) -> list[float]:
    """Font sizes (pt) of every text a draw of ``fig`` actually puts on the canvas."""
    from matplotlib.backends.backend_agg import RendererAgg
    w, h = fig.get_size_inches() * fig.dpi
    renderer, sizes = RendererAgg(int(w), int(h), fig.dpi), []
    draw_text = renderer.draw_text

    def spy(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            sizes.append(prop.get_size_in_points())
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = spy
    fig.draw(renderer)
    return sizes


def figure_png(fig) -> bytes:
    """``fig`` as inline PNG bytes (tight bbox), with the smallest drawn font size (pt) and dpi in :data:`FONT_KEY`."""
    sizes = text_sizes(fig)
    record = {"min_pt": min(sizes) if sizes else None, "dpi": float(fig.dpi)}
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor(),
                edgecolor=fig.get_edgecolor(), metadata={FONT_KEY: json.dumps(record)})
    return buf.getvalue()


def text_pt(width_in: float, px: float = 9.0, dpi: float = 100.0) -> float:
    """Font size (pt) that shows ``px`` pixels high in a figure ``width_in`` wide (shrunk to :data:`PAGE_PX`)."""
    return px * 72 / dpi * max(1.0, width_in * dpi / PAGE_PX)


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
    pt = text_pt(size * n)
    for r, (label, imgs) in enumerate(rows.items()):
        for c in range(n):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c], interpolation="nearest")
            else:
                ax.axis("off")
            if c == 0:
                ax.set_ylabel(label, fontsize=pt)
            if r == 0 and col_titles is not None and c < len(col_titles):
                ax.set_title(col_titles[c], fontsize=pt)
    fig.tight_layout()
    return fig



def gallery(images: torch.Tensor, masks: dict, mean, std, col_titles=None, original: str | None = "original",
            size: float = 1.3):
    """Images (row ``original``; None: no such row) above their subsets, a row per ``masks`` entry
    {label: (N, H, W) bool keep-mask} (paper Figs. 1-2)."""
    rows = {original: to_pixels(images, mean, std)} if original is not None else {}
    rows.update({label: show_masked(images, keep, mean, std) for label, keep in masks.items()})
    return image_rows(rows, col_titles=col_titles, size=size)


def note_figure(text: str):
    """A small figure saying only ``text``, shown where there is nothing to draw."""
    fig, ax = plt.subplots(figsize=(4, 1))
    ax.axis("off"), ax.text(0.5, 0.5, text, ha="center")
    return fig


def backselect_curves(values: torch.Tensor, confidence: torch.Tensor, labels=None, threshold: float | None = None,
                      ax=None, fontsize: float | None = None):
    """Confidence against fraction of pixels remaining, a line per image of ``values`` (N, P); ``fontsize`` in pt."""
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
    ax.set_xlabel("fraction of pixels remaining (log scale)", fontsize=fontsize)
    ax.set_ylabel("confidence f (predicted class)", fontsize=fontsize)
    if fontsize is not None:
        ax.tick_params(labelsize=fontsize)
    if labels is not None or threshold is not None:
        ax.legend(fontsize=fontsize or 7)
    return ax


def backselect_panels(results: dict, n: int, threshold: float | None = None, size: tuple = (4.2, 3.2)):
    """:func:`backselect_curves` of the first ``n`` images of each of ``results`` ({title: result}), side by side."""
    width = size[0] * len(results)
    fig, axes = plt.subplots(1, len(results), figsize=(width, size[1]), squeeze=False)
    pt = text_pt(width)   # text of at least 9 px once the figure is shrunk to the page
    for ax, (title, r) in zip(axes[0], results.items()):
        backselect_curves(r.values[:n], r.confidence[:n], threshold=threshold, ax=ax, fontsize=pt)
        ax.set_title(title, fontsize=pt)
    fig.tight_layout()
    return fig


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


def transfer_matrix(table, size: float = 8.4):
    """Section 4.1's transfer heatmap: accuracy (%) of each model (columns) on each source's 5% BS subsets (rows)."""
    n = max(table.shape)
    fig, ax = plt.subplots(figsize=(size, size * table.shape[0] / table.shape[1] * 0.8 + 0.8))
    sns.heatmap(table, ax=ax, vmin=0, vmax=100, cmap="viridis", annot=True, fmt=".0f",
                annot_kws={"fontsize": 9 if n <= 9 else 7}, cbar_kws={"label": "accuracy (%)", "shrink": 0.7})
    ax.set_xlabel("classified by")
    ax.set_ylabel("5% BS test subsets of")
    ax.tick_params(labelsize=8)
    fig.tight_layout()
    return fig


def training_curves(histories: dict[str, list[dict]], key: str = "loss", ax=None, ylabel: str = "training loss"):
    """One line per model of a per-epoch statistic of :func:`overinterp.zoo.train.fit`'s history."""
    ax = ax or plt.subplots(figsize=(7, 3.4))[1]
    for name, h in histories.items():
        ax.plot([e["epoch"] for e in h], [e[key] for e in h], marker=".", lw=1, label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    if key == "loss":
        ax.set_yscale("log")
    outside_legend(ax)
    return ax


def outside_legend(ax, **kw) -> None:
    """Put the axes' legend right of the plot, covering no data."""
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, **kw)
    ax.figure.tight_layout()


def sis_sizes_box(sizes: dict[str, list[float]], bound: float | None = 100 * paper.SIS_MEAN_SIZE_BELOW):
    """Box plot on the current axes of SIS sizes (%) per model from {model: fractions}; dotted: ``bound`` (%)."""
    long = pd.DataFrame([{"model": m, "SIS size (% of pixels)": 100 * v} for m, vs in sizes.items() for v in vs])
    ax = sns.boxplot(data=long, x="model", y="SIS size (% of pixels)", hue="model")
    if bound is not None:
        ax.axhline(bound, color="k", ls=":", lw=1)
    return ax


def retrain_bars(runs: dict[tuple[str, str], pd.DataFrame]):
    """Bars on the current axes: test accuracy (%) per model and condition, mean and 95% bootstrap interval,
    from {(model, condition): frame with a "test" column per replicate}."""
    long = pd.DataFrame([{"model": m, "trained and evaluated on": cond, "test accuracy (%)": acc}
                         for (m, cond), r in runs.items() for acc in r["test"]])
    ax = sns.barplot(data=long, x="model", y="test accuracy (%)", hue="trained and evaluated on",
                     errorbar=("ci", 95), seed=0)
    outside_legend(ax, title="trained and evaluated on", title_fontsize=9)
    return ax


def mean_std(table, digits: int = 2):
    """A table of (column, 'mean' | 'std') pairs as 'mean ± std' strings (the mean alone where std is NaN)."""
    cols = list(dict.fromkeys(c[0] for c in table.columns))
    out = {}
    for c in cols:
        m, s = table[(c, "mean")], table[(c, "std")]
        out[c] = [f"{a:.{digits}f}" if np.isnan(b) else f"{a:.{digits}f} ± {b:.{digits}f}" for a, b in zip(m, s)]
    return pd.DataFrame(out, index=table.index)


def long_by(shown: pd.DataFrame, level: str) -> pd.DataFrame:
    """``shown`` with ``level``'s values as columns and its columns as a row level, order kept (fits the page)."""
    cols = list(dict.fromkeys(shown.index.get_level_values(level)))
    rest = [n for n in shown.index.names if n != level]
    long = shown.stack(future_stack=True).unstack(level)[cols]
    order = pd.MultiIndex.from_tuples([(*(k if isinstance(k, tuple) else (k,)), c)
                                       for k in dict.fromkeys(shown.index.droplevel(level)) for c in shown.columns],
                                      names=[*rest, shown.columns.name or "item"])
    long.columns.name = level
    return long.reindex(order)


def zoo_stats(stats: pd.DataFrame, threshold: float = paper.SIS_THRESHOLD) -> pd.DataFrame:
    """:func:`overinterp.experiments.runs.zoo_table` (at ``threshold``) for display, as 'mean ± std'."""
    shown = mean_std(stats).drop(columns=["epochs"]).rename(columns={CONFIDENT: f"test at ≥ {threshold:g} (%)"})
    shown["plateaued"] = [f"{100 * v:.0f}% of replicates" for v in stats[("plateaued", "mean")]]
    return shown
