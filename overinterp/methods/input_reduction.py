"""Input reduction (Feng et al. 2018, EMNLP) carried to images, and its mitigation by entropy fine-tuning;
tensors in, tensors out (cached runs: :mod:`overinterp.experiments.input_reduction`).

**Importance** (their 2.1, Eq. 1), first order on pixels removed to the mask value m:

    g_i = sum_c (x_ic - m_c) * d f / d x_ic          (f: log-odds of the predicted class y),

at the current reduced input; minus the mask gradient of Batched Gradient BackSelect (S5), so beam 1 and
one pixel per step *is* gradient backward selection, stopped where the prediction would change.

**Beam search** (their 2.2): every beam input proposes removing one of its least important pixels;
candidates that change the prediction are dropped, duplicates merged, the best by log-odds kept; beam
size max(1, min(k, L - 3)) at L pixels left. It stops when no candidate keeps the prediction; all inputs
of the last beam are the fine-tuning's negatives (4.1). Beyond the paper, a step may remove
max(1, floor(fraction * L)) pixels, the fraction halved on failure down to one pixel; ``fraction=0`` is theirs.

**Mitigation** (their Eq. 2): minimise cross-entropy(regular) - lambda * mean entropy(reduced), batch-norm
statistics frozen (eval mode) so the entropy is raised on the function evaluated.

    res = reduce_inputs(model, images, beam=5)         # res.keep (B, P), res.size (B,)
    loss = eq2_loss(model(x), y, model(x_reduced), lam=1.0)
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from overinterp.engine.backselect import apply_keep, log_odds
from overinterp.paper.numbers import FENG_BEAM

CL = torch.channels_last  # the fast layout for conv nets on CPU too (overinterp.engine.backselect)


def importance(model: nn.Module, images: torch.Tensor, keep: torch.Tensor, target: torch.Tensor,
               mask_value=0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient importance (module docstring): images (n, C, H, W) unreduced, keep (n, P) bool (False =
    removed), target (n,) -> f (n,) float64 log-odds on the reduced input, g (n, P) (0 for removed pixels)."""
    n, C, H, W = images.shape
    with torch.inference_mode(False), torch.enable_grad():
        x = apply_keep(images, keep.view(n, H, W), mask_value).contiguous(memory_format=CL).requires_grad_(True)
        f = log_odds(model(x), target)
        grad, = torch.autograd.grad(f.sum(), x)
    mv = torch.as_tensor(mask_value, dtype=x.dtype, device=x.device).flatten()
    g = ((x.detach() - mv.view(1, -1, 1, 1)) * grad).sum(1).flatten(1)
    return f.detach(), g


@torch.inference_mode()
def _forward(model, images, keep, target, mask_value, chunk):
    """(pred (n,), log-odds of target (n,)) on images with ``keep`` applied, in chunks."""
    n, C, H, W = images.shape
    pred, f = [], []
    for lo in range(0, n, chunk):
        x = apply_keep(images[lo:lo + chunk], keep[lo:lo + chunk].view(-1, H, W), mask_value)
        z = model(x.contiguous(memory_format=CL))
        pred.append(z.argmax(1))
        f.append(log_odds(z, target[lo:lo + chunk]))
    return torch.cat(pred), torch.cat(f)


