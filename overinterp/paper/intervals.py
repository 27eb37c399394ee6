"""Confidence intervals for the claims' measures: a t interval over model replicates plus the image error they share.

The interval covers the population mean over seeds and images. Measures vary far more between replicates
than between images, so :func:`replicate_interval` takes the mean of the per-replicate ``theta_r``, with
SE from their scatter (``var / R``, R - 1 df) plus, on shared images, the image error all replicates
share (mean covariance over a joint image bootstrap; ``image_ids`` for partly shared images):
``estimate ± t * SE``, Welch-Satterthwaite df, never narrower than the replicates' own t interval. It
covers >= 93% in simulation (tests/test_intervals.py) where a bootstrap over 3 replicates covered 81%.
One model: a percentile bootstrap over its images (images only, not seeds; said in ``Interval.method``).
:func:`replicates_needed` sizes a deciding study; :func:`bootstrap` is the plain percentile bootstrap.
Everything is seeded.
"""
import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from overinterp.paper.formatting import number

#: the degrees of freedom where the shared image error dominates (Welch-Satterthwaite's infinity)
MAX_DF = 1e6


@dataclass(frozen=True)
class Interval:
    """An estimate and its (1 - alpha) interval ``[low, high]``. ``replicates``: 1 = one model, images only;
    ``sd``: of the per-replicate estimates; ``shared_se``: SE of the image sampling all replicates share
    (0 for own images); ``df``: Welch-Satterthwaite; ``method``: in words."""
    estimate: float
    low: float
    high: float
    replicates: int | None = None
    sd: float | None = None
    shared_se: float | None = None
    df: float | None = None
    method: str = ""

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def format(self, digits: int = 1) -> str:
        """'12.3 [8.1, 16.0]' ('—' for an undefined number, :func:`overinterp.paper.formatting.number`)."""
        return f"{number(self.estimate, digits)} [{number(self.low, digits)}, {number(self.high, digits)}]"

    def clipped(self, low: float, high: float) -> "Interval":
        """The ends clipped to the measure's range ``[low, high]`` (NaN stays NaN; coverage cannot fall)."""
        low, high = float(low), float(high)
        if not low <= high:
            raise ValueError(f"bounds must be (low, high) with low <= high, got ({low}, {high})")

        def clip(x):
            return x if math.isnan(x) else min(max(x, low), high)

        ends = clip(self.low), clip(self.high)
        if ends == (self.low, self.high):
            return self
        return dataclasses.replace(self, low=ends[0], high=ends[1],
                                   method=f"{self.method}{'; ' if self.method else ''}clipped to [{low:g}, {high:g}]")

    def scaled(self, factor: float) -> "Interval":
        """The interval in another unit (e.g. 100 for percent): estimate, bounds and spreads scaled."""
        low, high = sorted((self.low * factor, self.high * factor)) if factor < 0 else (self.low * factor,
                                                                                         self.high * factor)
        scale = (lambda x: None if x is None else x * abs(factor))  # noqa: E731
        return dataclasses.replace(self, estimate=self.estimate * factor, low=low, high=high, sd=scale(self.sd),
                                   shared_se=scale(self.shared_se))


def bootstrap(samples: tuple, statistic: Callable, n_resamples: int = 2000, confidence_level: float = 0.95,
              seed: int = 0, undefined: float = np.nan) -> tuple[float, float]:
    """Percentile bootstrap of ``statistic(*resampled, axis=1)`` over the 1-d ``samples`` (arrays of shape
    (n_resamples, n_i)); a NaN statistic of a resample counts as ``undefined``."""
    rng = np.random.default_rng(seed)
    drawn = [np.asarray(x)[rng.integers(0, len(x), (n_resamples, len(x)))] for x in samples]
    stat = np.nan_to_num(statistic(*drawn, axis=1), nan=undefined)
    return _quantiles(stat, confidence_level)


def _quantiles(stat: np.ndarray, confidence_level: float) -> tuple[float, float]:
    a = (1 - confidence_level) / 2
    if np.isnan(stat).all():
        return float("nan"), float("nan")
    low, high = np.nanquantile(stat, [a, 1 - a], method="inverted_cdf")   # an undefined resample is left out
    return float(low), float(high)


