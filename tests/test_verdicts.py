"""Verdicts (overinterp.paper.verdicts), numeric tables, the plateau criterion and profile deviations."""
import math

import pytest
import torch

from overinterp.experiments import runs as A
from overinterp.paper import numbers as paper
from overinterp.pages import plots
from overinterp.paper import verdicts as V
from overinterp.config.profiles import PROFILES, get_profile
from overinterp.zoo.train import plateaued, tail_start_loss


def test_paper_gaps_come_from_table1():
    # full -> own BS subsets: ResNet18 95.28 -> 94.76; full -> retrained on BS: VGG16 93.62 -> 92.56
    assert V.paper_gap("full", "bs") == pytest.approx(0.52)
    assert V.paper_gap("bs", "bs") == pytest.approx(1.06)
    assert paper.fmt((82.8, None)) == "82.80" and paper.fmt((92.23, 0.35)) == "92.23 ± 0.35"


def test_spread_is_mean_sample_std_and_count():
    assert V.spread([1.0, 3.0]) == (2.0, math.sqrt(2.0), 2)
    assert V.spread([5.0]) == (5.0, 0.0, 1)
    with pytest.raises(ValueError):
        V.spread([])


def test_subsets_accurate_holds_within_paper_gap_plus_replicate_spread():
    holds = V.subsets_accurate(full={"m": [90.0, 90.0]}, bs={"m": [89.6, 89.6]})
    assert holds.holds is True and holds.word == "holds"
    fails = V.subsets_accurate(full={"m": [90.0, 90.0]}, bs={"m": [80.0, 80.0]})
    assert fails.holds is False and fails.numbers.loc["m", "drop (points)"] == pytest.approx(10.0)
    # a noisy pair of replicates widens the allowed drop: 0.52 + 2 * hypot(0, std([70, 90]))
    noisy = V.subsets_accurate(full={"m": [90.0, 90.0]}, bs={"m": [70.0, 90.0]})
    assert noisy.numbers.loc["m", "allowed drop"] == pytest.approx(0.52 + 2 * math.sqrt(200))
    assert noisy.holds is True
    # one architecture failing fails the claim
    assert V.subsets_accurate(full={"a": [90.0], "b": [90.0]}, bs={"a": [90.0], "b": [50.0]}).holds is False


def test_no_transfer_compares_with_the_source_lift_above_random_and_can_be_untestable():
    paperlike = V.no_transfer(own={"s": 94.8}, others={"s": [27.6, 29.2, 27.5]}, random={"s": 10.0})
    assert paperlike.holds is True
    assert paperlike.numbers.loc["s", "share of lift transferred"] == pytest.approx((28.1 - 10) / 84.8, abs=1e-3)
    transfers = V.no_transfer(own={"s": 60.0}, others={"s": [50.0, 55.0]}, random={"s": 10.0})
    assert transfers.holds is False
    # a source no better on its own subsets than on random ones cannot test the claim
    flat = V.no_transfer(own={"s": 12.0}, others={"s": [11.0]}, random={"s": 10.0})
    assert flat.holds is None and flat.word == "cannot be tested"
    assert "cannot be tested here" in flat._repr_markdown_()


def test_retraining_verdicts():
    beats = V.retrain_beats_random(bs={"m": [80.0, 82.0]}, random={"m": [40.0, 42.0]})
    assert beats.holds is True
    assert V.retrain_beats_random(bs={"m": [41.0, 43.0]}, random={"m": [40.0, 42.0]}).holds is False
    near = V.retrain_near_full(bs={"m": [85.0, 85.0]}, full={"m": [86.0, 86.0]}, chance=10.0)
    assert near.holds is True
    assert V.retrain_near_full(bs={"m": [60.0, 60.0]}, full={"m": [86.0, 86.0]}, chance=10.0).holds is False
    # a control that learned nothing cannot show that subsets are "nearly as learnable"
    assert V.retrain_near_full(bs={"m": [11.0]}, full={"m": [10.0]}, chance=10.0).holds is None


