"""Tests for overinterp.engine.backselect / overinterp.engine.sis: a plain per-image oracle, hand-worked toy
cases, and invariants on real Fashion-MNIST with random small models."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from overinterp.engine.backselect import (BackSelectResult, apply_keep, backselect, feature_grid,
                                   features_to_pixels)
from overinterp.zoo.models import Ensemble, build_model
from overinterp.engine.sis import (class_probability, find_sis, pixel_subset, random_subset, sis_collection, sis_size,
                            subset_size)

F64 = torch.float64


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One intra-op thread: the CPU is shared, and OpenMP barriers of 2 threads on 2 busy
    cores made these small forwards ~20x slower (8.2 s vs 0.39 s for one test run here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------- the oracle

def oracle_backselect(model, x, block=1, keep=None, mask_value=0.0, target=None):
    """BackSelect of ONE image (C, H, W) as in the SIS paper, one candidate mask after another.

    f = log-odds log(p / (1 - p)) of the class predicted on the unmasked image (or ``target``),
    from the logits in float64: monotone in the softmax probability p, so the order is the
    paper's. Returns the removal order and f after each removal, for the features visible in
    ``keep`` (P,) only. ``mask_value``: a number or one per channel.
    """
    C, H, W = x.shape
    hf, wf = math.ceil(H / block), math.ceil(W / block)
    P = hf * wf
    mv = torch.as_tensor(mask_value, dtype=x.dtype).flatten().expand(C).reshape(C, 1, 1)

    def masked(visible):  # a copy of x with every feature not in `visible` set to mask_value
        out = x.clone()
        for i in range(P):
            if not visible[i]:
                r, c = divmod(i, wf)
                patch = out[:, r * block:(r + 1) * block, c * block:(c + 1) * block]
                patch[:] = mv
        return out

    def f(img, cls):
        with torch.no_grad():
            z = model(img[None])[0].double()
        others = torch.cat([z[:cls], z[cls + 1:]])
        return (z[cls] - torch.logsumexp(others, 0)).item()

    with torch.no_grad():
        cls = model(x[None]).argmax(1).item() if target is None else int(target)
    visible = [True] * P if keep is None else list(keep.tolist())
    order, values = [], []
    while any(visible):
        best, best_value = None, None
        for i in range(P):                      # lowest index first: strict ">" keeps it on ties
            if visible[i]:
                trial = list(visible)
                trial[i] = False
                v = f(masked(trial), cls)
                if best is None or v > best_value:
                    best, best_value = i, v
        visible[best] = False
        order.append(best)
        values.append(best_value)
    return order, values


class TinyNet(nn.Module):
    """A small random conv net; pixels where ``ignore`` is True never reach it (exact ties).

    The readout is a broadcast multiply + row sum rather than ``nn.Linear``: BLAS picks
    different kernels for 1 row and for many (GEMV vs GEMM), which changes the last bit of
    f, whereas this net computes every image identically in any batch, so the engine and
    the one-candidate-at-a-time oracle must agree bit for bit."""

    def __init__(self, C=1, H=4, W=4, classes=3, seed=0, ignore=None, scale=4.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.conv = nn.Conv2d(C, 4, 3, padding=1)
        self.fc = nn.Linear(4 * H * W, classes)
        for p in self.parameters():
            p.data = torch.randn(p.shape, generator=g) * scale / math.sqrt(max(1, p[0].numel()))
        self.register_buffer("visible", torch.ones(1, 1, H, W) if ignore is None else (~ignore).float()[None, None])

    def forward(self, x):  # (B, C, H, W) -> (B, classes)
        h = torch.tanh(self.conv(x * self.visible)).flatten(1)             # (B, 4*H*W)
        return (h[:, None, :] * self.fc.weight).sum(-1) + self.fc.bias      # (B, classes)


def assert_matches_oracle(model, x, block=1, keep=None, mask_value=0.0, target=None, **kw):
    """Identical orders; log-odds equal up to the rounding of logsumexp (and of BLAS, for nn.Linear)."""
    res = backselect(model, x, "exact", block=block, keep=keep, mask_value=mask_value, target=target,
                     progress=False, **kw)
    for b in range(len(x)):
        order, values = oracle_backselect(model, x[b], block, None if keep is None else keep[b], mask_value,
                                          None if target is None else target[b])
        nf = int(res.n_fixed[b])
        assert res.order[b, nf:].tolist() == order, f"image {b}"
        torch.testing.assert_close(res.log_odds[b, nf:], torch.tensor(values, dtype=F64), rtol=1e-10, atol=1e-12)
    return res


# ----------------------------------------------------------------------------- exact vs oracle

def test_exact_equals_oracle_batch_of_one():
    model = TinyNet(seed=1).double().eval()
    x = torch.randn(1, 1, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(0))
    res = assert_matches_oracle(model, x)
    assert res.order.shape == res.log_odds.shape == (1, 16) and res.log_odds.dtype == F64
    assert sorted(res.order[0].tolist()) == list(range(16))


def test_exact_equals_oracle_multichannel_mixed_batch_split_chunks():
    # 3 channels, 4 images stepping in lockstep; chunk 7 splits every image's 16..1 candidates
    # across forward batches and mixes images within a batch.
    model = TinyNet(C=3, seed=2).double().eval()
    x = torch.randn(4, 3, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(1))
    for chunk in (7, 16, 1000):
        assert_matches_oracle(model, x, chunk_size=chunk)


def test_exact_ties_mask_lowest_index_first():
    # pixels 1, 2, 5, 10 are invisible to the model: masking any of them leaves f exactly
    # unchanged, so they tie; the oracle (and the reference) masks the lowest index first.
    ignore = torch.zeros(4, 4, dtype=torch.bool)
    ignore.view(-1)[[1, 2, 5, 10]] = True
    model = TinyNet(C=2, seed=3, ignore=ignore).double().eval()
    x = torch.randn(3, 2, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(2))
    res = assert_matches_oracle(model, x, chunk_size=5)
    for b in range(3):  # the ignored pixels leave in ascending index order
        pos = [res.order[b].tolist().index(i) for i in (1, 2, 5, 10)]
        assert pos == sorted(pos)


def test_exact_equals_oracle_blocks_with_ragged_edge():
    # 5x5 image, 2x2 blocks -> 3x3 feature grid whose last row/column are 1 pixel wide
    model = TinyNet(C=2, H=5, W=5, seed=4).double().eval()
    x = torch.randn(2, 2, 5, 5, dtype=F64, generator=torch.Generator().manual_seed(3))
    res = assert_matches_oracle(model, x, block=2, chunk_size=4)
    assert res.grid == (3, 3) and res.order.shape == (2, 9)


def test_exact_equals_oracle_with_features_masked_on_entry():
    # images with different numbers of pre-masked features step together (SIS-collection rounds)
    model = TinyNet(seed=5).double().eval()
    x = torch.randn(3, 1, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(4))
    keep = torch.ones(3, 16, dtype=torch.bool)
    keep[0, [0, 7]] = False
    keep[2, [3, 4, 5, 15]] = False
    res = assert_matches_oracle(model, x, keep=keep, chunk_size=9)
    assert res.n_fixed.tolist() == [2, 0, 4]
    assert res.order[2, :4].tolist() == [3, 4, 5, 15]  # pre-masked first, ascending


def test_exact_on_an_ensemble():
    members = [TinyNet(C=1, seed=s).double().eval() for s in (6, 7)]
    model = Ensemble(members).eval()
    x = torch.randn(2, 1, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(5))
    assert_matches_oracle(model, x)


# ----------------------------------------------------------------------------- gradient (paper S5)

class TwoClassLinear(nn.Module):
    """logits = (0, w . x + b): f = sigmoid(w . x + b) for class 1."""

    def __init__(self, w, b=0.0):
        super().__init__()
        self.lin = nn.Linear(w.numel(), 2).double()
        self.lin.weight.data = torch.stack([torch.zeros_like(w), w]).double()
        self.lin.bias.data = torch.tensor([0.0, b], dtype=F64)

    def forward(self, x):
        return self.lin(x.flatten(1))


def test_gradient_k1_follows_s5_by_hand():
    # 1x2x2 image x = (1, 2, -1, 2), weights w = (0.5, 1, 2, 0.25), bias 0, mask value 0.
    # Contributions c_i = w_i x_i = (0.5, 2, -2, 0.5); z = sum of unmasked c_i = 1 > 0: class 1.
    # f(M) = sigmoid(sum_i c_i (1 - M_i)), so df/dM_i = -f (1 - f) c_i: at every step the
    # largest gradient is the smallest remaining c_i.
    #   step 1: c = (0.5, 2, -2, 0.5)  -> mask pixel 2 (c=-2);        f = sigmoid(3)
    #   step 2: c = (0.5, 2, ., 0.5)   -> tie 0 / 3 (both -f(1-f)/2): lowest index, pixel 0; f = sigmoid(2.5)
    #   step 3: c = (., 2, ., 0.5)     -> mask pixel 3;               f = sigmoid(2)
    #   step 4: mask pixel 1;                                         f = sigmoid(0) = 0.5
    model = TwoClassLinear(torch.tensor([0.5, 1.0, 2.0, 0.25])).eval()
    x = torch.tensor([1.0, 2.0, -1.0, 2.0], dtype=F64).view(1, 1, 2, 2)
    res = backselect(model, x, "gradient", k=1, progress=False)
    assert res.pred.tolist() == [1]
    assert res.order[0].tolist() == [2, 0, 3, 1]
    torch.testing.assert_close(res.values[0], torch.sigmoid(torch.tensor([3.0, 2.5, 2.0, 0.0], dtype=F64)))
    torch.testing.assert_close(res.confidence, torch.sigmoid(torch.tensor([1.0], dtype=F64)))
    # exact BackSelect agrees here (f is monotone in the sum of the kept contributions)
    assert backselect(model, x, "exact", progress=False).order[0].tolist() == [2, 0, 3, 1]


def test_gradient_blocks_of_k_and_findsis_cuts_at_block_boundaries():
    # same model, k = 2: step 1 masks the two smallest c (pixels 2, 0), f = sigmoid(2.5);
    # step 2 masks (3, 1), f = sigmoid(0). Inside a block f is unknown (NaN).
    model = TwoClassLinear(torch.tensor([0.5, 1.0, 2.0, 0.25])).eval()
    x = torch.tensor([1.0, 2.0, -1.0, 2.0], dtype=F64).view(1, 1, 2, 2)
    res = backselect(model, x, "gradient", k=2, progress=False)
    assert res.order[0].tolist() == [2, 0, 3, 1]
    assert math.isnan(res.values[0, 0]) and math.isnan(res.values[0, 2])
    torch.testing.assert_close(res.values[0, [1, 3]], torch.sigmoid(torch.tensor([2.5, 0.0], dtype=F64)))
    # f(x) = sigmoid(1) = 0.73. With tau = 0.7 the single pixel {1} would do (f = sigmoid(2)
    # = 0.88), but its value lies inside a block: FindSIS pops whole blocks, so the SIS is
    # the last block {3, 1} (f = sigmoid(2.5) = 0.92).
    sis = find_sis(res, 0.7)
    assert sis.size.tolist() == [2] and sis.keep[0].tolist() == [False, True, False, True]


def test_gradient_sis_satisfy_threshold_by_forward_pass():
    model = TinyNet(C=2, H=6, W=6, seed=8, scale=8.0).double().eval()
    x = torch.randn(5, 2, 6, 6, dtype=F64, generator=torch.Generator().manual_seed(6))
    res = backselect(model, x, "gradient", k=3, progress=False)
    tau = float(res.confidence.median())
    sis = find_sis(res, tau)
    f, _ = class_probability(model, apply_keep(x, sis.mask), res.pred)
    assert (sis.found == (res.confidence >= tau)).all()
    assert (f[sis.found] >= tau).all()


# ----------------------------------------------------------------------------- FindSIS and subsets

def hand_result(values, confidence, order=None, n_fixed=0):
    values = torch.tensor([values], dtype=F64)
    P = values.shape[1]
    order = torch.tensor([order or list(range(P))])
    return BackSelectResult(order, torch.logit(values), torch.tensor([0]), torch.logit(torch.tensor([confidence], dtype=F64)),
                            torch.tensor([n_fixed]), torch.zeros(1, dtype=F64), (1, P))


def test_findsis_is_the_shortest_suffix_reaching_tau():
    # order (3, 1, 0, 2); f after each removal (0.9, 0.8, 0.5, 0.2); f(x) = 0.95.
    # kept suffix of size s has f = values[P-1-s]: s=0 -> 0.2, s=1 -> 0.5, s=2 -> 0.8, s=3 -> 0.9.
    res = hand_result([0.9, 0.8, 0.5, 0.2], 0.95, order=[3, 1, 0, 2])
    assert sis_size(res, 0.7).tolist() == [2]                       # {0, 2}
    assert find_sis(res, 0.7).keep[0].tolist() == [True, False, True, False]
    assert sis_size(res, 0.85).tolist() == [3]
    assert sis_size(res, 0.95).tolist() == [4]                      # the whole image
    assert sis_size(res, 0.1).tolist() == [0]                       # fully masked suffices: empty SIS
    none = find_sis(res, 0.96)                                      # f(x) < tau: no SIS
    assert none.size.tolist() == [-1] and not none.found.any() and not none.mask.any()


def test_findsis_never_uses_features_masked_on_entry():
    # features 0 and 1 were masked on entry (n_fixed=2): the SIS can grow to {2, 3} only
    res = hand_result([0.6, 0.6, 0.3, 0.1], 0.6, order=[0, 1, 2, 3], n_fixed=2)
    assert sis_size(res, 0.5).tolist() == [2]


def test_pixel_subset_keeps_the_last_features_and_random_subset_matches_its_size():
    model = TinyNet(C=3, H=8, W=8, seed=9).double().eval()
    x = torch.randn(3, 3, 8, 8, dtype=F64, generator=torch.Generator().manual_seed(7))
    res = backselect(model, x, "exact", progress=False)
    n = subset_size(64, 0.05)
    assert n == 4 and subset_size(1024, 0.05) == 52 and subset_size(784, 0.05) == 40 and subset_size(1000, 0.3) == 300
    xs, keep = pixel_subset(res, x, 0.05)
    for b in range(3):
        kept = set(keep[b].flatten().nonzero().squeeze(1).tolist())
        assert kept == set(res.order[b, -n:].tolist())
    assert (xs[~keep[:, None].expand_as(xs)] == 0).all() and torch.equal(xs[keep[:, None].expand_as(xs)],
                                                                         x[keep[:, None].expand_as(x)])
    xr, keep_r = random_subset(x, 0.05, seed=3)
    assert keep_r.shape == (3, 8, 8) and (keep_r.flatten(1).sum(1) == n).all()
    assert torch.equal(keep_r, random_subset(x, 0.05, seed=3)[1])
    assert not torch.equal(keep_r, random_subset(x, 0.05, seed=4)[1])


def test_sis_collection_is_disjoint_and_each_sis_sufficient():
    model = TinyNet(C=1, H=5, W=5, seed=10, scale=8.0).double().eval()
    x = torch.randn(4, 1, 5, 5, dtype=F64, generator=torch.Generator().manual_seed(8))
    conf, pred = class_probability(model, x)
    tau = float(conf.min()) * 0.9
    for method in ("exact", "gradient"):
        coll = sis_collection(model, x, tau, method=method, k=2, progress=False)
        for b, masks in enumerate(coll):
            assert len(masks) >= 1
            assert masks.sum(0).max() <= 1                                    # disjoint
            f, _ = class_probability(model, apply_keep(x[b:b + 1].expand(len(masks), -1, -1, -1), masks),
                                     pred[b].expand(len(masks)))
            assert (f >= tau).all()


def test_invalid_arguments_are_refused():
    model = TinyNet().double().eval()
    x = torch.zeros(1, 1, 4, 4, dtype=F64)
    with pytest.raises(ValueError, match="valid choices: exact, gradient, pruned"):
        backselect(model, x, "fast")
    with pytest.raises(ValueError, match="eval"):
        backselect(TinyNet().double().train(), x)


def test_layouts_caller_inference_mode_and_autocast():
    model = TinyNet(C=2, H=5, W=5, seed=11).double().eval()
    x = torch.randn(3, 2, 5, 5, dtype=F64, generator=torch.Generator().manual_seed(9))
    ref = backselect(model, x, "exact", progress=False, channels_last=False)
    assert torch.equal(ref.order, backselect(model, x, "exact", progress=False, channels_last=True).order)
    with torch.inference_mode():  # a caller's inference mode must not break the gradient methods
        grad = backselect(model, x, "gradient", k=2, progress=False)
        pruned = backselect(model, x, "pruned", m=3, progress=False)
    assert grad.order.shape == pruned.order.shape == (3, 25)
    fast = backselect(model.float(), x.float(), "pruned", m=3, autocast=True, progress=False)  # bf16: runs
    assert fast.log_odds.dtype == F64 and (fast.order.sort(1).values == torch.arange(25)).all()


def test_features_to_pixels_and_grid():
    assert feature_grid(28, 28, 4) == (7, 7) and feature_grid(5, 5, 2) == (3, 3)
    keep = torch.tensor([[True, False, False, True]])
    assert features_to_pixels(keep, (3, 3), 2).int().tolist() == [[[1, 1, 0], [1, 1, 0], [0, 0, 1]]]


# ----------------------------------------------------------------------------- real Fashion-MNIST

@pytest.fixture(scope="module")
def fmnist(tmp_path_factory):
    from overinterp.zoo import data  # the real data: `make test` installs it (Debian) or downloads it
    split = data.load("fashion-mnist", "test", root=tmp_path_factory.mktemp("data"))
    return split.images[:6]  # (6, 1, 28, 28) float32, 0 = the mean pixel


def random_cnn(seed):
    torch.manual_seed(seed)
    model = build_model("cnn", 1, 10, width=4)
    model.fc.weight.data *= 30  # a confident random model, so SIS exist at a high threshold
    return model.eval()


def test_real_pruned_with_m_at_least_features_equals_exact(fmnist):
    model = random_cnn(0)
    exact = backselect(model, fmnist, "exact", block=4, progress=False)         # 49 features
    pruned = backselect(model, fmnist, "pruned", block=4, m=49, progress=False)
    assert torch.equal(exact.order, pruned.order) and torch.equal(exact.values, pruned.values)
    small = backselect(model, fmnist, "pruned", block=4, m=4, progress=False)
    # its first step picks among a subset of exact's candidates: never a better one than exact's
    assert (small.log_odds[:, 0] <= exact.log_odds[:, 0]).all()
    # every recorded value is f of the image with the removed features masked (checked at step 10)
    from overinterp.engine.sis import class_log_odds
    keep = torch.ones(len(fmnist), 49, dtype=torch.bool)
    keep.scatter_(1, small.order[:, :10], False)
    x10 = apply_keep(fmnist, features_to_pixels(keep, (28, 28), 4))
    torch.testing.assert_close(small.log_odds[:, 9], class_log_odds(model, x10, small.pred), rtol=1e-4, atol=1e-4)
    assert (small.order.sort(1).values == torch.arange(49)).all()


def test_real_every_sis_is_sufficient_and_collections_disjoint(fmnist):
    model = random_cnn(1)
    conf, pred = class_probability(model, fmnist)
    tau = float(conf.quantile(0.3))  # some images below tau: no SIS for them
    for method, kw in (("exact", {"block": 4}), ("gradient", {"block": 2, "k": 8}), ("pruned", {"block": 4, "m": 6})):
        res = backselect(model, fmnist, method, progress=False, **kw)
        sis = find_sis(res, tau)
        assert torch.equal(sis.found, conf >= tau)
        f, _ = class_probability(model, apply_keep(fmnist, sis.mask), pred)
        assert (f[sis.found] >= tau).all(), method
        coll = sis_collection(model, fmnist, tau, method=method, max_sis=3, progress=False, **kw)
        for b, masks in enumerate(coll):
            assert (len(masks) > 0) == bool(conf[b] >= tau)
            assert masks.sum(0).max() <= 1, method
            if len(masks):
                f, _ = class_probability(model, apply_keep(fmnist[b:b + 1].expand(len(masks), -1, -1, -1), masks),
                                         pred[b].expand(len(masks)))
                assert (f >= tau).all(), method


def test_real_exact_matches_oracle_with_the_zoo_cnn(fmnist):
    # the zoo's CNN (batch norm, nn.Linear: last-bit rounding depends on the batch size)
    model = random_cnn(2).double()
    assert_matches_oracle(model, fmnist[:2].double(), block=7, chunk_size=5)  # 4x4 grid


# ----------------------------------------------------------------------------- log-odds (confident float32 models)

def confident_tinynet(margin=30.0, seed=12, C=1):
    """A float32 TinyNet whose readout is scaled so that the predicted class leads by >= ``margin``
    logits on every test image: float32 softmax is exactly 1.0 there."""
    model = TinyNet(C=C, seed=seed).eval()
    x = torch.randn(3, C, 4, 4, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        z = model(x).sort(1, descending=True).values
        scale = margin / (z[:, 0] - z[:, 1]).min().item()
        model.fc.weight *= scale
        model.fc.bias *= scale
    return model, x


def test_float32_confident_model_exact_order_equals_float64_log_odds_reference():
    model, x = confident_tinynet()
    with torch.no_grad():
        z = model(x).sort(1, descending=True).values
        assert ((z[:, 0] - z[:, 1]) >= 30 - 1e-3).all()
        assert (model(x).softmax(-1).max(1).values == 1.0).all()        # float32 softmax saturates
    res = assert_matches_oracle(model, x, chunk_size=5)
    # with f = softmax every first-step candidate would score exactly 1.0 and the tie-break would
    # mask pixels 0, 1, 2, ... in raster order; ranked by log-odds the order is not raster order
    assert all(res.order[b].tolist() != list(range(16)) for b in range(3))
    assert (res.values[:, 0] == 1.0).all() and torch.isfinite(res.log_odds).all()


def test_gradient_of_log_odds_moves_where_softmax_saturates():
    from overinterp.engine.backselect import _Evaluator
    model, x = confident_tinynet()
    keep = torch.ones(3, 16, dtype=torch.bool)
    pix = torch.arange(16)
    ev = _Evaluator(model, torch.device("cpu"), None, False, False)
    pred = model(x).argmax(1)
    _, grad = ev.mask_grad(x, keep, pred, pix, torch.zeros(1))
    assert (grad.abs() > 1e-4).all()                                      # every pixel has a gradient
    xm = x.clone().requires_grad_()                                       # d softmax / dx: p (1 - p) ~ e^-30
    p = model(xm).softmax(-1).gather(1, pred[:, None]).sum()
    assert (torch.autograd.grad(p, xm)[0].abs() < 1e-9).all()
    res = backselect(model, x, "gradient", k=1, progress=False)
    assert all(res.order[b].tolist() != list(range(16)) for b in range(3))


def oracle_pruned(model, x, m, mask_value=0.0):
    """Pruned BackSelect of ONE image (C, H, W), pixels as features: while more than ``m`` remain,
    rank them by the mask gradient of the log-odds (largest first, lowest index on ties), then
    mask the best of the top ``m`` by exact evaluation; with ``m`` or fewer left, exact."""
    C, H, W = x.shape
    P = H * W
    with torch.no_grad():
        cls = model(x[None]).argmax(1).item()

    def log_odds_at(M):  # M (P,) float, 1 = masked; differentiable in M
        Mp = M.view(1, 1, H, W)
        z = model((x * (1 - Mp) + mask_value * Mp))[0].double()
        return z[cls] - torch.logsumexp(torch.cat([z[:cls], z[cls + 1:]]), 0)

    M = torch.zeros(P, dtype=x.dtype)
    order = []
    while len(order) < P:
        remaining = [i for i in range(P) if M[i] == 0]
        if len(remaining) > m:
            Mg = M.clone().requires_grad_()
            g = torch.autograd.grad(log_odds_at(Mg), Mg)[0]
            remaining = sorted(remaining, key=lambda i: (-g[i].item(), i))[:m]
            remaining.sort()
        best, best_value = None, None
        for i in remaining:
            trial = M.clone()
            trial[i] = 1
            with torch.no_grad():
                v = log_odds_at(trial).item()
            if best is None or v > best_value:
                best, best_value = i, v
        M[best] = 1
        order.append(best)
    return order


def test_pruned_with_m_below_the_remaining_features_equals_a_per_image_reference():
    model = TinyNet(C=1, seed=13).double().eval()
    x = torch.randn(3, 1, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(10))
    for m in (1, 3, 6):
        res = backselect(model, x, "pruned", m=m, chunk_size=4, progress=False)
        for b in range(3):
            assert res.order[b].tolist() == oracle_pruned(model, x[b], m), (m, b)


def test_exact_equals_oracle_with_nonzero_and_per_channel_mask_values_and_a_target():
    model = TinyNet(C=1, seed=14).double().eval()
    x = torch.randn(2, 1, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(11))
    res = assert_matches_oracle(model, x, mask_value=0.7)
    assert res.mask_value.tolist() == [0.7]
    model3 = TinyNet(C=3, seed=15).double().eval()
    x3 = torch.randn(2, 3, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(12))
    assert_matches_oracle(model3, x3, mask_value=[0.5, -1.0, 2.0])
    with torch.no_grad():
        runner_up = model3(x3).argsort(1)[:, -2]                          # not the predicted class
    res = assert_matches_oracle(model3, x3, mask_value=[0.5, -1.0, 2.0], target=runner_up)
    assert torch.equal(res.pred, runner_up)


def test_subsets_use_the_results_mask_value():
    model = TinyNet(C=3, seed=16).double().eval()
    x = torch.randn(2, 3, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(13))
    res = backselect(model, x, "exact", mask_value=[0.5, -1.0, 2.0], progress=False)
    xs, keep = pixel_subset(res, x, 0.25)
    masked = xs.permute(0, 2, 3, 1)[~keep]                                 # (n masked pixels, C)
    assert torch.equal(masked, torch.tensor([0.5, -1.0, 2.0], dtype=F64).expand_as(masked))


# ----------------------------------------------------------------------------- SIS verification and collection

def test_verified_grows_only_the_sis_that_fails_its_forward_pass_and_warns_when_it_cannot():
    from overinterp.engine.sis import _verified
    # log-odds of class 1 = sum of the kept contributions c_i = w_i x_i: c = (3, -1, 2, 0.5) on
    # image 0, removed in the order (1, 3, 2, 0) with log-odds (5.5, 5, 3, 0); c = (1, 1, 1, 1) on
    # image 1, removed (0, 1, 2, 3) (ties: lowest index) with (3, 2, 1, 0). At tau = sigmoid(2.4)
    # the SIS are {0} (log-odds 3) and {1, 2, 3} (log-odds 3).
    model = TwoClassLinear(torch.tensor([3.0, -1.0, 2.0, 0.5])).eval()
    x = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1 / 3, -1.0, 0.5, 2.0]], dtype=F64).view(2, 1, 2, 2)
    res = backselect(model, x, "exact", progress=False)
    tau = float(torch.sigmoid(torch.tensor(2.4)))
    true = find_sis(res, tau)
    assert true.size.tolist() == [1, 3]
    # a result whose log-odds claim too much for image 0 only (as batch rounding could):
    lying = res[[0, 1]]
    lying.log_odds = res.log_odds.clone()
    lying.log_odds[0, -1] = 10.0                                          # "the empty SIS works"
    claimed = find_sis(lying, tau)
    assert claimed.size.tolist() == [0, 3]
    fixed = _verified(model, x, lying, tau, claimed)
    assert fixed.size.tolist() == [1, 3] and torch.equal(fixed.keep, true.keep)
    # an image whose whole input fails the forward pass cannot be verified: it keeps the whole
    # input (what FindSIS gives when only f(x) reaches tau), with a warning
    lying.full_log_odds = res.full_log_odds.clone()
    lying.full_log_odds[1] = 10.0
    lying.log_odds[1] = 10.0
    with pytest.warns(UserWarning, match=r"image\(s\) \[1\]"):
        out = _verified(model, x, lying, 0.999, find_sis(lying, 0.999))
    assert out.size.tolist() == [-1, 4] and out.keep[1].all()             # image 0: f(x) < tau, no SIS


class Constant(nn.Module):
    """Logits (0, 10) whatever the input: even the fully masked input is class 1 with p = 0.99995."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1, dtype=F64))

    def forward(self, x):
        return torch.stack([x.flatten(1).sum(1) * self.w, torch.full((len(x),), 10.0, dtype=x.dtype)], 1)


