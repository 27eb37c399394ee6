"""The verdicts' intervals (overinterp.paper.intervals): a t interval over model replicates plus the shared image error.

``python tests/test_intervals.py`` prints the coverage table of :func:`coverage_table` as Markdown.
"""
import functools
import math
import sys
import time

import numpy as np
import pytest
from scipy import stats

from overinterp.paper.intervals import Interval, bootstrap, replicate_interval, replicates_needed


def _bernoulli(p, n, reps, seed):
    rng = np.random.default_rng(seed)
    return [(rng.random(n) < p).astype(np.float64) for _ in range(reps)]


# ---------------------------------------------------------------------------------------------------------------
# coverage of the true mean, simulated through replicate_interval itself

N_IMAGES, BASE, DIFFICULTY_SD = 300, 0.6, 1.5      # images per replicate, mean accuracy, sd of image difficulty (logit)
SIMS, RESAMPLES = 1500, 200                        # simulated datasets per case; bootstrap draws of the shared images
CASES = [(model, reps, sd) for model in ("independent images", "shared image difficulty") for reps in (3, 5)
         for sd in (0, 3, 15, 20)]
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)     # E f(Z), Z ~ N(0, 1): sum(w * f(nodes)) / sqrt(2 pi)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _replicate_accuracy(scale, v):
    """Model (b): a replicate's accuracy over the image population, E_d sigmoid(logit(BASE) + d + v)."""
    logit = math.log(BASE / (1 - BASE))
    return (_WEIGHTS * _sigmoid(logit + DIFFICULTY_SD * _NODES + np.asarray(v)[..., None])).sum(-1)


def _logit_scale(sd):
    """Model (b): the sd of the replicate effect v (logit) whose replicate accuracies have sd ``sd``."""
    def spread(scale):
        acc = _replicate_accuracy(scale, scale * _NODES)
        mean = (_WEIGHTS * acc).sum()
        return math.sqrt((_WEIGHTS * (acc - mean) ** 2).sum())
    lo, hi = 0.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if spread(mid) < sd else (lo, mid)
    return (lo + hi) / 2


def _true_mean(model, sd):
    """The expectation over replicates and over the image population."""
    if model == "independent images":      # E clip(BASE + u, 0.01, 0.99), u ~ N(0, sd), in closed form
        if sd == 0:
            return BASE
        lo, hi = (0.01 - BASE) / sd, (0.99 - BASE) / sd
        n = stats.norm
        return (0.01 * n.cdf(lo) + 0.99 * n.sf(hi) + BASE * (n.cdf(hi) - n.cdf(lo))
                + sd * (n.pdf(lo) - n.pdf(hi)))
    scale = _logit_scale(sd)               # logit(BASE) + d + v with d, v independent normals: one quadrature
    logit = math.log(BASE / (1 - BASE))
    return float((_WEIGHTS * _sigmoid(logit + math.hypot(DIFFICULTY_SD, scale) * _NODES)).sum())


def _simulate(model, reps, sd, sims, rng):
    """(sims, reps, N_IMAGES) per-image 1/0 outcomes."""
    if model == "independent images":      # (a) replicate accuracy p_r, images independent Bernoulli(p_r)
        p = np.clip(BASE + rng.normal(0, sd, (sims, reps, 1)), 0.01, 0.99)
    else:                                  # (b) the same images, of drawn difficulty, for every replicate
        d = rng.normal(0, DIFFICULTY_SD, (sims, 1, N_IMAGES))
        v = rng.normal(0, _logit_scale(sd), (sims, reps, 1))
        p = _sigmoid(math.log(BASE / (1 - BASE)) + d + v)
    return (rng.random((sims, reps, N_IMAGES)) < p).astype(np.float64)


@functools.lru_cache(maxsize=None)
def coverage(model, reps, sd_points, sims=SIMS, seed=0):
    """One case: the share of ``replicate_interval``'s 95% intervals (images paired, as the verdicts'
    accuracies) that cover the true mean, and the share that lie wholly below it (high <= truth: a
    claim "holds" whose true value sits exactly on the margin's upper edge)."""
    rng = np.random.default_rng([seed, reps, sd_points, model == "independent images"])
    data = _simulate(model, reps, sd_points / 100, sims, rng)
    truth = _true_mean(model, sd_points / 100)
    ivs = [replicate_interval({"acc": list(x)}, n_resamples=RESAMPLES, seed=i) for i, x in enumerate(data)]
    low, high = np.array([iv.low for iv in ivs]), np.array([iv.high for iv in ivs])
    return {"model": model, "replicates": reps, "between-replicate sd (points)": sd_points,
            "true mean (%)": round(100 * truth, 2), "coverage": float(np.mean((low <= truth) & (truth <= high))),
            "false holds": float(np.mean(high <= truth)), "false above": float(np.mean(low > truth)),
            "mean half-width (points)": round(float(np.mean(high - low)) * 50, 2), "simulations": sims}


