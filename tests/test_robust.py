"""Adversarially robust models (overinterp.experiments.robust, paper 4.5): PGD on cases whose answer is known
by hand, adversarial training through train.fit's perturb hook, SIS sizes and the verdicts (section 4.5's in
overinterp.paper.further_verdicts)."""
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from overinterp.experiments import robust as robust_module
from overinterp.pages import robust as pages_robust
from overinterp.paper import further_verdicts
from overinterp.pages import sis_size_plots
from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import sis_size_pct
from overinterp.zoo.train import TrainConfig
from overinterp.zoo.train import fit

MEAN, STD = (0.5,), (0.25,)


def _linear(w: torch.Tensor, b: float = 0.0) -> nn.Module:
    """Two classes on standardised 1x4x4 images: logit 0 is 0, logit 1 is w . x + b."""
    lin = nn.Linear(w.numel(), 2)
    with torch.no_grad():
        lin.weight.zero_(), lin.bias.zero_()
        lin.weight[1] = w.flatten()
        lin.bias[1] = b
    return nn.Sequential(nn.Flatten(), lin)


def _norm(p):
    return (p - MEAN[0]) / STD[0]


W = torch.tensor([0.5, -1.0, 2.0, -0.25] * 4).view(1, 4, 4)


@pytest.mark.parametrize("random_start", [False, True])
@pytest.mark.parametrize("loss", ["ce", "margin"])
def test_pgd_on_a_linear_model_moves_every_pixel_by_epsilon_against_the_label(random_start, loss):
    # the worst l-inf perturbation of w . x is -eps sign(w) (pixel units): the label's logit falls by
    # exactly eps ||w||_1 / std (the model reads standardised pixels)
    model, eps = _linear(W), 0.1
    x = _norm(torch.full((3, 1, 4, 4), 0.5) + 0.1 * torch.rand(3, 1, 4, 4))
    y = torch.ones(3, dtype=torch.long)
    xa = robust_module.pgd(model, x, y, eps, steps=8, step_size=eps / 2, mean=MEAN, std=STD, random_start=random_start,
               loss=loss)
    assert ((xa - x) * STD[0]).allclose(-eps * W.sign().expand_as(x), atol=1e-6)
    drop = model(x)[:, 1] - model(xa)[:, 1]
    assert drop.detach().allclose(torch.full((3,), eps * W.abs().sum().item() / STD[0]), atol=1e-4)


def test_pgd_stays_in_the_pixel_range_and_the_epsilon_ball():
    # pixels at 0.02 pushed down stop at 0; at 0.97 pushed up stop at 1 (the l-inf corner, clipped)
    model, eps = _linear(W), 0.1
    p = torch.where(W > 0, 0.02, 0.97).expand(1, 1, 4, 4)
    xa = robust_module.pgd(model, _norm(p), torch.tensor([1]), eps, steps=5, step_size=0.05, mean=MEAN, std=STD)
    pa = xa * STD[0] + MEAN[0]
    assert pa.allclose(torch.where(W > 0, 0.0, 1.0).expand(1, 1, 4, 4), atol=1e-6)
    conv = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3))
    x = _norm(torch.rand(8, 1, 4, 4))
    xa = robust_module.pgd(conv, x, torch.randint(0, 3, (8,)), eps, steps=3, step_size=0.04, mean=MEAN, std=STD)
    d, pa = (xa - x) * STD[0], xa * STD[0] + MEAN[0]
    assert d.abs().max() <= eps + 1e-6 and pa.min() >= -1e-6 and pa.max() <= 1 + 1e-6


def test_pgd_moves_on_gradients_below_captums_zero_threshold():
    # a model whose cross-entropy gradient is ~1e-9 (Captum would leave such pixels alone)
    model, eps = _linear(W * 1e-8), 0.1
    x = _norm(torch.full((2, 1, 4, 4), 0.5))
    xa = robust_module.pgd(model, x, torch.ones(2, dtype=torch.long), eps, steps=2, step_size=eps, mean=MEAN, std=STD,
               random_start=False)
    assert ((xa - x) * STD[0]).allclose(-eps * W.sign().expand_as(x), atol=1e-6)


