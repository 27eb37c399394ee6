"""Backward selection (BackSelect) on image batches: the engine of paper 3.3, 4.1, S1, S5.

From the full image, repeatedly mask the remaining feature whose masking leaves ``f`` highest, until every
feature is masked (SIS, Carter et al. 2019; paper 3.3). Here

* ``f`` is the confidence in ``pred``, the class predicted on the *unmasked* image (never the label), as
  float64 **log-odds** ``z_c - logsumexp_{j != c} z_j`` = log(p / (1 - p)): the paper's order, but no
  float32 softmax saturation at 1.0, where every candidate would tie and the gradient would vanish;
* a feature is a pixel with all its channels (S1), or a ``block`` x ``block`` square, numbered row-major
  on the grid ``(Hf, Wf) = (ceil(H/block), ceil(W/block))``;
* masking sets a feature to ``mask_value`` in normalised space; 0 is the mean pixel (3.3).

Mask polarity: every boolean mask is a *keep* mask, True = visible, False = masked.
Tie-breaking: among equal log-odds the lowest feature index is masked first (the reference ``sis.py``'s
``np.argmax``); ``gradient`` breaks ties in the gradient the same way.

Methods: ``"exact"`` -- the reference, all candidates of all images in chunks of ``chunk_size`` forwards,
P(P+1)/2 per image. ``"gradient"`` -- Batched Gradient BackSelect (S5): one forward and backward per step,
the ``k`` features with the largest d f / d M (M: 1 = masked) masked together; ``values`` NaN inside a
block. ``"pruned"`` (beyond the paper) -- only the ``m`` features the mask gradient ranks best are
evaluated exactly; identical to ``exact`` once ``m`` >= the features left.

    res = backselect(model, images)                  # images (B, C, H, W), normalised
    res.order[:, -40:]                               # the 40 pixels masked last: kept in a 40-pixel subset
    res.values[:, -41]                               # p once all but those 40 are masked (step P - 41)

The model must be in eval mode and batch-independent (checked before every run). Forwards run on a copy
with batch norms folded, in ``channels_last`` for conv nets, TF32 off, bf16 only with ``autocast=True``;
a CUDA chunk that runs out of memory is halved. The device is the images'.
"""
import math
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace

import torch
import torch.nn as nn
from tqdm import tqdm

from overinterp.zoo.models import fuse_conv_bn

METHODS = ("exact", "gradient", "pruned")
# pruned: the smallest m whose mean SIS size stays within 1.1x of exact's, at 1/49 of its time
# (benchmarks/results/backselect-cpu.json)
DEFAULT_M = 16
# forward passes per chunk: 128 fastest on the 2-core CPU (benchmarks/bench_backselect.py)
DEFAULT_CHUNK = {"cpu": 128, "cuda": 4096}