def test_sis_size_and_confidence_kept():
    assert V.sis_size({"m": [0.01, 0.03]}, 0.99).holds is True
    assert V.sis_size({"m": [0.01, 0.03], "n": [0.2]}, 0.99).holds is False
    assert V.confidence_kept({"m": [-0.05, 0.0, -0.02]}).holds is True
    big = V.confidence_kept({"m": [0.4, 0.5, 0.45]})
    assert big.holds is False and big.numbers.loc["m", "mean drop"] == pytest.approx(0.45)
    table = V.summary({"C1": big})
    assert list(table.columns) == ["claim", "verdict", "criterion"] and table.loc[0, "verdict"] == "does not hold"


def test_accuracy_tables_are_numeric_and_formatted_only_for_display(always):
    X, Y = torch.zeros(4, 1, 2, 2), torch.tensor([0, 0, 1, 2])
    sets = {"test": (X, Y), "ood": (X, torch.tensor([0, 0, 0, 0]))}
    runs = A.accuracies([always(0), always(1)], sets)
    assert runs.to_dict("list") == {"test": [50.0, 25.0], "ood": [100.0, 0.0]}
    table = A.accuracy_table({"m": [always(0), always(1)], "one": always(0)}, sets)
    assert table.loc["m", ("test", "mean")] == pytest.approx(37.5)
    assert table.loc["m", ("ood", "std")] == pytest.approx(math.sqrt(5000))
    assert math.isnan(table.loc["one", ("test", "std")])
    assert list(dict.fromkeys(c for c, _ in table.columns)) == ["test", "ood"]  # order kept
    shown = plots.mean_std(table)
    assert shown.loc["m", "test"] == "37.50 ± 17.68" and shown.loc["one", "test"] == "50.00"
    same = plots.mean_std(A.accuracy_table({"m": [always(0), always(0)]}, sets))
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
    assert get_profile("paper").deviations() == []
    quick = get_profile("quick")
    models = " ".join(quick.deviations("models"))
    assert f"{quick.train.epochs} epochs" in models and "augmentation" in models and str(quick.train_size) in models
    assert "backward selection" not in models
    bs = " ".join(quick.deviations("backselect"))
    assert "gradient" in bs and "training images: gradient (k=16)" in bs   # the coarser engine of 4.2
    assert "Table S1" in " ".join(quick.deviations("retraining"))
    assert all(isinstance(d, str) for p in PROFILES.values() for d in p.deviations())


def test_claims_quote_the_papers_numbers_from_paper_numbers():
    """The claims' numbers are derived from overinterp.paper.numbers, rendered as the paper prints them."""
    assert "Table 1: at most 0.52 points lower on CIFAR-10)." in V.subsets_accurate({"m": [1.0]}, {"m": [1.0]}).claim
    assert "mean drop of confidence −0.035 to −0.012 on CIFAR-10)." in V.confidence_kept({"m": [0.0]}).claim
    nt = V.no_transfer({"m": 90.0}, {"m": [20.0]}, {"m": 10.0})
    assert "ResNet18's, 94.8% by itself, get 27.5–29.2% from a ResNet18 replicate" in nt.claim
    assert "the paper: 0.21)" in nt.criterion
    assert V.paper_transfer_share() == pytest.approx(((27.6 + 29.2 + 27.5) / 3 - 10.01) / (94.8 - 10.01))
    beats = V.retrain_beats_random({"m": [1.0]}, {"m": [1.0]}).claim
    assert "Table 1: 92.5–95.0% against 50.1–53.8% on CIFAR-10)" in beats   # 50.05 -> 50.1, half up as printed
    assert "at τ = 0.99 is below 5% of the image" in V.sis_size({"m": [0.01]}, 0.3).claim
    assert V._decimal(50.05) == "50.1" and V._decimal(94.97) == "95.0" and V._decimal(-0.25, 2) == "-0.25"