def test_sis_collection_gives_one_empty_sis_when_the_masked_input_suffices(monkeypatch):
    from overinterp.engine import sis as sis_module
    x = torch.randn(2, 1, 3, 3, dtype=F64, generator=torch.Generator().manual_seed(14))
    monkeypatch.setattr(sis_module, "backselect", lambda *a, **k: pytest.fail("backselect ran for an empty SIS"))
    coll = sis_collection(Constant().eval(), x, 0.99)
    assert [tuple(c.shape) for c in coll] == [(1, 3, 3), (1, 3, 3)] and not any(c.any() for c in coll)


def test_sis_collection_max_sis_and_invalid_values():
    # log-odds = number of kept pixels (16 contributions of 1): at tau = sigmoid(2.5) every SIS
    # holds 3 pixels; ties go lowest index first, so the SIS are {13,14,15}, {10,11,12}, ..., {1,2,3}
    # and pixel 0 alone is left over (log-odds 1 < 2.5).
    model = TwoClassLinear(torch.ones(16)).eval()
    x = torch.ones(1, 1, 4, 4, dtype=F64)
    tau = float(torch.sigmoid(torch.tensor(2.5)))
    every = sis_collection(model, x, tau, progress=False)[0]
    assert [m.flatten().nonzero().flatten().tolist() for m in every] == [[13, 14, 15], [10, 11, 12], [7, 8, 9],
                                                                          [4, 5, 6], [1, 2, 3]]
    two = sis_collection(model, x, tau, max_sis=2, progress=False)[0]
    assert torch.equal(two, every[:2])
    with pytest.raises(ValueError, match="max_sis"):
        sis_collection(model, x, tau, max_sis=0)


