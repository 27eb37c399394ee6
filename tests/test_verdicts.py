"""Verdicts (overinterp.paper.verdicts, by the rule of overinterp.paper.decide) as equivalence-style tests on
per-image results, numeric tables, the plateau criterion and profile deviations."""
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from overinterp.experiments import runs
from overinterp.paper import numbers as paper
from overinterp.pages import plots
from overinterp.paper import verdicts
from overinterp.paper import claims as paper_claims
from overinterp.paper import numbers as paper_numbers
from overinterp.paper.verdicts import FAILS, HOLDS, INCONCLUSIVE, UNTESTABLE
from overinterp.paper.intervals import Interval
from overinterp.config.profiles import PROFILES, get_profile
from overinterp.zoo.train import plateaued, tail_start_loss


def test_paper_gaps_come_from_table1():
    # full -> own BS subsets: ResNet18 95.28 -> 94.76; full -> retrained on BS: VGG16 93.62 -> 92.56
    assert paper_numbers.paper_gap("full", "bs") == pytest.approx(0.52)
    assert paper_numbers.paper_gap("bs", "bs") == pytest.approx(1.06)
    assert paper.fmt((82.8, None)) == "82.80" and paper.fmt((92.23, 0.35)) == "92.23 ± 0.35"


N = 300          # test images
R = 3            # replicates


def _hits(k, n=N):
    """1/0 per image: the first ``k`` images correct."""
    return np.r_[np.ones(k), np.zeros(n - k)]


def _reps(k, n=N, r=R):
    return [_hits(k, n) for _ in range(r)]


def test_margin_decides_inside_outside_straddling_and_nan():
    m = verdicts.Margin(high=5.0, words="at most 5")
    assert m.decide(Interval(1.0, 0.0, 4.0)) == HOLDS
    assert m.decide(Interval(2.0, 0.0, 5.0)) == HOLDS                 # the edge belongs to the margin
    assert m.decide(Interval(7.0, 6.0, 8.0)) == FAILS
    assert m.decide(Interval(5.0, 3.0, 7.0)) == INCONCLUSIVE
    assert m.decide(Interval(6.0, 5.0, 7.0)) == INCONCLUSIVE          # touching from above is not outside
    assert m.decide(Interval(math.nan, math.nan, math.nan)) == UNTESTABLE
    assert m.decide(Interval(1.0, 0.0, math.nan)) == UNTESTABLE
    low = verdicts.Margin(low=10.0)
    assert low.decide(Interval(20, 15, 25)) == HOLDS and low.decide(Interval(2, 0, 5)) == FAILS
    assert low.decide(Interval(10, 8, 12)) == INCONCLUSIVE
    both = verdicts.Margin(-1.0, 1.0)
    assert both.decide(Interval(0, -0.5, 0.5)) == HOLDS and both.decide(Interval(-3, -4, -2)) == FAILS
    assert str(m) == "≤ 5" and str(low) == "≥ 10" and str(both) == "-1 to 1"


def test_combine_fails_on_one_failure_holds_only_when_all_hold():
    H, F, I, U = HOLDS, FAILS, INCONCLUSIVE, UNTESTABLE
    assert verdicts.combine([H, H]) == H and verdicts.combine([H]) == H
    assert verdicts.combine([H, F]) == F and verdicts.combine([I, F, U]) == F
    assert verdicts.combine([H, I]) == I and verdicts.combine([H, U]) == I
    assert verdicts.combine([U, U]) == U and verdicts.combine([]) == U


def test_verdict_outcome_word_and_holds():
    numbers = pd.DataFrame()
    assert verdicts.Verdict("c", "k", HOLDS, numbers).holds is True
    assert verdicts.Verdict("c", "k", FAILS, numbers).holds is False
    v = verdicts.Verdict("c", "k", INCONCLUSIVE, numbers)
    assert v.holds is None and v.word == "inconclusive at this scale" and "inconclusive at this scale" in \
        v._repr_markdown_()
    assert verdicts.Verdict("c", "k", UNTESTABLE, numbers).holds is None
    for outcome in ("maybe", True):
        with pytest.raises(ValueError, match="outcome must be one of"):
            verdicts.Verdict("c", "k", outcome, numbers)


