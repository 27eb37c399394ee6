"""Input reduction (Feng et al. 2018, "Pathologies of neural models make interpretations difficult")
carried to images, and their mitigation: fine-tuning that maximises entropy on reduced inputs.

**Importance** (their 2.1). Feng et al. define a word's importance as the drop in confidence when
it is removed, g(x_i | x) = f(y | x) - f(y | x_-i) (their Eq. 1), and approximate it by the dot
product of the word's embedding with the gradient of the output w.r.t. that embedding. On pixels,
removing pixel i sets it to the mask value m (the mean pixel: 0 in normalised space, as
:func:`overinterp.backselect.apply_keep`), and the same first-order estimate is

    g_i = sum_c (x_ic - m_c) * d f / d x_ic          (f: log-odds of the predicted class y),

evaluated at the current (partly reduced) input: gradient x input, since m = 0. Ranking by the
gradient of the probability, the log-probability or the log-odds gives the same order within an
input (each is the other times a positive factor of that input); we use the log-odds, which does
not saturate in float32 (:func:`overinterp.backselect.log_odds`). This g is minus the mask gradient
of Batched Gradient BackSelect (paper S5): input reduction with beam 1 and one pixel per step *is*
gradient backward selection, stopped where the prediction would change.

**Reduction with beam search** (their 2.2). At each step every input in the beam proposes the
inputs with one of its ``beam`` least important remaining pixels removed; candidates whose
predicted class differs from the original one are dropped, duplicates merged, and the ``beam``
candidates with the highest log-odds form the next beam. The beam size is Feng et al.'s
max(1, min(k, L - 3)) with k the maximum beam size (theirs: 5) and L the remaining pixels. The
reduction stops when no candidate keeps the prediction (or one pixel is left); the result is the
best input of the last beam, and every input of that beam (all of the same, minimal, size) is a
"negative" example for the fine-tuning (their 4.1). Beyond the paper, to fit a CPU budget, a step
may remove s = max(1, floor(fraction * L)) pixels at once (candidate j removes the pixels ranked
j*s .. (j+1)*s - 1 by importance); when no candidate survives, the fraction is halved until one
pixel per step fails too, so the stopping point is still found pixel by pixel. ``fraction=0`` is
their procedure (one pixel per step, L steps from L pixels). All images of a batch
reduce in lockstep, and the candidates of all beams are evaluated in batched forward passes.

**Mitigation** (their 4.1, Eq. 2). Fine-tune the model to maximise
sum log f(y | x) + lambda * sum H(f(. | x~)): the log-likelihood on regular training images and
the entropy of the output on reduced ones. Each step here takes a batch of each, the loss being
cross-entropy(regular) - lambda * mean entropy(reduced). Batch-norm statistics stay frozen (the
model in eval mode, only its parameters train), so the entropy is raised on the very function that
is evaluated, and the reduced inputs do not enter the normalisation of regular ones.

    res = reduce_inputs(model, images, beam=5)         # res.keep (B, P), res.size (B,)
    loss = eq2_loss(model(x), y, model(x_reduced), lam=1.0)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from .backselect import apply_keep, log_odds
from .verdicts import Verdict, spread

CL = torch.channels_last  # the fast layout for conv nets on CPU too (overinterp.backselect)

__all__ = ["FENG_BEAM", "FENG_TABLE2", "FENG_MEAN_LENGTH", "importance", "Reduction", "reduce_inputs", "entropy",
           "eq2_loss", "finetune", "finetune_config", "finetuned_model", "negatives", "reduction",
           "reduction_selection", "experiment", "table2", "increases"]

FENG_BEAM = 5   # their 2.2: "beam size five ... comparable results to larger beam sizes"
#: Their Table 2 (NLP validation sets): accuracy (%) and mean reduced length (words) before / after fine-tuning.
FENG_TABLE2 = {"SQuAD": (77.41, 78.03, 2.27, 4.97), "SNLI": (85.71, 85.72, 1.50, 2.20), "VQA": (61.61, 61.54, 2.30, 2.87)}
#: Their Figure 3: mean length (words) of the original and the reduced inputs.
FENG_MEAN_LENGTH = {"SQuAD": (11.5, 2.3), "SNLI": (7.5, 1.5), "VQA": (6.2, 2.3)}


def importance(model: nn.Module, images: torch.Tensor, keep: torch.Tensor, target: torch.Tensor,
               mask_value=0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Feng et al.'s gradient importance of every pixel (module docstring).

    images (n, C, H, W) unreduced, keep (n, P) bool (False = removed), target (n,) class.
    Returns f (n,) float64, the log-odds of ``target`` on the reduced input, and g (n, P):
    sum over channels of (x - m) * d f / d x there (0 for removed pixels)."""
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
    """Input reduction with beam search of every image of ``images`` (B, C, H, W) (module docstring).

    beam: maximum beam size k (their 5); the beam at L remaining pixels is max(1, min(k, L - 3)).
    fraction: share of the L remaining pixels removed per step, max(1, floor(fraction * L)) pixels;
    halved whenever no candidate keeps the prediction, until one pixel per step fails too
    (0 = one pixel per step, their procedure). Ties in importance: the lowest pixel index is removed first. Among
    candidates with equal log-odds, the one proposed first (by the better beam entry, lower rank)."""
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
    """Feng et al.'s Eq. 2 as a loss to minimise (per-example means instead of sums):
    cross-entropy on the regular examples minus ``lam`` times the mean entropy on the reduced ones."""
    return F.cross_entropy(logits.float(), labels) - lam * entropy(reduced_logits).mean()


