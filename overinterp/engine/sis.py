"""Sufficient input subsets and pixel subsets from a backward selection (paper 3.3, 4.1, S1, S5).

A sufficient input subset (SIS) for threshold tau is a minimal feature set S with ``f(x_S) >= tau``, all
else masked (3.3). FindSIS takes the *shortest suffix* of the removal order that reaches tau, compared as
``log_odds >= logit(tau)`` (no float32 rounding of p to 1.0). No SIS when f < tau on the input (the
reference convention); an empty SIS when the fully masked input reaches tau. For ``gradient`` results it
cuts only at block boundaries (S5). SIS-collection repeats BackSelect + FindSIS with earlier SIS masked,
so one image's SIS are disjoint. Pixel subsets (3.3, 4.1) keep the last ``frac`` of the order;
:func:`random_subset` (the baseline) as many seeded random features.

Masks are keep masks: True = the pixel is in the SIS / subset and visible.

    res = backselect(model, images)
    sis = find_sis(res, 0.99)              # sis.mask (B, H, W), sis.size (B,)
    x5, keep5 = pixel_subset(res, images, 0.05)
    xr, keepr = random_subset(images, 0.05, seed=0)
"""
import math

import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from overinterp.engine.backselect import (BackSelectResult, apply_keep, backselect, feature_grid, features_to_pixels, log_odds,
                         logit)


@dataclass
class SIS:
    """One SIS per image of a batch."""
    keep: torch.Tensor   # (B, P) bool, True = feature in the SIS
    mask: torch.Tensor   # (B, H, W) bool, True = pixel in the SIS
    size: torch.Tensor   # (B,) int64 number of features in the SIS, -1 where there is none
    found: torch.Tensor  # (B,) bool, False where f < tau on the input (no SIS)


def find_sis(result: BackSelectResult, threshold: float, min_size: torch.Tensor | None = None) -> SIS:
    """FindSIS: the shortest suffix of ``result.order`` with f >= ``threshold``; ``min_size`` (B,) forces at
    least that many features (to grow a SIS that fails verification by rounding)."""
    if (result.order < 0).any():
        raise ValueError("result is partial (backselect(max_steps=...)); FindSIS needs the full order")
    B, P = result.order.shape
    s = torch.arange(P + 1, device=result.order.device)
    tau = logit(threshold)
    # (B, P+1): column s = log-odds with only the last s features of the order kept (s = P: the input)
    suffix_log_odds = torch.cat([result.log_odds.flip(1), result.full_log_odds[:, None]], 1)
    ok = (suffix_log_odds >= tau) & (s <= P - result.n_fixed[:, None])  # never the fixed features
    if min_size is not None:
        ok &= s >= min_size[:, None]
    found = result.full_log_odds >= tau
    has = found & ok.any(1)
    size = torch.where(has, ok.to(torch.uint8).argmax(1), -1)        # first s that works
    keep = _last_features(result.order, size.clamp(min=0)) & has[:, None]
    return SIS(keep, features_to_pixels(keep, result.image_size, result.block), size, found)


def sis_size(result: BackSelectResult, threshold: float) -> torch.Tensor:
    """(B,) SIS size in features (pixels when block=1); -1 where f < threshold on the input."""
    return find_sis(result, threshold).size


def sis_size_pct(result: BackSelectResult, threshold: float, sis: SIS | None = None) -> np.ndarray:
    """(B,) SIS size in % of the image's pixels; NaN where there is none. ``sis``: find_sis's, if at hand."""
    sis = find_sis(result, threshold) if sis is None else sis
    size = 100 * sis.mask.flatten(1).float().mean(1).cpu().numpy()
    return np.where(sis.size.cpu().numpy() >= 0, size, np.nan)