def test_pgd_keeps_the_models_mode_and_accumulates_no_parameter_gradient():
    model = _linear(W)
    model.train()
    robust_module.pgd(model, _norm(torch.rand(2, 1, 4, 4)), torch.ones(2, dtype=torch.long), 0.1, 2, 0.05, MEAN, STD)
    assert model.training and all(p.grad is None for p in model.parameters())
    x = _norm(torch.rand(2, 1, 4, 4))
    assert robust_module.pgd(model, x, torch.ones(2, dtype=torch.long), 0.0, 2, 0.05, MEAN, STD) is x
    for bad in [dict(epsilon=-0.1), dict(steps=-1), dict(loss="l2")]:
        kw = dict(epsilon=0.1, steps=1, step_size=0.05, loss="ce") | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            robust_module.pgd(model, x, torch.ones(2, dtype=torch.long), mean=MEAN, std=STD, **kw)


def test_attack_correct_counts_an_image_robust_only_when_its_margin_exceeds_epsilon_times_the_l1_norm():
    # logit 1 minus logit 0 = w . x; the attack lowers it by eps ||w||_1 / std = 0.1 * 15 / 0.25 = 6
    model, eps = _linear(W), 0.1
    margins = torch.tensor([8.0, 5.0, -0.5, 7.0, 1.0])        # wanted w . x for 5 images
    x = (margins / (W.flatten() @ W.flatten())).view(-1, 1, 1, 1) * W   # x = m w / |w|^2 -> w . x = m
    y = torch.ones(5, dtype=torch.long)
    clean, robust = robust_module.attack_correct(model, x, y, eps, steps=10, step_size=eps / 4, restarts=3, mean=MEAN, std=STD)
    assert clean.tolist() == [True, True, False, True, True]
    assert robust.tolist() == [True, False, False, True, False]


def test_fit_with_an_identity_perturb_trains_exactly_as_without_and_sees_every_batch():
    X, Y = torch.randn(96, 1, 4, 4), torch.randint(0, 2, (96,))
    cfg = TrainConfig(epochs=2, batch_size=32, augment=False)
    seen = []

    def identity(model, x, y):
        seen.append(len(x))
        return x

    torch.manual_seed(0)
    a = _linear(torch.randn(1, 4, 4))
    b = _linear(torch.zeros(1, 4, 4))
    b.load_state_dict(a.state_dict())
    ha, hb = fit(a, X, Y, cfg, progress=False), fit(b, X, Y, cfg, progress=False, perturb=identity)
    assert seen == [32] * 6
    assert [h["loss"] for h in ha] == [h["loss"] for h in hb]
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def test_adversarial_training_beats_standard_training_under_attack_on_a_robust_and_a_fragile_feature():
    # pixel 0 carries the label strongly but noisily (+-0.2, noise 0.1); the other 15 weakly (+-0.05,
    # noise 0.05): together they classify clean images well, but an eps = 0.1 attack flips every weak
    # pixel, so only a model leaning on pixel 0 stays correct (~84% of images: 0.2 - 0.1 > noise)
    g = torch.Generator().manual_seed(0)
    n = 1024
    s = torch.randint(0, 2, (n,), generator=g)
    sign = (2 * s - 1).float().view(-1, 1)
    p = 0.5 + 0.05 * sign + 0.05 * torch.randn(n, 16, generator=g)
    p[:, 0] = 0.5 + 0.2 * sign[:, 0] + 0.1 * torch.randn(n, generator=g)
    X = _norm(p.clamp(0, 1)).view(n, 1, 4, 4)
    train, test = slice(0, 768), slice(768, n)
    cfg = TrainConfig(epochs=15, batch_size=64, lr=0.05, weight_decay=0.0, augment=False)
    attack = robust_module.PGDTraining(0.1, 3, 0.05, MEAN, STD)
    acc = {}
    for name, perturb in [("standard", None), ("robust", attack)]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
        fit(model, X[train], s[train], cfg, progress=False, perturb=perturb)
        clean, rob = robust_module.attack_correct(model, X[test], s[test], 0.1, 10, 0.025, restarts=2, mean=MEAN, std=STD)
        acc[name] = (clean.float().mean().item(), rob.float().mean().item())
    assert acc["standard"][0] > 0.9 and acc["standard"][1] < 0.3
    assert acc["robust"][1] > 0.7 and acc["robust"][1] > acc["standard"][1] + 0.4