@dataclass(frozen=True)
class BackSelectConfig:
    """What determines a backward selection's result (part of a run's artifact key)."""
    method: str = field(default="exact", metadata={"help": "exact | gradient (paper S5) | pruned (beyond the paper)"})
    block: int = field(default=1, metadata={"help": "feature = block x block pixels; 1 = a pixel with all channels (S1)"})
    k: int = field(default=1, metadata={"help": "gradient: features masked per step (paper S5: 100 on ImageNet)"})
    m: int = field(default=DEFAULT_M, metadata={"help": "pruned: candidates evaluated exactly per step"})
    mask_value: float = field(default=0.0, metadata={"help": "normalised value of a masked pixel; 0 = the mean "
                                                             "pixel (paper 3.3)"})

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; valid choices: {', '.join(METHODS)}")
        for name in ("block", "k", "m"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")

    def key(self) -> dict:
        """Plain dict for artifact keys; parameters the method ignores are None."""
        return {"method": self.method, "block": self.block, "k": self.k if self.method == "gradient" else None,
                "m": self.m if self.method == "pruned" else None, "mask_value": self.mask_value}

    def describe(self) -> str:
        """'gradient (k=8)', 'pruned (m=16), 4x4-pixel features', ... for a chapter's box."""
        text = self.method + {"gradient": f" (k={self.k})", "pruned": f" (m={self.m})"}.get(self.method, "")
        return text + (f", {self.block}x{self.block}-pixel features" if self.block > 1 else "")

    def run(self, model: nn.Module, images: torch.Tensor, **kw) -> "BackSelectResult":
        """:func:`backselect` with this config (``kw``: chunk_size, progress, keep, ...)."""
        return backselect(model, images, self.method, self.block, self.k, self.m, mask_value=self.mask_value, **kw)


@dataclass
class BackSelectResult:
    """Backward selection of B images, on the images' device. ``order[b, t]``: the feature masked at step t
    (the most important last); ``log_odds[b, t]``: float64 log-odds of ``pred`` after it (NaN inside a
    gradient block). The first ``n_fixed[b]`` entries are the features masked on entry, ascending, valued
    ``full_log_odds``; never in a SIS or subset. ``values`` and ``confidence`` are probabilities for plots
    (they round to 1.0: threshold with the log-odds)."""
    order: torch.Tensor          # (B, P) int64 feature indices
    log_odds: torch.Tensor       # (B, P) float64 log-odds of pred after each removal
    pred: torch.Tensor           # (B,) int64 class whose confidence is f
    full_log_odds: torch.Tensor  # (B,) float64 log-odds before any removal (with ``keep`` applied)
    n_fixed: torch.Tensor        # (B,) int64 features masked on entry
    mask_value: torch.Tensor     # (C,) value of a masked pixel
    image_size: tuple            # (H, W)
    block: int = 1
    method: str = "exact"

    TENSORS = ("order", "log_odds", "pred", "full_log_odds", "n_fixed")  # one row per image

    @property
    def values(self) -> torch.Tensor:
        """(B, P) softmax probability of ``pred`` after each removal."""
        return torch.sigmoid(self.log_odds)

    @property
    def confidence(self) -> torch.Tensor:
        """(B,) softmax probability of ``pred`` before any removal."""
        return torch.sigmoid(self.full_log_odds)

    @property
    def grid(self) -> tuple:
        """Feature-grid shape (Hf, Wf)."""
        return feature_grid(*self.image_size, self.block)

    def __len__(self) -> int:
        return self.order.shape[0]

    def to(self, device) -> "BackSelectResult":
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)
                                if isinstance(getattr(self, f.name), torch.Tensor)})

    def __getitem__(self, idx) -> "BackSelectResult":
        """Select images (an index, slice or index tensor) as a new result."""
        idx = [idx] if isinstance(idx, int) else idx
        return replace(self, **{n: getattr(self, n)[idx] for n in self.TENSORS})

    @staticmethod
    def cat(results: list) -> "BackSelectResult":
        """Concatenate results of the same engine configuration along the batch."""
        first = results[0]
        return replace(first, **{n: torch.cat([getattr(r, n) for r in results]) for n in first.TENSORS})


def logit(p: float) -> float:
    """log(p / (1 - p)): a probability threshold tau as log-odds (inf at 1, -inf at 0)."""
    if not 0 <= p <= 1:
        raise ValueError(f"a probability threshold must lie in [0, 1], got {p}")
    return math.inf if p == 1 else -math.inf if p == 0 else math.log(p) - math.log1p(-p)


