"""The paper against its published critiques (chapter "Is the model reading the pixels or the mask?";
methods in :mod:`overinterp.methods.critiques`, verdicts in :mod:`overinterp.paper.further_verdicts`).
Built on chapters 2-5's stored zoo, backward selections and full-image control; each measure returns one
row per image (or bin), and the ``*_verdict(s)`` functions at the bottom decide from them:

* :func:`dilation`, :func:`dilated_retraining` -- Springer (2022): subsets grown by k x k, and 4.2's
  retraining on them;
* :func:`saliency_shares` -- SmoothGrad's attribution on kept pixels, their one-pixel ring, elsewhere;
* :func:`blank_inputs` -- the fully masked input; :func:`mask_shape` -- missingness bias (Jain et al. 2022);
* :func:`calibration_images` -- ReCalX; :func:`insertion` -- accuracy as the kept fraction grows.

    df = dilation(run, kernels=(3, 5), frac=0.05, tau=0.99)
    bs, sis = dilation_verdicts(df, kernel=3)
"""
import numpy as np
import pandas as pd
import torch

from overinterp.engine.backselect import apply_keep
from overinterp.engine.runner import fingerprint
from overinterp.engine.sis import find_sis, pixel_subset, random_subset
from overinterp.experiments import blank as blank_module, runs, subsets
from overinterp.experiments.factors import black_value
from overinterp.methods.critiques import (REGIONS, attribution_shares, dilate, expected_calibration_error,
                                          matched_random_keep, reliability, smoothgrad, top_keep)
from overinterp.methods.shared_interest import saliency_map
from overinterp.paper import further_verdicts
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo import data
from overinterp.zoo.train import predict

BS, SIS = "BS subsets", "SIS"                       # the subsets :func:`dilation` grows
MASKS = ("BS", "random, same count")                # a subset's own mask, and random pixels as many
FILLS = ("mean pixel", "black", "uniform noise")    # what a mask-shape input's kept pixels are set to
INPUTS = ("full images", "own BS subsets", "random subsets")
ORDERS = ("backward selection", "saliency (gradient)", "random")
NOISE_SEED = 0                                      # the mask-shape inputs' uniform noise, the same for every model
VERDICT_FILL = "uniform noise"                      # the mask-shape verdict's fill


def check_kernels(kernels) -> tuple[int, ...]:
    """The dilation kernels as odd integers >= 3, in order; ``ValueError`` otherwise."""
    ks = tuple(int(k) for k in (kernels if isinstance(kernels, (tuple, list)) else [kernels]))
    if not ks or any(k < 3 or k % 2 == 0 or k != float(x) for k, x in zip(ks, kernels)):
        raise ValueError(f"parameter kernels={kernels!r} is not valid: odd sizes of at least 3 pixels, e.g. (3, 5)")
    return ks


def _test(run) -> tuple[torch.Tensor, torch.Tensor]:
    return runs.selection(run, "test").load()


def _replicates(run):
    """(arch, replicate r, model, backward selection of the test selection by it) for every zoo replicate."""
    sel = runs.selection(run, "test")
    for arch, models in runs.zoo(run).items():
        for r, model in enumerate(models):
            yield arch, r, model, runs.backselect_set(run, arch, sel, seed=run.seed + r, progress=False)


