"""replicate_interval on replicates that share some images (``image_ids``) and on bounded measures (``bounds``).

``python tests/test_interval_designs.py`` prints the coverage of :func:`coverage` for 3 and 5 replicates.
"""
import functools
import math

import numpy as np
import pytest

from overinterp.paper import verdicts
from overinterp.paper.intervals import Interval, replicate_interval

# ---------------------------------------------------------------------------------------------------------------
# coverage where every replicate takes the first confident images of one shared test sample

SAMPLE, FIRST = 1000, 40          # the shared test sample; the confident images each replicate keeps
REPLICATE_SD, IMAGE_SD, NOISE_SD = 0.5, 3.0, 1.0  # replicate effect, image effect, replicate-by-image noise
CONFIDENCE_SD = 0.3               # replicate-specific part of an image's confidence (the shared part has sd 1)
SIMS, RESAMPLES = 1000, 200


def _first_confident(reps, rng):
    """One simulated study: per replicate, the values and the sample positions of its first ``FIRST``
    confident images. The value is ``v_r + d_i + noise``, all of mean 0: the true mean is 0 (which images
    are confident does not depend on ``d``). Image effect ``d_i``: 3/sqrt(40) = 0.47 at the mean of 40
    images, as large as the replicate effect's 0.5."""
    shared = rng.normal(0, 1, SAMPLE)                        # how confidently any model classifies image i
    d = rng.normal(0, IMAGE_SD, SAMPLE)
    values, ids = [], []
    for v in rng.normal(0, REPLICATE_SD, reps):
        confident = np.flatnonzero(shared + rng.normal(0, CONFIDENCE_SD, SAMPLE) > 0)[:FIRST]
        ids.append(confident)
        values.append(v + d[confident] + rng.normal(0, NOISE_SD, FIRST))
    return values, ids


@functools.lru_cache(maxsize=None)
def coverage(reps, sims=SIMS, seed=0):
    """The share of 95% intervals that cover the true mean with the images' ids and without them
    (``paired_images=False``: replicates taken to have their own images), and the replicates' mean
    pairwise overlap (share of images in common)."""
    rng = np.random.default_rng([seed, reps])
    hits = {"with ids": 0, "without ids": 0}
    overlap = []
    for i in range(sims):
        values, ids = _first_confident(reps, rng)
        overlap += [len(np.intersect1d(ids[a], ids[b])) / FIRST for a in range(reps) for b in range(a)]
        for name, iv in (("with ids", replicate_interval({"x": values}, n_resamples=RESAMPLES, seed=i,
                                                         image_ids={"x": ids})),
                         ("without ids", replicate_interval({"x": values}, paired_images=False))):
            hits[name] += iv.low <= 0 <= iv.high
    return {"replicates": reps, **{k: v / sims for k, v in hits.items()}, "overlap": float(np.mean(overlap)),
            "simulations": sims}


@pytest.mark.parametrize("reps", [3, 5])
def test_ids_of_overlapping_confident_images_keep_the_coverage_that_own_images_lose(reps):
    row = coverage(reps)
    assert 0.7 <= row["overlap"] < 1, row               # the design: heavily, not wholly, shared images
    # Monte-Carlo error of a 0.95 coverage over 1000 simulations: 0.007
    assert row["with ids"] >= 0.93, row
    # the image error the replicates share, left out, shows: the interval without ids covers clearly less
    assert row["without ids"] <= row["with ids"] - 0.05, row


# ---------------------------------------------------------------------------------------------------------------
# the ids' design against the known cases

def _same_numbers(a: Interval, b: Interval):
    assert (a.estimate, a.low, a.high, a.replicates, a.sd, a.shared_se, a.df) == \
           (b.estimate, b.low, b.high, b.replicates, b.sd, b.shared_se, b.df)


def test_ids_equal_everywhere_give_the_numbers_of_paired_images():
    rng = np.random.default_rng(2)
    base = rng.normal(0, 1, 60)
    reps = [base + rng.normal(s, 0.3, 60) for s in (0.0, 0.2, 0.5)]
    reps[1][[3, 7]] = np.nan                                           # NaN handling is the same
    ids = np.arange(100, 160)[rng.permutation(60)]                     # any ids, in the same order everywhere
    for r in (reps, reps[:1]):                                         # several replicates, and one model
        paired = replicate_interval({"x": r}, n_resamples=400, seed=5)
        by_id = replicate_interval({"x": r}, n_resamples=400, seed=5, image_ids={"x": [ids] * len(r)})
        _same_numbers(by_id, paired)
    assert "60 distinct" in by_id.method or "one model" in by_id.method
    # several conditions, one of them with a single replicate (shared by every replicate of the other)
    own = [rng.normal(1, 1, 60)]

    def diff(m):
        return m["x"] - m["own"]

    paired = replicate_interval({"x": reps, "own": own}, diff, n_resamples=400, seed=1)
    by_id = replicate_interval({"x": reps, "own": own}, diff, n_resamples=400, seed=1,
                               image_ids={"x": [ids] * 3, "own": [ids]})
    _same_numbers(by_id, paired)
    assert paired.shared_se > 0


