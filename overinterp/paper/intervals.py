"""Confidence intervals for the claims' measures: a t interval over model replicates plus the image error they share.

What the interval covers: the population mean of a measure over model replicates (seeds) and over
images, i.e. what a reproduction with other seeds and other test images of the same distribution
would find on average. Our measures vary far more between replicates than between images (two
seeds of one architecture differ by points of accuracy where a few hundred images resolve a
fraction of a point), so the interval is built around the replicate-to-replicate variation:

* :func:`replicate_interval` computes the measure once per replicate, ``theta_r``, and takes their
  mean (replicates weigh equally). Its standard error has two parts: the scatter of the
  ``theta_r`` (``var / R``, with ``R - 1`` degrees of freedom), which holds each replicate's own
  image noise too, and, where every replicate is measured on the same images, the image-sampling
  error that all replicates share and their scatter cannot see (the mean covariance of
  ``theta_r`` and ``theta_s`` over a joint bootstrap of the images). The interval is
  ``estimate ± t * SE`` with Welch-Satterthwaite degrees of freedom, and never narrower than the
  replicates' own t interval. In simulation (tests/test_intervals.py, ``python
  tests/test_intervals.py``) it covers the true mean at least 93% of the time with 3 or 5
  replicates that differ by 0 to 20 points of accuracy, where a percentile bootstrap over the
  replicates (which sees only 10 distinct means of 3) covered 81% at 20 points.
* Replicates that share only some images (each the first confident images of one test sample)
  give their images' ids (``image_ids``): the shared image error is then drawn by a joint
  bootstrap over the union of the ids, so replicates correlate by the images they share, and
  ``paired_images=True`` is the case where every replicate has all of them. Treating such
  replicates as having their own images leaves that error out: in simulation
  (tests/test_interval_designs.py: the first 40 confident images of one sample of 1,000, 84% shared
  between two replicates, image error at the mean as large as the replicates' spread) that
  interval covered 0.86 with 3 replicates and 0.76 with 5, the one with ids 0.96 with either.
* ``bounds``: a measure with a range (a probability, a share, a size as a fraction) keeps its
  interval inside it.
* With a single model there is no replicate scatter to measure: the interval falls back to a
  percentile bootstrap over that model's images, and says so (``Interval.method``). It covers
  image sampling only, not another seed.
* :func:`replicates_needed`: how many replicates would decide a claim whose interval straddles
  a margin's edge, at the same per-replicate spread.

:func:`bootstrap` is the plain one-level percentile bootstrap for statistics of whole samples.
Everything is seeded: the same inputs and seed give the same interval.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from overinterp.paper.formatting import number

__all__ = ["Interval", "bootstrap", "replicate_interval", "replicates_needed"]

#: the degrees of freedom where the shared image error dominates (Welch-Satterthwaite's infinity)
MAX_DF = 1e6


@dataclass(frozen=True)
class Interval:
    """An estimate and its (1 - alpha) interval ``[low, high]``, and how it was made.

    ``replicates``: the model replicates it covers (1: one model, images only); ``sd``: the sample
    standard deviation of the per-replicate estimates; ``shared_se``: the standard error of the
    image sampling that every replicate shares (0 where the replicates have their own images);
    ``df``: the t interval's (Welch-Satterthwaite) degrees of freedom; ``method``: in words."""
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
        """The interval with its ends kept inside ``[low, high]``, the range of the measure (a NaN end
        stays NaN). The true value lies in the range, so clipping never takes it out of the interval:
        coverage cannot fall, and an end outside the range only said the normal approximation overshot
        it. The estimate is not moved (a mean of values in the range lies in it)."""
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
    """Percentile bootstrap interval of ``statistic(*resampled, axis=1)`` over the 1-d arrays of
    ``samples``, each resampled ``n_resamples`` times (``statistic`` gets arrays of shape
    (n_resamples, n_i) and reduces axis 1). A NaN statistic of a resample counts as ``undefined``."""
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
    """The NaN-ignoring mean of each row of ``x`` (shape (n,) or (k, n)) over each row of image
    indices ``idx`` (shape (b, n)): shape (b,) or (k, b); NaN where a draw holds no value."""
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
    """Each replicate's values laid out on the union of every replicate's image ids (in the order
    of first appearance; NaN where a replicate lacks the image), and the union's size: paired
    positions then are the same image, and a joint draw of positions is a draw of the union."""
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
    """Estimate and interval of ``statistic`` over model replicates and images (see the module).

    ``groups``: condition -> one 1-d array per replicate of per-image values (1/0 for a correct
    image, a confidence drop, an SIS size; NaN: no value for that image, left out of its
    replicate's mean). Conditions are paired by replicate index; a condition with one replicate
    while others have R is the same for every replicate (e.g. a source model against R other
    models); any other mismatch of counts raises ValueError. ``statistic`` maps {condition:
    array of means} to an array elementwise (it gets shape () or (n,)); default: the one
    condition's mean.

    Per replicate r, ``theta_r = statistic({condition: mean of its replicate r})``; the estimate
    is their mean; the interval is ``estimate ± t(df) * sqrt(a + c)`` with ``a = var(theta) / R``
    (R - 1 df) and, when ``paired_images`` (every array holds the same images, in the same
    order), ``c`` the mean covariance of ``theta_r`` and ``theta_s`` (r != s) over ``n_resamples``
    joint bootstrap draws of the images, clipped at 0 (where the replicates have their own images,
    only a one-replicate condition's images are shared; otherwise c = 0); ``df`` by
    Welch-Satterthwaite with c as known; the half-width is at least ``t(R - 1) * sqrt(a)``, the
    replicates' own t interval (see :func:`_t_half_width`). A replicate with no value in a condition, or whose
    ``theta_r`` is not finite, is dropped (said in ``method``). One replicate: a percentile
    bootstrap over its images, marked as covering one model.

    ``image_ids``: condition -> one array per replicate of its images' ids (e.g. their positions
    in the test sample), parallel to its values, each image once per replicate; for replicates
    that share some images (each the first confident images of one sample). It replaces
    ``paired_images``: ``c`` comes from a joint bootstrap of the union of the ids, where each
    replicate's mean takes the draws of its own ids with their multiplicities (NaN where a draw
    holds none of them: the draw is left out), so replicates that share images move together as
    far as they share them. Ids equal everywhere (in the same order) give the numbers of
    ``paired_images=True``, the same draws included; disjoint ids leave only the scatter.
    ``bounds``: ``(low, high)``, the range of ``statistic`` (a probability, a share, a fraction of
    the pixels); the interval's ends are clipped to it (:meth:`Interval.clipped`: the true value is
    in the range, so coverage cannot fall)."""
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
    """:func:`replicate_interval` of validated replicates (``distinct``: the images' union where
    they came with ids, else None)."""
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
    """The mean covariance of theta_r and theta_s (r != s, kept replicates) over bootstrap draws of
    the images of the ``shared`` conditions (with ``paired_images`` one draw for all of them, else
    one per condition; the other conditions stay at their means), clipped at 0."""
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
    """The half-width ``t(df) * sqrt(a + c)`` and its Welch-Satterthwaite ``df`` (``a``: the
    replicates' variance of the mean, ``replicates - 1`` df; ``c``: the shared image variance,
    taken as known), never below the replicates' own ``t(replicates - 1) * sqrt(a)``.

    The floor: with ``a`` estimated from a few replicates, Satterthwaite's df grows exactly when
    ``a`` came out small by chance, and the t quantile then shrinks with it, so that adding the
    shared image error could narrow the interval; in simulation (tests/test_intervals.py) this
    cost 3 replicates of a skewed replicate distribution 3 points of coverage (0.92)."""
    q = 1 - (1 - confidence_level) / 2
    df = MAX_DF if a == 0 else min(MAX_DF, (a + c) ** 2 / (a ** 2 / (replicates - 1)))
    half = float(stats.t.ppf(q, df)) * math.sqrt(a + c)
    return max(half, float(stats.t.ppf(q, replicates - 1)) * math.sqrt(a)), df


def _half_width(sd: float, shared_se: float, n: int, confidence_level: float) -> float:
    return _t_half_width(sd ** 2 / n, shared_se ** 2, n, confidence_level)[0]


def replicates_needed(iv: Interval, edge: float, confidence_level: float = 0.95,
                      max_replicates: int = 100) -> int | None:
    """The fewest replicates (at least 2) whose interval (the rule of :func:`replicate_interval`), at
    ``iv``'s per-replicate sd and shared image error and centred on ``iv``'s estimate, would lie
    wholly on one side of ``edge`` (not touching it); None
    when not even ``max_replicates`` would (an estimate at the edge, a shared image error too
    large) or when ``iv`` covers one model (no replicate spread to scale)."""
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