def finetune(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, reduced: torch.Tensor, steps: int,
             lam: float = 1.0, lr: float = 1e-3, batch_size: int = 128, seed: int = 0, progress: bool = True,
             desc: str = "entropy fine-tuning") -> list[dict]:
    """Fine-tune ``model`` in place by Eq. 2 (:func:`eq2_loss`): each of ``steps`` SGD steps (Nesterov
    momentum 0.9, weight decay 5e-4 as the zoo's recipe, constant ``lr``) takes ``batch_size`` regular
    images (images, labels) and ``batch_size`` reduced images ``reduced``, both cycling through seeded
    permutations. Batch-norm statistics stay frozen (eval mode). Returns one record per step."""
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


# ----------------------------------------------------------------------------- the chapter's runs

def reduction_selection(run):
    """The test images reduced before and after fine-tuning: the first ``input_reduction.images`` of
    the profile's test selection (those whose backward selection chapter 4 made)."""
    from . import analysis as A
    sel = A.selection(run, "test")
    n = min(run.profile.input_reduction.images, sel.n or 10 ** 9)
    return sel.narrow(range(n))


def reduction(run, model: nn.Module, model_cfg: dict, sel, beam: int, progress: bool = True) -> Reduction:
    """:func:`reduce_inputs` of the images of ``sel`` by ``model`` with the profile's fraction, cached in
    the artifact store (kind ``input_reduction``) under the model's config and weights, the images and
    the parameters."""
    from .artifacts import Store
    from .runner import fingerprint
    cfg_ir = run.profile.input_reduction
    X = sel.load()[0]
    key = {"model": {**model_cfg, "weights": fingerprint(model)}, "data": {**sel.key(), "images": fingerprint(X)},
           "beam": beam, "fraction": cfg_ir.fraction, "mask_value": run.profile.backselect.mask_value}
    store = Store()
    saved = store.load("input_reduction", key)
    if saved is None:
        t0 = time.perf_counter()
        res = reduce_inputs(model.to(run.device).eval(), X.to(run.device), beam, cfg_ir.fraction,
                            run.profile.backselect.mask_value, progress=progress)
        saved = {**res.to_payload(), "seconds": time.perf_counter() - t0}
        store.save("input_reduction", key, saved)
    return Reduction(**{k: saved[k] for k in Reduction.__dataclass_fields__})


def negatives(run, arch: str, seed: int, progress: bool = True) -> torch.Tensor:
    """Feng et al.'s negative set X~ for replicate ``seed`` of ``arch``: every input of the last beam
    of the reduction (beam ``train_beam``) of the first ``train_images`` images of the model's own
    training sample, as masked images (n, C, H, W)."""
    from .data import Selection
    from .train import model_config, trained_model
    p, c = run.profile, run.profile.input_reduction
    model = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
    sel = Selection(run.dataset, "train", p.train_size).narrow(range(c.train_images))
    red = reduction(run, model, model_config(run.dataset, arch, p.name, seed), sel, c.train_beam, progress)
    X = sel.load()[0]
    b, keep = red.variants()
    H, W = X.shape[2:]
    return apply_keep(X[b], keep.view(-1, H, W), p.backselect.mask_value)


