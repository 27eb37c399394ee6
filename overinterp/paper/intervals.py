"""Confidence intervals for the claims' measures: one seeded percentile bootstrap.

Each sample is resampled with replacement, independently, from one generator seeded with
``seed`` (samples in the order given), the statistic is computed on every resample, and the
interval is the (1 - level) / 2 and (1 + level) / 2 quantiles without interpolation
(``inverted_cdf``), so the same inputs and seed give the same interval on every machine.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["bootstrap"]


def bootstrap(samples: tuple, statistic: Callable, n_resamples: int = 2000, confidence_level: float = 0.95,
              seed: int = 0, undefined: float = np.nan) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*resampled, axis=1)`` over the 1-d arrays of
    ``samples``, each resampled ``n_resamples`` times (``statistic`` gets arrays of shape
    (n_resamples, n_i) and reduces axis 1). A NaN statistic of a resample counts as ``undefined``."""
    rng = np.random.default_rng(seed)
    drawn = [np.asarray(x)[rng.integers(0, len(x), (n_resamples, len(x)))] for x in samples]
    stat = np.nan_to_num(statistic(*drawn, axis=1), nan=undefined)
    a = (1 - confidence_level) / 2
    low, high = np.quantile(stat, [a, 1 - a], method="inverted_cdf")
    return float(low), float(high)