def coverage_table(sims=SIMS):
    """Every case of :data:`CASES`: a list of rows (dicts) as :func:`coverage` returns them."""
    return [coverage(m, r, sd, sims) for m, r, sd in CASES]


@pytest.mark.parametrize("model,reps,sd", CASES)
def test_the_interval_covers_the_true_mean_of_replicates_and_images(model, reps, sd):
    row = coverage(model, reps, sd)
    # Monte-Carlo error of a 0.95 coverage over 1500 simulations: 0.006
    assert row["coverage"] >= 0.93, row
    assert row["false holds"] <= 0.05, row     # true value on the edge: the claim "holds" at most 5% of the time


def test_three_replicates_twenty_points_apart_are_covered_where_the_percentile_bootstrap_failed():
    # the former nested percentile bootstrap covered 0.81 here: 3 replicates give it only 10 distinct means
    assert coverage("independent images", 3, 20)["coverage"] >= 0.93
    assert coverage("shared image difficulty", 3, 20)["coverage"] >= 0.93


# ---------------------------------------------------------------------------------------------------------------
# hand-checkable cases

def test_two_replicates_with_their_own_images_give_mean_plus_minus_t_times_sd_over_root_two():
    reps = [np.array([1.0, 3.0]), np.array([4.0, 6.0, 8.0])]          # means 2 and 6: sd sqrt(8), sd / sqrt(2) = 2
    iv = replicate_interval({"x": reps}, paired_images=False)
    half = stats.t.ppf(0.975, 1) * 2.0
    assert iv.estimate == pytest.approx(4.0)
    assert (iv.low, iv.high) == pytest.approx((4.0 - half, 4.0 + half), rel=1e-12)
    assert (iv.replicates, iv.sd, iv.shared_se, iv.df) == (2, pytest.approx(math.sqrt(8)), 0.0, 1.0)
    assert iv.method == "t over 2 replicates, own images per replicate"


def test_estimate_is_the_mean_of_the_per_replicate_means():
    reps = [np.array([1.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0])]    # 0.5 and 0.75: replicates weigh equally
    iv = replicate_interval({"x": reps}, paired_images=False)
    assert iv.estimate == pytest.approx(0.625)                          # not the pooled 4/6
    assert iv.low <= iv.estimate <= iv.high


def test_identical_replicates_of_constant_images_collapse_the_interval_to_the_point():
    iv = replicate_interval({"x": [np.full(50, 0.3)] * 4}, n_resamples=300)
    assert iv.estimate == pytest.approx(0.3) and iv.low == pytest.approx(0.3) and iv.high == pytest.approx(0.3)
    assert iv.half_width == pytest.approx(0.0) and iv.sd == pytest.approx(0.0) and iv.shared_se == pytest.approx(0.0)


def test_shared_images_add_the_image_error_that_the_replicates_scatter_cannot_see():
    # replicates that differ by a constant on the same images: their scatter is the constants', while the
    # images' own sampling error, sd(base) / sqrt(n) = 0.1, moves every replicate alike
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 100)
    base = (base - base.mean()) / base.std()                           # sd 1 (ddof 0): the bootstrap's variance
    reps = [base + s for s in (0.0, 0.01, 0.02)]
    paired = replicate_interval({"x": reps}, paired_images=True, n_resamples=2000)
    unpaired = replicate_interval({"x": reps}, paired_images=False)
    assert paired.estimate == unpaired.estimate == pytest.approx(0.01)
    assert paired.sd == pytest.approx(0.01) and unpaired.shared_se == 0.0
    assert paired.shared_se == pytest.approx(0.1, rel=0.1)
    assert paired.df > 1000                                             # the shared part, taken as known, dominates
    assert paired.half_width == pytest.approx(1.96 * math.hypot(0.1, 0.01 / math.sqrt(3)), rel=0.1)
    assert paired.half_width > 3 * unpaired.half_width