def test_subsets_accurate_three_outcomes_on_per_image_results():
    holds = verdicts.subsets_accurate(full={"m": _reps(N)}, bs={"m": _reps(N - 1)})          # a drop of 0.33 points
    assert holds.word == "holds" and holds.holds is True
    row = holds.numbers.loc["m"]
    # identical replicates: only the shared image error is left, symmetric about the estimate
    assert row["drop (points)"] == pytest.approx(100 / N) and row["95% low"] > -1 and row["95% high"] <= 5
    assert row["full images"] == pytest.approx(100) and row["replicates"] == R and row["images"] == N
    fails = verdicts.subsets_accurate(full={"m": _reps(N)}, bs={"m": _reps(180)})           # 40 points
    assert fails.holds is False and fails.numbers.loc["m", "drop (points)"] == pytest.approx(40.0)
    # 5 points: the margin's edge
    straddles = verdicts.subsets_accurate(full={"m": _reps(N)}, bs={"m": _reps(285)})
    assert straddles.word == INCONCLUSIVE and straddles.holds is None
    lo, hi = straddles.numbers.loc["m", ["95% low", "95% high"]]
    assert lo < paper_claims.TOLERANCE_POINTS < hi
    # one architecture failing fails the claim
    one_fails = verdicts.subsets_accurate(full={"a": _reps(N), "b": _reps(N)}, bs={"a": _reps(N), "b": _reps(150)})
    assert one_fails.holds is False
    # a flat list of 1/0 is one replicate
    flat = verdicts.subsets_accurate(full={"m": list(_hits(N))}, bs={"m": list(_hits(N))})
    assert flat.numbers.loc["m", "replicates"] == 1


def test_confidence_kept_holds_on_no_change_and_fails_on_a_large_drop():
    rng = np.random.default_rng(0)
    none = verdicts.confidence_kept({"m": [np.zeros(N)] * R})
    assert none.word == "holds" and none.numbers.loc["m", "mean drop"] == 0.0
    gain = verdicts.confidence_kept({"m": [rng.normal(-0.03, 0.05, N) for _ in range(R)]})
    assert gain.holds is True
    big = verdicts.confidence_kept({"m": [rng.normal(0.45, 0.05, N) for _ in range(R)]})
    assert big.holds is False and big.numbers.loc["m", "mean drop"] == pytest.approx(0.45, abs=0.01)
    edge = verdicts.confidence_kept({"m": [rng.normal(paper_claims.TOLERANCE_CONFIDENCE, 0.2, N) for _ in range(R)]})
    assert edge.word == INCONCLUSIVE
    table = verdicts.summary({"C1": big})
    assert list(table.columns) == ["claim", "verdict", "criterion"] and table.loc[0, "verdict"] == "does not hold"


