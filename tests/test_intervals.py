"""The nested bootstrap of the verdicts' intervals (overinterp.paper.intervals): replicates and images resampled."""
import math

import numpy as np
import pytest

from overinterp.paper.intervals import Interval, bootstrap, nested_bootstrap


def _bernoulli(p, n, reps, seed):
    rng = np.random.default_rng(seed)
    return [(rng.random(n) < p).astype(np.float64) for _ in range(reps)]


def test_same_inputs_and_seed_give_the_same_interval_and_another_seed_another():
    reps = _bernoulli(0.7, 100, 3, seed=1)
    a = nested_bootstrap({"x": reps}, n_resamples=500, seed=4)
    b = nested_bootstrap({"x": [r.copy() for r in reps]}, n_resamples=500, seed=4)
    assert a == b
    c = nested_bootstrap({"x": reps}, n_resamples=500, seed=5)
    assert c.estimate == a.estimate and (c.low, c.high) != (a.low, a.high)


def test_estimate_is_the_mean_of_the_per_replicate_means():
    reps = [np.array([1.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0])]    # 0.5 and 0.75: replicates weigh equally
    iv = nested_bootstrap({"x": reps}, paired_images=False, n_resamples=200)
    assert iv.estimate == pytest.approx(0.625)                          # not the pooled 4/6
    assert iv.low <= iv.estimate <= iv.high


def test_identical_replicates_of_constant_images_collapse_the_interval_to_the_point():
    iv = nested_bootstrap({"x": [np.full(50, 0.3)] * 4}, n_resamples=300)
    assert iv.estimate == pytest.approx(0.3) and iv.low == pytest.approx(0.3) and iv.high == pytest.approx(0.3)
    assert iv.half_width == pytest.approx(0.0)


def test_paired_images_narrow_the_interval_of_a_paired_difference_on_correlated_data():
    rng = np.random.default_rng(0)
    base = [rng.normal(0, 1, 100) for _ in range(3)]                   # a strong per-image effect shared by a and b
    a = [x + rng.normal(0, 0.1, 100) for x in base]
    b = [x + 0.1 + rng.normal(0, 0.1, 100) for x in base]

    def diff(m):
        return m["a"] - m["b"]

    paired = nested_bootstrap({"a": a, "b": b}, diff, paired_images=True, paired_replicates=True, n_resamples=1000)
    unpaired = nested_bootstrap({"a": a, "b": b}, diff, paired_images=False, paired_replicates=True,
                                n_resamples=1000)
    assert paired.estimate == pytest.approx(unpaired.estimate)
    assert paired.half_width < unpaired.half_width / 3
    assert paired.high < 0 < unpaired.high                              # only pairing resolves the -0.1


def test_mismatched_shapes_and_missing_statistic_raise_with_a_message():
    with pytest.raises(ValueError, match="same images everywhere"):
        nested_bootstrap({"a": [np.ones(5)], "b": [np.ones(6)]}, lambda m: m["a"] - m["b"])
    with pytest.raises(ValueError, match="as many replicates"):
        nested_bootstrap({"a": [np.ones(5)], "b": [np.ones(5)] * 2}, lambda m: m["a"] - m["b"],
                         paired_replicates=True)
    with pytest.raises(ValueError, match="give a statistic"):
        nested_bootstrap({"a": [np.ones(5)], "b": [np.ones(5)]})
    with pytest.raises(ValueError, match="at least one replicate"):
        nested_bootstrap({"a": []})
    with pytest.raises(ValueError, match="at least one image"):
        nested_bootstrap({"a": [np.ones(3), np.ones(0)]}, paired_images=False)
    # unpaired images: different lengths are fine
    assert nested_bootstrap({"a": [np.ones(5), np.zeros(7)]}, paired_images=False, n_resamples=50).estimate == 0.5


def test_nan_values_are_left_out_of_their_replicates_mean():
    nan = np.full(10, np.nan)
    reps = [np.concatenate([np.tile([1.0, 3.0], 15), nan]), np.concatenate([nan, np.full(30, 4.0)])]
    iv = nested_bootstrap({"x": reps}, paired_images=False, n_resamples=300)
    assert iv.estimate == pytest.approx((2.0 + 4.0) / 2)
    assert not math.isnan(iv.low) and 1.5 <= iv.low < iv.estimate < iv.high <= 4.0   # replicates 2 and 4 resampled
    # paired images: the NaN positions differ per replicate, still left out
    assert nested_bootstrap({"x": reps}, n_resamples=300).estimate == pytest.approx(3.0)


def test_a_resample_of_only_nan_images_does_not_void_the_interval():
    reps = [np.array([1.0, np.nan, 3.0]), np.array([np.nan, 4.0, 4.0])]
    iv = nested_bootstrap({"x": reps}, paired_images=False, n_resamples=300)
    assert not math.isnan(iv.low) and not math.isnan(iv.high)


def test_bernoulli_interval_covers_p_with_about_the_normal_width():
    p, n, reps = 0.8, 300, 3
    data = _bernoulli(p, n, reps, seed=11)
    iv = nested_bootstrap({"x": data}, paired_images=False, n_resamples=2000, seed=0)
    assert iv.low < p < iv.high
    # normal approximation for the mean of R replicate means of n images each: images' sampling only,
    # and the replicate resampling adds at most about the same again
    normal_half = 1.96 * math.sqrt(p * (1 - p) / (n * reps))
    assert normal_half / 1.5 < iv.half_width < 1.5 * normal_half * math.sqrt(2)


def test_interval_formats_and_scales():
    iv = Interval(0.1234, 0.1, 0.15)
    assert iv.format(2) == "0.12 [0.10, 0.15]" and iv.scaled(100).format() == "12.3 [10.0, 15.0]"
    assert iv.half_width == pytest.approx(0.025)


def test_plain_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.arange(20.0)
    lo, hi = bootstrap((x,), np.mean, n_resamples=500, seed=3)
    assert (lo, hi) == bootstrap((x,), np.mean, n_resamples=500, seed=3)
    assert lo < x.mean() < hi