def _result(full, after, image_size=(2, 2)):
    """A backward selection of len(full) images with 4 features removed in order 0, 1, 2, 3 and
    confidence after[b][t] after removal t (as in test_sis_accuracy)."""
    lg = lambda v: torch.logit(torch.tensor(v, dtype=torch.float64))
    B, P = len(full), len(after[0])
    return BackSelectResult(torch.arange(P).repeat(B, 1), lg(after), torch.zeros(B, dtype=torch.long), lg(full),
                            torch.zeros(B, dtype=torch.long), torch.zeros(1), image_size, 1, "exact")


# image 0: SIS of 1 pixel at 0.9 (the last one kept alone gives 0.91); image 1: 3 pixels; image 2: none (0.8 < 0.9)
THREE = _result([0.95, 0.97, 0.8], [[0.93, 0.92, 0.91, 0.1], [0.95, 0.85, 0.5, 0.2], [0.7, 0.6, 0.5, 0.4]])


def test_sis_sizes_are_percent_of_the_pixels_and_nan_without_an_sis():
    sizes = sis_size_pct(THREE, 0.9)
    assert sizes[:2].tolist() == [25.0, 75.0] and math.isnan(sizes[2])
    t = robust_module.sis_table({("robust", 0): THREE, ("standard", 0): _result([0.99] * 3, [[0.95, 0.95, 0.2, 0.1]] * 3)}, 0.9)
    pairs = robust_module.paired_sizes(t, "robust", "standard")
    assert pairs[["image", "robust", "standard"]].values.tolist() == [[0, 25.0, 50.0], [1, 75.0, 50.0]]


def test_sparse_verdict_holds_below_five_percent_and_cannot_be_tested_on_too_few_sis():
    holds = further_verdicts.robust_sis_sparse({"robust A": [1.0, 2.0, 4.0, 3.0, 2.5, np.nan]}, 0.99)
    assert holds.word == "holds" and holds.numbers.loc["robust A", "images with an SIS"] == 5
    assert holds.numbers.loc["robust A", "mean SIS size (%)"] == pytest.approx(2.5)
    assert further_verdicts.robust_sis_sparse({"robust A": [10.0, 20.0, 40.0, 30.0, 20.0]}, 0.99).word == "does not hold"
    straddle = further_verdicts.robust_sis_sparse({"robust A": [1.0, 9.0, 2.0, 8.0, 3.0, 7.0]}, 0.99)   # mean 5: across 5%
    assert straddle.word == "inconclusive at this scale"
    few = further_verdicts.robust_sis_sparse({"robust A": [1.0, np.nan, np.nan]}, 0.99)
    assert few.holds is None and few.word == "cannot be tested"


def test_sparse_verdict_resamples_replicates_and_counts_images_per_replicate():
    # replicate 0 all small, replicate 1 all large: the replicate spread puts the interval across 5%
    two = further_verdicts.robust_sis_sparse({"robust A": [[1.0] * 20, [9.0] * 20 + [np.nan]]}, 0.99)
    row = two.numbers.loc["robust A"]
    assert row["replicates"] == 2 and row["images with an SIS"] == 40 and row["per replicate"] == "20 + 20"
    # a t interval over the 2 replicates (1 and 9): 5 +- t(0.975, 1) * 8 / 2, its lower end kept at a size of 0
    assert row["mean SIS size (%)"] == pytest.approx(5.0) and row["95% low"] == 0.0
    assert row["95% high"] == pytest.approx(5 + 12.706 * 4, abs=0.01) and two.word == "inconclusive at this scale"
    assert "section 4.5" in two.claim and "as confidently as the models in Section 4.1" in two.claim
    t = pd.DataFrame({"model": ["r"] * 3 + ["s"], "replicate": [1, 0, 1, 0], "SIS size (%)": [3.0, 1.0, 4.0, 9.0]})
    assert [r.tolist() for r in robust_module.per_replicate(t, "r")] == [[1.0], [3.0, 4.0]]


def test_size_difference_is_ours_with_a_nested_interval_and_no_verdict():
    pairs = pd.DataFrame({"replicate": [0] * 5 + [1] * 4, "robust": [5.0, 6.0, 7.0, 6.0, 5.5, 4.0, 4.0, 4.0, 4.0],
                          "standard": [2.0, 2.5, 3.0, 2.0, 2.5, 3.0, 3.0, 3.0, 3.0]})
    d = robust_module.size_difference({"x": pairs}).loc["x"]
    assert d["replicates"] == 2 and d["images per replicate"] == "5 + 4"
    assert d["difference (points)"] == pytest.approx((3.5 + 1.0) / 2)         # replicates weigh equally
    # a t interval over the 2 replicates' differences (3.5 and 1.0): 2.25 +- t(0.975, 1) * 1.25
    assert d["95% low"] == pytest.approx(2.25 - 12.706 * 1.25, abs=0.01)
    assert d["95% high"] == pytest.approx(2.25 + 12.706 * 1.25, abs=0.01)
    assert "outcome" not in d.index and not hasattr(robust_module, "robust_sis_larger")
    assert np.isnan(robust_module.size_difference({"x": pairs.iloc[:1]}).loc["x", "difference (points)"])