def test_sis_size_margin_is_in_percent_and_untestable_without_sis():
    rng = np.random.default_rng(1)
    small = verdicts.sis_size({"m": [rng.uniform(0.01, 0.03, 100) for _ in range(R)]}, 0.99)
    assert small.holds is True and small.numbers.loc["m", "mean SIS size (%)"] == pytest.approx(2.0, abs=0.2)
    # regression: fractions far above 5% must not hold (the interval is in percent, like the margin)
    large = verdicts.sis_size({"m": [rng.uniform(0.15, 0.25, 100) for _ in range(R)]}, 0.99)
    assert large.holds is False and large.numbers.loc["m", "95% low"] > 5
    one_large = verdicts.sis_size({"m": [rng.uniform(0.01, 0.03, 100)], "n": [rng.uniform(0.15, 0.25, 100)]}, 0.99)
    assert one_large.holds is False
    edge = verdicts.sis_size({"m": [rng.normal(0.05, 0.02, 200) for _ in range(R)]}, 0.99)
    assert edge.word == INCONCLUSIVE
    # NaN: no SIS, left out; too few SIS: cannot be tested
    with_nan = verdicts.sis_size({"m": [np.r_[np.full(50, 0.02), np.full(50, np.nan)]]}, 0.99)
    assert with_nan.holds is True and with_nan.numbers.loc["m", "images"] == 50
    none = verdicts.sis_size({"m": [np.full(5, np.nan)]}, 0.99)
    assert none.word == UNTESTABLE and math.isnan(none.numbers.loc["m", "mean SIS size (%)"])
    assert verdicts.sis_size({"m": [np.full(5, 0.02)]}, 0.99, min_images=10).word == UNTESTABLE
    assert "fewer than 10 images" in verdicts.sis_size({"m": [np.full(5, 0.02)]}, 0.99, min_images=10).criterion


def test_interval_row_scales_the_interval_before_deciding():
    row = verdicts.interval_row(Interval(0.2, 0.15, 0.25), verdicts.Margin(high=5.0), "x", 100, replicates=3)
    assert row["x"] == pytest.approx(20) and row["95% low"] == pytest.approx(15) and row["outcome"] == FAILS
    assert row["replicates"] == 3 and row["margin"] == "≤ 5"
    assert verdicts.interval_row(Interval(0.02, 0.01, 0.03), verdicts.Margin(high=5.0), "x", 100)["outcome"] == HOLDS


def test_a_row_without_an_interval_cannot_be_tested():
    row = verdicts.interval_row(None, verdicts.Margin(high=5.0), "x", 100, replicates=0)
    assert list(row) == ["replicates", "x", "95% low", "95% high", "margin", "outcome"]
    assert row["outcome"] == UNTESTABLE and math.isnan(row["x"]) and row["margin"] == "≤ 5"


def test_difference_rows_keep_the_replicates_that_have_values():
    from overinterp.paper.decide import difference_rows
    margin = verdicts.Margin(low=-5.0)
    a, b = {"m": [_hits(N), np.ones(0), _hits(N)], "e": [np.ones(0)]}, {"m": _reps(N - 30), "e": [np.ones(0)]}
    rows = difference_rows(a, b, "change (points)", margin, ("a (%)", "b (%)"), 0, 200, drop_empty=True)
    assert rows["m"]["replicates"] == 2 and rows["m"]["change (points)"] == pytest.approx(10.0)
    assert rows["m"]["a (%)"] == pytest.approx(100.0) and rows["m"]["outcome"] == HOLDS
    assert rows["e"]["outcome"] == UNTESTABLE and list(rows["e"])[:2] == ["a (%)", "b (%)"]


def test_no_transfer_three_outcomes_and_untestable_without_lift():
    # every source replicate (here 2) is a source; per source, one array per other model
    own, rnd = [_hits(N)] * 2, [_hits(30)] * 2                           # 100% on own subsets, 10% on random
    paperlike = verdicts.no_transfer(own={"s": own}, others={"s": [[_hits(60), _hits(60), _hits(66)]] * 2},
                                     random={"s": rnd})
    assert paperlike.holds is True
    assert paperlike.numbers.loc["s", "share of lift transferred"] == pytest.approx((62 / 3 - 10) / 90, abs=1e-9)
    assert paperlike.numbers.loc["s", "other models"] == 3 and paperlike.numbers.loc["s", "replicates"] == 2
    transfers = verdicts.no_transfer(own={"s": own}, others={"s": [[_hits(285), _hits(285)]] * 2}, random={"s": rnd})
    assert transfers.holds is False
    half = verdicts.no_transfer(own={"s": own}, others={"s": [[_hits(165), _hits(165)]] * 2}, random={"s": rnd})
    assert half.numbers.loc["s", "share of lift transferred"] == pytest.approx(0.5) and half.word == INCONCLUSIVE
    # sources that disagree: the interval over the source replicates is wide
    mixed = verdicts.no_transfer(own={"s": own}, others={"s": [[_hits(60)], [_hits(250)]]}, random={"s": rnd})
    assert mixed.word == INCONCLUSIVE and mixed.numbers.loc["s", "replicates to decide"].startswith(("about", "over"))
    # a source no better on its own subsets than on random ones cannot test the claim
    flat = verdicts.no_transfer(own={"s": [_hits(36)]}, others={"s": [[_hits(33)]]}, random={"s": rnd[:1]})
    assert flat.holds is None and flat.word == "cannot be tested"
    assert "outcome here is “cannot be tested”" in flat._repr_markdown_()