def test_a_condition_with_one_replicate_is_shared_by_every_replicate_of_the_others():
    rng = np.random.default_rng(1)
    own = [(rng.random(200) < 0.9).astype(float)]
    others = _bernoulli(0.5, 200, 3, seed=2) + [(rng.random(200) < 0.7).astype(float)]

    def diff(m):
        return m["others"] - m["own"]

    iv = replicate_interval({"own": own, "others": others}, diff, n_resamples=500, seed=3)
    means = np.array([o.mean() for o in others]) - own[0].mean()
    assert iv.replicates == 4 and iv.estimate == pytest.approx(means.mean())
    assert iv.sd == pytest.approx(means.std(ddof=1))
    # the same as giving the one replicate four times
    assert iv == replicate_interval({"own": own * 4, "others": others}, diff, n_resamples=500, seed=3)
    # with their own images, only the one-replicate condition's images are shared
    unpaired = replicate_interval({"own": own, "others": others}, diff, paired_images=False, n_resamples=500)
    assert unpaired.shared_se == pytest.approx(own[0].std() / math.sqrt(200), rel=0.15)
    assert "shared" in unpaired.method


def test_mismatched_shapes_and_missing_statistic_raise_with_a_message():
    with pytest.raises(ValueError, match="same images everywhere"):
        replicate_interval({"a": [np.ones(5)], "b": [np.ones(6)]}, lambda m: m["a"] - m["b"])
    with pytest.raises(ValueError, match="same number of replicates or one, got a: 2, b: 3"):
        replicate_interval({"a": [np.ones(5)] * 2, "b": [np.ones(5)] * 3}, lambda m: m["a"] - m["b"])
    with pytest.raises(ValueError, match="give a statistic"):
        replicate_interval({"a": [np.ones(5)], "b": [np.ones(5)]})
    with pytest.raises(ValueError, match="at least one replicate"):
        replicate_interval({"a": []})
    with pytest.raises(ValueError, match="at least one image"):
        replicate_interval({"a": [np.ones(3), np.ones(0)]}, paired_images=False)
    # unpaired images: different lengths are fine
    assert replicate_interval({"a": [np.ones(5), np.zeros(7)]}, paired_images=False).estimate == 0.5


def test_one_model_falls_back_to_a_percentile_bootstrap_over_its_images():
    x = _bernoulli(0.8, 300, 1, seed=11)[0]
    iv = replicate_interval({"x": [x]}, n_resamples=500, seed=3)
    assert (iv.low, iv.high) == bootstrap((x,), np.mean, n_resamples=500, seed=3)   # the same draws
    assert iv.estimate == x.mean() and iv.replicates == 1 and iv.sd is None and iv.df is None
    assert "one model" in iv.method
    normal_half = 1.96 * math.sqrt(0.8 * 0.2 / 300)                    # images' sampling only
    assert normal_half / 1.3 < iv.half_width < 1.3 * normal_half
    # several conditions of one replicate each: one image draw for all of them
    y = _bernoulli(0.5, 300, 1, seed=12)[0]
    d = replicate_interval({"x": [x], "y": [y]}, lambda m: m["x"] - m["y"], n_resamples=500)
    assert d.replicates == 1 and d.low < x.mean() - y.mean() < d.high


def test_nan_values_are_left_out_of_their_replicates_mean():
    nan = np.full(10, np.nan)
    reps = [np.concatenate([np.tile([1.0, 3.0], 15), nan]), np.concatenate([nan, np.full(30, 4.0)])]
    iv = replicate_interval({"x": reps}, paired_images=False)
    assert iv.estimate == pytest.approx((2.0 + 4.0) / 2)                # means 2 and 4: sd / sqrt(2) = 1
    assert (iv.low, iv.high) == pytest.approx((3 - stats.t.ppf(0.975, 1), 3 + stats.t.ppf(0.975, 1)))
    # paired images: the NaN positions differ per replicate, still left out
    paired = replicate_interval({"x": reps}, n_resamples=300)
    assert paired.estimate == pytest.approx(3.0) and math.isfinite(paired.low) and paired.shared_se >= 0


def test_a_resample_of_only_nan_images_does_not_void_the_interval():
    reps = [np.array([1.0, np.nan, 3.0]), np.array([np.nan, 4.0, 4.0])]
    iv = replicate_interval({"x": reps}, n_resamples=300)
    assert not math.isnan(iv.low) and not math.isnan(iv.high)