def test_ids_match_images_not_positions():
    # the same images in another order per replicate: the interval of the images aligned by hand
    rng = np.random.default_rng(3)
    base = rng.normal(0, 2, 50)
    aligned = [base + rng.normal(s, 0.2, 50) for s in (0.0, 0.1, 0.3)]
    orders = [np.arange(50)] + [rng.permutation(50) for _ in range(2)]
    shuffled, ids = [a[o] for a, o in zip(aligned, orders)], [o + 1000 for o in orders]
    _same_numbers(replicate_interval({"x": shuffled}, n_resamples=300, seed=2, image_ids={"x": ids}),
                  replicate_interval({"x": aligned}, n_resamples=300, seed=2))


def test_shared_error_grows_with_the_images_the_replicates_share():
    rng = np.random.default_rng(4)
    d = rng.normal(0, 1, 400)                                          # image effects: each replicate's mean
    d = (d - d.mean()) / d.std()                                       # of 100 varies by 0.1
    shared_se = []
    for start in (0, 50, 100):                                         # replicate r's images: start * r + 0..99
        ids = [np.arange(100) + start * r for r in range(3)]
        iv = replicate_interval({"x": [d[i] + 0.01 * r for r, i in enumerate(ids)]}, n_resamples=2000,
                                image_ids={"x": ids})
        shared_se.append(iv.shared_se)
    # all shared: the mean's image error, 0.1; half shared: the average covariance (0.5 + 0.5 + 0) / 3 of 0.01
    assert shared_se[0] == pytest.approx(0.1, rel=0.15)
    assert shared_se[1] == pytest.approx(0.1 * math.sqrt(1 / 3), rel=0.25)
    assert shared_se[2] < 0.03                                         # disjoint: nothing shared (draw noise)
    assert "300 distinct" in iv.method


def test_ids_that_do_not_parallel_the_values_raise():
    x = [np.ones(4), np.zeros(4)]
    with pytest.raises(ValueError, match="must parallel its values"):
        replicate_interval({"x": x}, image_ids={"x": [np.arange(4), np.arange(3)]})
    with pytest.raises(ValueError, match="must parallel its values"):
        replicate_interval({"x": x}, image_ids={"x": [np.arange(4)]})
    with pytest.raises(ValueError, match="occurs twice"):
        replicate_interval({"x": x}, image_ids={"x": [np.arange(4), np.array([0, 1, 1, 2])]})
    with pytest.raises(ValueError, match="conditions of groups"):
        replicate_interval({"x": x, "y": x}, lambda m: m["x"] - m["y"], image_ids={"x": [np.arange(4)] * 2})


# ---------------------------------------------------------------------------------------------------------------
# bounded measures

def test_bounds_keep_intervals_of_values_near_the_ends_inside_the_range():
    rng = np.random.default_rng(5)
    past = {"high": 0, "low": 0}
    for i in range(50):
        near_one = [np.clip(rng.normal(m, 0.02, 30), 0, 1) for m in rng.uniform(0.9, 1.0, 3)]
        near_zero = [np.clip(rng.normal(m, 0.02, 30), 0, 1) for m in rng.uniform(0.0, 0.1, 3)]
        high = replicate_interval({"p": near_one}, paired_images=False, bounds=(0, 1), seed=i)
        low = replicate_interval({"p": near_zero}, n_resamples=200, bounds=(0, 1), seed=i)
        assert 0 <= high.low <= high.estimate <= high.high <= 1
        assert 0 <= low.low <= low.estimate <= low.high <= 1
        free_high = replicate_interval({"p": near_one}, paired_images=False, seed=i)
        free_low = replicate_interval({"p": near_zero}, n_resamples=200, seed=i)
        assert (high.estimate, high.low, high.sd) == (free_high.estimate, free_high.low, free_high.sd)
        assert (low.estimate, low.high, low.shared_se) == (free_low.estimate, free_low.high, free_low.shared_se)
        if free_high.high > 1:                     # the clip did something, and says so
            past["high"] += 1
            assert high.high == 1.0 and "clipped to [0, 1]" in high.method
        if free_low.low < 0:
            past["low"] += 1
            assert low.low == 0.0 and "clipped to [0, 1]" in low.method
    assert min(past.values()) >= 10, past          # without bounds, many of these leave the range