def test_retraining_verdicts_three_outcomes_and_a_control_near_chance():
    beats = verdicts.retrain_beats_random(bs={"m": _reps(240)}, random={"m": _reps(120)})      # 80% against 40%
    assert beats.holds is True and beats.numbers.loc["m", "difference (points)"] == pytest.approx(40)
    assert verdicts.retrain_beats_random(bs={"m": _reps(123)}, random={"m": _reps(120)}).holds is False
    # 10 points: the margin's edge
    assert verdicts.retrain_beats_random(bs={"m": _reps(130)}, random={"m": _reps(100)}).word == INCONCLUSIVE
    near = verdicts.retrain_near_full(bs={"m": _reps(255)}, full={"m": _reps(258)}, chance=10.0)
    assert near.holds is True and near.numbers.loc["m", "drop (points)"] == pytest.approx(1.0)
    better = verdicts.retrain_near_full(bs={"m": _reps(270)}, full={"m": _reps(258)}, chance=10.0)
    assert better.holds is True and better.numbers.loc["m", "95% high"] < 0         # subsets beat the control
    assert verdicts.retrain_near_full(bs={"m": _reps(180)}, full={"m": _reps(258)}, chance=10.0).holds is False
    assert verdicts.retrain_near_full(bs={"m": _reps(243)}, full={"m": _reps(258)}, chance=10.0).word == INCONCLUSIVE
    # a control that learned nothing cannot show that subsets are "nearly as learnable"
    assert verdicts.retrain_near_full(bs={"m": _reps(33)}, full={"m": _reps(30)}, chance=10.0).word == UNTESTABLE


def test_paper_numbers_and_result_records():
    from overinterp.paper import claims
    assert claims.paper_number("sis") == "mean below 5%"
    assert claims.paper_number("accurate") == "drop at most 0.52 points (derived from Table 1)"
    assert claims.paper_number("kept") == "mean drop −0.035 to −0.012"
    assert claims.paper_number("transfer").startswith("share 0.21 (derived")
    assert claims.paper_number("near") == "drop at most 1.06 points (derived from Table 1)"
    assert re.fullmatch(r"\d+\.\d–\d+\.\d points \(derived from Table 1\)", claims.paper_number("beats"))
    assert claims.paper_number("ensemble_accuracy").startswith("+0.87 points")
    with pytest.raises(KeyError):
        claims.paper_number("unknown")
    v = verdicts.subsets_accurate(full={"a": _reps(N), "b": _reps(N)}, bs={"a": _reps(N - 3), "b": _reps(150)})
    recs = claims.records(v, "accurate")
    assert [r["model"] for r in recs] == ["a", "b"] and [r["outcome"] for r in recs] == [HOLDS, FAILS]
    assert set(recs[0]) == {"claim", "model", "estimate", "low", "high", "margin", "outcome", "replicates", "images",
                            "to decide", "revision"} and recs[0]["revision"] == claims.CLAIMS["accurate"].revision
    assert recs[0]["claim"] == "accurate" and recs[0]["estimate"] == pytest.approx(1.0) and recs[0]["replicates"] == R
    assert all(isinstance(r[k], float) for r in recs for k in ("estimate", "low", "high"))
    assert json.loads(json.dumps(recs)) == recs
    text = claims.result_text(v, "accurate")
    assert re.fullmatch(r"a 1\.0 \[-?\d+\.\d, \d+\.\d\]; b 50\.0 \[\d+\.\d, \d+\.\d\]", text), text
    none = verdicts.sis_size({"m": [np.full(3, np.nan)], "n": [np.full(40, 0.02)] * 2}, 0.99)
    assert claims.records(none, "sis")[0]["estimate"] is None and claims.records(none, "sis")[0]["low"] is None
    assert claims.result_text(none, "sis").startswith("m no estimate; n 2.0 [2.0, 2.0]")
    # every claim of the book is registered once, under a chapter that exists
    from overinterp.config.chapters import CHAPTERS
    assert len(claims.CLAIMS) == len(set(claims.CLAIMS)) >= 17
    assert all(c.chapter in CHAPTERS for c in claims.CLAIMS.values())
    assert {c.part for c in claims.CLAIMS.values()} == set(claims.PARTS)