def _last_features(order: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """(B, P) bool keep-mask of the last ``n`` (B,) features of each ``order`` row."""
    P = order.shape[1]
    tail = torch.arange(P, device=order.device) >= P - n[:, None]    # (B, P) positions kept
    return torch.zeros_like(tail).scatter_(1, order, tail)


def _batches(model: nn.Module, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    """model(images) in batches under inference mode, as (N, K) logits in the images' dtype."""
    with torch.inference_mode():
        return torch.cat([model(images[i:i + batch_size]).to(images.dtype) for i in range(0, len(images), batch_size)])


def class_probability(model: nn.Module, images: torch.Tensor, target: torch.Tensor | None = None,
                      batch_size: int = 512) -> tuple:
    """(softmax probability of ``target`` (default: the argmax) (B,), argmax class (B,)), for tables and
    plots; threshold near 1 with :func:`class_log_odds` (float32 softmax saturates)."""
    probs = _batches(model, images, batch_size).softmax(-1)
    pred = probs.argmax(1)
    t = pred if target is None else target.to(probs.device)
    return probs.gather(1, t[:, None]).squeeze(1), pred


def class_log_odds(model: nn.Module, images: torch.Tensor, target: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """(B,) float64 log-odds of ``target`` under ``model`` on ``images`` (the engine's f)."""
    return log_odds(_batches(model, images, batch_size), target.to(images.device))


def is_sufficient(model: nn.Module, images: torch.Tensor, result: BackSelectResult, sis: SIS,
                  threshold: float) -> torch.Tensor:
    """(B,) bool: the image with only its SIS visible reaches ``threshold`` (True where there is no SIS)."""
    x = apply_keep(images.to(result.mask_value.dtype), sis.mask.to(images.device), result.mask_value.to(images.device))
    f = class_log_odds(model, x, result.pred.to(images.device)).to(sis.size.device)
    return (sis.size < 0) | (f >= logit(threshold))


def _verified(model, images, result: BackSelectResult, threshold: float, sis: SIS) -> SIS:
    """Check each SIS by a forward pass; one that misses tau (batched rounding) grows to the next suffix
    that passes, or, failing that, becomes the whole input with a warning."""
    P = result.order.shape[1]
    checked = torch.zeros_like(sis.size, dtype=torch.bool)
    while True:
        bad = ~checked & ~is_sufficient(model, images, result, sis, threshold)
        if not bad.any():
            return sis
        size = torch.where(bad, sis.size + 1, sis.size.clamp(min=0))
        stuck = bad & (size > P - result.n_fixed)
        if stuck.any():
            warnings.warn(f"SIS of image(s) {stuck.nonzero().flatten().tolist()} could not be verified by a forward "
                          f"pass at tau={threshold}, not even as the whole input; kept as the whole input",
                          stacklevel=3)
            checked |= stuck
            size = torch.where(stuck, sis.size.clamp(min=0), size)
        grown = find_sis(result, threshold, size)
        keep = torch.where(bad[:, None] & ~stuck[:, None], grown.keep, sis.keep)
        sis = SIS(keep, features_to_pixels(keep, result.image_size, result.block),
                  torch.where(bad & ~stuck, grown.size, sis.size), sis.found)


def sis_collection(model: nn.Module, images: torch.Tensor, threshold: float, method: str = "exact",
                   block: int = 1, max_sis: int | None = None, mask_value=0.0, **kwargs) -> list:
    """SIS-collection (paper 3.3; Batched Gradient SIScollection for "gradient", S5): rounds of backselect
    with earlier SIS masked and f fixed to the unmasked prediction, then verified FindSIS. An image whose
    blank input reaches tau has only the empty SIS. Stops per image when none is left, after an empty
    one, or after ``max_sis``; ``kwargs`` go to :func:`backselect`. Returns one (J_b, H, W) bool tensor per
    image (True = pixel in that SIS), disjoint, in the order found."""
    B, _, H, W = images.shape
    if max_sis is not None and max_sis < 1:
        raise ValueError(f"max_sis must be >= 1 or None, got {max_sis}")
    hf, wf = feature_grid(H, W, block)
    keep = torch.ones(B, hf * wf, dtype=torch.bool, device=images.device)
    _, target = class_probability(model, images)
    blank = apply_keep(images, torch.zeros(B, H, W, dtype=torch.bool, device=images.device), mask_value)
    empty_sis = class_log_odds(model, blank, target) >= logit(threshold)       # (B,) the empty set suffices
    found = [[torch.zeros(H, W, dtype=torch.bool, device=images.device)] if e else [] for e in empty_sis.tolist()]
    active = (~empty_sis).nonzero().flatten()
    while len(active):
        res = backselect(model, images[active], method, block, keep=keep[active], target=target[active],
                         mask_value=mask_value, **kwargs)
        sis = _verified(model, images[active], res, threshold, find_sis(res, threshold))
        for i, b in enumerate(active.tolist()):
            if sis.size[i] >= 0:
                found[b].append(sis.mask[i])
        keep[active] &= ~sis.keep
        more = (sis.size > 0) & keep[active].any(1)
        if max_sis is not None:
            more &= torch.tensor([len(found[b]) < max_sis for b in active.tolist()], device=more.device)
        active = active[more]
    empty = torch.zeros(0, H, W, dtype=torch.bool, device=images.device)
    return [torch.stack(f) if f else empty for f in found]


def subset_size(n_features: int, frac: float) -> int:
    """Features kept by a ``frac`` subset: ceil(frac * P), at least 1 (5% of 784 -> 40), as the paper's
    ``sis_training_util.py``; within 1e-9 of an integer counts as it (0.3 * 1000 is 300, not 301)."""
    if not 0 < frac <= 1:
        raise ValueError(f"frac must lie in (0, 1], got {frac}")
    return max(1, math.ceil(frac * n_features - 1e-9))


def pixel_subset(result: BackSelectResult, images: torch.Tensor, frac: float) -> tuple:
    """Backward-selection pixel subset (paper 3.3): the last ``frac`` of the order kept (never those masked
    on entry). Returns (masked images (B, C, H, W), keep mask (B, H, W))."""
    B, P = result.order.shape
    n = torch.full((B,), subset_size(P, frac), device=result.order.device).minimum(P - result.n_fixed)
    keep = features_to_pixels(_last_features(result.order, n), result.image_size, result.block)
    keep = keep.to(images.device)
    return apply_keep(images, keep, result.mask_value.to(images.device)), keep


def random_subset(images: torch.Tensor, frac: float, seed: int = 0, block: int = 1, mask_value=0.0) -> tuple:
    """The paper's baseline: as many features as :func:`pixel_subset`, uniformly at random from a seeded CPU
    generator (same on every device). Returns (masked images (B, C, H, W), keep mask (B, H, W))."""
    B, _, H, W = images.shape
    hf, wf = feature_grid(H, W, block)
    n = subset_size(hf * wf, frac)
    rank = torch.rand(B, hf * wf, generator=torch.Generator().manual_seed(seed)).argsort(1).argsort(1)
    keep = features_to_pixels((rank < n).to(images.device), (H, W), block)
    return apply_keep(images, keep, mask_value), keep