def _classify(p: torch.Tensor, target: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(1/0: probabilities ``p`` (N, K) predict ``target``; the probability of ``target``) per image, float64."""
    target = target.cpu()
    return (p.argmax(1) == target).double().numpy(), p.gather(1, target[:, None]).squeeze(1).double().numpy()


def _frame(**columns) -> pd.DataFrame:
    n = max(len(v) for v in columns.values() if np.ndim(v))
    return pd.DataFrame({k: (np.asarray(v) if np.ndim(v) else np.repeat(v, n)) for k, v in columns.items()})


_SEEN: dict = {}   # the predictions of :func:`_basic`, by replicate, weights, images and fraction


def _basic(run, model, res, frac: float) -> dict[str, torch.Tensor]:
    """A replicate's softmax probabilities (N, K) on :data:`INPUTS` at ``frac``, cached in this process."""
    X, _ = _test(run)
    key = (fingerprint(model), fingerprint(X), fingerprint(res.order), float(frac), str(run.device))
    if key not in _SEEN:
        rnd = random_subset(X, frac, seed=runs.subset_seed(run.dataset, "test"), block=res.block,
                            mask_value=res.mask_value)[0]
        _SEEN[key] = {name: predict(model, x, device=run.device)
                      for name, x in zip(INPUTS, (X, pixel_subset(res, X, frac)[0], rnd))}
    return _SEEN[key]


# ----------------------------------------------------------------------------- Springer (2022): dilation

def _sis(run, arch: str, r: int, full: torch.Tensor, tau: float):
    """(images, selection, SIS, test indices) of replicate r's confident test images with an SIS at ``tau``."""
    X, Y = _test(run)
    conf, pred = full.max(1)
    idx = torch.nonzero((pred == Y) & (conf >= tau)).flatten()
    res = runs.sis_result(run, arch, run.seed + r, tau)
    idx = idx[:len(res)]
    sis = find_sis(res, tau)
    has = (sis.size >= 0).cpu()
    return X[idx][has], res[has.nonzero().flatten()], sis.mask.cpu()[has], idx[has]


def dilation(run, kernels=(3, 5), frac: float = SUBSET_FRAC, tau: float | None = None) -> pd.DataFrame:
    """Springer's test: each replicate on its own BS subsets and SIS grown by each kernel (1: as is), and on
    random masks as large. Per image: "kept pixels (%)", "prediction kept" (1/0), "confidence"."""
    kernels = (1, *check_kernels(kernels))
    tau = run.profile.sis_threshold if tau is None else float(tau)
    X, _ = _test(run)
    seed = runs.subset_seed(run.dataset, "test")
    rows = []
    for arch, r, model, res in _replicates(run):
        basic = _basic(run, model, res, frac)
        xs, sres, smask, sidx = _sis(run, arch, r, basic[INPUTS[0]], tau)
        cases = [(BS, X, pixel_subset(res, X, frac)[1].cpu(), res.pred, torch.arange(len(X)), res.mask_value),
                 (SIS, xs, smask, sres.pred, sidx, sres.mask_value)]
        for subset, images, keep, target, index, mv in cases:
            if not len(images):
                continue
            for k in kernels:
                grown = dilate(keep, k)
                for mask, m in zip(MASKS, (grown, matched_random_keep(grown, seed))):
                    p = (basic[INPUTS[1]] if subset == BS and k == 1 and mask == MASKS[0]   # chapter 4's subset
                         else predict(model, apply_keep(images, m, mv), device=run.device))
                    kept, conf = _classify(p, target)
                    rows.append(_frame(model=ARCH_NAMES[arch], replicate=r, subset=subset, mask=mask, kernel=k,
                                       image=index.numpy(), **{"kept pixels (%)": 100 * m.flatten(1).double()
                                                               .mean(1).numpy(), "prediction kept": kept,
                                                               "confidence": conf}))
    return pd.concat(rows, ignore_index=True)


def example_masks(run, n: int, kernels=(3, 5), frac: float = SUBSET_FRAC) -> tuple:
    """(first ``n`` test images, labels, {kernel: (n, H, W) BS keep-mask of replicate run.seed},
    random masks as large as the first dilation)."""
    X, Y = _test(run)
    arch = run.profile.archs[0]
    res = runs.backselect_set(run, arch, runs.selection(run, "test"), progress=False)[torch.arange(n)]
    keep = pixel_subset(res, X[:n], frac)[1].cpu()
    keeps = {k: dilate(keep, k) for k in (1, *check_kernels(kernels))}
    first = keeps[check_kernels(kernels)[0]]
    return X[:n], Y[:n], keeps, matched_random_keep(first, runs.subset_seed(run.dataset, "test"))


def dilated_retraining(run, kernel: int = 3, frac: float = SUBSET_FRAC) -> dict[str, dict[str, list]]:
    """Springer's test of 4.2: models retrained on BS subsets dilated by ``kernel`` ("bs"), random masks
    as large ("random"), and chapter 5's "full". Returns {arch name: {kind: 1/0 per test image per model}}."""
    kernel = check_kernels((kernel,))[0]
    out = {}
    for a in run.profile.archs:
        subs = subsets.subsets(run, a, frac, train=True)
        made = {}
        for s in ("train", "test"):
            images, keep = subs[s]["full"][0], dilate(subs[s]["bs"][1].cpu(), kernel)
            mv = run.profile.engine(s).mask_value
            made[s] = {"bs": apply_keep(images, keep, mv),
                       "random": apply_keep(images, matched_random_keep(keep, runs.subset_seed(run.dataset, s)), mv)}
        ytr, yte = subs["train"]["labels"], subs["test"]["labels"]
        got = {}
        for kind, name in (("bs", f"bs{frac:g}-dilated{kernel}"), ("random", f"random{frac:g}-as-bs-dilated{kernel}")):
            models = subsets.retrain(run, a, made["train"][kind], ytr, name, augment=False,
                               eval_data=(made["test"][kind], yte))
            got[kind] = [runs.correct(m, made["test"][kind], yte, run.device) for m in models]
        full = subsets.retrain_on_subsets(run, a, "full", False, frac, subs)
        got["full"] = [runs.correct(m, subs["test"]["full"][0], yte, run.device) for m in full]
        out[ARCH_NAMES[a]] = got
    return out


def saliency_shares(run, frac: float = SUBSET_FRAC, images: int = 50, samples: int = 16,
                    sigma: float = 0.15) -> pd.DataFrame:
    """SmoothGrad attribution of each replicate's BS subsets of the first ``images`` test images: per
    (image, region) "attribution share" and "area share"."""
    X, _ = _test(run)
    X = X[:images]
    split = data.load(run.dataset, "test")
    noise = float(sigma) * float(np.mean([1 / s for s in split.std]))     # pixels span [0, 1] / std
    rows = []
    for arch, r, model, res in _replicates(run):
        res = res[torch.arange(len(X))]
        x, keep = pixel_subset(res, X, frac)
        attr = smoothgrad(model.to(run.device), x.to(run.device), res.pred.to(run.device), samples, noise,
                          seed=run.seed + r)
        a, area = attribution_shares(attr, keep.cpu()), attribution_shares(torch.ones_like(attr), keep.cpu())
        for j, region in enumerate(REGIONS):
            rows.append(_frame(model=ARCH_NAMES[arch], replicate=r, image=np.arange(len(X)), region=region,
                               **{"attribution share": a[:, j].numpy(), "area share": area[:, j].numpy()}))
    return pd.concat(rows, ignore_index=True)


# ----------------------------------------------------------------------------- the fully masked input, mask shape

def blank_inputs(run, frac: float = SUBSET_FRAC) -> pd.DataFrame:
    """Each replicate on the blank (mean pixel or black): "class", "confidence", "class prior (%)"."""
    f = blank_module.fills(run.dataset)
    rows = blank_module.blank_check(run, frac, which={"mean pixel": f[blank_module.PAPER_FILL], "black": f["grey 0.0"]}).rows
    return rows.rename(columns={"fill": "mask", "probability": "confidence"})[
        ["model", "replicate", "mask", "class", "confidence", "class prior (%)"]]


def _fill_images(run, X: torch.Tensor, fill: str) -> torch.Tensor:
    """``X``'s shape filled with one of :data:`FILLS`, normalised."""
    split = data.load(run.dataset, "test")
    if fill == "uniform noise":                                   # uniform on [0, 1] in pixel units
        u = torch.rand(X.shape, generator=torch.Generator().manual_seed(NOISE_SEED))
        return (u - torch.tensor(split.mean).view(1, -1, 1, 1)) / torch.tensor(split.std).view(1, -1, 1, 1)
    black = torch.as_tensor(black_value(run.dataset), dtype=torch.float32).reshape(-1).expand(len(split.mean))
    return (torch.zeros(len(split.mean)) if fill == "mean pixel" else black).view(1, -1, 1, 1).expand_as(X).clone()


def mask_shape(run, frac: float = SUBSET_FRAC) -> pd.DataFrame:
    """Missingness bias: each BS mask with kept pixels set to a :data:`FILLS` value. Per (replicate, fill,
    image): "subset class", "shape class", "same class", "class prior", "blank same"."""
    X, _ = _test(run)
    K = len(data.load(run.dataset, "test").classes)
    rows = []
    for arch, r, model, res in _replicates(run):
        basic = _basic(run, model, res, frac)
        full, c_bs = basic[INPUTS[0]].argmax(1), basic[INPUTS[1]].argmax(1)
        prior = torch.bincount(full, minlength=K).double() / len(full)
        keep = pixel_subset(res, X, frac)[1]
        blank = predict(model, torch.zeros_like(X[:1]) + res.mask_value.cpu().view(1, -1, 1, 1),
                        device=run.device).argmax(1)
        for fill in FILLS:
            c = predict(model, apply_keep(_fill_images(run, X, fill), keep.cpu(), res.mask_value.cpu()),
                        device=run.device).argmax(1)
            rows.append(_frame(model=ARCH_NAMES[arch], replicate=r, fill=fill, image=np.arange(len(X)),
                               **{"subset class": c_bs.numpy(), "shape class": c.numpy(),
                                  "same class": (c == c_bs).double().numpy(), "class prior": prior[c_bs].numpy(),
                                  "blank same": (blank == c_bs).double().numpy()}))
    return pd.concat(rows, ignore_index=True)


# ----------------------------------------------------------------------------- calibration (ReCalX)

def calibration_images(run, frac: float = SUBSET_FRAC) -> pd.DataFrame:
    """Each replicate on :data:`INPUTS`: per image the predicted class's "confidence", "correct"."""
    X, Y = _test(run)
    rows = []
    for arch, r, model, res in _replicates(run):
        for name, p in _basic(run, model, res, frac).items():
            conf, pred = p.max(1)
            rows.append(_frame(model=ARCH_NAMES[arch], replicate=r, input=name, image=np.arange(len(X)),
                               confidence=conf.double().numpy(), correct=(pred == Y).double().numpy()))
    return pd.concat(rows, ignore_index=True)


def calibration_errors(images: pd.DataFrame, bins: int = 15, tau: float = 0.99) -> pd.DataFrame:
    """Per (model, replicate, input): ECE (%), accuracy, mean confidence, share at >= ``tau``."""
    def one(g):
        sure = g[g["confidence"] >= tau]
        return pd.Series({"ECE (%)": 100 * expected_calibration_error(g["confidence"], g["correct"], bins),
                          "accuracy (%)": 100 * g["correct"].mean(), "mean confidence": g["confidence"].mean(),
                          "at confidence ≥ τ (%)": 100 * len(sure) / len(g),
                          "accuracy there (%)": 100 * sure["correct"].mean() if len(sure) else np.nan})
    return images.groupby(["model", "replicate", "input"], sort=False).apply(one, include_groups=False).reset_index()


def reliability_bins(images: pd.DataFrame, bins: int = 15) -> pd.DataFrame:
    """Reliability diagram rows per (model, input), replicates pooled."""
    out = [reliability(g["confidence"], g["correct"], bins).assign(model=m, input=i)
           for (m, i), g in images.groupby(["model", "input"], sort=False)]
    return pd.concat(out, ignore_index=True)


# ----------------------------------------------------------------------------- insertion curves

def insertion(run, fractions=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0), frac: float = SUBSET_FRAC) -> pd.DataFrame:
    """Insertion curves: accuracy with ``fractions`` of features kept by each of :data:`ORDERS`. Per
    (replicate, order, fraction, image): "correct", "confidence"."""
    X, Y = _test(run)
    fractions = sorted({float(f) for f in fractions} | {float(frac)})
    seed = runs.subset_seed(run.dataset, "test")
    rows = []
    for arch, r, model, res in _replicates(run):
        basic = _basic(run, model, res, frac)
        sal = saliency_map(model.to(run.device), X.to(run.device), "saliency", res.pred).cpu()
        for f in fractions:
            keeps = {ORDERS[0]: pixel_subset(res, X, f)[1].cpu(), ORDERS[1]: top_keep(sal, f, res.block),
                     ORDERS[2]: random_subset(X, f, seed=seed, block=res.block)[1].cpu()}
            for order, keep in keeps.items():
                if f == 1.0 or (f == frac and order != ORDERS[1]):    # the full image, chapter 4's subsets
                    p = basic[INPUTS[0] if f == 1.0 else INPUTS[1] if order == ORDERS[0] else INPUTS[2]]
                else:
                    p = predict(model, apply_keep(X, keep, res.mask_value.cpu()), device=run.device)
                rows.append(_frame(model=ARCH_NAMES[arch], replicate=r, order=order, fraction=f,
                                   image=np.arange(len(X)), correct=_classify(p, Y)[0],
                                   confidence=_classify(p, res.pred)[1]))
    return pd.concat(rows, ignore_index=True)