def test_an_inconclusive_row_says_how_many_replicates_would_decide_it():
    rng = np.random.default_rng(3)
    # drops of 10, 14 and 18 points: a t interval over 3 replicates reaches below the 5-point margin
    reps = [_hits(N - k) for k in (30, 42, 54)]
    v = verdicts.subsets_accurate(full={"m": _reps(N)}, bs={"m": reps})
    row = v.numbers.loc["m"]
    assert v.word == INCONCLUSIVE and row["replicates to decide"].startswith("about ")
    n = int(row["replicates to decide"].split()[1])
    assert n > R and "replicates would decide it" in v.per_model()
    # a decided row has no such column value
    assert "replicates to decide" not in verdicts.subsets_accurate(full={"m": _reps(N)}, bs={"m": _reps(150)}).numbers
    # one model: no replicate spread to scale
    one = verdicts.Margin(high=5.0).to_decide(Interval(5.0, 3.0, 7.0, replicates=1))
    assert one == "needs replicates (one model)" and rng is not None


def test_accuracy_tables_are_numeric_and_formatted_only_for_display(always):
    X, Y = torch.zeros(4, 1, 2, 2), torch.tensor([0, 0, 1, 2])
    sets = {"test": (X, Y), "ood": (X, torch.tensor([0, 0, 0, 0]))}
    accuracies = runs.accuracies([always(0), always(1)], sets)
    assert accuracies.to_dict("list") == {"test": [50.0, 25.0], "ood": [100.0, 0.0]}
    table = runs.accuracy_table({"m": [always(0), always(1)], "one": always(0)}, sets)
    assert table.loc["m", ("test", "mean")] == pytest.approx(37.5)
    assert table.loc["m", ("ood", "std")] == pytest.approx(math.sqrt(5000))
    assert math.isnan(table.loc["one", ("test", "std")])
    assert list(dict.fromkeys(c for c, _ in table.columns)) == ["test", "ood"]  # order kept
    shown = plots.mean_std(table)
    assert shown.loc["m", "test"] == "37.50 ± 17.68" and shown.loc["one", "test"] == "50.00"
    same = plots.mean_std(runs.accuracy_table({"m": [always(0), always(0)]}, sets))
    assert same.loc["m", "test"] == "50.00 ± 0.00"   # two equal replicates still show their spread


