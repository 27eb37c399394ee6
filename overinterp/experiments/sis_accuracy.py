"""SIS size predicts accuracy (paper 4.4, Figure 5, S3): per architecture and tau, the images with an SIS
split into correct and incorrect, and Figure 5 plots 100 (mean size correct / mean size incorrect - 1) with a
95% interval (S3: the groups' mean confidence). The paper finds it positive at every tau, although
misclassified images are less confident (which alone enlarges their SIS). FindSIS at every tau on chapter
4's stored selections (test and OOD, every replicate); the interval is ``replicate_interval``'s.

    images = image_table(run, taus)        # one row per (model, replicate, set, image, tau with an SIS)
    groups = group_means(images)           # per replicate: images, mean SIS size, mean confidence
    inc = percentage_increase(images)      # Figure 5's numbers with their 95% intervals
"""
import math
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from overinterp.experiments import runs as runs_module
from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import find_sis
from overinterp.paper.intervals import replicate_interval
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.paper import verdicts

TAUS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)   # the chapter's thresholds
KEYS = ["model", "replicate", "set"]            # what one backward-selection run is
SIZE, CONF = "SIS size (%)", "confidence"        # per image: % of the pixels; f on the full image


def sis_rows(result: BackSelectResult, labels: torch.Tensor, taus: Sequence[float]) -> pd.DataFrame:
    """Per (image, tau) with an SIS: image (batch position), tau, correct, confidence, :data:`SIZE` (% of
    pixels; empty SIS 0%)."""
    correct = (result.pred.cpu() == labels.cpu()).numpy()
    conf = result.confidence.cpu().numpy()
    pixels = result.image_size[0] * result.image_size[1]
    frames = []
    for tau in taus:
        sis = find_sis(result, tau)
        has = (sis.size >= 0).cpu().numpy()
        size = 100 * sis.mask.flatten(1).sum(1).cpu().numpy() / pixels
        idx = np.flatnonzero(has)
        frames.append(pd.DataFrame({"image": idx, "tau": float(tau), "correct": correct[idx],
                                    CONF: conf[idx], SIZE: size[idx]}))
    return pd.concat(frames, ignore_index=True)


def image_table(run, taus: Sequence[float] = TAUS, archs=None) -> pd.DataFrame:
    """:func:`sis_rows` of every replicate and architecture on test and OOD, with :data:`KEYS` first."""
    frames = []
    for arch in archs or run.profile.archs:
        for r in range(run.profile.replicates):
            for name, sel in runs_module.eval_selections(run).items():
                res = runs_module.backselect_set(run, arch, sel, run.seed + r, progress=False)
                rows = sis_rows(res, sel.load()[1], taus)
                frames.append(rows.assign(model=ARCH_NAMES.get(arch, arch), replicate=r, set=name))
    out = pd.concat(frames, ignore_index=True)
    return out[KEYS + [c for c in out.columns if c not in KEYS]]


def group_means(images: pd.DataFrame, taus: Sequence[float] | None = None) -> pd.DataFrame:
    """Per (model, replicate, set, tau, correct): images, mean SIS size (%), empty SIS (%), mean
    confidence (Fig. 5, S3); missing groups 0 images, NaN."""
    keys = KEYS + ["tau", "correct"]
    out = images.assign(empty=100 * (images[SIZE] == 0)).groupby(keys, sort=True).agg(
        images=(SIZE, "size"), **{"mean " + SIZE: (SIZE, "mean"), "empty SIS (%)": ("empty", "mean"),
                                  "mean " + CONF: (CONF, "mean")})
    runs = images[KEYS].drop_duplicates().itertuples(index=False)
    taus = sorted(float(t) for t in (images["tau"].unique() if taus is None else taus))
    full = [(*r, t, c) for r in runs for t in taus for c in (True, False)]
    out = out.reindex(pd.MultiIndex.from_tuples(full, names=keys))
    out["images"] = out["images"].fillna(0).astype(int)
    return out.reset_index()


