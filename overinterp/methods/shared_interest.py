"""Shared Interest (Boggust et al., CHI 2022): coverage of a ground-truth region G (here the garment's
silhouette) by an explanation region E; tensors in, tensors out (runs: experiments.shared_interest).

    IoU                   |G ∩ E| / |G ∪ E|   1 only when E = G
    ground-truth coverage |G ∩ E| / |G|       how much of the object the explanation uses
    explanation coverage  |G ∩ E| / |E|       how much of the explanation lies on the object

An empty denominator gives 1 when both regions are empty, else 0 (our convention; the paper's code divides
by zero). E is a backward-selection region or a saliency map binarised by :func:`binarize`. The eight
cases (:data:`CASES`): correct or not x (GTC, EC) high or low, high meaning >= ``high`` (0.5; the paper
names no number).

    G = silhouette(pixels)                               # (B, H, W) bool
    E = binarize(saliency_map(model, x, "saliency"))     # (B, H, W) bool
    scores = coverage(G, E)                              # IoU, GTC, EC per image
    case = cases(correct, scores["ground-truth coverage"], scores["explanation coverage"])
"""
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.methods import optional


IOU, GTC, EC = "IoU", "ground-truth coverage", "explanation coverage"
METRICS = (IOU, GTC, EC)
SALIENCY_METHODS = {"saliency": "Saliency", "integrated_gradients": "Integrated Gradients"}


