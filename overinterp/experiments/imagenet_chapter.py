"""The steps of chapter "Overinterpretation on ImageNet" (``book/12_imagenet``; paper 4.1.1, S5, Figures 3
and 4) on top of :mod:`overinterp.experiments.imagenet`: :func:`sample` (photographs or an ImageNet folder),
:func:`select` (cached Batched Gradient SIS at every threshold), Figure 3's :func:`example_panels`, Figure
4's :func:`heatmap_freqs`, :func:`border_shares` for the verdict, and S5's :func:`cost`, as numbers:
:mod:`overinterp.pages.imagenet` words them and :mod:`overinterp.pages.imagenet_plots` titles the figures.
"""
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.sis import find_sis
from overinterp.experiments import imagenet, runs
from overinterp.paper.numbers import PAPER_S5


def source(imagenet_dir) -> str:
    """"photos" (``imagenet_dir`` None) or "imagenet" (a validation folder)."""
    return "photos" if imagenet_dir is None else "imagenet"


@dataclass
class Sample:
    """Backselected images ((N, 3, H, W) normalised), names, artifact key, photo table (None for a folder), and
    where they come from: ``source`` (:func:`source`), how many images it held, the folder and its resize."""
    images: torch.Tensor
    names: list
    data_key: dict
    photos: pd.DataFrame | None
    source: str
    n_source: int
    folder: str | None = None
    resize: int | None = None


def sample(net: nn.Module, model: str, imagenet_dir, cfg, seed: int) -> Sample:
    """The ``cfg.images`` most confident photographs, or the paper's sample of an ImageNet folder."""
    size, resize = imagenet.MODELS[model]["size"], imagenet.MODELS[model]["resize"]
    if imagenet_dir is None:
        images, names, photos = imagenet.photo_sample(net, size, cfg.images, cfg.min_confidence)
        data_key = {"set": "photos", "names": names, "size": size, "transform": "whole image resized, bilinear"}
        return Sample(images, names, data_key, photos, source(imagenet_dir), len(photos))
    files = imagenet.folder_files(imagenet_dir)
    images, _, paths = imagenet.confident(net, files, size, resize, cfg.images, cfg.min_confidence, seed)
    data_key = {"set": "imagenet-folder", "root": str(imagenet_dir), "seed": seed,
                "min_confidence": cfg.min_confidence, "size": size, "resize": resize}
    return Sample(images, [f.stem for f in paths], data_key, None, source(imagenet_dir), len(files),
                  str(imagenet_dir), resize)


@dataclass
class Selected:
    """A :class:`Sample`'s backward selection (None without images), SIS, CPU keep masks per tau, table."""
    res: object
    sis: dict
    masks: dict
    table: pd.DataFrame


def select(run, net: nn.Module, model_key: dict, s: Sample, cfg, taus, border: float) -> Selected:
    """Cached Batched Gradient SIS (``cfg.backselect``) of ``s``'s images at every threshold of ``taus``."""
    res = runs.backselect_model(run, net, model_key, (s.images, s.data_key), cfg.backselect, shard_size=32,
                             progress=False) if len(s.images) else None
    sis = {t: find_sis(res, t) for t in taus} if res is not None else {}
    masks = {t: x.mask.cpu() for t, x in sis.items()}
    return Selected(res, sis, masks, imagenet.sis_table(masks, {t: x.size.cpu() for t, x in sis.items()}, s.names, border))


def example_panels(s: Sample, sel: Selected) -> tuple[torch.Tensor, torch.Tensor, pd.DataFrame] | None:
    """Figure 3: (images, keep masks, per image its name, predicted class, confidence and the highest tau at
    which it has an SIS); None if no image has one."""
    res, table, names = sel.res, sel.table, s.names
    cn = imagenet.class_names()
    conf = res.confidence.cpu().tolist() if res is not None else []
    pred = [cn[c].split(",")[0] for c in res.pred.cpu().tolist()] if res is not None else []
    best = table.sort_values("tau").groupby("image", sort=False).last() if len(table) else table
    shown = [n for n in names if n in best.index]
    if not shown:
        return None
    idx = [names.index(n) for n in shown]
    masks = torch.stack([sel.masks[best.loc[n, "tau"]][i] for n, i in zip(shown, idx)])
    about = pd.DataFrame({"image": shown, "predicted": [pred[i] for i in idx], "confidence": [conf[i] for i in idx],
                          "tau": [best.loc[n, "tau"] for n in shown]})
    return s.images[idx], masks, about


def heatmap_freqs(sel: Selected, taus) -> dict[float, tuple[int, torch.Tensor]]:
    """Figure 4: per threshold with an SIS, (how many SIS, (H, W) frequency of each pixel over those SIS)."""
    sis, masks = sel.sis, sel.masks
    found = {t: sis[t].size.cpu() >= 0 for t in taus if len(sis)}
    return {t: (int(f.sum()), imagenet.frequency(masks[t][f])) for t, f in found.items() if int(f.sum())}


def border_shares(table: pd.DataFrame, tau: float) -> list[float]:
    """Per image with an SIS at ``tau``, the fraction of SIS pixels in the border band (Figure 4)."""
    return (table[table["tau"] == tau]["SIS pixels in the border band (%)"] / 100).tolist()


@dataclass
class Cost:
    """S5's cost: per timed model (``table``, :func:`~overinterp.experiments.imagenet.s5_projection`'s columns:
    the chapter's model first, then the random Inception-v3) the projection to the paper's images, and what
    was timed."""
    table: pd.DataFrame
    timing_steps: int
    timing_images: int


def cost(net: nn.Module, images: torch.Tensor, model: str, cfg, device) -> Cost:
    """S5's cost: gradient steps timed with ``net`` and a random Inception-v3, projected to the paper's images."""
    p, spec = PAPER_S5, imagenet.MODELS[model]
    size, n = spec["size"], p["images"]
    n_t = max(1, min(cfg.timing_images, n))
    x_eff = images[:n_t] if len(images) >= n_t else torch.zeros(n_t, 3, size, size)
    inc, _ = imagenet.load_classifier("inception_v3", pretrained=False)
    inc = inc.to(device)
    x_inc = torch.nn.functional.interpolate(x_eff, size=(p["size"], p["size"]), mode="bilinear", align_corners=False)
    k = cfg.backselect.k
    rows = {f"{spec['name']} (ImageNet weights), {size}×{size}, k = {p['k']}":
            (imagenet.time_gradient_steps(net, x_eff.to(device), p["k"], 1, cfg.timing_steps), size * size, p["k"]),
            f"Inception-v3 (random weights, timing only), {p['size']}×{p['size']}, k = {p['k']}":
            (imagenet.time_gradient_steps(inc, x_inc.to(device), p["k"], 1, cfg.timing_steps), p["pixels"], p["k"])}
    if (cfg.backselect.block, k) != (1, p["k"]):
        hf = -(-size // cfg.backselect.block)
        rows[f"{spec['name']}, this chapter's run ({cfg.backselect.describe()})"] = (rows[next(iter(rows))][0],
                                                                                    hf * hf, k)
    return Cost(imagenet.s5_projection(rows, n), cfg.timing_steps, n_t)
