"""SIS size and accuracy (overinterp.sis_accuracy, paper 4.4, Fig. 5, S3) and its verdict."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from overinterp import sis_accuracy as S, verdicts as V
from overinterp.backselect import BackSelectResult
from overinterp.sis import find_sis


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
    rows = S.sis_rows(FOUR, LABELS, (0.5, 0.7, 0.9, 0.99))
    got = {(r.tau, r.image): (r.correct, r[S.SIZE]) for _, r in rows.iterrows()}
    assert got == {(0.5, 0): (True, 25.0), (0.5, 1): (False, 25.0), (0.5, 2): (True, 0.0),
                   (0.7, 0): (True, 50.0), (0.7, 1): (False, 100.0),
                   (0.9, 0): (True, 75.0), (0.9, 1): (False, 100.0)}
    assert rows.loc[rows.image == 1, S.CONF].to_numpy() == pytest.approx([0.92] * 3)


def test_sis_size_counts_pixels_not_features_for_blocks_at_the_image_edge():
    # 3x3 image, 2x2 blocks: feature 1 covers the 2 pixels of column 2 in rows 0-1, feature 3 one pixel
    res = _result(full=[0.9], after=[[0.85, 0.7, 0.6, 0.1]], pred=[0], order=[[3, 0, 2, 1]], image_size=(3, 3),
                  block=2)
    rows = S.sis_rows(res, torch.tensor([0]), (0.5,))
    assert find_sis(res, 0.5).size.tolist() == [1]
    assert rows[S.SIZE].tolist() == pytest.approx([100 * 2 / 9])


def _images(correct, incorrect, tau=0.5, model="m", set_name="test", replicate=0):
    sizes = list(correct) + list(incorrect)
    return pd.DataFrame({"model": model, "replicate": replicate, "set": set_name, "image": range(len(sizes)),
                         "tau": tau, "correct": [True] * len(correct) + [False] * len(incorrect),
                         S.CONF: [0.9] * len(correct) + [0.7] * len(incorrect), S.SIZE: sizes})


def test_group_means_counts_each_group_and_keeps_empty_groups():
    images = pd.concat([_images([10, 20], [4]), _images([30], [], tau=0.9)])
    g = S.group_means(images).set_index(["tau", "correct"])
    assert g.loc[(0.5, True), "images"] == 2 and g.loc[(0.5, True), "mean " + S.SIZE] == 15
    assert g.loc[(0.5, False), "mean " + S.CONF] == pytest.approx(0.7)
    assert S.group_means(_images([0, 20], [0]))["empty SIS (%)"].tolist() == [50, 100]
    assert g.loc[(0.9, False), "images"] == 0 and math.isnan(g.loc[(0.9, False), "mean " + S.SIZE])


def test_percentage_increase_is_relative_to_the_incorrect_mean_with_a_seeded_interval_around_it():
    images = _images([10, 12, 14, 16, 18] * 4, [5, 6, 7, 8] * 5)
    (row,) = S.percentage_increase(images, n_resamples=500).to_dict("records")
    assert row["increase (%)"] == pytest.approx(100 * (14 / 6.5 - 1))
    assert row["correct images"] == 20 and row["incorrect images"] == 20
    assert row["low"] < row["increase (%)"] < row["high"] and row["low"] > 0
    again = S.percentage_increase(images, n_resamples=500).iloc[0]
    other = S.percentage_increase(images, n_resamples=500, seed=1).iloc[0]
    assert (again["low"], again["high"]) == (row["low"], row["high"])
    assert (other["low"], other["high"]) != (row["low"], row["high"])


def test_bootstrap_interval_matches_the_normal_interval_of_a_mean_when_the_incorrect_group_is_constant():
    # incorrect sizes all 5: increase = 20 * mean(c) - 100, so its 95% interval is 20 * (mean ± 1.96 se)
    c = np.random.default_rng(1).gamma(2.0, 3.0, 400)
    low, high = S.bootstrap_interval(c, np.full(50, 5.0), n_resamples=4000)
    se = c.std(ddof=1) / math.sqrt(len(c))
    assert low == pytest.approx(20 * (c.mean() - 1.96 * se) - 100, abs=0.1 * 20 * 1.96 * se)
    assert high == pytest.approx(20 * (c.mean() + 1.96 * se) - 100, abs=0.1 * 20 * 1.96 * se)


def test_percentage_increase_is_undefined_without_enough_images_or_with_empty_incorrect_sis():
    inc = S.percentage_increase(pd.concat([_images([10, 12], [5], tau=0.5), _images([10], [], tau=0.7),
                                           _images([10, 12], [0, 0], tau=0.9)]), n_resamples=100)
    one, none, zero = inc.to_dict("records")
    assert one["increase (%)"] == pytest.approx(120) and math.isnan(one["low"]) and math.isnan(one["high"])
    assert math.isnan(none["increase (%)"]) and none["incorrect images"] == 0
    assert math.isnan(zero["increase (%)"]) and math.isnan(zero["low"])
    # a threshold no image reaches still gets its row, with empty groups
    full = S.percentage_increase(_images([10, 12], [5], tau=0.5), taus=(0.5, 0.99), n_resamples=100)
    assert full["tau"].tolist() == [0.5, 0.99] and full.iloc[1][["correct images", "incorrect images"]].sum() == 0
    assert len(S.group_means(_images([10, 12], [5], tau=0.5), taus=(0.5, 0.99))) == 4


def _increase(rows):
    return pd.DataFrame([{"model": m, "set": s, "tau": t, "correct images": nc, "incorrect images": ni,
                          "increase (%)": (lo + hi) / 2, "low": lo, "high": hi} for m, s, t, nc, ni, lo, hi in rows])


def test_verdict_holds_when_every_tested_interval_lies_above_zero():
    rows = [("A", s, t, 500, 50, 5.0, 40.0) for s in ("test", "ood") for t in (0.5, 0.9)]
    holds = V.sis_predicts_accuracy(_increase(rows + [("A", "test", 0.99, 500, 3, -80.0, -10.0)]))
    assert holds.holds is True and holds.word == "holds"   # tau 0.99 has 3 incorrect images: not tested
    assert holds.numbers.loc[("A", "test"), "tested"] == 2 and holds.numbers.loc[("A", "test"), "thresholds"] == 3


def test_verdict_fails_on_one_tested_interval_reaching_zero_and_cannot_be_tested_without_incorrect_images():
    good = [("A", "test", t, 500, 50, 5.0, 40.0) for t in (0.5, 0.9)]
    fails = V.sis_predicts_accuracy(_increase(good + [("A", "ood", 0.5, 400, 100, -3.0, 20.0)]))
    assert fails.holds is False
    assert fails.numbers.loc[("A", "ood"), "interval above 0"] == 0
    few = V.sis_predicts_accuracy(_increase(good + [("B", "test", 0.5, 500, 19, 10.0, 30.0)]))
    assert few.holds is None and few.word == "cannot be tested"
    assert V.sis_predicts_accuracy(_increase(good + [("B", "test", 0.5, 500, 19, 10.0, 30.0)]),
                                   min_images=10).holds is True
    assert "at least 20" in few.criterion


def test_tiny_profile_end_to_end_from_the_cached_backward_selections():
    """The chapter's table on the tiny profile: one row per image confident at tau, from the very
    backward selections chapter 4 makes (backselect_set, seed + replicate)."""
    from overinterp import analysis as A
    from overinterp.book import setup
    run = setup(device="cpu", show=False)
    taus = (0.2, 0.3)
    images = S.image_table(run, taus, archs=("cnn",))
    assert set(images["set"]) == set(A.eval_selections(run)) and set(images["replicate"]) == {0, 1}
    for (r, name), g in images.groupby(["replicate", "set"]):
        sel = A.eval_selections(run)[name]
        res = A.backselect_set(run, "cnn", sel, run.seed + r, progress=False)
        correct = res.pred == sel.load()[1]
        for tau in taus:
            at = g[g.tau == tau].sort_values("image")
            assert at["image"].tolist() == (res.confidence >= tau).nonzero().flatten().tolist()
            assert at["correct"].tolist() == correct[at["image"].tolist()].tolist()
            sizes = find_sis(res, tau).mask.flatten(1).float().mean(1)[at["image"].tolist()]
            assert at[S.SIZE].to_numpy() == pytest.approx(100 * sizes.numpy())
    groups = S.group_means(images)
    assert groups["images"].sum() == len(images) and len(groups) == 2 * 2 * len(taus) * 2
    inc = S.percentage_increase(images, n_resamples=200)
    assert len(inc) == 2 * len(taus) and (inc["correct images"] + inc["incorrect images"]).sum() == len(images)
    ok = inc["low"].notna()
    assert (inc.loc[ok, "low"] <= inc.loc[ok, "high"]).all()
    assert V.sis_predicts_accuracy(inc).numbers.index.tolist() == [("small CNN", s) for s in A.eval_selections(run)]
    for fig in (S.increase_figure(inc), S.confidence_figure(images)):
        assert len([ax for ax in fig.axes if ax.has_data()]) == 2
