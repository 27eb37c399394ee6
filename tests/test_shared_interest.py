"""Shared Interest (overinterp.methods.shared_interest and overinterp.experiments.shared_interest): the three coverage scores on hand-drawn masks,
binarisation of a known saliency map, the silhouette of a hand-made image, the eight cases."""
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from overinterp.experiments import shared_interest as experiments_shared_interest
from overinterp.methods import shared_interest as methods_shared_interest
from overinterp.paper import further_verdicts


def _mask(rows):
    """A (1, H, W) bool mask from strings of '#' (in) and '.' (out)."""
    return torch.tensor([[[c == "#" for c in r] for r in rows]])


G = _mask(["####",
           "####",
           "....",
           "...."])          # 8 pixels
E = _mask(["..##",
           "..##",
           "..##",
           "...."])          # 6 pixels, 4 of them in G


def test_scores_of_overlapping_masks_by_their_formulas():
    assert methods_shared_interest.iou(G, E).item() == pytest.approx(4 / 10)                   # |G ∩ E| / |G ∪ E|
    assert methods_shared_interest.ground_truth_coverage(G, E).item() == pytest.approx(4 / 8)  # / |G|
    assert methods_shared_interest.explanation_coverage(G, E).item() == pytest.approx(4 / 6)   # / |E|


def test_identical_masks_score_one_and_disjoint_masks_zero():
    assert [f(G, G).item() for f in (methods_shared_interest.iou, methods_shared_interest.ground_truth_coverage, methods_shared_interest.explanation_coverage)] == [1, 1, 1]
    other = _mask(["....", "....", "##..", "##.."])
    assert [f(G, other).item() for f in (methods_shared_interest.iou, methods_shared_interest.ground_truth_coverage, methods_shared_interest.explanation_coverage)] == [0, 0, 0]


def test_empty_regions_follow_the_stated_convention_and_never_give_nan():
    empty = torch.zeros_like(G)
    only_g = methods_shared_interest.coverage(G, empty)          # no explanation: nothing of G is covered
    only_e = methods_shared_interest.coverage(empty, E)          # no object: nothing of E is on it
    both = methods_shared_interest.coverage(empty, empty)        # equal regions
    assert only_g[list(methods_shared_interest.METRICS)].to_numpy().tolist() == [[0, 0, 0]]
    assert only_e[list(methods_shared_interest.METRICS)].to_numpy().tolist() == [[0, 0, 0]]
    assert both[list(methods_shared_interest.METRICS)].to_numpy().tolist() == [[1, 1, 1]]
    assert (both["|G|"].item(), only_e["|E|"].item()) == (0, 6)


def test_scores_are_per_image_of_a_batch_and_shapes_must_match():
    batch_g, batch_e = torch.cat([G, G]), torch.cat([E, G])
    assert methods_shared_interest.iou(batch_g, batch_e).tolist() == pytest.approx([0.4, 1.0])
    with pytest.raises(ValueError, match="shape"):
        methods_shared_interest.iou(G, torch.zeros(1, 3, 3, dtype=torch.bool))


def test_binarize_keeps_pixels_above_mean_plus_one_std_of_the_normalised_map():
    # values 0..9 on a 1x10 map, times 2 plus 5 (normalisation undoes the scale and shift):
    # normalised k/9, mean 0.5, population std 0.3191 -> threshold 0.819: k >= 7.37 -> 8 and 9
    s = (torch.arange(10.0) * 2 + 5).view(1, 1, 10)
    assert methods_shared_interest.binarize(s).flatten().nonzero().flatten().tolist() == [8, 9]
    assert methods_shared_interest.binarize(s, n_std=0).flatten().nonzero().flatten().tolist() == [5, 6, 7, 8, 9]   # >= 0.5


def test_binarize_percentile_option_and_a_constant_map_is_empty():
    s = torch.arange(10.0).view(1, 1, 10)
    # the 0.8 quantile of k/9 (linear interpolation) is 7.2/9: pixels 8 and 9
    assert methods_shared_interest.binarize(s, "percentile", percentile=0.8).flatten().nonzero().flatten().tolist() == [8, 9]
    assert not methods_shared_interest.binarize(torch.full((1, 3, 3), 4.0)).any()
    with pytest.raises(ValueError, match="how"):
        methods_shared_interest.binarize(s, "otsu")