# ----------------------------------------------------------------------------- what each verdict reads

def per_replicate(df: pd.DataFrame, column: str, **where) -> dict[str, list[np.ndarray]]:
    """{model: one ``column`` array per replicate, in image order} of the rows matching ``where``."""
    for k, v in where.items():
        df = df[df[k] == v]
    return {m: [g.sort_values("image")[column].to_numpy(float) for _, g in gm.groupby("replicate")]
            for m, gm in df.groupby("model", sort=False)}


def dilation_verdicts(df: pd.DataFrame, kernel: int = 3, seed: int = 0) -> tuple:
    """Springer's claim at ``kernel`` for BS subsets (shared images) and SIS (own images)."""
    def kept(subset: str, k: int) -> dict:
        return per_replicate(df[(df["subset"] == subset) & (df["mask"] == MASKS[0])], "prediction kept", kernel=k)
    return tuple(further_verdicts.dilation_keeps_prediction(kept(subset, 1), kept(subset, kernel), kernel, subset,
                                                            paired_images=shared, seed=seed)
                 for subset, shared in ((BS, True), (SIS, False)))


def retraining_verdicts(run, correct: dict, kernel: int = 3) -> tuple:
    """Section 4.2's two verdicts on :func:`dilated_retraining` (far above random; near full images)."""
    pick = {k: {m: v[k] for m, v in correct.items()} for k in ("bs", "random", "full")}
    return further_verdicts.dilated_retraining_verdicts(pick["bs"], pick["random"], pick["full"],
                                          chance=100 / len(data.CLASSES[run.dataset]), kernel=kernel, seed=run.seed)


