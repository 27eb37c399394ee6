"""The tests the paper's critics proposed, tensors in, tensors out (runs: :mod:`overinterp.experiments.critiques`).

**Springer (2022)** reads SIS images as adversarial examples whose evidence sits on the edge of the mask:
:func:`dilate` gives back the kept pixels' neighbours, :func:`boundary` is the ring of masked pixels around
the kept ones, :func:`smoothgrad` / :func:`attribution_shares` measure a saliency map's share on each
region, and :func:`matched_random_keep` is the control. **Calibration under masking** (ReCalX):
:func:`expected_calibration_error`, :func:`reliability`. **Insertion curves**: :func:`top_keep`.

Masks are keep masks, (B, H, W) bool, True = the pixel is visible (as :mod:`overinterp.engine.sis`).

    attr = smoothgrad(model, images, target, n=16, sigma=0.4)
    shares = attribution_shares(attr, keep)         # (B, 3): kept, ring, elsewhere; rows sum to 1
    ece = expected_calibration_error(confidence, correct)
"""

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from overinterp.engine.backselect import feature_grid, features_to_pixels
from overinterp.engine.sis import subset_size
from overinterp.methods import optional


#: the three parts of an image that :func:`attribution_shares` splits a map into
REGIONS = ("kept pixels", "boundary ring", "elsewhere")


def dilate(keep: torch.Tensor, k: int) -> torch.Tensor:
    """(B, H, W) bool keep-mask grown by a ``k`` x ``k`` square (``k`` odd; 1: unchanged) by a max-pool with
    zero padding. Springer (2022) uses k = 3."""
    k = int(k)
    if k < 1 or k % 2 == 0:
        raise ValueError(f"the dilation kernel must be an odd size >= 1, got {k}")
    if k == 1:
        return keep.bool().clone()
    return F.max_pool2d(keep[:, None].float(), k, stride=1, padding=k // 2)[:, 0] > 0


def boundary(keep: torch.Tensor) -> torch.Tensor:
    """(B, H, W) bool: the masked pixels touching a kept one (8-neighbourhood)."""
    return dilate(keep, 3) & ~keep.bool()


def regions(keep: torch.Tensor) -> torch.Tensor:
    """(B, 3, H, W) bool partition: kept pixels, the :func:`boundary` ring, the rest (:data:`REGIONS`)."""
    keep = keep.bool()
    ring = boundary(keep)
    return torch.stack([keep, ring, ~keep & ~ring], 1)


def smoothgrad(model: nn.Module, images: torch.Tensor, target: torch.Tensor, n: int = 16, sigma: float = 0.4,
               seed: int = 0, batch_size: int = 64) -> torch.Tensor:
    """SmoothGrad (Smilkov et al. 2017): the absolute input gradient of the ``target`` logit, averaged over
    ``n`` copies with Gaussian noise ``sigma`` (images' units, seeded), summed over channels: (B, H, W), CPU."""
    captum = optional("captum.attr", "captum", "SmoothGrad (chapter 7b)")
    model.eval()
    out = []
    with torch.random.fork_rng(devices=[images.device] if images.is_cuda else []):
        torch.manual_seed(seed)
        for i in range(0, len(images), batch_size):
            x = images[i:i + batch_size].clone().requires_grad_(True)
            t = target[i:i + batch_size].to(images.device)
            a = captum.NoiseTunnel(captum.Saliency(model)).attribute(x, nt_type="smoothgrad", nt_samples=int(n),
                                                                     stdevs=float(sigma), nt_samples_batch_size=batch_size, target=t, abs=True)
            out.append(a.detach().sum(1).cpu())
    return torch.cat(out)


def attribution_shares(attr: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(B, 3) float64: the share of |``attr``| (B, H, W) on each of :data:`REGIONS`; rows sum to 1 (NaN where
    the attribution is all 0)."""
    a = attr.abs().double()[:, None]                                   # (B, 1, H, W)
    parts = (a * regions(keep)).flatten(2).sum(2)                      # (B, 3)
    total = parts.sum(1, keepdim=True)
    return torch.where(total > 0, parts / total.clamp(min=1e-300), torch.full_like(parts, float("nan")))


def matched_random_keep(keep: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """(B, H, W) bool: as many kept pixels per image as ``keep``, uniformly at random (seeded, CPU)."""
    B, H, W = keep.shape
    n = keep.flatten(1).sum(1)
    rank = torch.rand(B, H * W, generator=torch.Generator().manual_seed(seed)).argsort(1).argsort(1)
    return (rank < n.cpu()[:, None]).view(B, H, W).to(keep.device)


def top_keep(scores: torch.Tensor, frac: float, block: int = 1) -> torch.Tensor:
    """(B, H, W) bool: the :func:`~overinterp.engine.sis.subset_size` features (``block`` squares scored by
    their sum) with the highest ``scores`` (B, H, W); ties go to the lower feature index."""
    B, H, W = scores.shape
    hf, wf = feature_grid(H, W, block)
    s = F.pad(scores.double(), (0, wf * block - W, 0, hf * block - H))
    s = s.view(B, hf, block, wf, block).sum((2, 4)).flatten(1)        # (B, P) score per feature
    n = subset_size(hf * wf, frac)
    order = torch.sort(-s, dim=1, stable=True).indices[:, :n]
    keep = torch.zeros_like(s, dtype=torch.bool).scatter_(1, order, True)
    return features_to_pixels(keep, (H, W), block)


def reliability(confidence, correct, bins: int = 15) -> pd.DataFrame:
    """Reliability diagram of ``confidence`` (N,) in [0, 1] and ``correct`` (N,) 1/0: one row per equal-width
    bin (mean confidence and accuracy NaN in an empty bin)."""
    conf, ok = np.asarray(confidence, float).ravel(), np.asarray(correct, float).ravel()
    if conf.shape != ok.shape:
        raise ValueError(f"confidence {conf.shape} and correct {ok.shape} differ in shape")
    b = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)  # bin m: (m / bins, (m + 1) / bins], 0 in the first
    n = np.bincount(b, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(b, conf, bins) / n
        acc = np.bincount(b, ok, bins) / n
    edges = np.arange(bins + 1) / bins
    return pd.DataFrame({"low": edges[:-1], "high": edges[1:], "images": n, "mean confidence": mean_conf,
                         "accuracy": acc})


def expected_calibration_error(confidence, correct, bins: int = 15) -> float:
    """Expected calibration error (Guo et al. 2017, 15 bins): the prediction-weighted mean of |accuracy -
    mean confidence| over equal-width bins, in [0, 1]; arguments as :func:`reliability`."""
    r = reliability(confidence, correct, bins)
    filled = r[r["images"] > 0]
    if filled.empty:
        raise ValueError("expected_calibration_error of no predictions")
    w = filled["images"] / filled["images"].sum()
    return float((w * (filled["accuracy"] - filled["mean confidence"]).abs()).sum())