def test_silhouette_fills_dark_holes_inside_the_garment_but_not_the_open_background():
    img = torch.tensor([[[0, 0, 0, 0, 0, 0],
                         [0, .9, .9, .9, 0, 0],
                         [0, .9, 0, .9, 0, 0],        # a dark hole enclosed by the garment: in G
                         [0, .9, .9, .9, .03, 0],     # faint (<= level) pixel on the open background: not in G
                         [0, .9, 0, 0, 0, 0],         # a notch open to the border: not in G
                         [0, .9, .2, 0, 0, 0]]])
    want = _mask(["......",
                  ".###..",
                  ".###..",
                  ".###..",
                  ".#....",
                  ".##..."])
    assert torch.equal(methods_shared_interest.silhouette(img, level=0.05), want)
    assert methods_shared_interest.silhouette(img, level=0.01)[0, 3, 4]     # at a lower level the faint pixel is garment


def test_box_region_marks_the_pixels_of_each_box_end_excluded_and_clipped():
    boxes = methods_shared_interest.box_region([[1, 0, 3, 2], [2, 2, 9, 9]], (4, 4))
    assert torch.equal(boxes[0:1], _mask([".##.", ".##.", "....", "...."]))
    assert torch.equal(boxes[1:2], _mask(["....", "....", "..##", "..##"]))


def test_cases_are_correctness_times_the_corners_of_the_two_coverages():
    correct = [True, True, True, True, False, False, False, False]
    gtc = [0.9, 0.2, 0.7, 0.1, 0.5, 0.49, 0.8, 0.0]
    ec = [0.8, 0.9, 0.1, 0.3, 0.5, 0.6, 0.2, 0.0]
    assert methods_shared_interest.cases(correct, gtc, ec).tolist() == [
        "Human aligned", "Sufficient subset", "Sufficient context", "Context dependent",
        "Confuser", "Insufficient subset", "Context confusion", "Distractor"]
    assert methods_shared_interest.cases([True], [0.6], [0.6], high=0.7).tolist() == ["Context dependent"]
    assert len({c.name for c in methods_shared_interest.CASES}) == 8


def _table():
    rows = []
    for rep, (ious, ecs) in enumerate([([0.9, 0.1, 0.05], [0.9, 0.2, 0.0]), ([0.8, 0.7, 0.3], [0.9, 0.8, 0.1])]):
        for i, (v, e) in enumerate(zip(ious, ecs)):
            rows.append({"model": "m", "method": "x", "replicate": rep, "image": i, methods_shared_interest.IOU: v, methods_shared_interest.GTC: v, methods_shared_interest.EC: e,
                         "correct": True})
    t = pd.DataFrame(rows)
    return t.assign(case=methods_shared_interest.cases(t["correct"], t[methods_shared_interest.GTC], t[methods_shared_interest.EC]))


def test_case_counts_are_per_replicate_with_mean_and_std_and_every_case_present():
    counts = experiments_shared_interest.case_counts(_table())
    assert counts[("Human aligned", "mean")].item() == 1.5          # 1 and 2 images
    assert counts[("Human aligned", "std")].item() == pytest.approx(np.std([1, 2], ddof=1))
    assert counts[("Context dependent", "mean")].item() == 1.5      # 2 and 1
    assert counts[("Distractor", "mean")].item() == 0
    assert [c for c, s in counts.columns[::2]] == [c.name for c in methods_shared_interest.CASES]


def test_ranked_orders_a_case_by_its_score():
    t = _table()
    assert ranked_images(t, "Human aligned") == [(0, 0.9), (0, 0.8), (1, 0.7)]
    assert ranked_images(t, "Context dependent") == [(2, 0.05), (1, 0.1), (2, 0.3)]   # lowest IoU first
    t["|E|"] = [5, 5, 0, 5, 5, 5]                    # image 2 of replicate 0 has an empty region: last
    assert ranked_images(t, "Context dependent") == [(1, 0.1), (2, 0.3), (2, 0.05)]


def ranked_images(t, case):
    return [(int(r.image), r[methods_shared_interest.IOU]) for _, r in experiments_shared_interest.ranked(t, case, 5).iterrows()]


def test_saliency_map_of_a_linear_model_is_its_weights_and_integrated_gradients_is_weight_times_input():
    torch.manual_seed(0)
    lin = nn.Sequential(nn.Flatten(), nn.Linear(4, 2, bias=False))
    x = torch.randn(3, 1, 2, 2)
    target = torch.tensor([0, 1, 1])
    w = lin[1].weight.detach()
    sal = methods_shared_interest.saliency_map(lin, x, "saliency", target)
    assert torch.allclose(sal, w[target].abs().view(3, 2, 2))
    ig = methods_shared_interest.saliency_map(lin, x, "integrated_gradients", target, n_steps=4)
    assert torch.allclose(ig, (w[target] * x.flatten(1)).abs().view(3, 2, 2), atol=1e-5)
    with pytest.raises(ValueError, match="method"):
        methods_shared_interest.saliency_map(lin, x, "lime", target)


