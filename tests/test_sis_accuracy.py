"""SIS size and accuracy (overinterp.experiments.sis_accuracy, paper 4.4, Fig. 5, S3) and its verdict."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from overinterp.experiments import sis_accuracy
from overinterp.pages import sis_accuracy as pages_sis_accuracy
from overinterp.pages import sis_size_plots
from overinterp.paper import verdicts
from overinterp.paper import claims as paper_claims
from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import find_sis
from overinterp.paper.formatting import number
from overinterp.paper.intervals import bootstrap


def _logit(p):
    return torch.logit(torch.tensor(p, dtype=torch.float64))


def _result(full, after, pred, order=None, image_size=(2, 2), block=1):
    """A finished backward selection of len(full) images with P = len(after[0]) features,
    removed in ``order`` (default 0, 1, 2, ...), confidence ``after[b][t]`` after removal t."""
    B, P = len(full), len(after[0])
    order = torch.arange(P).repeat(B, 1) if order is None else torch.tensor(order)
    return BackSelectResult(order, _logit(after), torch.tensor(pred), _logit(full), torch.zeros(B, dtype=torch.long),
                            torch.zeros(1), image_size, block, "exact")


# four 2x2 images; suffix confidences (s features kept, s = 0..4), worked out by hand:
# image 0 (correct):   0.1 0.6 0.8 0.91 | 0.95  -> SIS 1, 2, 3 features at tau 0.5, 0.7, 0.9; none at 0.99
# image 1 (incorrect): 0.3 0.52 0.55 0.6 | 0.92 -> SIS 1 at 0.5; the whole image (4) at 0.7 and 0.9
# image 2 (correct):   0.5 0.51 0.52 0.55 | 0.6 -> the empty SIS at 0.5 (fully masked reaches tau); none above
# image 3 (incorrect): full image at 0.4        -> no SIS at any tau >= 0.5
FOUR = _result(full=[0.95, 0.92, 0.6, 0.4],
               after=[[0.91, 0.8, 0.6, 0.1], [0.6, 0.55, 0.52, 0.3], [0.55, 0.52, 0.51, 0.5], [0.3, 0.2, 0.1, 0.05]],
               pred=[1, 0, 0, 1])
LABELS = torch.tensor([1, 2, 0, 3])


def test_rows_are_the_images_confident_at_tau_split_by_correct_prediction_with_sis_size_in_percent():
    rows = sis_accuracy.sis_rows(FOUR, LABELS, (0.5, 0.7, 0.9, 0.99))
    got = {(r.tau, r.image): (r.correct, r[sis_accuracy.SIZE]) for _, r in rows.iterrows()}
    assert got == {(0.5, 0): (True, 25.0), (0.5, 1): (False, 25.0), (0.5, 2): (True, 0.0),
                   (0.7, 0): (True, 50.0), (0.7, 1): (False, 100.0),
                   (0.9, 0): (True, 75.0), (0.9, 1): (False, 100.0)}
    assert rows.loc[rows.image == 1, sis_accuracy.CONF].to_numpy() == pytest.approx([0.92] * 3)


def test_sis_size_counts_pixels_not_features_for_blocks_at_the_image_edge():
    # 3x3 image, 2x2 blocks: feature 1 covers the 2 pixels of column 2 in rows 0-1, feature 3 one pixel
    res = _result(full=[0.9], after=[[0.85, 0.7, 0.6, 0.1]], pred=[0], order=[[3, 0, 2, 1]], image_size=(3, 3),
                  block=2)
    rows = sis_accuracy.sis_rows(res, torch.tensor([0]), (0.5,))
    assert find_sis(res, 0.5).size.tolist() == [1]
    assert rows[sis_accuracy.SIZE].tolist() == pytest.approx([100 * 2 / 9])


def _images(correct, incorrect, tau=0.5, model="m", set_name="test", replicate=0):
    sizes = list(correct) + list(incorrect)
    return pd.DataFrame({"model": model, "replicate": replicate, "set": set_name, "image": range(len(sizes)),
                         "tau": tau, "correct": [True] * len(correct) + [False] * len(incorrect),
                         sis_accuracy.CONF: [0.9] * len(correct) + [0.7] * len(incorrect), sis_accuracy.SIZE: sizes})


def test_group_means_counts_each_group_and_keeps_empty_groups():
    images = pd.concat([_images([10, 20], [4]), _images([30], [], tau=0.9)])
    g = sis_accuracy.group_means(images).set_index(["tau", "correct"])
    assert g.loc[(0.5, True), "images"] == 2 and g.loc[(0.5, True), "mean " + sis_accuracy.SIZE] == 15
    assert g.loc[(0.5, False), "mean " + sis_accuracy.CONF] == pytest.approx(0.7)
    assert sis_accuracy.group_means(_images([0, 20], [0]))["empty SIS (%)"].tolist() == [50, 100]
    assert g.loc[(0.9, False), "images"] == 0 and math.isnan(g.loc[(0.9, False), "mean " + sis_accuracy.SIZE])


def test_percentage_increase_is_relative_to_the_incorrect_mean_with_a_seeded_interval_around_it():
    images = _images([10, 12, 14, 16, 18] * 4, [5, 6, 7, 8] * 5)
    (row,) = sis_accuracy.percentage_increase(images, n_resamples=500).to_dict("records")
    assert row["increase (%)"] == pytest.approx(100 * (14 / 6.5 - 1))
    assert row["correct images"] == 20 and row["incorrect images"] == 20
    assert row["low"] < row["increase (%)"] < row["high"] and row["low"] > 0
    again = sis_accuracy.percentage_increase(images, n_resamples=500).iloc[0]
    other = sis_accuracy.percentage_increase(images, n_resamples=500, seed=1).iloc[0]
    assert (again["low"], again["high"]) == (row["low"], row["high"])
    assert (other["low"], other["high"]) != (row["low"], row["high"])


def _old_bootstrap_interval(c, i, n_resamples=2000, confidence_level=0.95, seed=0):
    """sis_accuracy.bootstrap_interval written out, the reference that intervals.bootstrap must match."""
    rng = np.random.default_rng(seed)
    cb = c[rng.integers(0, len(c), (n_resamples, len(c)))]
    ib = i[rng.integers(0, len(i), (n_resamples, len(i)))]
    stat = np.nan_to_num(sis_accuracy._increase(cb, ib, axis=1), nan=np.inf)
    a = (1 - confidence_level) / 2
    low, high = np.quantile(stat, [a, 1 - a], method="inverted_cdf")
    return float(low), float(high)


def _interval(c, i, n_resamples=2000, confidence_level=0.95, seed=0):
    """The one-level bootstrap of the increase over two groups of images."""
    return bootstrap((c, i), sis_accuracy._increase, n_resamples, confidence_level, seed, undefined=np.inf)


@pytest.mark.parametrize("seed", range(6))
def test_interval_is_bitwise_the_old_bootstrap_interval_on_random_groups(seed):
    rng = np.random.default_rng(100 + seed)
    c = rng.gamma(2.0, 3.0, rng.integers(2, 60))
    i = np.where(rng.random(rng.integers(2, 40)) < 0.5, 0.0, rng.gamma(1.0, 2.0, 1)[0])   # many zero sizes
    for args in [(2000, 0.95, seed), (333, 0.9, seed + 7)]:
        assert _interval(c, i, *args) == _old_bootstrap_interval(c, i, *args)


def test_interval_counts_a_resample_with_a_zero_incorrect_mean_as_infinite_like_the_old_one():
    c, i = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, 4.0])   # a third of the i-resamples are all 0
    new, old = _interval(c, i, 500), _old_bootstrap_interval(c, i, 500)
    assert new == old and new[1] > 1e300      # the upper quantile falls on an undefined resample
    both_zero = np.zeros(3)
    assert _interval(both_zero, both_zero, 50) == _old_bootstrap_interval(both_zero, both_zero, 50)


def test_bootstrap_interval_matches_the_normal_interval_of_a_mean_when_the_incorrect_group_is_constant():
    # incorrect sizes all 5: increase = 20 * mean(c) - 100, so its 95% interval is 20 * (mean ± 1.96 se)
    c = np.random.default_rng(1).gamma(2.0, 3.0, 400)
    low, high = _interval(c, np.full(50, 5.0), n_resamples=4000)
    se = c.std(ddof=1) / math.sqrt(len(c))
    assert low == pytest.approx(20 * (c.mean() - 1.96 * se) - 100, abs=0.1 * 20 * 1.96 * se)
    assert high == pytest.approx(20 * (c.mean() + 1.96 * se) - 100, abs=0.1 * 20 * 1.96 * se)


def test_percentage_increase_is_the_mean_over_replicates_with_an_interval_over_them():
    # replicate 0: 14 vs 7 (+100%); replicate 1: 9 vs 6 (+50%): the mean of the two, a t interval over them
    images = pd.concat([_images([12, 16] * 5, [6, 8] * 5, replicate=0), _images([8, 10] * 5, [5, 7] * 5, replicate=1)])
    (row,) = sis_accuracy.percentage_increase(images, n_resamples=200).to_dict("records")
    assert row["replicates"] == 2 and row["correct images"] == 20 and row["increase (%)"] == pytest.approx(75)
    # 75 +- t(0.975, 1) * 25, its lower end kept at -100%: a mean size cannot fall below 0
    assert row["low"] == -100.0 and row["high"] == pytest.approx(75 + 12.706 * 25, abs=0.05)
    # a replicate without 2 incorrect images does not count; the other gives a bootstrap over its images
    one = sis_accuracy.percentage_increase(pd.concat([_images([12, 16] * 5, [6, 8] * 5, replicate=0),
                                           _images([8, 10] * 5, [5], replicate=1)]), n_resamples=200).iloc[0]
    assert one["replicates"] == 1 and one["increase (%)"] == pytest.approx(100) and one["low"] < 100 < one["high"]


def test_percentage_increase_is_undefined_without_enough_images_or_with_empty_incorrect_sis():
    inc = sis_accuracy.percentage_increase(pd.concat([_images([10, 12], [5], tau=0.5), _images([10], [], tau=0.7),
                                           _images([10, 12], [0, 0], tau=0.9)]), n_resamples=100)
    one, none, zero = inc.to_dict("records")
    assert one["increase (%)"] == pytest.approx(120) and math.isnan(one["low"]) and math.isnan(one["high"])
    assert math.isnan(none["increase (%)"]) and none["incorrect images"] == 0
    assert math.isnan(zero["increase (%)"]) and math.isnan(zero["low"])
    # a threshold no image reaches still gets its row, with empty groups
    full = sis_accuracy.percentage_increase(_images([10, 12], [5], tau=0.5), taus=(0.5, 0.99), n_resamples=100)
    assert full["tau"].tolist() == [0.5, 0.99] and full.iloc[1][["correct images", "incorrect images"]].sum() == 0
    assert len(sis_accuracy.group_means(_images([10, 12], [5], tau=0.5), taus=(0.5, 0.99))) == 4


def _increase(rows):
    return pd.DataFrame([{"model": m, "set": s, "tau": t, "correct images": nc, "incorrect images": ni,
                          "increase (%)": (lo + hi) / 2, "low": lo, "high": hi} for m, s, t, nc, ni, lo, hi in rows])


def test_verdict_has_one_row_per_threshold_stated_in_advance_and_holds_when_each_lies_above_the_margin():
    edge = paper_claims.SIS_ACCURACY_MIN_INCREASE
    rows = [("A", s, t, 500, 50, edge + 1, edge + 40) for s in ("test", "ood") for t in verdicts.SIS_ACCURACY_TAUS]
    holds = verdicts.sis_predicts_accuracy(_increase(rows + [("A", "test", 0.5, 500, 50, -80.0, -10.0)]))
    assert holds.word == verdicts.HOLDS                      # tau 0.5 is not a threshold of the verdict: not read
    assert holds.numbers.index.tolist() == [("A", s, t) for s in ("test", "ood") for t in verdicts.SIS_ACCURACY_TAUS]
    row = holds.numbers.loc[("A", "test", 0.9)]        # its estimate and interval belong together
    assert (row["95% low"], row["95% high"]) == (edge + 1, edge + 40) and row["increase (%)"] == edge + 20.5
    few = verdicts.sis_predicts_accuracy(_increase(rows[:-1] + [("A", "ood", 0.99, 500, 3, -80.0, -10.0)]))
    assert few.word == verdicts.HOLDS and few.numbers.loc[("A", "ood", 0.99), "outcome"] == verdicts.UNTESTABLE   # tested rows decide


def test_verdict_fails_on_a_null_increase_is_inconclusive_across_the_edge_and_untestable_without_images():
    edge = paper_claims.SIS_ACCURACY_MIN_INCREASE
    good = [("A", "test", t, 500, 50, edge + 5, edge + 40) for t in (0.7, 0.9)]
    straddles = verdicts.sis_predicts_accuracy(_increase(good + [("A", "ood", 0.7, 400, 100, edge - 3, edge + 20)]))
    assert straddles.word == verdicts.INCONCLUSIVE and straddles.numbers.loc[("A", "ood", 0.7), "outcome"] == verdicts.INCONCLUSIVE
    null = verdicts.sis_predicts_accuracy(_increase(good + [("A", "ood", 0.7, 400, 100, -4.0, 4.0)]))
    assert null.word == verdicts.FAILS                        # indistinguishable from zero decides it
    only = verdicts.sis_predicts_accuracy(_increase([("B", "test", 0.7, 500, 19, 30.0, 50.0)]))
    assert only.word == verdicts.UNTESTABLE
    assert verdicts.sis_predicts_accuracy(_increase([("B", "test", 0.7, 500, 19, 30.0, 50.0)]), min_images=10).word == verdicts.HOLDS
    assert "at least 20" in only.criterion and "0.7, 0.9, 0.99" in only.criterion


def test_tiny_profile_end_to_end_from_the_cached_backward_selections():
    """The chapter's table on the tiny profile: one row per image confident at tau, from the very
    backward selections chapter 4 makes (backselect_set, seed + replicate)."""
    from overinterp.experiments import runs
    from overinterp.config.context import make_run
    run = make_run(device="cpu")
    taus = (0.2, 0.3)
    images = sis_accuracy.image_table(run, taus, archs=("cnn",))
    assert set(images["set"]) == set(runs.eval_selections(run)) and set(images["replicate"]) == {0, 1}
    for (r, name), g in images.groupby(["replicate", "set"]):
        sel = runs.eval_selections(run)[name]
        res = runs.backselect_set(run, "cnn", sel, run.seed + r, progress=False)
        correct = res.pred == sel.load()[1]
        for tau in taus:
            at = g[g.tau == tau].sort_values("image")
            assert at["image"].tolist() == (res.confidence >= tau).nonzero().flatten().tolist()
            assert at["correct"].tolist() == correct[at["image"].tolist()].tolist()
            sizes = find_sis(res, tau).mask.flatten(1).float().mean(1)[at["image"].tolist()]
            assert at[sis_accuracy.SIZE].to_numpy() == pytest.approx(100 * sizes.numpy())
    groups = sis_accuracy.group_means(images)
    assert groups["images"].sum() == len(images) and len(groups) == 2 * 2 * len(taus) * 2
    inc = sis_accuracy.percentage_increase(images, n_resamples=200)
    assert len(inc) == 2 * len(taus) and (inc["correct images"] + inc["incorrect images"]).sum() == len(images)
    ok = inc["low"].notna()
    assert (inc.loc[ok, "low"] <= inc.loc[ok, "high"]).all()
    picked = verdicts.sis_predicts_accuracy(inc, taus=taus).numbers.index.tolist()
    assert picked == [("small CNN", s, t) for s in runs.eval_selections(run) for t in taus]
    for fig in (sis_size_plots.increase_figure(inc), sis_size_plots.confidence_figure(images)):
        assert len([ax for ax in fig.axes if ax.has_data()]) == 2


# ----------------------------------------------------------------------------- the chapter's tables and prose

def test_thresholds_are_floats_in_increasing_order_and_prose_numbers_show_undefined_as_a_dash():
    from overinterp.config.chapters import thresholds
    assert thresholds([0.9, 0.5, 1]) == (0.5, 0.9, 1.0) and all(type(t) is float for t in thresholds([1, 0]))
    assert number(float("nan")) == "—" and number(12.345) == "12.3" and number(-4.6, 0) == "-5"


def _inc_rows():
    return pd.DataFrame([
        {"model": "A", "set": "test", "tau": 0.5, "correct images": 3, "incorrect images": 2, "increase (%)": 50.4,
         "low": 10.2, "high": 89.6},
        {"model": "A", "set": "test", "tau": 0.9, "correct images": 1, "incorrect images": 0, "increase (%)": np.nan,
         "low": np.nan, "high": np.nan},
        {"model": "A", "set": "ood", "tau": 0.5, "correct images": 2, "incorrect images": 1, "increase (%)": -20.0,
         "low": np.nan, "high": np.nan},
        {"model": "A", "set": "ood", "tau": 0.9, "correct images": 2, "incorrect images": 2, "increase (%)": 5.0,
         "low": -1.0, "high": 9.0}])


def test_increase_table_shows_each_point_with_its_interval_and_the_group_sizes_in_the_sets_order():
    shown = pages_sis_accuracy.increase_table(_inc_rows(), ["test", "ood"])
    assert list(shown.columns) == ["τ = 0.5", "τ = 0.9"] and list(shown.index) == [("test", "A"), ("ood", "A")]
    assert shown.loc[("test", "A")].tolist() == ["+50 [10, 90]", "—"]
    assert shown.loc[("ood", "A")].tolist() == ["-20", "+5 [-1, 9]"]
    assert pages_sis_accuracy.increase_table(_inc_rows(), ["test", "ood"], "groups").loc[("test", "A")].tolist() == ["3 / 2", "1 / 0"]


def test_verdict_values_count_the_rows_above_within_and_below_the_margin_and_the_tested_increases():
    edge = paper_claims.SIS_ACCURACY_MIN_INCREASE
    rows = [("A", "test", 0.7, 500, 50, edge + 5, edge + 40), ("A", "test", 0.9, 500, 50, edge - 5, edge + 60),
            ("A", "ood", 0.7, 500, 50, -30.0, -10.0), ("A", "ood", 0.9, 500, 3, 1.0, 2.0)]
    v = pages_sis_accuracy.verdict_values(verdicts.sis_predicts_accuracy(_increase(rows), min_images=10))
    assert v["verdict"] == "does not hold"
    assert (v["tested"], v["cells"], v["above"], v["within"], v["below"]) == (3, 4, 1, 1, 1)
    assert v["test_range"] == f"from {edge + 22.5:.0f}% to {edge + 27.5:.0f}%" and v["ood_range"] == "from -20% to -20%"
    assert all(type(v[k]) is int for k in ("tested", "cells", "above", "within", "below"))


def test_replicate_values_count_the_points_where_the_correct_group_has_the_larger_mean():
    images = pd.concat([_images([10, 12], [5, 6]), _images([3, 4], [5, 6], replicate=1),
                        _images([10], [5, 6], replicate=2)])
    assert pages_sis_accuracy.replicate_values(images, (0.5,), 2) == {"rep_pos": 1, "rep_n": 2}   # replicate 2: one correct image
    assert pages_sis_accuracy.replicate_values(images, (0.5, 0.9), 1) == {"rep_pos": 2, "rep_n": 3}


def test_empty_sis_shares_per_group_and_the_increase_without_them():
    images = pd.concat([_images([0, 10, 20, 30], [0, 0, 5, 5]), _images([10, 10], [0, 5], set_name="ood")])
    pooled = sis_accuracy.pooled_empty(images)
    table = pages_sis_accuracy.empty_table(pooled, (0.5, 0.9))
    assert table.loc[("test", "m", "correct")].tolist() == ["25", "—"]
    assert table.loc[("test", "m", "misclassified")].tolist() == ["50", "—"]
    v = pages_sis_accuracy.empty_values(pooled, sis_accuracy.nonempty_increase(images, (0.5,), 2, 200, 0), 2)
    assert (v["empty_test_c_min"], v["empty_test_i_max"], v["empty_ood_c_max"], v["empty_ood_i_min"]) == \
        ("25", "50", "0", "50")
    assert (v["empty_test_c_range"], v["empty_ood_i_range"]) == ("25", "50")     # one group each: printed once
    # without empty SIS: test 20 over 5 -> +300%; ood keeps one misclassified image, below min_images
    assert (v["ne_test_min"], v["ne_test_n"], v["ne_ood_n"]) == ("300", 1, 0)
    assert v["ne_ood_min"] == "—" and v["ne_test_above"] == 1


def test_confidence_values_count_where_the_misclassified_images_are_less_confident():
    images = pd.concat([_images([1], [2]), _images([1], [2], tau=0.9), _images([1], [], tau=0.99)])
    images.loc[images["tau"] == 0.9, sis_accuracy.CONF] = 0.95          # both groups equally confident at 0.9
    assert pages_sis_accuracy.confidence_values(images) == {"conf_lower": 1, "conf_n": 2}


def test_prose_range_reads_the_range_or_says_there_is_none():
    assert pages_sis_accuracy.prose_range(pd.Series([12.2, float("nan"), 40.0, -3.0])) == "from -3% to 40%"
    assert pages_sis_accuracy.prose_range(pd.Series([float("nan")])) == "nowhere (no threshold tested)"