def finetune_config(run, arch: str, seed: int) -> dict:
    """The artifact key of the fine-tuned model: the zoo model's config plus the fine-tuning's."""
    from dataclasses import asdict
    from .train import model_config
    c = run.profile.input_reduction
    return {**model_config(run.dataset, arch, run.profile.name, seed),
            "finetune": {"objective": "Feng et al. 2018 Eq. 2: log-likelihood + lambda * entropy on reduced inputs",
                         **{k: v for k, v in asdict(c).items() if k not in ("images", "beam")},
                         "mask_value": run.profile.backselect.mask_value}}


def finetuned_model(run, arch: str, seed: int, progress: bool = True) -> nn.Module:
    """Replicate ``seed`` of ``arch`` fine-tuned by :func:`finetune` on its training sample and its
    :func:`negatives`, from the artifact store or fine-tuned now (kind ``model``, key
    :func:`finetune_config`). ``model.info``: the fine-tuning history, seconds, negatives used."""
    from . import data as D
    from .artifacts import Store
    from .train import make_model, trained_model
    p, c = run.profile, run.profile.input_reduction
    cfg = finetune_config(run, arch, seed)
    train = D.load(run.dataset, "train")
    torch.manual_seed(seed)
    model = make_model(cfg, train.images.shape[1], len(train.classes))
    store = Store()
    saved = store.load("model", cfg)
    if saved is None:
        base = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
        neg = negatives(run, arch, seed, progress)
        model.load_state_dict(base.state_dict())
        model.to(run.device)
        X, Y = D.take(train, p.train_size, seed=0)
        t0 = time.perf_counter()
        history = finetune(model, X, Y, neg, c.steps, c.lam, c.lr, c.batch_size, seed, progress,
                           desc=f"{arch} seed {seed} entropy fine-tuning")
        saved = {"state_dict": {k: v.cpu() for k, v in model.state_dict().items()}, "history": history,
                 "negatives": len(neg), "seconds": time.perf_counter() - t0}
        store.save("model", cfg, saved)
    model.load_state_dict(saved["state_dict"])
    model.info = {k: v for k, v in saved.items() if k != "state_dict"}
    return model.to(run.device).eval()


def experiment(run, progress: bool = True) -> dict:
    """The chapter's measurements for every replicate of the profile's ``input_reduction.arch``:
    {"images": per (replicate, model, image) rows, "accuracy": per (replicate, model) test accuracy (%),
    "reductions": {(replicate, model): Reduction}, "history": {replicate: fine-tuning records}}.
    model is "original" or "fine-tuned"; the rows hold the reduced size (pixels), the confidence
    on the original and on the reduced input, and the SIS size (pixels) at the profile's
    ``sis_threshold`` (-1: no SIS) from the profile's backward selection of the same images."""
    from . import analysis as A
    from .runner import run_backselect
    from .sis import find_sis
    from .train import accuracy, model_config, trained_model
    p, c = run.profile, run.profile.input_reduction
    sel = reduction_selection(run)
    X, Y = sel.load()
    Xt, Yt = A.selection(run, "test").load()
    rows, acc, reds, hist = [], [], {}, {}
    for r in range(p.replicates):
        seed = run.seed + r
        orig = trained_model(run.dataset, c.arch, p.name, seed=seed, device=run.device, progress=progress)
        tuned = finetuned_model(run, c.arch, seed, progress)
        hist[r] = tuned.info["history"]
        bs_orig = A.backselect_set(run, c.arch, A.selection(run, "test"), seed, progress=progress)[list(sel.index)]
        bs_tuned = run_backselect(tuned, X, model_config=finetune_config(run, c.arch, seed), data_config=sel.key(),
                                  config=p.engine("test"), shard_size=p.shard_size, device=run.device,
                                  progress=progress)
        for name, model, cfg, bs in (("original", orig, model_config(run.dataset, c.arch, p.name, seed), bs_orig),
                                     ("fine-tuned", tuned, finetune_config(run, c.arch, seed), bs_tuned)):
            red = reduction(run, model, cfg, sel, c.beam, progress)
            reds[(r, name)] = red
            full, reduced = red.confidence
            sis = find_sis(bs, p.sis_threshold)
            sis_px = torch.where(sis.size >= 0, sis.mask.flatten(1).sum(1), -1)      # pixels (features may be blocks)
            rows.append(pd.DataFrame({"replicate": r, "model": name, "image": range(len(X)),
                                      "correct": (red.pred.cpu() == Y).numpy(), "reduced size": red.size.cpu().numpy(),
                                      "confidence (original)": full.cpu().numpy(),
                                      "confidence (reduced)": reduced.cpu().numpy(),
                                      "SIS size": sis_px.cpu().numpy()}))
            acc.append({"replicate": r, "model": name, "test accuracy (%)": 100 * accuracy(model, Xt, Yt, run.device)})
    return {"images": pd.concat(rows, ignore_index=True), "accuracy": pd.DataFrame(acc), "reductions": reds,
            "history": hist}


