"""Figures of the chapters on related methods: input reduction (chapter 15; Feng et al. 2018), Shared Interest
(chapter 14; Boggust et al.) and Bayes-TrEx (chapter 16; Booth et al. 2021)."""
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from overinterp.engine.backselect import apply_keep
from overinterp.experiments.input_reduction import MODELS
from overinterp.experiments.runs import by_class_turns
from overinterp.experiments.shared_interest import ranked
from overinterp.methods.bayes_trex import VAE, Chains, Target, spread_samples
from overinterp.methods.shared_interest import CASES, EC, GTC, IOU
from overinterp.pages.plots import gallery as subset_gallery, show_masked, text_pt, to_pixels


# ----------------------------------------------------------------------------- input reduction (chapter 15)
def size_figure(images: pd.DataFrame, pixels: int):
    """Their Figure 3: histogram of reduced sizes (pixels, log bins) per model, replicates pooled."""
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
    """Their Figure 4: confidence in the predicted class on original and reduced inputs, a panel per model."""
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
    """Their Figure 7: the first ``n`` images and their reductions by the original and fine-tuned models."""
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
    """A row per case of :data:`CASES`: its ``k`` top-ranked images of ``table`` (one model, replicate and
    method), region E in orange, silhouette G outlined in cyan, titled label→prediction and IoU/GTC/EC."""
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
    """The first ``n`` test images, their silhouettes G and replicate 0's explanation regions per method."""
    show = slice(0, n)
    masks = {"silhouette G": G[show], **{m: regions[(model, 0, m)][show] for m in methods}}
    return subset_gallery(images[show], masks, split.mean, split.std,
                          col_titles=[split.classes[int(y)] for y in labels[show]], original="image")


def case_galleries(images: torch.Tensor, G: torch.Tensor, regions: dict, table: pd.DataFrame, model: str, k: int,
                   split) -> dict:
    """{method: :func:`gallery` of replicate 0 of ``model``} for each method in ``table``."""
    pixels = split.denormalise(images)[:, 0].clamp(0, 1).numpy()
    out = {}
    for m in dict.fromkeys(table["method"]):
        t = table[(table["model"] == model) & (table["replicate"] == 0) & (table["method"] == m) & table["has"]]
        out[m] = gallery(pixels, G, regions[(model, 0, m)], t, k, split.classes)
    return out


# ----------------------------------------------------------------------------- Bayes-TrEx (chapter 16)
# figures are shown ~750 px wide (7.5 in at 100 dpi), so 9 pt stays 9 pt; row titles go above (subfigures),
# as long y-labels do not fit beside a 28x28 image
WIDTH = 7.5      # inches, the page's content width at 100 dpi
FONT = 9         # pt, the smallest text of a figure
TITLE = 10       # pt, row titles


def _short(name: str) -> str:
    """A class name broken onto two lines at its first space or slash (column titles)."""
    for sep in (" ", "/"):
        if sep in name:
            a, b = name.split(sep, 1)
            return f"{a}{sep if sep == '/' else ''}\n{b}"
    return name


def _image_rows(rows: dict[str, list], titles: dict[str, list] | None = None, cols: int = 8,
                height: float = 1.05):
    """A figure :data:`WIDTH` wide, a subfigure per ``rows`` entry {title: images}, ``cols`` a row, with ``titles``."""
    titles = titles or {}
    heights = [height + 0.3 + (0.2 + 0.16 * max(str(t).count("\n") + 1 for t in titles[k]) if titles.get(k) else 0.0)
               for k in rows]                                              # image + row title + column titles
    fig = plt.figure(figsize=(WIDTH, sum(heights)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(rows), 1, height_ratios=heights))
    for sub, (label, imgs) in zip(subs, rows.items()):
        sub.suptitle(label, fontsize=TITLE, x=0.01, ha="left")
        axes = sub.subplots(1, cols)
        for j, ax in enumerate(np.atleast_1d(axes)):
            ax.set_xticks([]), ax.set_yticks([])
            for sp in ax.spines.values():
                sp.set_visible(False)
            if j < len(imgs):
                im = imgs[j]
                ax.imshow(im, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
                if j < len(titles.get(label, [])):
                    ax.set_title(titles[label][j], fontsize=FONT)
            else:
                ax.axis("off")
    return fig


@torch.no_grad()
def vae_figure(vaes: dict[str, VAE], images: torch.Tensor, labels: torch.Tensor, classes: Sequence[str],
               held_out: int, n: int = 10, seed: int = 0):
    """Rows: a test image per class, its reconstruction, and ``n`` prior samples of each VAE (the same z)."""
    first = torch.stack([(labels == c).nonzero()[0, 0] for c in range(len(classes))])
    dev = next(vaes["all"].parameters()).device
    x = images[first].to(dev)
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, vaes["all"].mu.out_features, generator=gen).to(dev)
    rows = {"test images, one per class": x,
            "their reconstructions g(μ(x)) by the VAE of all classes": vaes["all"].reconstruct(x),
            "samples g(z), z ~ N(0, I), of the VAE of all classes": vaes["all"].decode(z),
            f"the same z decoded by the VAE without {classes[held_out]}": vaes["held out"].decode(z)}
    rows = {k: [im[0].cpu().numpy() for im in v] for k, v in rows.items()}
    first_row = next(iter(rows))
    return _image_rows(rows, {first_row: [_short(c) for c in classes]}, cols=max(len(x), n), height=0.75)