def _relative_increase(m: dict) -> np.ndarray:
    """100 (c / i - 1) of the means ``m["c"]``, ``m["i"]``, elementwise (inf / NaN where i = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * (m["c"] / m["i"] - 1)


def _increase(c: np.ndarray, i: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`_relative_increase` of the means of ``c`` and ``i`` along ``axis``."""
    return _relative_increase({"c": c.mean(axis), "i": i.mean(axis)})


def percentage_increase(images: pd.DataFrame, by: Sequence[str] = ("model", "set", "tau"),
                        taus: Sequence[float] | None = None, confidence_level: float = 0.95,
                        n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Figure 5: per ``by`` group, the correct over incorrect mean SIS size increase (%), mean over
    replicates with both groups >= 2 images and incorrect mean > 0, and ``replicate_interval``'s 95% interval
    (one replicate: bootstrap). A row per tau of ``taus``; no counting replicate: pooled increase, NaN interval."""
    by = list(by)
    groups = dict(iter(images.groupby(by, sort=False)))
    keys = list(groups)
    if taus is not None and "tau" in by:   # every (others, tau), in the order the others appear
        j = by.index("tau")
        others = dict.fromkeys(k[:j] + k[j + 1:] for k in keys)
        keys = [o[:j] + (float(t),) + o[j:] for o in others for t in sorted(taus)]
    rows = []
    for key in keys:
        g = groups.get(key, images.iloc[:0])
        c, i = g.loc[g["correct"], SIZE].to_numpy(float), g.loc[~g["correct"], SIZE].to_numpy(float)
        row = dict(zip(by, key), **{"correct images": len(c), "incorrect images": len(i),
                                    "correct mean " + SIZE: c.mean() if len(c) else np.nan,
                                    "incorrect mean " + SIZE: i.mean() if len(i) else np.nan})
        reps = [(gr.loc[gr["correct"], SIZE].to_numpy(float), gr.loc[~gr["correct"], SIZE].to_numpy(float))
                for _, gr in g.groupby("replicate", sort=True)]
        reps = [(rc, ri) for rc, ri in reps if len(rc) >= 2 and len(ri) >= 2 and ri.mean() > 0]
        est = float(_increase(c, i)) if len(c) and len(i) and i.mean() > 0 else np.nan
        low = high = np.nan
        if reps:
            iv = replicate_interval({"c": [rc for rc, _ in reps], "i": [ri for _, ri in reps]},
                                    _relative_increase, paired_images=False,
                                    n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
                                    bounds=(-100.0, math.inf))     # a mean size cannot fall below 0
            est, low, high = iv.estimate, iv.low, iv.high
        rows.append({**row, "replicates": len(reps), "increase (%)": est, "low": low, "high": high})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the verdict's input

def verdict_input(run, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`percentage_increase` at the verdict's thresholds without empty SIS (the blank's class)."""
    taus = verdicts.SIS_ACCURACY_TAUS
    images = image_table(run, taus)
    return percentage_increase(images[images[SIZE] > 0], taus=taus, n_resamples=n_resamples, seed=seed)


def pooled_empty(images: pd.DataFrame) -> pd.DataFrame:
    """Per (set, model, correct, tau), replicates pooled: images and the share (%) with an empty SIS."""
    return images.assign(empty=100 * (images[SIZE] == 0)).groupby(
        ["set", "model", "correct", "tau"], sort=False).agg(images=("empty", "size"), empty=("empty", "mean"))


def nonempty_increase(images: pd.DataFrame, taus: Sequence[float], min_images: int, n_resamples: int,
                      seed: int) -> pd.DataFrame:
    """:func:`percentage_increase` of the images with a non-empty SIS, at the points that keep ``min_images``
    correct and ``min_images`` incorrect images."""
    t = percentage_increase(images[images[SIZE] > 0], taus=taus, n_resamples=n_resamples, seed=seed)
    return t[(t["correct images"] >= min_images) & (t["incorrect images"] >= min_images)]