# ----------------------------------------------------------------------------- deterministic models

def test_input_dropout_output_does_not_depend_on_batch_position_or_size():
    from overinterp.zoo.train import InputDropout
    torch.manual_seed(0)
    model = InputDropout(build_model("cnn", 1, 10, width=2), keep_prob=0.8, samples=3).eval()
    x = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(15))
    with torch.no_grad():
        alone = model(x[3:4])
        in_batch = model(x)[3:4]
        reversed_batch = model(x.flip(0))[1:2]
    torch.testing.assert_close(alone, in_batch)
    torch.testing.assert_close(alone, reversed_batch)
    backselect(model, x[:2], "gradient", k=16, progress=False)            # accepted by the engine


def test_the_engine_refuses_a_model_whose_output_depends_on_the_batch():
    class PerRowNoise(nn.Module):  # the old InputDropout: eval mask row i drawn for batch position i
        def __init__(self):
            super().__init__()
            self.net = TinyNet(seed=17)

        def forward(self, x):
            g = torch.Generator().manual_seed(0)
            mask = (torch.rand(len(x), 1, *x.shape[2:], generator=g) < 0.5).to(x.dtype)
            return self.net(x * mask)

    x = torch.randn(2, 1, 4, 4, generator=torch.Generator().manual_seed(16))
    with pytest.raises(ValueError, match="other images of the batch"):
        backselect(PerRowNoise().eval(), x, progress=False)