def test_clipping_keeps_nan_ends_and_leaves_an_interval_inside_the_range_alone():
    iv = Interval(0.5, 0.4, 0.6, method="t")
    assert iv.clipped(0, 1) is iv
    nan = Interval(float("nan"), float("nan"), float("nan")).clipped(0, 1)
    assert math.isnan(nan.low) and math.isnan(nan.high)
    assert Interval(0.99, 0.9, 1.04).clipped(-1, 1).high == 1.0
    with pytest.raises(ValueError, match="low <= high"):
        iv.clipped(1, 0)


def test_sis_sizes_and_confidence_drops_stay_inside_their_range():
    rng = np.random.default_rng(6)
    tiny = {"m": [np.r_[np.zeros(35), rng.uniform(0, 0.02, 5)] * s for s in (0.2, 1.0, 3.0)]}
    v = verdicts.sis_size(tiny, 0.99)
    assert v.numbers.loc["m", "95% low"] >= 0 and v.holds is True
    free = replicate_interval({"size": tiny["m"]}, paired_images=False)
    assert free.low < 0                                                # what the bound prevents
    drops = {"m": [np.clip(rng.normal(m, 0.01, 50), -1, 1) for m in (0.9, 0.97, 0.995)]}
    assert verdicts.confidence_kept(drops).numbers.loc["m", "95% high"] <= 1


# ---------------------------------------------------------------------------------------------------------------
# sis_size with the images' ids

def test_sis_size_with_ids_counts_distinct_images_and_widens_for_the_shared_images():
    rng = np.random.default_rng(7)
    sizes_of = rng.uniform(0.0, 0.12, 60)                              # each image's SIS size, shared by replicates
    ids = [np.arange(0, 40), np.arange(5, 45), np.arange(10, 50)]       # the first confident images of each
    sizes = [np.clip(sizes_of[i] + rng.normal(0.001 * r, 0.002, 40), 0, 1) for r, i in enumerate(ids)]
    sizes[2][[0, 1]] = np.nan                                           # no SIS: neither a size nor an image
    by_id = verdicts.sis_size({"m": sizes}, 0.99, ids={"m": ids})
    row = by_id.numbers.loc["m"]
    assert row["images"] == 50 and row["SIS sizes"] == 118 and row["replicates"] == 3
    assert "m (3 replicates, 50 images)" == by_id.scope()
    own = verdicts.sis_size({"m": sizes}, 0.99)                                # the replicates' images taken as their own
    assert own.numbers.loc["m", "images"] == 118 and "SIS sizes" not in own.numbers
    assert row["mean SIS size (%)"] == pytest.approx(own.numbers.loc["m", "mean SIS size (%)"])
    assert row["95% high"] - row["95% low"] > 2 * (own.numbers.loc["m", "95% high"] - own.numbers.loc["m", "95% low"])
    # an image counted once however many replicates measure it, and min_images reads distinct images
    assert verdicts.sis_size({"m": sizes}, 0.99, ids={"m": ids}, min_images=51).word == verdicts.UNTESTABLE
    assert verdicts.sis_size({"m": sizes}, 0.99, min_images=51).word != verdicts.UNTESTABLE
    one = verdicts.sis_size({"m": sizes[0]}, 0.99, ids={"m": ids[0]})         # a flat array: one replicate
    assert one.numbers.loc["m", "images"] == 40 and one.numbers.loc["m", "replicates"] == 1
    with pytest.raises(ValueError, match="must parallel its sizes"):
        verdicts.sis_size({"m": sizes}, 0.99, ids={"m": ids[:2]})


def test_the_sis_claims_ids_parallel_its_sizes_and_name_images_of_the_shared_test_selection():
    from overinterp.config.context import make_run
    from overinterp.experiments import runs
    run, tau = make_run(profile="tiny", device="cpu"), 0.3
    sizes, ids = runs.sis_sizes_by_replicate(run, tau), runs.sis_ids_by_replicate(run, tau)
    assert list(ids) == list(sizes)
    sel = runs.selection(run, "test")
    for a in run.profile.archs:
        name = runs.ARCH_NAMES.get(a, a)
        assert [len(i) for i in ids[name]] == [len(s) for s in sizes[name]]
        for r, i in enumerate(ids[name]):
            assert len(np.unique(i)) == len(i) and 0 <= i.min() and i.max() < len(sel.load()[1])
            # the backward selection of the whole test selection, at those positions, gives the very sizes
            full = runs.backselect_set(run, a, sel, seed=run.seed + r, progress=False)
            assert runs.sis_fractions(runs.find_sis(full[i], tau)) == sizes[name][r].tolist()
        assert len(np.intersect1d(*ids[name][:2])) > 0                 # the replicates share images


if __name__ == "__main__":
    for reps in (3, 5):
        print(coverage(reps))