def table2(images: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """Their Table 2 on our data: per replicate, test accuracy (%) and mean reduced size (pixels)
    before and after fine-tuning."""
    size = images.pivot_table(index="replicate", columns="model", values="reduced size", aggfunc="mean")
    a = acc.pivot(index="replicate", columns="model", values="test accuracy (%)")
    return pd.DataFrame({"accuracy before": a["original"], "accuracy after": a["fine-tuned"],
                         "reduced size before": size["original"], "reduced size after": size["fine-tuned"]})


def _interval(d: np.ndarray) -> tuple[float, float, float]:
    """Mean of paired differences ``d`` and its normal 95% interval (mean -+ 1.96 standard errors)."""
    m = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
    return m, m - 1.96 * se, m + 1.96 * se


def increases(images: pd.DataFrame, measure: str, claim: str, min_images: int = 10) -> Verdict:
    """Verdict on "entropy fine-tuning increases ``measure``" ("reduced size" or "SIS size").

    Per replicate, the paired difference (fine-tuned - original) of ``measure`` over the images that
    have it under both models (an SIS size of -1, no SIS at the threshold, leaves the image out):
    its mean and normal 95% interval. Holds when every replicate's interval lies above 0; does not
    hold when any lies at or below it (contains 0 or is negative); cannot be tested when a replicate
    has fewer than ``min_images`` such images."""
    w = images.pivot_table(index=["replicate", "image"], columns="model", values=measure)
    w = w[(w >= 0).all(axis=1)]
    rows = {}
    for r in sorted(images["replicate"].unique()):
        g = w.loc[r] if r in w.index.get_level_values(0) else w.iloc[:0]
        d = (g["fine-tuned"] - g["original"]).to_numpy(float)
        m, lo, hi = _interval(d) if len(d) else (math.nan,) * 3
        rows[r] = {"images": len(d), "original": g["original"].mean(), "fine-tuned": g["fine-tuned"].mean(),
                   "mean increase": m, "low": lo, "high": hi,
                   "images larger": int((d > 0).sum()), "images smaller": int((d < 0).sum())}
    numbers = pd.DataFrame.from_dict(rows, orient="index").rename_axis("replicate")
    testable = bool(len(numbers)) and (numbers["images"] >= min_images).all()
    holds = None if not testable else bool((numbers["low"] > 0).all())
    mean, std, n = spread(numbers["mean increase"].fillna(0)) if len(numbers) else (math.nan, math.nan, 0)
    criterion = (f"for every replicate, the 95% interval (mean ± 1.96 standard errors) of the per-image increase of "
                 f"the {measure} from the original to the fine-tuned model lies above 0, over the images that have "
                 f"one under both models; cannot be tested with fewer than {min_images} such images "
                 f"(mean increase over replicates here: {mean:+.1f} ± {std:.1f} pixels)")
    return Verdict(claim, criterion, holds, numbers)


# ----------------------------------------------------------------------------- figures and tables

MODELS = ("original", "fine-tuned")


def size_figure(images: pd.DataFrame, pixels: int):
    """Their Figure 3 on our data: histogram of the reduced sizes (pixels, log-spaced bins) of the
    original and the fine-tuned models' reductions, replicates pooled; the mean in the legend."""
    import matplotlib.pyplot as plt
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
    """Their Figure 4 on our data: distribution of the confidence in the predicted class on the
    original and on the reduced inputs, one panel per model, replicates pooled."""
    import matplotlib.pyplot as plt
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
    """Their Figure 7 on images: the first ``n`` images (top), reduced by the original model (middle)
    and by the fine-tuned one (bottom), replicate 0; pixels removed show the mask value."""
    import matplotlib.pyplot as plt
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


def beside_feng(ours: pd.DataFrame, label: str) -> pd.DataFrame:
    """Their Table 2 (NLP validation sets, lengths in words) above our rows (lengths in pixels)."""
    cols = list(ours.columns)
    feng = pd.DataFrame.from_dict({f"Feng et al.: {k} (words)": [f"{v:.2f}" for v in vals]
                                   for k, vals in FENG_TABLE2.items()}, orient="index", columns=cols)
    return pd.concat([feng, ours.set_axis([f"{label}: {i} (pixels)" for i in ours.index])])