def test_tiny_profile_trains_caches_attacks_and_backselects_the_robust_model():
    from overinterp.experiments import runs
    from overinterp.config.context import make_run
    run = make_run(device="cpu")
    cfg = run.profile.robust
    models = robust_module.robust_models(run, replicates=1, progress=False)
    assert len(models) == 1 and not models[0].training and len(models[0].info["history"]) == cfg.epochs
    again = robust_module.robust_models(run, replicates=1, progress=False)[0]
    assert again.info["seconds"] == models[0].info["seconds"]            # loaded from the store
    key = robust_module.robust_config(run, run.seed)
    assert key["adversarial"]["epsilon"] == pytest.approx(robust_module.EPSILON[run.dataset])
    assert key["adversarial"]["step_size"] == pytest.approx(cfg.step_size * robust_module.EPSILON[run.dataset])
    X, Y = runs.selection(run, "test").load()
    acc = robust_module.attack_accuracies({"robust": models}, X[:16], Y[:16], run)
    assert (acc["PGD accuracy (%)"] <= acc["clean accuracy (%)"]).all()
    sel = runs.selection(run, "test").narrow(list(range(3)))
    res = robust_module.robust_backselect(run, models[0], sel, progress=False)
    assert res.order.shape[0] == 3 and len(sis_size_pct(res, run.profile.sis_threshold)) == 3


def test_robust_selection_takes_the_first_test_images_every_model_classifies_correctly_and_confidently(always):
    from overinterp.experiments import runs
    from overinterp.config.context import make_run
    run = make_run(profile="tiny", device="cpu")
    _, Y = runs.selection(run, "test").load()
    sel = robust_module.robust_selection(run, [always(3), always(3)], tau=0.99, n=4)
    X_sel, Y_sel = sel.load()
    assert Y_sel.tolist() == [3] * min(4, int((Y == 3).sum()))                 # the images labelled 3 ...
    first = torch.nonzero(Y == 3).flatten()[:4]                               # ... the first ones, in order
    assert torch.equal(X_sel, runs.selection(run, "test").load()[0][first])
    with pytest.raises(ValueError, match="confidence >= 0.99"):               # no image both call correct
        robust_module.robust_selection(run, [always(3), always(4)], tau=0.99)


# ----------------------------------------------------------------------------- the chapter's tables and prose

def test_paper_numbers_render_as_before_from_overinterp_paper_numbers():
    from overinterp.config.context import make_run
    table = pages_robust.paper_accuracy_table()
    assert list(table.index) == ["Madry et al.'s model (CIFAR-10, ε = 8/255)"]
    assert table.iloc[0].tolist() == ["87.3", "47.04 (20 steps); 45.21 (10 restarts)"]
    assert robust_module.EPSILON["cifar10"] == 8 / 255
    from overinterp.paper.deviations import robust_deviations
    run = make_run(profile="tiny", device="cpu")
    devs = robust_deviations(run, robust_module.epsilon(run.dataset, run.profile.robust))
    assert "fashion-mnist, epsilon = 0.1 in [0, 1] pixels (CIFAR-10: 8/255)" in devs
    assert any(d.endswith("PGD steps of 1 epsilon (Madry's: 7 steps of epsilon / 4)") for d in devs)
    assert any(d.endswith("epochs (Madry's: all 50,000 images, 80,000 steps of 128)") for d in devs)
    claim = further_verdicts.robust_sis_sparse({"robust A": [1.0]}, 0.99).claim
    assert "classify highly sparse sufficient input subsets as confidently as standard models (section 4.5" in claim
    assert "classified with ≥ 99% confidence" in claim


