"""Chapter 14: Shared Interest (Boggust et al., CHI 2022; method in :mod:`overinterp.methods.shared_interest`):
three scores and eight cases per test image and zoo model, with regions from the stored backward selections
(SIS and 5% subsets, 4.1) and Captum's saliency methods; :func:`background_coverage` feeds the 4.1.1 claim
that SIS lie on the background (:func:`overinterp.paper.further_verdicts.sis_on_background`).

    cfg = chapter_config(run, p)                   # the profile's settings with the chapter's parameters
    table, G, regions = image_table(run, cfg)      # one row per (model, replicate, method, image)
    coverage = background_coverage(table, sis_name(sis_tau(run, cfg)), pixels=G[0].numel())
    verdict = further_verdicts.sis_on_background(coverage, tau)
"""
from dataclasses import replace

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from overinterp.engine.sis import find_sis, pixel_subset
from overinterp.experiments import runs
from overinterp.experiments.runs import trained_model
from overinterp.methods.shared_interest import (CASES, EC, GTC, IOU, METRICS, SALIENCY_METHODS, binarize, cases,
                                                coverage, saliency_map, silhouette)
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.zoo import data


def check_dataset(dataset: str) -> None:
    """The silhouette ground truth exists only for Fashion-MNIST's garments on black."""
    if dataset != "fashion-mnist":
        raise ValueError(f"parameter dataset={dataset!r}: the silhouette ground truth needs fashion-mnist; "
                         "other data sets need annotated regions (bounding boxes)")


def chapter_config(run, p):
    """The profile's SharedInterestConfig with the chapter's ``binarize`` and ``high``, checked."""
    check_dataset(run.dataset)
    if p.gallery_arch not in run.profile.archs:
        raise ValueError(f"parameter gallery_arch={p.gallery_arch!r} is not valid; valid values: "
                         + ", ".join(run.profile.archs))
    return replace(run.profile.shared_interest, binarize=p.binarize, high=p.high)


def sis_tau(run, cfg) -> float:
    """tau of the SIS regions: ``cfg.sis_threshold``, or the profile's when None."""
    return run.profile.sis_threshold if cfg.sis_threshold is None else cfg.sis_threshold


def sis_name(tau: float) -> str:
    return f"SIS (τ = {tau:g})"


def bs_name(cfg) -> str:
    return f"BS {100 * cfg.frac:g}% subset"


def case_counts(table: pd.DataFrame, by=("model", "method")) -> pd.DataFrame:
    """Images per case: mean and std over replicates per ``by``, columns (case, 'mean' | 'std')."""
    n = table.groupby([*by, "replicate", "case"]).size().unstack("case", fill_value=0)
    n = n.reindex(columns=[c.name for c in CASES], fill_value=0)
    g = n.groupby(level=list(by), sort=False)
    return pd.concat({"mean": g.mean(), "std": g.std()}, axis=1).swaplevel(axis=1)[
        [(c.name, s) for c in CASES for s in ("mean", "std")]]


def ranked(table: pd.DataFrame, case: str, k: int) -> pd.DataFrame:
    """The ``k`` top images of ``case`` by its ``rank_by`` score (ties: IoU, image); empty regions last."""
    c = next(c for c in CASES if c.name == case)
    rows = table[table["case"] == case]
    empty = rows["|E|"] == 0 if "|E|" in rows else pd.Series(False, index=rows.index)
    rows = rows.assign(_empty=empty)
    keys, asc = ["_empty", c.rank_by, IOU, "image"], [True, not c.descending, not c.descending, True]
    return rows.sort_values(keys, ascending=asc).head(k).drop(columns="_empty")