def boundary_verdict(shares: pd.DataFrame, seed: int = 0):
    """Springer's saliency claim: the ring's attribution share against its area share."""
    ring = shares[shares["region"] == REGIONS[1]]
    return further_verdicts.saliency_on_boundary(per_replicate(ring, "attribution share"), per_replicate(ring, "area share"),
                                   seed=seed)


def blank_verdict(run, blank: pd.DataFrame):
    """The SIS reference code's blank check, per architecture and mask value."""
    groups = list(blank.groupby(["model", "mask"], sort=False))
    conf = {f"{m}, {k}": g.sort_values("replicate")["confidence"].tolist() for (m, k), g in groups}
    classes = {f"{m}, {k}": ", ".join(dict.fromkeys(g["class"])) for (m, k), g in groups}
    return further_verdicts.blank_uninformative(conf, len(data.CLASSES[run.dataset]), classes)


def mask_shape_verdict(shape: pd.DataFrame, fill: str = VERDICT_FILL, seed: int = 0):
    """Missingness bias: shape inputs get the subset's class more often than the blank does."""
    rows = shape[shape["fill"] == fill]
    return further_verdicts.mask_shape_leaks(per_replicate(rows, "same class"), per_replicate(rows, "blank same"), fill,
                               seed=seed)


def calibration_verdict(errors: pd.DataFrame, images: int, bins: int = 15, seed: int = 0):
    """ReCalX's claim: per model and masked input, its ECE against the full images'."""
    masked, full = {}, {}
    for m, g in errors.groupby("model", sort=False):
        base = g[g["input"] == INPUTS[0]].sort_values("replicate")["ECE (%)"].to_numpy() / 100
        for i in INPUTS[1:]:
            masked[f"{m}, {i}"] = g[g["input"] == i].sort_values("replicate")["ECE (%)"].to_numpy() / 100
            full[f"{m}, {i}"] = base
    return further_verdicts.masked_miscalibrated(masked, full, images, bins, seed=seed)


def insertion_verdict(curves: pd.DataFrame, frac: float = SUBSET_FRAC, seed: int = 0):
    """Backward-selection order against saliency order at ``frac``."""
    at = curves[np.isclose(curves["fraction"], frac)]
    return further_verdicts.search_beats_saliency(per_replicate(at, "correct", order=ORDERS[0]),
                                    per_replicate(at, "correct", order=ORDERS[1]), frac, seed=seed)