@dataclass
class Reduction:
    """Input reduction of B images (P pixels each); keep masks: True = pixel still present."""
    keep: torch.Tensor        # (B, P) the reduced input: the best of the last beam
    size: torch.Tensor        # (B,) pixels left in it
    pred: torch.Tensor        # (B,) predicted class, the same on the original and the reduced input
    full_log_odds: torch.Tensor  # (B,) log-odds of pred on the original image
    log_odds: torch.Tensor    # (B,) log-odds of pred on the reduced input
    beam: torch.Tensor        # (B, E, P) the last beam (all its inputs have ``size`` pixels)
    alive: torch.Tensor       # (B, E) which entries of ``beam`` hold an input
    steps: torch.Tensor       # (B,) reduction steps taken (candidate evaluations)

    @property
    def confidence(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Softmax probability of pred on the original and on the reduced input (for plots)."""
        return torch.sigmoid(self.full_log_odds), torch.sigmoid(self.log_odds)

    def variants(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(image index (n,), keep (n, P)) of every input of the last beams: Feng et al.'s negatives."""
        b, e = self.alive.nonzero().unbind(1)
        return b, self.beam[b, e]

    def to_payload(self) -> dict:
        return {k: getattr(self, k).cpu() for k in self.__dataclass_fields__}


def reduce_inputs(model: nn.Module, images: torch.Tensor, beam: int = FENG_BEAM, fraction: float = 0.0,
                  mask_value=0.0, chunk: int = 256, progress: bool = True) -> Reduction:
    """Beam-search input reduction of ``images`` (B, C, H, W) (module docstring); beam: the maximum k,
    fraction: see there. Ties in importance: the lowest pixel index is removed first; among candidates
    with equal log-odds, the one proposed first (better beam entry, lower rank)."""
    if beam < 1 or not 0 <= fraction < 1:
        raise ValueError(f"beam must be >= 1 and fraction in [0, 1), got beam={beam}, fraction={fraction}")
    if model.training:
        raise ValueError("input reduction needs a deterministic model: call model.eval() first")
    x = images.detach().to(next(model.parameters()).dtype)
    model.to(memory_format=CL)                                           # layout only: same parameters
    B, C, H, W = x.shape
    P, E, dev = H * W, beam, x.device
    all_keep = torch.ones(B, P, dtype=torch.bool, device=dev)
    pred, f0 = _forward(model, x, all_keep, torch.zeros(B, dtype=torch.long, device=dev), mask_value, chunk)
    f0 = _forward(model, x, all_keep, pred, mask_value, chunk)[1]
    keeps = torch.zeros(B, E, P, dtype=torch.bool, device=dev)
    keeps[:, 0] = True
    alive = torch.zeros(B, E, dtype=torch.bool, device=dev)
    alive[:, 0] = True
    score = torch.full((B, E), -math.inf, dtype=torch.float64, device=dev)
    score[:, 0] = f0
    frac = torch.full((B,), float(fraction), dtype=torch.float64, device=dev)
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    steps = torch.zeros(B, dtype=torch.long, device=dev)
    hashv = torch.rand(P, dtype=torch.float64, device=dev, generator=torch.Generator(device=dev).manual_seed(0))
    bar = tqdm(total=B, desc=f"input reduction (beam {beam})", unit="img", disable=not progress, leave=None)
    while True:
        L = keeps[:, 0].sum(1)                                           # (B,) entry 0 is always alive
        done |= L <= 1
        if done.all():
            break
        act = ~done
        width = (L - 3).clamp(min=1).clamp(max=E)                       # (B,) their beam size at L
        s = torch.minimum((frac * L).floor().long().clamp(min=1), L - 1)  # (B,) pixels removed per candidate
        b, e = (alive & act[:, None]).nonzero().unbind(1)                # the beam entries that propose
        g = torch.cat([importance(model, x[b[i:i + chunk]], keeps[b[i:i + chunk], e[i:i + chunk]],
                                  pred[b[i:i + chunk]], mask_value)[1] for i in range(0, len(b), chunk)])
        g = g.masked_fill(~keeps[b, e], math.inf)                        # removed pixels are no candidates
        rank = torch.empty_like(g, dtype=torch.long)
        order = torch.sort(g, dim=1, stable=True).indices                # least important first; ties: low index
        rank.scatter_(1, order, torch.arange(P, device=dev).expand_as(order))
        j = torch.arange(E, device=dev)                                  # candidate j of each entry
        sj = s[b][:, None]                                               # (n, 1)
        valid = (j[None] < width[b][:, None]) & ((j[None] + 1) * sj <= L[b][:, None] - 1)   # (n, E)
        r = rank[:, None, :]                                             # (n, 1, P)
        drop = (r >= j[None, :, None] * sj[..., None]) & (r < (j[None, :, None] + 1) * sj[..., None])
        cand = keeps[b, e][:, None, :] & ~drop                           # (n, E, P)
        ci, cj = valid.nonzero().unbind(1)
        cpred, cf = _forward(model, x[b[ci]], cand[ci, cj], pred[b[ci]], mask_value, chunk)
        ok = cpred == pred[b[ci]]
        # per image: candidates as (B, E*E) slots, slot = entry * E + j
        slot = e[ci] * E + cj
        img = b[ci]
        cs = torch.full((B, E * E), -math.inf, dtype=torch.float64, device=dev)
        cs[img[ok], slot[ok]] = cf[ok]
        ck = torch.zeros(B, E * E, P, dtype=torch.bool, device=dev)
        ck[img, slot] = cand[ci, cj]
        # merge duplicates: a candidate equal to a better one (or an equal-scored earlier one) is dropped
        h = ck.double() @ hashv                                          # (B, E*E)
        srt = torch.sort(cs, dim=1, descending=True, stable=True).indices
        hs, ss = h.gather(1, srt), cs.gather(1, srt)
        dup = ((hs[:, :, None] == hs[:, None, :]) & torch.ones(E * E, E * E, dtype=torch.bool, device=dev).tril(-1)
               & (ss[:, None, :] > -math.inf)).any(2)
        ss = ss.masked_fill(dup, -math.inf)
        top = ss[:, :E]                                                  # (B, E) best first
        new_alive = (top > -math.inf) & (j[None] < width[:, None])
        moved = act & new_alive.any(1)
        stuck = act & ~moved
        # a reduced step size is retried before the image is done
        halve = stuck & (s > 1)
        frac = torch.where(halve, frac / 2, frac)
        finished = stuck & ~halve
        done |= finished
        bar.update(int(finished.sum()))
        steps += act.long()
        mv = moved.nonzero().squeeze(1)
        keeps[mv] = ck[mv[:, None], srt[mv, :E]] & new_alive[mv][..., None]
        alive[mv] = new_alive[mv]
        score[mv] = top[mv].masked_fill(~new_alive[mv], -math.inf)
    bar.update(int(B - bar.n))
    bar.close()
    best = score.argmax(1)
    ar = torch.arange(B, device=dev)
    keep = keeps[ar, best]
    return Reduction(keep, keep.sum(1), pred, f0, score[ar, best], keeps, alive, steps)


# ----------------------------------------------------------------------------- Eq. 2

def entropy(logits: torch.Tensor) -> torch.Tensor:
    """(n, K) logits -> (n,) entropy (nats) of their softmax, from log-probabilities (no 0 log 0)."""
    logp = F.log_softmax(logits.float(), -1)
    return -(logp.exp() * logp.clamp(min=torch.finfo(logp.dtype).min)).sum(-1)   # p = 0 adds 0, not nan


def eq2_loss(logits: torch.Tensor, labels: torch.Tensor, reduced_logits: torch.Tensor, lam: float) -> torch.Tensor:
    """Feng et al.'s Eq. 2 as a loss (means, not sums): cross-entropy(regular) - ``lam`` * entropy(reduced)."""
    return F.cross_entropy(logits.float(), labels) - lam * entropy(reduced_logits).mean()


def finetune(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, reduced: torch.Tensor, steps: int,
             lam: float = 1.0, lr: float = 1e-3, batch_size: int = 128, seed: int = 0, progress: bool = True,
             desc: str = "entropy fine-tuning") -> list[dict]:
    """Fine-tune ``model`` in place by Eq. 2: ``steps`` SGD steps (the zoo's momentum and decay, constant
    ``lr``) on ``batch_size`` regular and reduced images each, seeded; batch norms frozen. One record per step."""
    dev = next(model.parameters()).device
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    perm = {"x": torch.randperm(len(images), generator=gen), "r": torch.randperm(len(reduced), generator=gen)}
    pos = {"x": 0, "r": 0}

    def batch(name, n):
        if pos[name] + batch_size > n:
            perm[name], pos[name] = torch.randperm(n, generator=gen), 0
        idx = perm[name][pos[name]:pos[name] + batch_size]
        pos[name] += batch_size
        return idx

    history = []
    for t in tqdm(range(steps), desc=desc, disable=not progress, leave=None):
        i, k = batch("x", len(images)), batch("r", len(reduced))
        x, y, xr = images[i].to(dev), labels[i].to(dev), reduced[k].to(dev)
        out = model(torch.cat([x, xr]))
        ce, ent = F.cross_entropy(out[:len(x)].float(), y), entropy(out[len(x):]).mean()
        loss = ce - lam * ent
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append({"step": t + 1, "cross-entropy": ce.item(), "entropy": ent.item()})
    return history
