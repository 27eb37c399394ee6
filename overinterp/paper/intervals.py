"""Confidence intervals for the claims' measures: one seeded percentile bootstrap.

What varies between two reproductions is the model replicates (seeds) and the images, so
:func:`nested_bootstrap` resamples both: each resample draws replicates with replacement, then
images with replacement, and averages a per-image value (1 for a correct image, a confidence
drop, an SIS size) per replicate and over replicates. Where two conditions are measured on the
same images (full image against its subset, same model), the same image draw serves both
(``paired_images``); where they come from the same replicate, the same replicate draw
(``paired_replicates``). Quantiles are taken without interpolation (``inverted_cdf``) from one
generator seeded with ``seed``, so the same inputs and seed give the same interval on every
machine. :func:`bootstrap` is the plain one-level version for statistics of whole samples.
"""
from __future__ import annotations

from dataclasses import dataclass
import warnings
from typing import Callable, Mapping, Sequence

import numpy as np

__all__ = ["Interval", "bootstrap", "nested_bootstrap"]


@dataclass(frozen=True)
class Interval:
    """An estimate and its (1 - alpha) interval ``[low, high]``."""
    estimate: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def format(self, digits: int = 1) -> str:
        """'12.3 [8.1, 16.0]'."""
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def scaled(self, factor: float) -> "Interval":
        return Interval(self.estimate * factor, self.low * factor, self.high * factor)


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
        raise ValueError("nested_bootstrap needs at least one replicate, each with at least one image")
    return reps


def nested_bootstrap(groups: Mapping[str, Sequence], statistic: Callable[[dict], np.ndarray] | None = None,
                     paired_images: bool = True, paired_replicates: bool = False, n_resamples: int = 2000,
                     confidence_level: float = 0.95, seed: int = 0) -> Interval:
    """Estimate and percentile interval of ``statistic`` over replicates and images.

    ``groups``: condition -> one 1-d array per replicate of per-image values. Each condition's
    mean is the mean over replicates of the per-replicate mean over images (replicates weigh
    equally). ``statistic`` maps {condition: array of means} to an array (elementwise; it gets
    shape () for the estimate and (n_resamples,) for the resamples); default: the one
    condition's mean. ``paired_images``: one image draw per resample for every array (all must
    have the same length); else each replicate draws its own. ``paired_replicates``: one
    replicate draw for every condition (same number of replicates); else each draws its own.
    NaN values (e.g. an image without an SIS) are left out of their replicate's mean; a resample that
    draws only NaN values of a replicate leaves that replicate out of its average, and a resample
    with no value at all is left out of the quantiles."""
    if statistic is None:
        if len(groups) != 1:
            raise ValueError("nested_bootstrap: give a statistic for more than one condition")
        statistic = lambda m: next(iter(m.values()))  # noqa: E731
    reps = {k: _replicates(v) for k, v in groups.items()}
    rng = np.random.default_rng(seed)
    if paired_images:
        lengths = {len(r) for rs in reps.values() for r in rs}
        if len(lengths) != 1:
            raise ValueError(f"paired_images needs the same images everywhere, got lengths {sorted(lengths)}")
        n = lengths.pop()
        shared_img = rng.integers(0, n, (n_resamples, n))
    if paired_replicates:
        counts = {len(rs) for rs in reps.values()}
        if len(counts) != 1:
            raise ValueError(f"paired_replicates needs as many replicates per condition, got {sorted(counts)}")
        n_rep = counts.pop()
        shared_rep = rng.integers(0, n_rep, (n_resamples, n_rep))
    means, estimate = {}, {}
    for name, rs in reps.items():
        per_rep = []
        for r in rs:
            idx = shared_img if paired_images else rng.integers(0, len(r), (n_resamples, len(r)))
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)                 # a draw of only NaN images: NaN
                per_rep.append(np.nanmean(r[idx], axis=1))                      # (n_resamples,)
        per_rep = np.stack(per_rep)                                             # (R, n_resamples)
        ridx = shared_rep if paired_replicates else rng.integers(0, len(rs), (n_resamples, len(rs)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)                     # every drawn replicate NaN: NaN
            means[name] = np.nanmean(per_rep[ridx, np.arange(n_resamples)[:, None]], axis=1)
        estimate[name] = np.float64(np.mean([np.nanmean(r) for r in rs]))
    low, high = _quantiles(np.asarray(statistic(means), dtype=np.float64), confidence_level)
    return Interval(float(statistic(estimate)), low, high)