def _replicates(values: Sequence) -> list[np.ndarray]:
    reps = [np.asarray(v, dtype=np.float64).ravel() for v in values]
    if not reps or any(len(r) == 0 for r in reps):
        raise ValueError("replicate_interval needs at least one replicate, each with at least one image")
    return reps


def _nanmean(x: np.ndarray, axis=None) -> np.ndarray:
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # a replicate (or draw) of only NaN images: NaN
        return np.nanmean(x, axis=axis)


def _resampled_means(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """NaN-ignoring means of ``x`` ((n,) or (k, n)) over each row of ``idx`` (b, n): (b,) or (k, b)."""
    ok = ~np.isnan(x)
    if ok.all():
        return np.take(x, idx, axis=-1).mean(axis=-1)
    total = np.take(np.where(ok, x, 0.0), idx, axis=-1).sum(axis=-1)
    count = np.take(ok, idx, axis=-1).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _draws(rng: np.random.Generator, n: int, n_resamples: int, max_cells: int = 2_000_000):
    """Bootstrap draws of ``n`` image indices, in chunks of at most ``max_cells`` indices."""
    step = max(1, max_cells // max(n, 1))
    for start in range(0, n_resamples, step):
        yield rng.integers(0, n, (min(step, n_resamples - start), n))


def _theta(statistic: Callable, means: dict[str, np.ndarray]) -> np.ndarray:
    """``statistic`` of per-condition means of one shape; a float64 array of that shape."""
    shape = next(iter(means.values())).shape
    with np.errstate(all="ignore"):
        out = np.asarray(statistic({k: v.ravel() if v.ndim else v for k, v in means.items()}), dtype=np.float64)
    return np.broadcast_to(out, (int(np.prod(shape)),) if shape else ()).reshape(shape)


def _one_model(reps: dict[str, list[np.ndarray]], statistic: Callable, paired_images: bool, n_resamples: int,
               confidence_level: float, rng: np.random.Generator, note: str) -> Interval:
    """Percentile bootstrap over the images of one replicate per condition."""
    arrays = {k: v[0] for k, v in reps.items()}
    estimate = float(_theta(statistic, {k: np.float64(_nanmean(x)) for k, x in arrays.items()}))
    shared = rng.integers(0, len(next(iter(arrays.values()))), (n_resamples, len(next(iter(arrays.values()))))) \
        if paired_images else None
    means = {k: _resampled_means(x, shared if paired_images else rng.integers(0, len(x), (n_resamples, len(x))))
             for k, x in arrays.items()}
    low, high = _quantiles(_theta(statistic, means), confidence_level)
    if not math.isfinite(estimate):
        low = high = float("nan")
    return Interval(estimate, low, high, replicates=1, method="bootstrap over the images of one model" + note)


def _on_union(reps: dict[str, list[np.ndarray]], image_ids: Mapping[str, Sequence]) -> tuple[dict, int]:
    """Each replicate's values laid out on the union of the image ids (first appearance; NaN where
    missing), and the union's size."""
    if set(image_ids) != set(reps):
        raise ValueError(f"image_ids needs the conditions of groups, got {sorted(image_ids)} for {sorted(reps)}")
    ids = {}
    for k, rs in reps.items():
        got = [np.asarray(i).ravel() for i in image_ids[k]]
        if [len(i) for i in got] != [len(r) for r in rs]:
            raise ValueError(f"image_ids of {k!r} must parallel its values: lengths {[len(i) for i in got]} "
                             f"for {[len(r) for r in rs]}")
        if any(len(np.unique(i)) < len(i) for i in got):
            raise ValueError(f"image_ids of {k!r}: an image occurs twice in one replicate")
        ids[k] = got
    everything = np.concatenate([i for got in ids.values() for i in got])
    unique, first = np.unique(everything, return_index=True)
    position = np.empty(len(unique), dtype=np.int64)
    position[np.argsort(first, kind="stable")] = np.arange(len(unique))     # sorted id -> place in the union
    laid = {}
    for k, rs in reps.items():
        laid[k] = []
        for r, i in zip(rs, ids[k]):
            x = np.full(len(unique), np.nan)
            x[position[np.searchsorted(unique, i)]] = r
            laid[k].append(x)
    return laid, len(unique)


def replicate_interval(groups: Mapping[str, Sequence], statistic: Callable[[dict], np.ndarray] | None = None,
                       paired_images: bool = True, n_resamples: int = 1000, confidence_level: float = 0.95,
                       seed: int = 0, image_ids: Mapping[str, Sequence] | None = None,
                       bounds: tuple[float, float] | None = None) -> Interval:
    """Estimate and interval of ``statistic`` over model replicates and images (module docstring).

    ``groups``: condition -> one 1-d array per replicate of per-image values (NaN: no value, left out).
    Conditions pair by replicate index; a one-replicate condition is shared by all R; other count
    mismatches raise ValueError. ``statistic``: {condition: means} -> array, elementwise (default: the one
    condition's mean). ``theta_r = statistic(replicate r's means)``; interval ``mean ± t(df) * sqrt(a + c)``,
    ``a = var(theta) / R``, ``c`` the shared image covariance (``paired_images``: same images in the same
    order; else only one-replicate conditions' images), at least ``t(R - 1) * sqrt(a)``. Replicates
    with no value or a non-finite ``theta_r`` are dropped (said in ``method``); one left: bootstrap.
    ``image_ids``: condition -> per-replicate image ids parallel to the values, for partly shared images
    (replaces ``paired_images``). ``bounds``: the statistic's range; the ends are clipped to it."""
    if not groups:
        raise ValueError("replicate_interval needs at least one condition")
    if statistic is None:
        if len(groups) != 1:
            raise ValueError("replicate_interval: give a statistic for more than one condition")
        statistic = lambda m: next(iter(m.values()))  # noqa: E731
    reps = {k: _replicates(v) for k, v in groups.items()}
    counts = {k: len(v) for k, v in reps.items()}
    R = max(counts.values())
    if any(c not in (1, R) for c in counts.values()):
        raise ValueError("replicate_interval pairs conditions by replicate: each needs the same number of replicates "
                         f"or one, got {', '.join(f'{k}: {c}' for k, c in counts.items())}")
    distinct = None
    if image_ids is not None:
        reps, distinct = _on_union(reps, image_ids)
        paired_images = True                    # positions are now images: a joint draw is one of the union
    if paired_images:
        lengths = {len(r) for rs in reps.values() for r in rs}
        if len(lengths) != 1:
            raise ValueError(f"paired_images needs the same images everywhere, got lengths {sorted(lengths)}")
    iv = _interval(reps, counts, R, statistic, paired_images, n_resamples, confidence_level,
                   np.random.default_rng(seed), distinct)
    return iv if bounds is None else iv.clipped(*bounds)


def _interval(reps: dict[str, list[np.ndarray]], counts: dict[str, int], R: int, statistic: Callable,
              paired_images: bool, n_resamples: int, confidence_level: float, rng: np.random.Generator,
              distinct: int | None) -> Interval:
    """:func:`replicate_interval` of validated replicates (``distinct``: the ids' union size, or None)."""
    # per replicate and condition: the mean over images, a one-replicate condition broadcast to every r
    means = {k: np.array([_nanmean(r) for r in rs]) for k, rs in reps.items()}
    means = {k: np.broadcast_to(m, (R,)) for k, m in means.items()}
    empty = np.zeros(R, dtype=bool)
    for m in means.values():
        empty |= np.isnan(m)
    theta = _theta(statistic, means)
    undefined = ~empty & ~np.isfinite(theta)
    keep = ~empty & ~undefined
    if R == 1 and not empty[0]:            # one model (an undefined statistic gives no bounds)
        return _one_model(reps, statistic, paired_images, n_resamples, confidence_level, rng, "")
    notes = [f"{int(n)} replicate{'s' if n != 1 else ''} dropped ({why})"
             for n, why in ((empty.sum(), "no values"), (undefined.sum(), "statistic undefined")) if n]
    note = "; " + "; ".join(notes) if notes else ""
    kept = int(keep.sum())
    if kept == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, replicates=0, method="no replicate left" + note)
    if kept == 1:
        r = int(np.flatnonzero(keep)[0])
        return _one_model({k: [rs[r] if len(rs) > 1 else rs[0]] for k, rs in reps.items()}, statistic, paired_images,
                          n_resamples, confidence_level, rng, note)

    theta = theta[keep]
    estimate = float(theta.mean())
    sd = float(theta.std(ddof=1))
    a = sd ** 2 / kept
    shared = [k for k, c in counts.items() if paired_images or c == 1 < R]   # conditions whose images all r share
    c = _shared_variance(reps, means, statistic, keep, shared, paired_images, n_resamples, rng) if shared else 0.0
    half, df = _t_half_width(a, c, kept, confidence_level)
    images = (f"images shared by id ({distinct} distinct)" if distinct is not None else
              "shared images" if paired_images else "own images per replicate"
              + (" (one-replicate conditions' images shared)" if shared else ""))
    return Interval(estimate, estimate - half, estimate + half, replicates=kept, sd=sd, shared_se=math.sqrt(c), df=df,
                    method=f"t over {kept} replicates, {images}{note}")


def _shared_variance(reps: dict[str, list[np.ndarray]], means: dict[str, np.ndarray], statistic: Callable,
                     keep: np.ndarray, shared: list[str], paired_images: bool, n_resamples: int,
                     rng: np.random.Generator) -> float:
    """Mean covariance of theta_r, theta_s (r != s) over bootstrap draws of the ``shared`` conditions'
    images (one joint draw with ``paired_images``; others at their means), clipped at 0."""
    R, kept = len(keep), int(keep.sum())
    if paired_images:
        X = np.stack([x for k in shared for x in reps[k]])                  # every array, on the same images
        at = np.cumsum([0] + [len(reps[k]) for k in shared])
        M = np.concatenate([_resampled_means(X, idx) for idx in _draws(rng, X.shape[1], n_resamples)], axis=1).T
        drawn = {k: M[:, at[i]:at[i + 1]] for i, k in enumerate(shared)}   # (n_resamples, R_k)
    else:
        drawn = {k: np.concatenate([_resampled_means(reps[k][0], idx)
                                    for idx in _draws(rng, len(reps[k][0]), n_resamples)])[:, None] for k in shared}
    drawn = {k: np.ascontiguousarray(np.broadcast_to(drawn[k], (n_resamples, R))[:, keep]) if k in drawn
             else np.broadcast_to(m[keep], (n_resamples, kept)) for k, m in means.items()}
    theta = _theta(statistic, drawn)
    theta = theta[np.isfinite(theta).all(axis=1)]      # a draw where the statistic is undefined is left out
    if len(theta) < 2:
        return 0.0
    cov = np.cov(theta, rowvar=False)
    return max(0.0, float((cov.sum() - np.trace(cov)) / (kept * (kept - 1))))


def _t_half_width(a: float, c: float, replicates: int, confidence_level: float) -> tuple[float, float]:
    """Half-width ``t(df) * sqrt(a + c)`` and its Welch-Satterthwaite ``df`` (``a``: replicate variance of the
    mean; ``c``: shared image variance, as known), at least ``t(replicates - 1) * sqrt(a)``: df grows when
    ``a`` is small by chance, so adding ``c`` could otherwise narrow the interval."""
    q = 1 - (1 - confidence_level) / 2
    df = MAX_DF if a == 0 else min(MAX_DF, (a + c) ** 2 / (a ** 2 / (replicates - 1)))
    half = float(stats.t.ppf(q, df)) * math.sqrt(a + c)
    return max(half, float(stats.t.ppf(q, replicates - 1)) * math.sqrt(a)), df


def _half_width(sd: float, shared_se: float, n: int, confidence_level: float) -> float:
    return _t_half_width(sd ** 2 / n, shared_se ** 2, n, confidence_level)[0]


def replicates_needed(iv: Interval, edge: float, confidence_level: float = 0.95,
                      max_replicates: int = 100) -> int | None:
    """The fewest replicates (>= 2) whose interval, at ``iv``'s sd, shared error and estimate, would lie
    wholly on one side of ``edge``; None beyond ``max_replicates`` or when ``iv`` covers one model."""
    if iv.sd is None or iv.replicates is None or iv.replicates < 2:
        return None
    shared = iv.shared_se or 0.0
    gap = abs(iv.estimate - edge)
    if not all(math.isfinite(x) for x in (iv.sd, shared, gap)) or gap == 0:
        return None
    if _half_width(iv.sd, shared, max_replicates, confidence_level) >= gap:
        return None
    lo, hi = 2, max_replicates                      # the half-width shrinks with n: bisect
    while lo < hi:
        mid = (lo + hi) // 2
        if _half_width(iv.sd, shared, mid, confidence_level) < gap:
            hi = mid
        else:
            lo = mid + 1
    return lo