def test_verdict_holds_only_when_sis_lie_on_the_garment_less_than_random_pixels():
    def table(ec, g_pixels):
        n = len(ec)
        return pd.DataFrame({"model": "m", "replicate": [i % 2 for i in range(n)], "method": "SIS", "has": True,
                             "correct": True, "|E|": 5, "|G|": g_pixels, methods_shared_interest.EC: ec})
    def verdict(t):
        return further_verdicts.sis_on_background(experiments_shared_interest.background_coverage(t, "SIS", pixels=784), 0.99)
    # replicate = image index % 2: both replicates see 0.2 and 0.3 (they agree); random pixels: 0.5
    below = verdict(table([0.2, 0.2, 0.3, 0.3] * 5, 392))
    above = verdict(table([0.8, 0.8, 0.9, 0.9] * 5, 392))
    mixed = verdict(table([0.1, 0.9] * 3, 392))     # replicates disagree
    assert below.holds is True and above.holds is False and mixed.word == "inconclusive at this scale"
    row = below.numbers.loc["m"]
    assert row["random pixels (|G| / HW)"] == pytest.approx(0.5) and row["EC − random"] == pytest.approx(-0.25)
    assert row["replicates"] == 2 and row["images"] == 20 and row["95% high"] < 0


def test_background_coverage_keeps_the_correct_images_with_a_non_empty_sis_of_the_method():
    # counted: the first and the last row; then no SIS, misclassified, an empty SIS, another method
    t = pd.DataFrame({"model": "m", "replicate": [0, 0, 1, 1, 1, 1], "method": ["SIS"] * 4 + ["BS", "SIS"],
                      "has": [True, False, True, True, True, True], "correct": [True, True, False, True, True, True],
                      "|E|": [5, 5, 5, 0, 5, 5], "|G|": [392, 392, 392, 392, 392, 196],
                      methods_shared_interest.EC: [0.2, 0.3, 0.4, 0.5, 0.6, 0.5]})
    c = experiments_shared_interest.background_coverage(t, "SIS", pixels=784)
    assert c.to_dict("list") == {"model": ["m", "m"], "replicate": [0, 1], "explanation coverage": [0.2, 0.5],
                                 "random pixels (|G| / HW)": [0.5, 0.25]}
    assert experiments_shared_interest.background_coverage(t.assign(**{"|E|": 0}), "SIS").empty


def test_the_silhouette_needs_fashion_mnist_and_says_why():
    experiments_shared_interest.check_dataset("fashion-mnist")
    with pytest.raises(ValueError, match="parameter dataset='cifar10': the silhouette ground truth needs fashion-mnist"):
        experiments_shared_interest.check_dataset("cifar10")


def test_method_names_carry_tau_and_the_subset_size():
    from overinterp.config.profiles import SharedInterestConfig
    assert experiments_shared_interest.sis_name(0.99) == "SIS (τ = 0.99)" and experiments_shared_interest.bs_name(SharedInterestConfig(frac=0.05)) == "BS 5% subset"


def test_score_stats_average_each_replicate_then_give_mean_and_std_over_replicates():
    t = pd.DataFrame({"method": "m", "model": "a", "replicate": [0, 0, 1, 1], "has": [True, True, True, False],
                      methods_shared_interest.IOU: [0.2, 0.4, 0.5, 0.9], methods_shared_interest.GTC: 0.5, methods_shared_interest.EC: 0.5, "|E|": [10, 30, 40, 0]})
    per_rep, stats = experiments_shared_interest.score_stats(t, pixels=100)
    assert per_rep[methods_shared_interest.IOU].tolist() == pytest.approx([0.3, 0.5])
    assert per_rep["|E| (% of pixels)"].tolist() == pytest.approx([20.0, 40.0])
    assert stats.loc[("m", "a"), (methods_shared_interest.IOU, "mean")] == pytest.approx(0.4)


def test_case_counts_shown_long_keep_every_value_and_the_order_of_models_cases_and_methods():
    from overinterp.pages import plots
    counts = experiments_shared_interest.case_counts(_table())
    wide = plots.mean_std(counts, digits=1).rename_axis(columns="case")
    long = plots.long_by(wide, "method")
    assert list(long.columns) == list(dict.fromkeys(wide.index.get_level_values("method")))
    assert long.index.names == ["model", "case"]
    assert list(dict.fromkeys(long.index.get_level_values("case"))) == list(wide.columns)
    assert list(dict.fromkeys(long.index.get_level_values("model"))) == list(
        dict.fromkeys(wide.index.get_level_values("model")))
    for (model, method), row in wide.iterrows():
        for case, value in row.items():
            assert long.loc[(model, case), method] == value