def test_plateau_criterion():
    flat = [{"loss": v} for v in [1.0, 0.5, 0.3, 0.2, 0.2, 0.19]]
    falling = [{"loss": v} for v in [1.0, 0.8, 0.6, 0.4, 0.3, 0.2]]
    assert plateaued(flat) and not plateaued(falling)
    assert not plateaued([{"loss": 1.0}])
    # near zero, a fall of under 0.01 nats is a plateau however large relatively (the measured
    # 48-epoch curve's tail), but the same relative fall at a loss ten times higher is not
    floor = [{"loss": v} for v in [0.5, 0.1, 0.02, 0.0058, 0.005, 0.0044]]
    assert plateaued(floor) and not plateaued([{"loss": 10 * h["loss"]} for h in floor])
    assert not plateaued(floor, atol=0.001)
    assert tail_start_loss(flat) == 0.2 and tail_start_loss(falling) == 0.4  # the loss at the start of the last third


def test_deviations_list_what_differs_from_the_paper():
    from overinterp.paper.deviations import CODE_DEVIATIONS, profile_deviations as profile
    # the paper's profile departs from the paper's protocol nowhere, only (as every profile) from its code's architectures
    assert profile(get_profile("paper")) == [d for _, d in CODE_DEVIATIONS]
    assert any("option A" in d for d in profile(get_profile("quick"), "models"))
    assert not any("pre-activation" in d for d in profile(get_profile("tiny"), "models"))   # tiny has no ResNet18
    quick = get_profile("quick")
    models = " ".join(profile(quick, "models"))
    assert f"{quick.train.epochs} epochs" in models and "augmentation" in models
    for name in ("quick", "tiny"):     # all training images (quick): no deviation; a sample (tiny): its size
        p = get_profile(name)
        assert (f"trained on {p.train_size} training images" in " ".join(profile(p, "models"))) == bool(p.train_size)
    assert "backward selection" not in models
    bs = " ".join(profile(quick, "backselect"))
    assert f"gradient (k={quick.backselect.k})" in bs and "the paper: exact" in bs
    assert "Table S1" in " ".join(profile(quick, "retraining"))
    assert all(isinstance(d, str) for p in PROFILES.values() for d in profile(p))


def test_claims_quote_the_papers_numbers_from_paper_numbers():
    """The claims' numbers are derived from overinterp.paper.numbers, rendered as the paper prints them."""
    one = [np.ones(4)]
    assert "Table 1: at most 0.52 points lower on CIFAR-10)." in verdicts.subsets_accurate({"m": one}, {"m": one}).claim
    kept = verdicts.confidence_kept({"m": [np.zeros(4)]}).claim
    assert "mean drop of confidence −0.035 to −0.012 on CIFAR-10)." in kept
    nt = verdicts.no_transfer({"m": [_hits(90, 100)]}, {"m": [[_hits(20, 100)]]}, {"m": [_hits(10, 100)]})
    assert "ResNet18's, 94.8% by itself, get 27.5–29.2% from a ResNet18 replicate" in nt.claim
    assert "the paper: 0.21, one source)" in nt.criterion
    assert paper_numbers.paper_transfer_share() == pytest.approx(((27.6 + 29.2 + 27.5) / 3 - 10.01) / (94.8 - 10.01))
    beats = verdicts.retrain_beats_random({"m": one}, {"m": one}).claim
    assert "Table 1: 92.5–95.0% against 50.1–53.8% on CIFAR-10)" in beats   # 50.05 -> 50.1, half up as printed
    assert "at τ = 0.99 is below 5% of the image" in verdicts.sis_size({"m": [np.array([0.01])]}, 0.3).claim
    assert paper_numbers.paper_round(50.05) == "50.1" and paper_numbers.paper_round(94.97) == "95.0"
    assert paper_numbers.paper_round(-0.25, 2) == "-0.25"


def test_the_verdict_box_names_its_scope_and_marks_each_models_outcome():
    v = verdicts.subsets_accurate(full={"a": _reps(N), "b": _reps(N)}, bs={"a": _reps(N - 3), "b": _reps(150)})
    md = v._repr_markdown_()
    assert ":class: warning" in md and f"**Scope.** a ({R} replicates, {N} images); b ({R} replicates, {N} images)" in md
    assert "✔ a: 1.0 [" in md and "margin ≤ 5, holds" in md and "✘ b: 50.0 [" in md and "does not hold" in md
    assert v.note == "" and "**Note.**" not in md
    assert verdicts.Verdict("c", "k", HOLDS, pd.DataFrame())._repr_markdown_().count("Scope") == 0   # no table