def test_gallery_shows_the_images_where_the_first_robust_replicate_has_an_sis():
    standard = _result([0.99] * 3, [[0.95, 0.95, 0.2, 0.1]] * 3)
    results = {("ResNet20", 0): standard, ("robust ResNet20", 0): THREE}
    show, masks = robust_module.sis_gallery(results, 0.9, 8, "resnet20")
    assert show.tolist() == [0, 1] and list(masks) == ["SIS ResNet20", "SIS robust ResNet20"]
    assert masks["SIS robust ResNet20"].flatten(1).sum(1).tolist() == [1, 3]
    assert robust_module.sis_gallery(results, 0.9, 1, "resnet20")[0].tolist() == [0]


def test_sis_accuracy_and_verdict_values_for_the_prose():
    t = robust_module.sis_table({("robust", 0): THREE, ("standard", 0): _result([0.99] * 3, [[0.95, 0.95, 0.2, 0.1]] * 3)}, 0.9)
    assert pages_robust.sis_values(t, torch.tensor([1, 4, 1]), "robust", [f"c{i}" for i in range(10)]) == {
        "n_sis_images": 3, "robust_has_sis": "67", "robust_conf": "0.907", "sis_sample": "3 images of 2 classes", "sel_classes": "c1, c4"}
    acc = pd.DataFrame({"model": ["robust ResNet20", "robust ResNet20", "ResNet20"], "replicate": [0, 1, 0],
                        "clean accuracy (%)": [80.0, 90.0, 95.0], "PGD accuracy (%)": [40.0, 50.04, 1.0]})
    assert pages_robust.accuracy_values(pages_robust.accuracy_table(acc), 16, "resnet20") == {
        "n_eval": 16, "robust_clean": "85.0", "robust_pgd": "45.0", "standard_clean": "95.0", "standard_pgd": "1.0"}
    sparse = further_verdicts.robust_sis_sparse({"robust A": [[1.0, 2.0, 4.0, 3.0, 2.5], [2.0, 3.0, np.nan]]}, 0.99)
    diff = robust_module.size_difference({"x": pd.DataFrame({"replicate": [0] * 5, "robust": [5.0] * 5, "standard": [2.0] * 5})})
    v = pages_robust.verdict_values(sparse, diff, 5)
    assert v["sparse_word"] == "holds" and v["robust_mean_sis"] == "2.5" and v["n_pairs"] == 5
    assert v["sparse_counted"] == "7 (5 + 2) images with an SIS over 2 replicates"
    assert (v["diff"], v["diff_low"], v["diff_high"]) == ("+3.0", "+3.0", "+3.0")
    assert v["diff_counted"] == "5 images over 1 replicate pair"
    assert v["diff_interval"] == "+3.0 to +3.0" and v["sparse_interval"] == f"{v['sparse_low']} to {v['sparse_high']}"
    # no image with an SIS: the estimate and its interval do not exist, and read as one dash each, not "nan"
    none = pages_robust.verdict_values(further_verdicts.robust_sis_sparse({"robust A": [[np.nan] * 3, [np.nan] * 3]}, 0.99), diff, 0)
    assert (none["robust_mean_sis"], none["sparse_interval"]) == ("—", "—") and none["sparse_word"] == "cannot be tested"


def test_the_classes_take_turns_in_a_balanced_selection():
    from overinterp.experiments.runs import by_class_turns
    labels = torch.tensor([1, 1, 1, 0, 2, 1, 0, 2])
    index = torch.tensor([0, 1, 2, 3, 5, 6, 7])                    # image 4 not eligible
    assert by_class_turns(index, labels).tolist() == [3, 0, 7, 6, 1, 2, 5]   # class 0, 1, 2, then 0, 1, then 1, 1
    assert by_class_turns(torch.tensor([2, 0]), labels).tolist() == [2, 0]    # one class: its order kept


def test_the_sizes_figure_is_the_same_on_every_call_and_leaves_numpys_generator_alone():
    import io
    import matplotlib.pyplot as plt
    sizes = pd.DataFrame({"model": ["a"] * 6 + ["b"] * 6, "replicate": [0, 1] * 6, "SIS size (%)": np.arange(12.0)})

    def png():
        plt.figure()
        ax = sis_size_plots.sizes_figure(sizes)
        buf = io.BytesIO()
        ax.figure.savefig(buf, format="png")
        plt.close(ax.figure)
        return buf.getvalue()

    np.random.seed(5)
    first, after = png(), np.random.random()
    np.random.seed(5)
    assert png() == first and np.random.random() == after