def _flat(mask: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(mask).bool().flatten(1)


def _ratio(num: torch.Tensor, den: torch.Tensor, both_empty: torch.Tensor) -> torch.Tensor:
    """num / den in float64; 1 where both regions are empty, 0 where only den is."""
    out = num.double() / den.double().clamp(min=1)
    return torch.where(den == 0, both_empty.double(), out)


def _counts(G, E):
    g, e = _flat(G), _flat(E)
    if g.shape != e.shape:
        raise ValueError(f"ground truth {tuple(g.shape)} and explanation {tuple(e.shape)} differ in shape")
    both_empty = (g.sum(1) == 0) & (e.sum(1) == 0)
    return (g & e).sum(1), (g | e).sum(1), g.sum(1), e.sum(1), both_empty


def iou(G: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """(B,) |G ∩ E| / |G ∪ E| of (B, H, W) masks (1 when both are empty)."""
    inter, union, _, _, both = _counts(G, E)
    return _ratio(inter, union, both)


def ground_truth_coverage(G: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """(B,) |G ∩ E| / |G| (1 when both are empty, 0 when only G is)."""
    inter, _, g, _, both = _counts(G, E)
    return _ratio(inter, g, both)


def explanation_coverage(G: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """(B,) |G ∩ E| / |E| (1 when both are empty, 0 when only E is)."""
    inter, _, _, e, both = _counts(G, E)
    return _ratio(inter, e, both)


def coverage(G: torch.Tensor, E: torch.Tensor) -> pd.DataFrame:
    """The three scores of every image, with |G| and |E| in pixels."""
    return pd.DataFrame({IOU: iou(G, E).numpy(), GTC: ground_truth_coverage(G, E).numpy(),
                         EC: explanation_coverage(G, E).numpy(), "|G|": _flat(G).sum(1).numpy(),
                         "|E|": _flat(E).sum(1).numpy()})


def binarize(saliency: torch.Tensor, how: str = "std", n_std: float = 1.0, percentile: float = 0.9) -> torch.Tensor:
    """(B, H, W) saliency -> (B, H, W) bool region, as Shared Interest's code: per image min-max normalised,
    pixels >= mean + ``n_std`` * population std (``how="std"``) or >= the ``percentile`` quantile. A constant
    map gives the empty region."""
    if how not in ("std", "percentile"):
        raise ValueError(f"how must be 'std' or 'percentile', got {how!r}")
    if not 0 <= percentile <= 1:
        raise ValueError(f"percentile must lie in [0, 1], got {percentile}")
    s = torch.as_tensor(saliency).double().flatten(1)
    lo, hi = s.min(1, keepdim=True).values, s.max(1, keepdim=True).values
    flat = (hi - lo == 0).squeeze(1)
    s = (s - lo) / (hi - lo).clamp(min=1e-300)
    if how == "std":
        t = s.mean(1, keepdim=True) + n_std * s.std(1, unbiased=False, keepdim=True)
    else:
        t = torch.quantile(s, percentile, dim=1, keepdim=True)
    out = (s >= t) & ~flat[:, None]
    return out.view(torch.as_tensor(saliency).shape)


def silhouette(pixels: torch.Tensor, level: float = 0.05) -> torch.Tensor:
    """(B, H, W) intensities in [0, 1] -> (B, H, W) bool silhouette: all but the pixels <= ``level`` reachable
    from the border by 4-neighbour steps over such pixels (dark holes inside count as G)."""
    dark = torch.as_tensor(pixels) <= level
    border = torch.zeros_like(dark)
    border[:, 0, :] = border[:, -1, :] = border[:, :, 0] = border[:, :, -1] = True
    bg = dark & border
    while True:
        grown = bg.clone()
        grown[:, 1:, :] |= bg[:, :-1, :]
        grown[:, :-1, :] |= bg[:, 1:, :]
        grown[:, :, 1:] |= bg[:, :, :-1]
        grown[:, :, :-1] |= bg[:, :, 1:]
        grown &= dark
        if torch.equal(grown, bg):
            return ~bg
        bg = grown


def box_region(boxes, size: tuple) -> torch.Tensor:
    """(B, 4) boxes (x0, y0, x1, y1) in pixels, x1 and y1 excluded -> (B, H, W) bool regions of ``size``
    (H, W), clipped."""
    b = torch.as_tensor(boxes, dtype=torch.long).view(-1, 4)
    H, W = size
    ys, xs = torch.arange(H).view(1, H, 1), torch.arange(W).view(1, 1, W)
    x0, y0, x1, y1 = (b[:, i].view(-1, 1, 1) for i in range(4))
    return (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)


def saliency_map(model: nn.Module, images: torch.Tensor, method: str, target: torch.Tensor,
                 baseline: float = 0.0, n_steps: int = 50, batch_size: int = 256) -> torch.Tensor:
    """(B, H, W) |attribution| summed over channels (Captum): ``"saliency"`` (input gradient of the target
    logit) or ``"integrated_gradients"`` (``n_steps`` from the constant image ``baseline``). Eval mode."""
    if method not in SALIENCY_METHODS:
        raise ValueError(f"method must be one of {', '.join(SALIENCY_METHODS)}, got {method!r}")
    captum = optional("captum.attr", "captum", "saliency maps (chapter 14)")
    model.eval()
    out = []
    for i in range(0, len(images), batch_size):
        x, t = images[i:i + batch_size].clone().requires_grad_(True), target[i:i + batch_size].to(images.device)
        if method == "saliency":
            a = captum.Saliency(model).attribute(x, target=t, abs=True)
        else:
            a = captum.IntegratedGradients(model).attribute(x, baselines=baseline, target=t, n_steps=n_steps,
                                                       internal_batch_size=batch_size).abs()
        out.append(a.detach().sum(1).cpu())
    return torch.cat(out)


@dataclass(frozen=True)
class Case:
    """One of the eight recurring patterns: a prediction outcome and a corner of (GTC, EC)."""
    name: str
    correct: bool
    gtc_high: bool
    ec_high: bool
    reading: str      # what the pattern suggests (the papers' reading, condensed)
    rank_by: str      # the score the gallery ranks this case's images by
    descending: bool  # rank highest first (else lowest first)


CASES = (
    Case("Human aligned", True, True, True, "right for the right reasons: explanation ≈ object", IOU, True),
    Case("Sufficient subset", True, False, True, "a part of the object suffices", EC, True),
    Case("Sufficient context", True, True, False, "the object and its surroundings", GTC, True),
    Case("Context dependent", True, False, False, "right from the background", IOU, False),
    Case("Confuser", False, True, True, "wrong although aligned: ambiguous label", IOU, True),
    Case("Insufficient subset", False, False, True, "too small a part of the object", EC, True),
    Case("Context confusion", False, True, False, "the object plus misleading context", GTC, True),
    Case("Distractor", False, False, False, "wrong from something else in the image", EC, False),
)


def cases(correct, gtc, ec, high: float = 0.5) -> np.ndarray:
    """The name of each image's case (:data:`CASES`): a score is high when >= ``high``."""
    correct, g, e = (np.asarray(v) for v in (correct, gtc, ec))
    if not 0 < high <= 1:
        raise ValueError(f"high must lie in (0, 1], got {high}")
    names = {(c.correct, c.gtc_high, c.ec_high): c.name for c in CASES}
    return np.array([names[(bool(c), bool(a >= high), bool(b >= high))] for c, a, b in zip(correct, g, e)],
                    dtype=object)