def test_a_replicate_without_values_or_with_an_undefined_statistic_is_dropped_and_said():
    reps = [np.full(4, 1.0), np.full(4, np.nan), np.full(4, 3.0), np.full(4, 5.0)]
    iv = replicate_interval({"x": reps}, paired_images=False)
    assert iv.replicates == 3 and iv.estimate == pytest.approx(3.0) and iv.sd == pytest.approx(2.0)
    assert "1 replicate dropped (no values)" in iv.method
    logs = replicate_interval({"x": [np.full(4, float(m)) for m in range(4)]}, lambda m: np.log(m["x"]),
                              paired_images=False)                      # log(0): undefined for the first
    assert logs.replicates == 3 and logs.estimate == pytest.approx(np.log([1, 2, 3]).mean())
    assert "1 replicate dropped (statistic undefined)" in logs.method
    one = replicate_interval({"x": [np.full(4, np.nan), np.array([1.0, 0.0, 1.0, 1.0])]}, n_resamples=100)
    assert one.replicates == 1 and "one model" in one.method and "dropped (no values)" in one.method
    none = replicate_interval({"x": [np.full(4, np.nan)] * 2})
    assert none.replicates == 0 and math.isnan(none.estimate) and math.isnan(none.low)


def test_same_inputs_and_seed_give_the_same_interval_and_another_seed_another():
    base = _bernoulli(0.7, 100, 1, seed=1)[0]
    reps = [base + s for s in (0.0, 0.01, 0.03)]                        # the shared image error dominates
    a = replicate_interval({"x": reps}, n_resamples=500, seed=4)
    b = replicate_interval({"x": [r.copy() for r in reps]}, n_resamples=500, seed=4)
    assert a == b
    c = replicate_interval({"x": reps}, n_resamples=500, seed=5)      # only the shared image error is drawn
    assert c.estimate == a.estimate and c.sd == a.sd and (c.low, c.high) != (a.low, a.high)


def test_replicates_needed_scales_the_replicate_spread_until_the_interval_leaves_the_edge():
    iv = Interval(1.0, -1.5, 3.5, replicates=3, sd=1.0, shared_se=0.0, df=2.0)
    # t_{n-1} / sqrt(n) < 1 first at n = 7 (2.447 / 2.646 = 0.925; n = 6: 2.571 / 2.449 = 1.05)
    assert replicates_needed(iv, 0.0) == 7 and replicates_needed(iv, 2.0) == 7
    assert replicates_needed(iv, -100.0) == 2                           # already decided
    assert replicates_needed(iv, 1.0) is None                           # the estimate on the edge
    assert replicates_needed(iv, 0.999, max_replicates=50) is None
    # a shared image error that more replicates cannot shrink: 1.96 * 0.6 > 1
    assert replicates_needed(Interval(1.0, -2.0, 4.0, replicates=3, sd=1.0, shared_se=0.6), 0.0) is None
    assert replicates_needed(Interval(1.0, 0.5, 1.5, replicates=1, method="bootstrap over the images of one model"),
                             0.0) is None
    # agrees with replicate_interval: replicates with the same mean and sd decide at that count, not one fewer
    real = replicate_interval({"x": [np.full(10, m) for m in (0.2, 0.5, 0.35)]}, paired_images=False)
    n = replicates_needed(real, 0.2)
    assert real.low < 0.2 and n > 3

    def with_count(k):
        z = np.linspace(-1, 1, k)
        means = real.estimate + real.sd * z / z.std(ddof=1)
        return replicate_interval({"x": [np.full(10, m) for m in means]}, paired_images=False)

    assert with_count(n).low > 0.2 >= with_count(n - 1).low


def test_interval_formats_and_scales():
    iv = Interval(0.1234, 0.1, 0.15)
    assert iv.format(2) == "0.12 [0.10, 0.15]" and iv.scaled(100).format() == "12.3 [10.0, 15.0]"
    assert iv.half_width == pytest.approx(0.025)
    assert (iv.replicates, iv.sd, iv.shared_se, iv.df, iv.method) == (None, None, None, None, "")
    full = Interval(0.5, 0.4, 0.6, replicates=3, sd=0.02, shared_se=0.01, df=2.5, method="t over 3 replicates")
    s = full.scaled(100)
    assert (s.sd, s.shared_se) == (pytest.approx(2.0), pytest.approx(1.0)) and (s.replicates, s.df) == (3, 2.5)
    assert s.method == full.method


def test_plain_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.arange(20.0)
    lo, hi = bootstrap((x,), np.mean, n_resamples=500, seed=3)
    assert (lo, hi) == bootstrap((x,), np.mean, n_resamples=500, seed=3)
    assert lo < x.mean() < hi


if __name__ == "__main__":
    start = time.time()
    rows = coverage_table()
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(f"{row[c]:.3f}" if isinstance(row[c], float) and c in ("coverage", "false holds",
                                                                                        "false above")
                                else str(row[c]) for c in cols) + " |")
    print(f"\n{time.time() - start:.0f} s", file=sys.stderr)
