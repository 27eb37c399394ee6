"""The steps of chapter "Overinterpretation on ImageNet" (``book/12_imagenet``; paper 4.1.1, S5, Figures 3
and 4) on top of :mod:`overinterp.experiments.imagenet`: :func:`sample` (photographs or an ImageNet folder),
:func:`select` (cached Batched Gradient SIS at every threshold), Figure 3's :func:`example_panels`, Figure
4's :func:`heatmap_freqs`, :func:`border_shares` for the verdict, and S5's :func:`cost`.
"""
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.sis import find_sis
from overinterp.experiments import imagenet, runs
from overinterp.paper.formatting import MISSING, count, number
from overinterp.paper.numbers import IMAGENET_FIG4, PAPER_S5


def source(imagenet_dir) -> str:
    """"photos" (``imagenet_dir`` None) or "imagenet" (a validation folder)."""
    return "photos" if imagenet_dir is None else "imagenet"


@dataclass
class Sample:
    """Backselected images ((N, 3, H, W) normalised), names, artifact key, photo table (or None), ``values``."""
    images: torch.Tensor
    names: list
    data_key: dict
    photos: pd.DataFrame | None
    values: dict


def sample(net: nn.Module, model: str, imagenet_dir, cfg, seed: int) -> Sample:
    """The ``cfg.images`` most confident photographs, or the paper's sample of an ImageNet folder."""
    size, resize = imagenet.MODELS[model]["size"], imagenet.MODELS[model]["resize"]
    if imagenet_dir is None:
        images, names, photos = imagenet.photo_sample(net, size, cfg.images, cfg.min_confidence)
        data_key = {"set": "photos", "names": names, "size": size, "transform": "whole image resized, bilinear"}
        known = photos.set_index("photo")
        values = {"n_source": len(photos), "resize": MISSING, "folder": MISSING, "n_photos": len(photos),
                  "n_090": int((photos["confidence"] >= IMAGENET_FIG4["min_confidence"]).sum())}
        for name in ("chelsea", "coffee"):
            values[f"{name}_class"] = known.loc[name, "class"].split(",")[0]
            values[f"{name}_conf"] = number(known.loc[name, "confidence"], 2)
    else:
        files = imagenet.folder_files(imagenet_dir)
        images, _, paths = imagenet.confident(net, files, size, resize, cfg.images, cfg.min_confidence, seed)
        names, photos = [f.stem for f in paths], None
        data_key = {"set": "imagenet-folder", "root": str(imagenet_dir), "seed": seed,
                    "min_confidence": cfg.min_confidence, "size": size, "resize": resize}
        values = {**dict.fromkeys(("chelsea_class", "chelsea_conf", "coffee_class", "coffee_conf", "n_photos",
                                   "n_090"), MISSING), "n_source": len(files), "resize": resize,
                  "folder": str(imagenet_dir)}
    values.update(source=source(imagenet_dir), n_sel=len(names), n_sel_text=count(len(names), "image"))
    return Sample(images, names, data_key, photos, values)


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


def example_panels(s: Sample, sel: Selected) -> tuple[torch.Tensor, torch.Tensor, list[str]] | None:
    """Figure 3: (images, keep masks, titles) at each image's highest tau with an SIS; None if none."""
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
    titles = [f"{n}: {pred[i]} ({number(conf[i], 2)})\nSIS at τ = {best.loc[n, 'tau']:g}" for n, i in zip(shown, idx)]
    return s.images[idx], masks, titles


def heatmap_freqs(sel: Selected, taus) -> dict[str, torch.Tensor]:
    """Figure 4: per threshold with an SIS, title -> (H, W) frequency of each pixel over those SIS."""
    sis, masks = sel.sis, sel.masks
    return {f"τ = {t:g} (n = {int((sis[t].size >= 0).sum())})": imagenet.frequency(masks[t][sis[t].size.cpu() >= 0])
            for t in taus if len(sis) and int((sis[t].size >= 0).sum())}


def border_shares(table: pd.DataFrame, tau: float) -> list[float]:
    """Per image with an SIS at ``tau``, the fraction of SIS pixels in the border band (Figure 4)."""
    return (table[table["tau"] == tau]["SIS pixels in the border band (%)"] / 100).tolist()


def cost(net: nn.Module, images: torch.Tensor, model: str, cfg, device) -> tuple[pd.DataFrame, dict]:
    """S5's cost: gradient steps timed with ``net`` and a random Inception-v3, projected to the paper's images,
    beside the paper's row. Returns (table, prose values)."""
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
    table = imagenet.s5_projection(rows, n)
    minutes = f"minutes for {n} images"
    paper_row = {"model": f"paper (S5): Inception-v3 (pre-trained), {p['size']}×{p['size']}, k = {p['k']}",
                 "features": p["pixels"], "k": p["k"], "steps": -(-p["pixels"] // p["k"]),
                 minutes: f"{p['minutes'][0]}–{p['minutes'][1]}"}
    inc_min = table.loc[table["model"].str.startswith("Inception"), minutes].iloc[0]
    table["model"] = "ours: " + table["model"]
    values = {"paper_lo": p["minutes"][0], "paper_hi": p["minutes"][1], "inc_min": number(inc_min, 0),
              "eff_min": number(table[minutes].iloc[0], 0), "timing_steps": cfg.timing_steps, "timing_images": n_t}
    shown = pd.concat([table.assign(**{"s per image-step": table["s per image-step"].round(3),
                                       minutes: table[minutes].round(1)}), pd.DataFrame([paper_row])],
                      ignore_index=True)
    return shown.set_index("model"), values