def log_odds(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(n, K) logits (or log-probabilities), (n,) class -> (n,) float64 log-odds of the class,
    ``z_c - logsumexp_{j != c} z_j`` (= log(p_c / (1 - p_c)) for p = softmax(z))."""
    z = logits.double()
    t = target[:, None]
    return z.gather(1, t).squeeze(1) - z.scatter(1, t, -math.inf).logsumexp(1)


# ----------------------------------------------------------------------------- feature geometry

def feature_grid(h: int, w: int, block: int = 1) -> tuple:
    """(Hf, Wf): the grid of ``block`` x ``block`` features covering an H x W image."""
    return math.ceil(h / block), math.ceil(w / block)


def features_to_pixels(keep: torch.Tensor, image_size: tuple, block: int = 1) -> torch.Tensor:
    """Feature keep-mask (B, P) -> pixel keep-mask (B, H, W)."""
    (h, w), (hf, wf) = image_size, feature_grid(*image_size, block)
    grid = keep.reshape(-1, hf, wf)
    return grid.repeat_interleave(block, 1).repeat_interleave(block, 2)[:, :h, :w]


def apply_keep(images: torch.Tensor, keep_pixels: torch.Tensor, mask_value=0.0) -> torch.Tensor:
    """images (B, C, H, W) with pixels where ``keep_pixels`` (B, H, W) is False set to ``mask_value``."""
    mv = _mask_value(mask_value, images)
    return torch.where(keep_pixels[:, None], images, mv.view(1, -1, 1, 1))


def _mask_value(mask_value, images: torch.Tensor) -> torch.Tensor:
    """Scalar or per-channel mask value -> (C,) tensor like ``images``."""
    mv = torch.as_tensor(mask_value, dtype=images.dtype, device=images.device).flatten()
    return mv.expand(images.shape[1]).clone() if mv.numel() == 1 else mv


def _feature_pixels(h: int, w: int, block: int, device) -> tuple:
    """Rows and columns (P, block*block) of the pixels of each feature; edge features repeat a pixel."""
    hf, wf = feature_grid(h, w, block)
    d = torch.arange(block, device=device)
    rows = (torch.arange(hf, device=device)[:, None] * block + d).clamp(max=h - 1)  # (Hf, block)
    cols = (torch.arange(wf, device=device)[:, None] * block + d).clamp(max=w - 1)  # (Wf, block)
    r = rows[:, None, :, None].expand(hf, wf, block, block).reshape(hf * wf, -1)
    c = cols[None, :, None, :].expand(hf, wf, block, block).reshape(hf * wf, -1)
    return r, c


# ----------------------------------------------------------------------------- model evaluation

class _Evaluator:
    """f = log-odds of ``target`` under ``model(x)`` in chunks; inference mode; OOM -> smaller chunks."""

    def __init__(self, model, device: torch.device, chunk_size, autocast: bool, channels_last, fuse: bool = True):
        self.model = fuse_conv_bn(model) if fuse else model  # fused: a copy
        self.device, self.autocast = device, autocast
        self.chunk = chunk_size or DEFAULT_CHUNK.get(device.type, 256)
        if channels_last is None:  # the fast layout for conv nets (3x for the CNN on this CPU)
            channels_last = any(isinstance(mod, nn.Conv2d) for mod in model.modules())
        self.channels_last = channels_last
        if self.channels_last:
            self.model.to(memory_format=torch.channels_last)  # layout only: same parameters

    def _fmt(self, x):
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def f(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """x (n, C, H, W), target (n,) -> log-odds (n,) float64 (one forward, no chunking)."""
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.model(self._fmt(x))
        return log_odds(logits.to(x.dtype), target)

    def chunks(self, n: int, run):
        """Call ``run(lo, hi)`` over [0, n) in chunks; halve the chunk on CUDA out-of-memory."""
        lo = 0
        while lo < n:
            hi = min(n, lo + self.chunk)
            try:
                run(lo, hi)
            except torch.cuda.OutOfMemoryError:
                if self.chunk == 1:
                    raise
                self.chunk //= 2
                torch.cuda.empty_cache()
                continue
            lo = hi

    def mask_grad(self, x, keep, target, pix_feat, mv, need_grad=True):
        """f (B,) log-odds and d f / d M (B, P) (None without ``need_grad``) at the mask M = ~keep (S5);
        x (B, C, H, W) unmasked, keep (B, P) bool, pix_feat (H*W,) the feature of each pixel."""
        B, C, H, W = x.shape
        f = x.new_empty(B, dtype=torch.float64)
        grad = x.new_empty(keep.shape) if need_grad else None

        def run(lo, hi):
            with torch.inference_mode(False), torch.enable_grad():
                M = (~keep[lo:hi]).to(x.dtype).requires_grad_(need_grad)      # (n, P), 1 = masked
                Mp = M[:, pix_feat].view(-1, 1, H, W)                           # (n, 1, H, W)
                xs = x[lo:hi]
                # exact masked values, plus a zero-valued term that carries d/dM = (mv - x)
                xm = torch.where(Mp.detach() > 0, mv.view(1, -1, 1, 1), xs) + (mv.view(1, -1, 1, 1) - xs) * (Mp - Mp.detach())
                fi = self.f(xm, target[lo:hi])
                if need_grad:
                    grad[lo:hi] = torch.autograd.grad(fi.sum(), M)[0]
            f[lo:hi] = fi.detach()
        self.chunks(B, run)
        return f, grad


@torch.inference_mode()
def check_batch_independent(model: nn.Module, images: torch.Tensor, rtol: float = 1e-3, atol: float = 1e-3) -> None:
    """Refuse a model whose output for an image depends on the rest of its batch: the first image alone vs
    second in a batch (float rounding passes; per-row randomness or batch statistics do not)."""
    x0, other = images[:1], images[1:2] if len(images) > 1 else images[:1]
    alone = model(x0).double()
    behind = model(torch.cat([other, x0])).double()[1:]
    if not torch.allclose(alone, behind, rtol=rtol, atol=atol):
        raise ValueError("backselect needs a model whose output for an image does not depend on the other images "
                         f"of the batch; {type(model).__name__} gave {alone[0, :3].tolist()} alone and "
                         f"{behind[0, :3].tolist()} second in a batch")


@contextmanager
def _no_tf32():
    """TF32 off for CUDA matmuls and convolutions (the engine's float32 is float32); restored after."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


# ----------------------------------------------------------------------------- BackSelect

def _predict(ev: _Evaluator, x: torch.Tensor, keep_pix, mv, target):
    """pred (B,) on the unmasked images (unless given) and log-odds (B,) with ``keep`` applied."""
    pred = torch.empty(len(x), dtype=torch.long, device=x.device) if target is None else target.to(x.device, torch.long).clone()
    conf = x.new_empty(len(x), dtype=torch.float64)

    @torch.inference_mode()
    def run(lo, hi):
        if target is None:
            with torch.autocast(ev.device.type, dtype=torch.bfloat16, enabled=ev.autocast):
                pred[lo:hi] = ev.model(ev._fmt(x[lo:hi])).argmax(1)
        conf[lo:hi] = ev.f(apply_keep(x[lo:hi], keep_pix[lo:hi], mv), pred[lo:hi])
    ev.chunks(len(x), run)
    return pred, conf


@torch.inference_mode(False)  # the gradient methods need autograd even inside a caller's inference mode
def backselect(model: nn.Module, images: torch.Tensor, method: str = "exact", block: int = 1, k: int = 1,
               m: int = DEFAULT_M, chunk_size: int | None = None, progress: bool = True, *,
               keep: torch.Tensor | None = None, target: torch.Tensor | None = None, mask_value=0.0,
               autocast: bool = False, channels_last: bool | None = None, fuse: bool = True,
               max_steps: int | None = None) -> BackSelectResult:
    """Backward selection of ``images`` (B, C, H, W); method, block, k, m: :class:`BackSelectConfig`.
    chunk_size: forwards per batch (default :data:`DEFAULT_CHUNK`; "gradient": images per batch).
    keep: optional (B, P) bool, False = masked on entry. target: optional (B,) class of f (default: argmax).
    mask_value: scalar or (C,). autocast: bf16 (not exact). channels_last: default when the model has a
    Conv2d (in place on the model without ``fuse``). fuse: fold batch norms (same function up to rounding).
    max_steps: stop after this many removals (partial result, order -1 beyond; for timing).
    Uses the images' device and the model's dtype; the model must be in eval mode and batch-independent.
    """
    BackSelectConfig(method, block, k, m)  # validates
    if images.dim() != 4:
        raise ValueError(f"images must be (B, C, H, W), got shape {tuple(images.shape)}")
    stateful = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)
    if model.training or any(m.training for m in model.modules() if isinstance(m, stateful)):
        raise ValueError("backselect needs a deterministic model: call model.eval() first")
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    x = images.to(param.dtype if param is not None else images.dtype).detach().clone()  # (B, C, H, W)
    B, C, H, W = x.shape
    device = x.device
    hf, wf = feature_grid(H, W, block)
    P = hf * wf
    keep = torch.ones(B, P, dtype=torch.bool, device=device) if keep is None else keep.to(device, torch.bool).clone()
    mv = _mask_value(mask_value, x)
    with _no_tf32():
        check_batch_independent(model, x)
        ev = _Evaluator(model, device, chunk_size, autocast, channels_last, fuse)
        pred, conf = _predict(ev, x, features_to_pixels(keep, (H, W), block), mv, target)

        # features masked on entry go first, ascending (stable sort puts False first)
        n_fixed = (~keep).sum(1)
        order = torch.argsort(keep.to(torch.uint8), dim=1, stable=True)
        fixed = torch.arange(P, device=device) < n_fixed[:, None]                  # (B, P)
        order = torch.where(fixed, order, -1)
        values = torch.where(fixed, conf[:, None], torch.full((B, P), math.nan, dtype=conf.dtype, device=device))
        state = _State(x, keep, pred, order, values, n_fixed.clone(), mv, block)
        steps = int(keep.sum(1).max()) if max_steps is None else min(max_steps, int(keep.sum(1).max()))
        if method == "gradient":
            _gradient_loop(ev, state, k, steps, progress)
        else:
            _select_loop(ev, state, m if method == "pruned" else None, steps, progress)
    return BackSelectResult(state.order, state.values, pred, conf, n_fixed, mv, (H, W), block, method)


@dataclass
class _State:
    """Selection state shared by the loops; ``ptr`` (B,) = next free position in ``order``."""
    x: torch.Tensor        # (B, C, H, W) unmasked images
    keep: torch.Tensor     # (B, P) bool, True = still visible
    pred: torch.Tensor     # (B,)
    order: torch.Tensor    # (B, P)
    values: torch.Tensor   # (B, P) float64 log-odds
    ptr: torch.Tensor      # (B,)
    mv: torch.Tensor       # (C,)
    block: int

    def geometry(self):
        H, W = self.x.shape[2:]
        rows, cols = _feature_pixels(H, W, self.block, self.x.device)                  # (P, b*b)
        pix_feat = torch.arange(rows.shape[0], device=self.x.device)[:, None].expand_as(rows)
        pix = torch.empty(H * W, dtype=torch.long, device=self.x.device)
        pix[(rows * W + cols).flatten()] = pix_feat.flatten()                           # (H*W,)
        return rows, cols, pix


def _n_evals(rem: torch.Tensor, steps: int, m: int | None) -> int:
    """Forward passes of ``steps`` exact (m None) or pruned steps for images with ``rem`` (B,) features left."""
    s = rem.clamp(max=steps)                                   # steps each image takes
    tri = lambda a, b: (b * (b - 1) - a * (a - 1)) // 2        # sum of t for a <= t < b
    n1 = torch.zeros_like(s) if m is None else (rem - m).clamp(min=0).minimum(s)  # steps with > m candidates
    return int(((s - n1) * rem - tri(n1, s)).sum() + (0 if m is None else (n1 * m).sum()))


def _select_loop(ev: _Evaluator, s: _State, m: int | None, steps: int, progress: bool) -> None:
    """Exact (m None) or pruned BackSelect: one feature per image per step, chosen by forward passes."""
    B, P = s.keep.shape
    rows, cols, pix = s.geometry()
    xcur = apply_keep(s.x, features_to_pixels(s.keep, s.x.shape[2:], s.block), s.mv)   # (B, C, H, W)
    bar = tqdm(total=_n_evals(s.keep.sum(1), steps, m), desc=f"backselect[{'exact' if m is None else f'pruned m={m}'}]", unit="fwd",
               disable=not progress, leave=None, smoothing=0.05)
    ar = torch.arange(P, device=s.x.device)
    for _ in range(steps):
        cand = s.keep
        if m is not None:  # pruned: the m best-ranked by the mask gradient, where more remain
            big = s.keep.sum(1) > m
            if big.any():
                idx = big.nonzero().squeeze(1)
                _, g = ev.mask_grad(s.x[idx], s.keep[idx], s.pred[idx], pix, s.mv)
                g = g.masked_fill(~s.keep[idx], -math.inf)
                rank = torch.empty_like(g, dtype=torch.long)
                rank.scatter_(1, torch.sort(g, dim=1, descending=True, stable=True).indices, ar.expand_as(g))
                cand = s.keep.clone()
                cand[idx] = s.keep[idx] & (rank < m)
        pairs = cand.nonzero()                                                          # (N, 2) image, feature
        scores = torch.full((B, P), -math.inf, dtype=torch.float64, device=s.x.device)

        @torch.inference_mode()
        def run(lo, hi):
            b, feat = pairs[lo:hi].unbind(1)
            batch = xcur[b]                                                             # (n, C, H, W)
            batch[torch.arange(len(b), device=b.device)[:, None], :, rows[feat], cols[feat]] = s.mv
            scores[b, feat] = ev.f(batch, s.pred[b])
        ev.chunks(len(pairs), run)
        act = s.keep.any(1)
        best = scores.argmax(1)  # ties: the first maximal index = the lowest feature index
        a = act.nonzero().squeeze(1)
        fa = best[a]
        s.order[a, s.ptr[a]] = fa
        s.values[a, s.ptr[a]] = scores[a, fa]
        s.ptr[a] += 1
        s.keep[a, fa] = False
        xcur[a[:, None], :, rows[fa], cols[fa]] = s.mv
        bar.update(len(pairs))
    bar.close()


def _gradient_loop(ev: _Evaluator, s: _State, k: int, steps: int, progress: bool) -> None:
    """Batched Gradient BackSelect (paper S5): mask the k features with the largest d f / d M per step (f the
    log-odds: the ranking of d p / d M up to a per-image factor)."""
    B, P = s.keep.shape
    _, _, pix = s.geometry()
    ar = torch.arange(P, device=s.x.device)
    pending = torch.full((B,), -1, dtype=torch.long, device=s.x.device)  # position awaiting its value
    todo = s.keep.sum(1).clamp(max=steps)                                 # removals still allowed
    bar = tqdm(total=-(-steps // k), desc=f"backselect[gradient k={k}]", unit="step", disable=not progress,
               leave=None)
    while True:
        act = todo > 0
        need = act | (pending >= 0)
        if not need.any():
            break
        idx = need.nonzero().squeeze(1)
        f, g = ev.mask_grad(s.x[idx], s.keep[idx], s.pred[idx], pix, s.mv, need_grad=bool(act.any()))
        p = pending[idx]
        done = p >= 0
        s.values[idx[done], p[done]] = f[done]                             # f after the previous block
        pending.fill_(-1)
        if not act.any():
            break
        g = g.masked_fill(~s.keep[idx], -math.inf)
        top = torch.sort(g, dim=1, descending=True, stable=True).indices[:, :k]   # (n, k) ties: lowest first
        cnt = todo[idx].clamp(max=k)                                              # (n,)
        valid = ar[None, :top.shape[1]] < cnt[:, None]                            # (n, k)
        r, j = valid.nonzero().unbind(1)
        img, feat = idx[r], top[r, j]
        s.order[img, s.ptr[img] + j] = feat
        s.keep[img, feat] = False
        a = idx[cnt > 0]
        s.ptr[a] += cnt[cnt > 0]
        todo[a] -= cnt[cnt > 0]
        pending[a] = s.ptr[a] - 1
        bar.update(1)
    bar.close()
