"""Noisy linear imputation (Rong et al. 2022, ROAD, section 4): fill removed pixels from the kept ones, so
a retrained model cannot read the class from *where* a constant fill is (class information leakage).

Each removed pixel is the weighted mean of its in-image 8 neighbours (:data:`NEIGHBOURS`), removed ones
included -- one sparse linear system per image and channel -- plus Gaussian noise ``noise`` (images'
units) so no exact linear relation gives the positions away.

    filled = noisy_linear_impute(images, keep, noise=0.01, seed=0)   # (N, C, H, W), kept pixels unchanged

keep (N, H, W) bool, True = kept; an image with no kept pixel raises ``ValueError``.
"""
import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.linalg import spsolve

#: (row offset, column offset) -> weight of that neighbour in a removed pixel's mean (ROAD)
NEIGHBOURS = {(-1, -1): 1 / 12, (-1, 0): 1 / 6, (-1, 1): 1 / 12, (0, -1): 1 / 6, (0, 1): 1 / 6,
              (1, -1): 1 / 12, (1, 0): 1 / 6, (1, 1): 1 / 12}


def _fill(image: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """image (C, H, W) float64, keep (H, W) bool -> the removed pixels' values (C, n_removed) solving
    ``sum_j w_j x_j = (sum_j w_j) x_i`` for every removed pixel ``i`` over its in-image neighbours ``j``."""
    C, H, W = image.shape
    removed = np.flatnonzero(~keep.ravel())
    var = np.full(H * W, -1)
    var[removed] = np.arange(len(removed))
    r, c = np.divmod(removed, W)
    rows, cols, vals = [np.arange(len(removed))], [np.arange(len(removed))], []
    diag = np.zeros(len(removed))
    rhs = np.zeros((len(removed), C))
    flat = image.reshape(C, -1)
    for (dr, dc), w in NEIGHBOURS.items():
        rr, cc = r + dr, c + dc
        inside = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        eq, at = np.flatnonzero(inside), (rr * W + cc)[inside]
        diag[eq] += w
        unknown = var[at] >= 0
        rows.append(eq[unknown]), cols.append(var[at[unknown]]), vals.append(np.full(unknown.sum(), -w))
        rhs[eq[~unknown]] += w * flat[:, at[~unknown]].T
    A = coo_matrix((np.concatenate([diag] + vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(len(removed), len(removed))).tocsc()
    return np.atleast_2d(spsolve(A, rhs)).reshape(len(removed), C).T


def noisy_linear_impute(images: torch.Tensor, keep: torch.Tensor, noise: float = 0.01, seed: int = 0) -> torch.Tensor:
    """(N, C, H, W) ``images`` with pixels where ``keep`` (N, H, W) is False imputed (module docstring);
    the noise is seeded by ``seed``."""
    if images.dim() != 4 or keep.shape != (images.shape[0], *images.shape[2:]):
        raise ValueError(f"images must be (N, C, H, W) and keep (N, H, W), got {tuple(images.shape)} and "
                         f"{tuple(keep.shape)}")
    keep = keep.bool().cpu()
    if not keep.flatten(1).any(1).all():
        raise ValueError("noisy_linear_impute: an image has no kept pixel to interpolate from")
    out = images.detach().cpu().double().clone()
    gen = torch.Generator().manual_seed(seed)
    for n in range(len(out)):
        k = keep[n].numpy()
        if k.all():
            continue
        fill = torch.from_numpy(_fill(out[n].numpy(), k))                       # (C, n_removed)
        fill += noise * torch.randn(fill.shape, generator=gen, dtype=torch.float64)
        out[n].view(out.shape[1], -1)[:, torch.from_numpy(~k.ravel())] = fill
    return out.to(images.dtype).to(images.device)
