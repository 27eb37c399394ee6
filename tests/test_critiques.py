"""The paper against its critiques (the chapter "Is the model reading the pixels or the mask?"): the methods
(overinterp.methods.critiques) on hand-made tensors, the experiments (overinterp.experiments.critiques) on the
tiny profile (numbers meaningless, behaviour real), the verdicts (overinterp.paper.further_verdicts) on
constructed inputs, and the new claims in ``python -m overinterp verdicts``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from overinterp.__main__ import main
from overinterp.config.context import make_run
from overinterp.engine.sis import pixel_subset, subset_size
from overinterp.experiments import claims
from overinterp.experiments import critiques as experiments_critiques
from overinterp.experiments import runs
from overinterp.experiments import subsets
from overinterp.methods import critiques as methods_critiques
from overinterp.paper import further_verdicts
from overinterp.paper import verdicts
from overinterp.paper.claims import CLAIMS
from overinterp.zoo import data
from overinterp.zoo.train import predict

NEW = ["dilated", "dilated_sis", "dilated_beats", "dilated_near", "boundary", "blank", "mask_shape", "calibration",
       "insertion"]


def _mask(h, w, *pixels):
    keep = torch.zeros(1, h, w, dtype=torch.bool)
    for r, c in pixels:
        keep[0, r, c] = True
    return keep


# ----------------------------------------------------------------------------- methods on hand-made tensors

def test_dilation_grows_each_kept_pixel_into_its_square_and_stops_at_the_edge():
    centre = _mask(5, 5, (2, 2))
    three = methods_critiques.dilate(centre, 3)[0]
    assert three.sum() == 9 and three[1:4, 1:4].all() and not three[0].any() and not three[:, 4].any()
    assert methods_critiques.dilate(centre, 5).all()                                  # 5x5 covers the whole 5x5 image
    assert torch.equal(methods_critiques.dilate(centre, 1), centre)                   # kernel 1: as it is
    corner = methods_critiques.dilate(_mask(5, 5, (0, 0)), 3)[0]
    assert corner.sum() == 4 and corner[:2, :2].all()                 # no wrap-around past the edge
    assert (methods_critiques.dilate(centre, 3) >= centre).all()                      # every kept pixel stays
    for bad in (2, 0, -3):
        with pytest.raises(ValueError, match="odd size"):
            methods_critiques.dilate(centre, bad)


def test_boundary_is_the_ring_of_masked_pixels_that_touch_a_kept_one():
    ring = methods_critiques.boundary(_mask(5, 5, (2, 2)))[0]
    assert ring.sum() == 8 and not ring[2, 2] and ring[1, 1] and ring[3, 3]
    pair = _mask(5, 5, (2, 1), (2, 2))
    assert methods_critiques.boundary(pair).sum() == 10 and not (methods_critiques.boundary(pair) & pair).any()
    parts = methods_critiques.regions(pair)
    assert parts.shape == (1, 3, 5, 5) and torch.equal(parts.sum(1), torch.ones(1, 5, 5, dtype=torch.long))
    assert not methods_critiques.boundary(torch.zeros(1, 4, 4, dtype=torch.bool)).any()    # nothing kept: no edge


def test_attribution_shares_sum_to_one_and_the_area_shares_count_pixels():
    keep = _mask(5, 5, (2, 2)).expand(3, -1, -1)
    attr = torch.rand(3, 5, 5, generator=torch.Generator().manual_seed(0)) - 0.5     # signs are taken as |a|
    shares = methods_critiques.attribution_shares(attr, keep)
    assert shares.shape == (3, 3) and torch.allclose(shares.sum(1), torch.ones(3, dtype=torch.float64))
    area = methods_critiques.attribution_shares(torch.ones_like(attr), keep)[0]
    assert torch.allclose(area, torch.tensor([1, 8, 16], dtype=torch.float64) / 25)
    only_kept = torch.zeros(1, 5, 5)
    only_kept[0, 2, 2] = 3.0
    assert methods_critiques.attribution_shares(only_kept, keep[:1])[0].tolist() == [1.0, 0.0, 0.0]
    assert torch.isnan(methods_critiques.attribution_shares(torch.zeros(1, 5, 5), keep[:1])).all()


def test_matched_random_keep_keeps_the_count_per_image_and_is_seeded():
    keep = torch.zeros(4, 6, 6, dtype=torch.bool)
    keep[0, :2] = True                                                 # 12 pixels
    keep[1, 0, 0] = True                                               # 1
    keep[3] = True                                                     # all 36; image 2 keeps none
    got = methods_critiques.matched_random_keep(keep, seed=3)
    assert got.flatten(1).sum(1).tolist() == [12, 1, 0, 36]
    assert torch.equal(got, methods_critiques.matched_random_keep(keep, seed=3))
    assert not torch.equal(got[0], methods_critiques.matched_random_keep(keep, seed=4)[0])
    assert not torch.equal(got[0], keep[0])                            # the places are drawn, not copied


def test_top_keep_keeps_the_highest_scoring_features_as_many_as_a_pixel_subset():
    scores = torch.arange(25.0).view(1, 5, 5)
    keep = methods_critiques.top_keep(scores, 0.1)
    assert keep.sum() == subset_size(25, 0.1) == 3 and keep[0, 4, 2:].all()
    blocks = torch.zeros(1, 8, 8)
    blocks[0, 4:, :4] = 1.0                                            # the lower-left 4x4 block scores most
    keep = methods_critiques.top_keep(blocks, 0.25, block=4)
    assert keep.sum() == 16 and keep[0, 4:, :4].all()


def test_expected_calibration_error_of_calibrated_and_of_overconfident_predictions():
    conf = np.full(100, 0.95)
    calibrated = np.r_[np.ones(95), np.zeros(5)]
    assert methods_critiques.expected_calibration_error(conf, calibrated) == pytest.approx(0.0, abs=1e-12)
    overconfident = np.r_[np.ones(50), np.zeros(50)]
    assert methods_critiques.expected_calibration_error(conf, overconfident) == pytest.approx(0.45)
    # two bins by hand: 0.25 (half correct: gap 0.25) and 0.85 (all correct: gap 0.15), 40 and 60 images
    conf2 = np.r_[np.full(40, 0.25), np.full(60, 0.85)]
    ok2 = np.r_[np.ones(20), np.zeros(20), np.ones(60)]
    assert methods_critiques.expected_calibration_error(conf2, ok2) == pytest.approx(0.4 * 0.25 + 0.6 * 0.15)
    r = methods_critiques.reliability(conf2, ok2, bins=10)
    assert len(r) == 10 and r["images"].sum() == 100 and r.loc[2, "images"] == 40 and r.loc[8, "accuracy"] == 1.0
    assert r["accuracy"].isna().sum() == 8                             # empty bins have no accuracy
    assert methods_critiques.reliability([1.0, 0.0], [1, 0], bins=15)["images"].tolist()[::14] == [1, 1]   # the ends fall inside


def test_smoothgrad_of_a_linear_model_is_its_weights_whatever_the_noise():
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 4 * 4, 3))
    x, t = torch.randn(5, 2, 4, 4), torch.tensor([0, 1, 2, 0, 1])
    got = methods_critiques.smoothgrad(lin, x, t, n=4, sigma=1.0)
    w = lin[1].weight.detach().view(3, 2, 4, 4).abs().sum(1)           # |d logit_t / dx| summed over channels
    assert torch.allclose(got, w[t], atol=1e-6)
    relu = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(64, 3))
    a, b = methods_critiques.smoothgrad(relu, x, t, n=4, sigma=0.5, seed=1), methods_critiques.smoothgrad(relu, x, t, n=4, sigma=0.5, seed=1)
    assert torch.equal(a, b) and not torch.equal(a, methods_critiques.smoothgrad(relu, x, t, n=4, sigma=0.5, seed=2))


# ----------------------------------------------------------------------------- verdicts on constructed inputs

N = 300


def _hits(k, n=N):
    return np.r_[np.ones(k), np.zeros(n - k)]


def test_dilation_verdict_holds_on_kept_predictions_and_fails_on_a_collapse():
    undilated = {"m": [_hits(k) for k in (150, 160, 170)]}
    assert further_verdicts.dilation_keeps_prediction(undilated, {"m": [_hits(k) for k in (152, 163, 171)]}, 3, "BS subsets").word \
        == verdicts.HOLDS
    v = further_verdicts.dilation_keeps_prediction(undilated, {"m": [_hits(k) for k in (10, 15, 20)]}, 3, "BS subsets")
    assert v.word == verdicts.FAILS and v.numbers.loc["m", "change (points)"] == pytest.approx(-145 / 3)
    # SIS: each replicate its own images; a model without a confident image cannot test it
    sis = further_verdicts.dilation_keeps_prediction({"m": [np.ones(40), np.ones(25)], "none": [np.zeros(0), np.zeros(0)]},
                                       {"m": [np.ones(40), np.ones(25)], "none": [np.zeros(0), np.zeros(0)]}, 3, "SIS",
                                       paired_images=False)
    assert sis.numbers.loc["m", "outcome"] == verdicts.HOLDS and sis.numbers.loc["none", "outcome"] == verdicts.UNTESTABLE
    assert sis.numbers.loc["m", "images"] == 65


def test_dilated_retraining_verdicts_read_section_4_2s_margins():
    full = {"m": [_hits(k) for k in (270, 275, 280)]}
    beats, near = further_verdicts.dilated_retraining_verdicts({"m": [_hits(k) for k in (265, 270, 272)]},
                                                 {"m": [_hits(k) for k in (90, 95, 100)]}, full, chance=10.0, kernel=3)
    assert (beats.word, near.word) == (verdicts.HOLDS, verdicts.HOLDS) and "dilated" in beats.claim and "3×3" in near.criterion
    beats, near = further_verdicts.dilated_retraining_verdicts({"m": [_hits(k) for k in (90, 95, 100)]},
                                                 {"m": [_hits(k) for k in (92, 94, 98)]}, full, chance=10.0, kernel=3)
    assert (beats.word, near.word) == (verdicts.FAILS, verdicts.FAILS)


def test_boundary_blank_shape_calibration_and_insertion_verdicts_decide_both_ways():
    reps = lambda v: [np.full(N, x) for x in v]                                                     # noqa: E731
    assert further_verdicts.saliency_on_boundary({"m": reps((0.30, 0.32, 0.28))}, {"m": reps((0.10, 0.11, 0.09))}).word == verdicts.HOLDS
    assert further_verdicts.saliency_on_boundary({"m": reps((0.05, 0.06, 0.04))}, {"m": reps((0.10, 0.11, 0.09))}).word == verdicts.FAILS
    assert further_verdicts.blank_uninformative({"m, mean pixel": [0.11, 0.12, 0.10]}, 10).word == verdicts.HOLDS
    v = further_verdicts.blank_uninformative({"m, mean pixel": [0.90, 0.95, 0.92]}, 10, {"m, mean pixel": "Bag"})
    assert v.word == verdicts.FAILS and v.numbers.loc["m, mean pixel", "predicted class"] == "Bag"
    assert further_verdicts.blank_uninformative({"m, black": [0.15, 0.18, 0.22]}, 10).numbers["margin"].iloc[0] == "≤ 0.2"
    prior = {"m": reps((0.1, 0.1, 0.1))}
    assert further_verdicts.mask_shape_leaks({"m": [_hits(k) for k in (200, 210, 220)]}, prior, "uniform noise").word == verdicts.HOLDS
    assert further_verdicts.mask_shape_leaks({"m": [_hits(k) for k in (3, 4, 5)]}, prior, "uniform noise").word == verdicts.FAILS
    cal = further_verdicts.masked_miscalibrated({"m": [0.30, 0.32, 0.31]}, {"m": [0.05, 0.06, 0.04]}, images=N)
    assert cal.word == verdicts.HOLDS and cal.numbers.loc["m", "ECE increase (points)"] == pytest.approx(26.0)
    assert further_verdicts.masked_miscalibrated({"m": [0.01, 0.02, 0.01]}, {"m": [0.05, 0.06, 0.04]}, images=N).word == verdicts.FAILS
    bs = {"m": [_hits(k) for k in (240, 245, 250)]}
    assert further_verdicts.search_beats_saliency(bs, {"m": [_hits(k) for k in (60, 65, 70)]}, 0.05).word == verdicts.HOLDS
    assert further_verdicts.search_beats_saliency(bs, {"m": [_hits(k) for k in (238, 246, 249)]}, 0.05).word == verdicts.FAILS


def test_the_new_claims_are_registered_with_their_chapter_and_a_measure_each():
    from overinterp.config.chapters import CHAPTERS
    assert [c for c in CLAIMS if CLAIMS[c].chapter == "07b_critiques"] == NEW
    assert "07b_critiques" in CHAPTERS and all(CLAIMS[c].part == "I" for c in NEW)
    parts = [c.part for c in CLAIMS.values()]
    assert parts == sorted(parts, key=["I", "II", "III"].index)        # the parts stay together
    assert all(sum(c in ids for ids in claims.MEASURES) == 1 for c in NEW)


# ----------------------------------------------------------------------------- experiments on the tiny profile

@pytest.fixture(scope="module")
def run():
    return make_run(profile="tiny", device="cpu")


@pytest.fixture(scope="module")
def dilation(run):
    return experiments_critiques.dilation(run, (3, 5), 0.05)


def test_check_kernels_names_the_parameter():
    assert experiments_critiques.check_kernels((3, 5.0)) == (3, 5) and experiments_critiques.check_kernels([7]) == (7,)
    for bad in ((2,), (1, 3), (3.5,), ()):
        with pytest.raises(ValueError, match="parameter kernels="):
            experiments_critiques.check_kernels(bad)


def test_dilation_grows_the_subsets_and_matches_the_random_masks_count(run, dilation):
    X, _ = runs.selection(run, "test").load()
    bs = dilation[dilation["subset"] == experiments_critiques.BS]
    assert set(bs["kernel"]) == {1, 3, 5} and set(bs["mask"]) == set(experiments_critiques.MASKS)
    per = bs.pivot_table(index=["model", "replicate", "image", "kernel"], columns="mask", values="kept pixels (%)")
    assert np.allclose(per[experiments_critiques.MASKS[0]], per[experiments_critiques.MASKS[1]])             # random masks: as many pixels
    grows = per[experiments_critiques.MASKS[0]].unstack("kernel")
    assert (grows[3] >= grows[1]).all() and (grows[5] >= grows[3]).all() and (grows[3] > grows[1]).any()
    # kernel 1 is chapter 4's subset: the model keeps the full image's class exactly where it predicts it there
    model = runs.zoo(run)["resnet20"][0]
    res = runs.backselect_set(run, "resnet20", runs.selection(run, "test"), seed=run.seed)
    want = (predict(model, pixel_subset(res, X, 0.05)[0]).argmax(1) == res.pred).double().numpy()
    got = bs[(bs["model"] == "ResNet20") & (bs["replicate"] == 0) & (bs["kernel"] == 1) & (bs["mask"] == experiments_critiques.MASKS[0])]
    assert np.array_equal(got.sort_values("image")["prediction kept"].to_numpy(), want)
    assert dilation["prediction kept"].isin([0.0, 1.0]).all() and dilation["confidence"].between(0, 1).all()


def test_the_sis_rows_are_each_replicates_confident_images(run, dilation):
    X, Y = runs.selection(run, "test").load()
    tau = run.profile.sis_threshold
    for r, model in enumerate(runs.zoo(run)["cnn"]):
        rows = dilation[(dilation["subset"] == experiments_critiques.SIS) & (dilation["model"] == "small CNN")
                        & (dilation["replicate"] == r) & (dilation["kernel"] == 1) & (dilation["mask"] == experiments_critiques.MASKS[0])]
        assert len(rows) and set(rows["image"]) <= set(runs.confident(model, X, Y, tau).tolist())
    bs, sis = experiments_critiques.dilation_verdicts(dilation, 3)
    assert bs.word in verdicts.OUTCOMES and sis.word in verdicts.OUTCOMES and list(bs.numbers.index) == ["small CNN", "ResNet20"]


def test_dilated_retraining_reuses_chapter_5s_full_image_control(run):
    got = experiments_critiques.dilated_retraining(run, 3, 0.05)
    subs = subsets.subsets(run, "cnn", 0.05, train=True)
    full = subsets.retrain_on_subsets(run, "cnn", "full", False, 0.05, subs)
    n = len(runs.selection(run, "test").load()[1])
    assert set(got) == {"small CNN", "ResNet20"} and set(got["small CNN"]) == {"bs", "random", "full"}
    assert all(len(v) == run.profile.replicates and all(len(c) == n for c in v) for v in got["small CNN"].values())
    assert all(np.array_equal(a, runs.correct(m, subs["test"]["full"][0], subs["test"]["labels"]))
               for a, m in zip(got["small CNN"]["full"], full))
    beats, near = experiments_critiques.retraining_verdicts(run, got)
    assert beats.word in verdicts.OUTCOMES and near.word in verdicts.OUTCOMES


def test_saliency_shares_split_each_map_and_its_area_into_three(run):
    shares = experiments_critiques.saliency_shares(run, 0.05, images=8, samples=2, sigma=0.15)
    total = shares.groupby(["model", "replicate", "image"])[["attribution share", "area share"]].sum()
    assert len(total) == 2 * run.profile.replicates * 8 and np.allclose(total, 1.0)
    assert set(shares["region"]) == set(methods_critiques.REGIONS)
    assert experiments_critiques.boundary_verdict(shares).word in verdicts.OUTCOMES


def test_blank_inputs_and_the_mean_pixel_shape_are_the_fully_masked_image(run):
    blank = experiments_critiques.blank_inputs(run)
    assert len(blank) == 2 * run.profile.replicates * 2 and set(blank["mask"]) == {"mean pixel", "black"}
    assert blank["confidence"].between(0.1, 1).all()                  # the top of ten probabilities
    shape = experiments_critiques.mask_shape(run, 0.05)
    # the profile masks with the mean pixel: filled with it, every mask-shape input is the blank image
    mean = shape[shape["fill"] == "mean pixel"]
    for (m, r), g in mean.groupby(["model", "replicate"]):
        cls = blank[(blank["model"] == m) & (blank["replicate"] == r) & (blank["mask"] == "mean pixel")]["class"]
        assert g["shape class"].nunique() == 1
        assert data.load(run.dataset, "test").classes[int(g["shape class"].iloc[0])] == cls.iloc[0]
    assert shape["class prior"].between(0, 1).all() and set(shape["fill"]) == set(experiments_critiques.FILLS)
    assert experiments_critiques.mask_shape_verdict(shape).word in verdicts.OUTCOMES and experiments_critiques.blank_verdict(run, blank).word in verdicts.OUTCOMES


def test_calibration_reads_full_images_and_both_subsets(run):
    images = experiments_critiques.calibration_images(run, 0.05)
    X, Y = runs.selection(run, "test").load()
    model = runs.zoo(run)["cnn"][1]
    full = images[(images["model"] == "small CNN") & (images["replicate"] == 1) & (images["input"] == experiments_critiques.INPUTS[0])]
    assert np.array_equal(full.sort_values("image")["correct"].to_numpy(), runs.correct(model, X, Y))
    errors = experiments_critiques.calibration_errors(images, 15, run.profile.sis_threshold)
    assert len(errors) == 2 * run.profile.replicates * 3 and errors["ECE (%)"].between(0, 100).all()
    bins = experiments_critiques.reliability_bins(images, 15)
    assert (bins.groupby(["model", "input"])["images"].sum() == run.profile.replicates * len(Y)).all()
    v = experiments_critiques.calibration_verdict(errors, len(Y))
    assert v.word in verdicts.OUTCOMES and len(v.numbers) == 2 * 2


def test_insertion_curves_end_at_the_full_image_and_pass_chapter_4s_subsets(run):
    curves = experiments_critiques.insertion(run, (0.02, 1.0), 0.05)
    assert sorted(curves["fraction"].unique()) == [0.02, 0.05, 1.0] and set(curves["order"]) == set(experiments_critiques.ORDERS)
    at_full = curves[curves["fraction"] == 1.0].pivot_table(index=["model", "replicate", "image"], columns="order",
                                                            values="correct")
    assert (at_full.nunique(axis=1) == 1).all()                       # every order keeps every pixel at 100%
    acc = subsets.subset_correct(run, "cnn", runs.zoo(run)["cnn"], 0.05)["bs"]["test"]
    bs = curves[(curves["model"] == "small CNN") & (curves["order"] == experiments_critiques.ORDERS[0]) & (curves["fraction"] == 0.05)]
    for r, want in enumerate(acc):
        assert np.array_equal(bs[bs["replicate"] == r].sort_values("image")["correct"].to_numpy(), want)
    assert experiments_critiques.insertion_verdict(curves, 0.05).word in verdicts.OUTCOMES


def test_the_verdicts_command_prints_every_new_claim(run, capsys):
    vs = claims.verdicts(run, only=NEW, progress=False)
    assert list(vs) == NEW and all(v.word in verdicts.OUTCOMES for v in vs.values())
    rows = claims.table(vs)
    assert {r["claim"] for r in rows} == set(NEW) and all(r["chapter"] == "07b_critiques" for r in rows)
    assert all(isinstance(r["estimate"], float) or r["estimate"] is None for r in rows)
    assert main(["verdicts", "--profile", "tiny", "--device", "cpu", "--only", "blank", "mask_shape"]) == 0
    out = capsys.readouterr().out
    assert "blank (SIS reference code (sis.py))" in out and "mask_shape (Jain et al. 2022" in out
    assert out.count("Part I:") == 1