@torch.no_grad()
def samples_figure(vaes: dict[str, VAE], chains: dict[str, Chains], logits: dict[str, torch.Tensor],
                   targets: dict[str, Target], classes: Sequence[str], n: int = 8):
    """A row per target: ``n`` decoded samples spread over its chains, titled with the target confidence."""
    cols = max(1, min(n, min(c.z.shape[0] * c.z.shape[1] for c in chains.values())))
    rows, titles = {}, {}
    for name, ch in chains.items():
        idx = spread_samples(ch.z.shape[0] * ch.z.shape[1], cols)
        vae = vaes[name]
        imgs = vae.decode(ch.flat()[idx].to(next(vae.parameters()).device)).cpu()
        p = torch.softmax(logits[name][idx].double(), 1)[:, list(targets[name].classes)]
        rows[name] = [im[0].numpy() for im in imgs]
        titles[name] = ["/".join(f"{v:.2f}" for v in p[c].tolist()) for c in range(len(imgs))]
    return _image_rows(rows, titles, cols=max(cols, 8))


def trace_figure(chains: dict[str, Chains]):
    """A panel per target: its highest-R̂ latent dimension's trace per chain, starts dashed when recorded."""
    names = list(chains)
    ncol = min(2, len(names))
    nrow = (len(names) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(WIDTH, 2.1 * nrow + 0.5), squeeze=False, layout="constrained")
    for ax, name in zip(axes.flat, names):
        ch = chains[name]
        r = ch.r_hat
        d = int(torch.nan_to_num(r, nan=0.0).argmax())
        for c in range(ch.z.shape[0]):
            line, = ax.plot(ch.z[c, :, d].numpy(), lw=1, color=f"C{c}")
            if "init" in ch.info:
                ax.axhline(float(ch.info["init"][c, d]), color=line.get_color(), ls="--", lw=0.8)
        rh = r[d].item()
        ax.set_title(f"{name}\nz{d + 1}, R̂ = {rh:.2f}" if rh == rh else f"{name}\nz{d + 1}", fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        ax.set_xlabel("kept sample", fontsize=FONT)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    n = max(ch.z.shape[0] for ch in chains.values())
    handles = [plt.Line2D([], [], color=f"C{c}", lw=1) for c in range(n)]
    labels = [f"chain {c + 1}" for c in range(n)]
    if any("init" in ch.info for ch in chains.values()):
        handles.append(plt.Line2D([], [], color="grey", ls="--", lw=0.8))
        labels.append("its start (a training image's code)")
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=FONT, frameon=False)
    return fig


def sis_figure(comparison: dict, split, tau: float, n: int):
    """Up to ``n`` sampled images with an SIS at ``tau`` above their SIS, from ``sis_comparison``'s ``comparison``."""
    Xs, sis = comparison["images"], comparison["sis"]
    found = torch.tensor([i for i in range(len(Xs)) if sis.found[i]], dtype=torch.long)
    show = by_class_turns(found, torch.as_tensor(comparison["classes"]))[:n].tolist() if len(found) else []
    titles = [split.classes[comparison["classes"][i]] for i in show]
    rows = {"sampled images (the target class above each)": list(to_pixels(Xs[show], split.mean, split.std)),
            f"their SIS at τ = {tau:g} (other pixels masked)":
                list(show_masked(Xs[show], sis.mask[show], split.mean, split.std))}
    first = next(iter(rows))
    return _image_rows(rows, {first: [_short(t) for t in titles]}, cols=max(n, 1))