def test_retrain_near_full_notes_subsets_that_beat_the_control():
    better = verdicts.retrain_near_full(bs={"m": _reps(270)}, full={"m": _reps(240)}, chance=10.0)
    assert better.holds is True and better.note.startswith("For m the models retrained on BS subsets are *more*")
    assert "**Note.**" in better._repr_markdown_()
    near = verdicts.retrain_near_full(bs={"m": _reps(255)}, full={"m": _reps(258)}, chance=10.0)
    assert near.holds is True and near.note == ""


def test_the_scope_reads_one_replicate_in_the_singular():
    v = verdicts.subsets_accurate(full={"m": [_hits(N)]}, bs={"m": [_hits(N)]})
    assert v.scope() == f"m (1 replicate, {N} images)"


def test_the_further_claims_verdicts_have_one_home_in_the_paper_layer():
    """One home per claim: the verdicts of these claims live in overinterp.paper.further_verdicts; the
    experiments compute only the numbers they read."""
    from overinterp.experiments import bayes_trex, factors, imagenet, imagenet_chapter, robust, shared_interest
    from overinterp.paper import further_verdicts
    moved = {"borders_verdict": (imagenet, imagenet_chapter), "sis_on_background": (shared_interest,),
             "robust_sis_sparse": (robust,), "sparse_pixels": (bayes_trex,), "imputed_verdict": (factors,)}
    for name, modules in moved.items():
        assert callable(getattr(further_verdicts, name))
        assert not any(hasattr(m, name) for m in modules), name
    assert not hasattr(imagenet_chapter, "verdict")


def test_rows_without_a_verdict_of_their_own_print_no_nan_and_the_claims_measure():
    """Input reduction's per-replicate rows have no margin or outcome; the pooled row has both. The box's
    per-model line and the registry's records must print the measure, never 'nan'."""
    from overinterp.paper import further_verdicts
    from overinterp.paper.claims import records
    rng = np.random.default_rng(0)
    rows = [{"replicate": r, "image": i, "model": m, "reduced size": float(s)}
            for r in range(3) for i in range(12) for m, s in (("original", 10 + rng.integers(5)),
                                                            ("fine-tuned", 14 + rng.integers(5)))]
    v = further_verdicts.size_verdict(pd.DataFrame(rows), min_images=8)
    text = v.per_model()
    assert "nan" not in text and text.startswith("**mean increase, per model.**")
    assert re.search(r"all replicates: \d+\.\d+ \[", text)          # the pooled estimate, not "no estimate"
    recs = records(v, "reduction_size")
    assert [r["margin"] for r in recs][:3] == ["", "", ""] and recs[-1]["margin"].startswith("≥")


def test_a_verdicts_rows_share_one_precision_and_a_derived_margin_reads_in_four_digits():
    """One precision rule per measure: a ratio near 1 in one row and 0.75 in another print to the same
    decimals; a margin derived from the paper's numbers prints four significant digits."""
    from overinterp.paper.decide import Margin, from_rows
    from overinterp.paper.intervals import Interval
    from overinterp.paper.verdicts import interval_row
    m = Margin(high=0.5)
    rows = {"A": interval_row(Interval(0.9, 0.8, 1.1), m, "share"), "B": interval_row(Interval(0.748, 0.511, 0.985), m, "share")}
    text = from_rows("claim", "criterion", rows).per_model()
    assert "A: 0.90 [0.80, 1.10]" in text and "B: 0.75 [0.51, 0.98]" in text
    assert str(Margin(low=71.875)) == "≥ 71.88" and str(Margin(high=5.0)) == "≤ 5" and str(Margin(0.43, 2)) == "0.43 to 2"