def _regions(run, arch, replicate, cfg, X, Y):
    """{method: (B, H, W) bool explanation regions} of one replicate, and its predictions."""
    res = runs.backselect_set(run, arch, runs.selection(run, "test"), run.seed + replicate, progress=False)
    res = res[:len(X)] if len(res) != len(X) else res
    tau = sis_tau(run, cfg)
    sis = find_sis(res, tau)
    out = {sis_name(tau): (sis.mask.cpu(), sis.size.cpu() >= 0),
           bs_name(cfg): (pixel_subset(res, X, cfg.frac)[1].cpu(), torch.ones(len(X), dtype=bool))}
    model = trained_model(run.dataset, arch, run.profile.name, seed=run.seed + replicate, device=run.device)
    pred = res.pred.cpu()
    for m in cfg.methods:
        s = saliency_map(model, X.to(run.device), m, pred, n_steps=cfg.ig_steps)
        out[SALIENCY_METHODS[m]] = (binarize(s, cfg.binarize, cfg.n_std, cfg.percentile),
                                    torch.ones(len(X), dtype=bool))
    return out, pred


def image_table(run, cfg, archs=None, progress: bool = True):
    """Shared Interest per (architecture, replicate, method, image) of the first ``cfg.images`` test images.
    Returns (table with scores, |G|, |E|, has (False: no SIS, scores NaN), case; G (N, H, W) silhouettes;
    regions[(model, replicate, method)] (N, H, W))."""
    X, Y = runs.selection(run, "test").load()
    X, Y = X[:cfg.images], Y[:cfg.images]
    split = data.load(run.dataset, "test")
    G = silhouette(split.denormalise(X)[:, 0], cfg.silhouette_level)
    frames, regions = [], {}
    jobs = [(a, r) for a in (archs or run.profile.archs) for r in range(run.profile.replicates)]
    for arch, r in tqdm(jobs, desc="Shared Interest", disable=not progress):
        regs, pred = _regions(run, arch, r, cfg, X, Y)
        name = ARCH_NAMES.get(arch, arch)
        for method, (E, has) in regs.items():
            scores = coverage(G, E)
            scores.loc[~has.numpy(), list(METRICS)] = np.nan
            correct = (pred == Y).numpy()
            frames.append(scores.assign(model=name, replicate=r, method=method, image=np.arange(len(X)),
                                        label=Y.numpy(), pred=pred.numpy(), correct=correct, has=has.numpy()))
            regions[(name, r, method)] = E
    t = pd.concat(frames, ignore_index=True)
    t["case"] = None
    ok = t["has"]
    t.loc[ok, "case"] = cases(t.loc[ok, "correct"], t.loc[ok, GTC], t.loc[ok, EC], cfg.high)
    keys = ["model", "replicate", "method", "image", "label", "pred", "correct", "has"]
    return t[keys + [c for c in t.columns if c not in keys]], G, regions


def test_images(run, n: int):
    """(images, labels, test split) of the first ``n`` images of the profile's test selection."""
    X, Y = runs.selection(run, "test").load()
    return X[:n], Y[:n], data.load(run.dataset, "test")


def score_stats(table: pd.DataFrame, pixels: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per replicate, over replicates): mean scores and |E| (% of ``pixels``) per (method, model,
    replicate), then their mean and std."""
    per_rep = table[table["has"]].groupby(["method", "model", "replicate"], sort=False)[
        list(METRICS) + ["|E|"]].mean()
    per_rep["|E|"] = 100 * per_rep["|E|"] / pixels
    per_rep = per_rep.rename(columns={"|E|": "|E| (% of pixels)"})
    stats = pd.DataFrame({k: runs.mean_std(g.reset_index(drop=True))
                          for k, g in per_rep.groupby(level=["method", "model"], sort=False)}).T
    return per_rep, stats


def background_coverage(table: pd.DataFrame, method: str, pixels: int = 28 * 28) -> pd.DataFrame:
    """4.1.1's verdict input: per correct image with a non-empty SIS, its explanation coverage and
    "random pixels (|G| / HW)"."""
    t = table[(table["method"] == method) & table["has"] & table["correct"] & (table["|E|"] > 0)]
    return pd.DataFrame({"model": t["model"], "replicate": t["replicate"], "explanation coverage": t[EC],
                         "random pixels (|G| / HW)": t["|G|"] / pixels})
