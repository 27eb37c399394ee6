"""Input reduction with beam search and entropy fine-tuning (overinterp.methods.input_reduction and overinterp.experiments.input_reduction; Feng et al. 2018)."""
import math

import pandas as pd
import pytest

from overinterp.paper import further_verdicts
import torch
import torch.nn as nn

from overinterp.experiments import input_reduction as experiments_input_reduction
from overinterp.pages import input_reduction as pages_input_reduction
from overinterp.methods import input_reduction as methods_input_reduction


class Redundant(nn.Module):
    """12 "pixels" (a 3x4 image, all 1), 2 classes, class-1 logit 0. Class-0 logit
    2 clamp(x0 + x1, max=0.9) + 0.2 (x2 + ... + x11) - 2.5: pixels 0 and 1 are redundant (either
    alone gives 1.8, and their gradient is 0 while x0 + x1 > 0.9); the other ten add 0.2 each.
    Class 0 needs one of {0, 1} and 4 others (1.8 + 0.8 - 2.5 = 0.1 > 0; with 3 others -0.1;
    all ten others without 0 or 1: -0.5): the minimal prediction-preserving subset has 5 pixels."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))   # reduce_inputs reads the dtype from a parameter

    def forward(self, x):
        v = x.flatten(1)
        z0 = 2 * torch.clamp(v[:, 0] + v[:, 1], max=0.9) + 0.2 * v[:, 2:].sum(1) - 2.5 + 0 * self.w
        return torch.stack([z0, torch.zeros_like(z0)], 1)


class Linear(nn.Module):
    """Class-0 logit sum_i w_i x_i - t on 8 pixels against a class-1 logit 0: removing pixel i
    (x_i = 1 -> 0) costs exactly w_i, and the gradient importance x_i * w_i is exact."""

    def __init__(self, w, t):
        super().__init__()
        self.w, self.t = nn.Parameter(torch.tensor(w)), t

    def forward(self, x):
        z0 = x.flatten(1) @ self.w - self.t
        return torch.stack([z0, torch.zeros_like(z0)], 1)


ONES = torch.ones(1, 1, 3, 4)


def test_importance_is_gradient_times_input_minus_mask_value_at_the_reduced_input():
    m = Linear([0.5, -1.0, 2.0, 0.1, 0.3, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0], t=1.0)
    x = torch.arange(12.).view(1, 1, 3, 4) / 10
    keep = torch.ones(1, 12, dtype=torch.bool)
    keep[0, 3] = False
    f, g = methods_input_reduction.importance(m, x, keep, torch.tensor([0]), mask_value=0.05)
    xr = torch.where(keep.view(1, 1, 3, 4), x, torch.tensor(0.05))
    z0 = (xr.flatten() * m.w.detach()).sum() - 1.0
    assert f.item() == pytest.approx(z0.item(), abs=1e-5)               # two classes: log-odds = z0 - z1
    assert g[0].tolist() == pytest.approx(((xr.flatten() - 0.05) * m.w.detach()).tolist(), abs=1e-6)
    assert g[0, 3] == 0                                                  # a removed pixel sits at the mask value


def test_greedy_reduction_stops_where_gradient_misleads_but_beam_search_finds_the_minimal_subset():
    model = Redundant().eval()
    greedy = methods_input_reduction.reduce_inputs(model, ONES, beam=1, progress=False)
    # beam 1 removes pixel 0 (importance 0, lowest index), then pixel 1 (importance 0 again), which
    # flips the prediction: it stops with 11 pixels
    assert greedy.size.item() == 11 and greedy.keep[0].tolist() == [False] + [True] * 11
    beam = methods_input_reduction.reduce_inputs(model, ONES, beam=5, progress=False)
    kept = beam.keep[0].nonzero().flatten().tolist()
    assert beam.size.item() == 5 and len(set(kept) & {0, 1}) == 1       # one of the pair and 4 others
    assert beam.log_odds.item() == pytest.approx(0.1, abs=1e-5)
    assert beam.full_log_odds.item() == pytest.approx(1.8 + 2.0 - 2.5, abs=1e-5)
    for red in (greedy, beam):                                           # the prediction never changes
        x = torch.where(red.keep.view(1, 1, 3, 4), ONES, torch.tensor(0.))
        assert model(x).argmax(1).item() == red.pred.item() == 0
    b, variants = beam.variants()                                        # the negatives: the last beam
    assert (b == 0).all() and (variants.sum(1) == 5).all() and len(variants) == len(set(map(tuple, variants.tolist())))


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.9])
def test_several_pixels_per_step_still_stop_pixel_by_pixel(fraction):
    """Linear with positive costs: the minimal subset keeps the largest weights until the logit
    stays above 0: weights 3, 2.5, 2 (7.5 > t = 7) -- three pixels, whatever the step size."""
    m = Linear([0.1, 3.0, 0.5, 2.5, 0.2, 2.0, 0.3, 0.4], t=7.0).eval()
    x = torch.ones(2, 1, 2, 4)
    x[1] = 0                      # a blank image: class 1 (logit 0 > -7), reduced to its last pixel
    red = methods_input_reduction.reduce_inputs(m, x, beam=2, fraction=fraction, progress=False)
    assert red.keep[0].nonzero().flatten().tolist() == [1, 3, 5]
    assert red.log_odds[0].item() == pytest.approx(0.5, abs=1e-5)
    assert red.pred.tolist() == [0, 1] and red.size[1].item() == 1       # at least one pixel is kept


def test_beam_size_follows_their_footnote_and_bad_parameters_raise():
    """max(1, min(k, L - 3)): with 4 pixels left the beam is 1, so only the least important is tried."""
    m = Linear([1.0, 1.0, 1.0, 1.0], t=2.5).eval()          # any 3 pixels keep class 0, any 2 do not
    red = methods_input_reduction.reduce_inputs(m, torch.ones(1, 1, 2, 2), beam=5, progress=False)
    assert red.size.item() == 3 and red.alive.sum().item() == 1
    with pytest.raises(ValueError, match="beam"):
        methods_input_reduction.reduce_inputs(m, torch.ones(1, 1, 2, 2), beam=0)
    with pytest.raises(ValueError, match="fraction"):
        methods_input_reduction.reduce_inputs(m, torch.ones(1, 1, 2, 2), fraction=1.0)
    with pytest.raises(ValueError, match="eval"):
        methods_input_reduction.reduce_inputs(m.train(), torch.ones(1, 1, 2, 2))


def test_entropy_and_eq2_loss_on_known_logits():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, math.log(3), -math.inf, -math.inf]])
    h = methods_input_reduction.entropy(logits)
    assert h[0].item() == pytest.approx(math.log(4))
    assert h[1].item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))   # 0 log 0 = 0
    regular, labels = torch.tensor([[math.log(3), 0.0]]), torch.tensor([0])                 # p = 3/4 on the label
    loss = methods_input_reduction.eq2_loss(regular, labels, logits, lam=0.5)
    assert loss.item() == pytest.approx(-math.log(0.75) - 0.5 * h.mean().item())


def test_finetuning_raises_the_entropy_on_reduced_inputs_and_keeps_batchnorm_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    X = torch.randn(64, 1, 6, 6)
    Y = (X[:, 0, 0, 0] > 0).long()
    reduced = torch.zeros(16, 1, 6, 6)
    reduced[:, 0, 0, 0] = 3.0
    model.eval()
    before = methods_input_reduction.entropy(model(reduced)).mean().item()
    stats = model[1].running_mean.clone()
    hist = methods_input_reduction.finetune(model, X, Y, reduced, steps=30, lam=1.0, lr=0.05, batch_size=16, progress=False)
    assert len(hist) == 30 and methods_input_reduction.entropy(model(reduced)).mean().item() > before
    assert torch.equal(model[1].running_mean, stats) and not model.training


def _images(before, after, measure="reduced size", replicates=2):
    rows = [{"replicate": r, "model": name, "image": i, measure: v}
            for r in range(replicates) for name, vals in (("original", before), ("fine-tuned", after))
            for i, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_verdict_holds_fails_or_cannot_be_tested():
    grow = further_verdicts.increases(_images([5, 6, 7, 8] * 3, [9, 9, 11, 12] * 3), "reduced size", "claim", "reduction_size", min_images=10)
    assert grow.holds is True and grow.numbers["mean increase"].tolist() == pytest.approx([3.75, 3.75, 3.75])
    assert grow.numbers.loc["all replicates", "replicates"] == 2 and grow.numbers.loc["all replicates", "images"] == 24
    mixed = further_verdicts.increases(_images([5, 6, 7, 8] * 3, [9, 2, 11, 3] * 3), "reduced size", "claim", "reduction_size", min_images=10)
    assert mixed.holds is False and "minimal increase of 1" in mixed.criterion   # -0.25 in both replicates
    # a null result decides: +0.25 pixels in both replicates is an increase, but wholly below one pixel
    small = further_verdicts.increases(_images([5, 6, 7, 8] * 3, [5, 6, 7, 9] * 3), "reduced size", "claim", "reduction_size", min_images=10)
    assert small.numbers.loc["all replicates", "mean increase"] == pytest.approx(0.25) and small.holds is False
    # replicates that disagree in sign: the interval over replicates contains 0, inconclusive (not "does not hold")
    split = pd.concat([_images([5, 6, 7, 8] * 3, [9, 9, 11, 12] * 3, replicates=1),
                       _images([5, 6, 7, 8] * 3, [1, 2, 3, 4] * 3, replicates=1).assign(replicate=1)])
    assert further_verdicts.increases(split, "reduced size", "claim", "reduction_size", min_images=10).word == "inconclusive at this scale"
    # no SIS (-1) under either model leaves the image out: too few images remain
    few = further_verdicts.increases(_images([-1] * 8 + [3] * 4, [5] * 12, "SIS size"), "SIS size", "claim", "reduction_sis", min_images=10)
    assert few.holds is None and few.numbers["images"].tolist() == [4, 4]


def test_tiny_profile_end_to_end_reductions_keep_the_prediction_and_the_finetuned_model_is_cached():
    """The chapter's runs on the tiny profile: every reduced test image keeps its model's
    prediction (checked by a forward pass), the fine-tuned model is stored under a config that
    names the fine-tuning and loads unchanged, and its SIS come from the backward selection
    keyed by that config."""
    from overinterp.store import Store
    from overinterp.engine.backselect import apply_keep
    from overinterp.config.context import make_run
    from overinterp.engine.runner import run_backselect
    from overinterp.engine.sis import find_sis
    from overinterp.experiments.runs import trained_model
    run = make_run(device="cpu")
    c = run.profile.input_reduction
    ex = experiments_input_reduction.experiment(run, progress=False)
    X, _ = experiments_input_reduction.reduction_selection(run).load()
    imgs = ex["images"]
    assert len(imgs) == 2 * run.profile.replicates * len(X) == 2 * run.profile.replicates * c.images
    for r in range(run.profile.replicates):
        seed = run.seed + r
        tuned = experiments_input_reduction.finetuned_model(run, c.arch, seed, progress=False)
        orig = trained_model(run.dataset, c.arch, run.profile.name, seed=seed, device="cpu", progress=False)
        assert len(tuned.info["history"]) == c.steps and tuned.info["negatives"] >= c.train_images
        assert "finetune" in experiments_input_reduction.finetune_config(run, c.arch, seed)
        assert Store().load("model", experiments_input_reduction.finetune_config(run, c.arch, seed)) is not None
        assert not torch.equal(next(tuned.parameters()), next(orig.parameters()))
        for name, model in (("original", orig), ("fine-tuned", tuned)):
            red = ex["reductions"][(r, name)]
            x = apply_keep(X, red.keep.view(-1, *X.shape[2:]), run.profile.backselect.mask_value)
            with torch.no_grad():
                assert torch.equal(model(x).argmax(1), red.pred) and torch.equal(model(X).argmax(1), red.pred)
            rows = imgs[(imgs.replicate == r) & (imgs.model == name)]
            assert rows["reduced size"].tolist() == red.keep.sum(1).tolist()
        bs = run_backselect(tuned, X, model_config=experiments_input_reduction.finetune_config(run, c.arch, seed),
                            data_config=experiments_input_reduction.reduction_selection(run).key(), config=run.profile.engine("test"),
                            shard_size=run.profile.shard_size, device="cpu", progress=False)   # loaded, not rerun
        sis = find_sis(bs, run.profile.sis_threshold)
        px = torch.where(sis.size >= 0, sis.mask.flatten(1).sum(1), -1)
        assert imgs[(imgs.replicate == r) & (imgs.model == "fine-tuned")]["SIS size"].tolist() == px.tolist()
    acc = ex["accuracy"]
    assert set(acc["model"]) == {"original", "fine-tuned"} and acc["test accuracy (%)"].between(0, 100).all()
    t2 = experiments_input_reduction.table2(imgs, acc)
    assert list(t2.index) == list(range(run.profile.replicates))
    assert further_verdicts.increases(imgs, "SIS size", "claim", "reduction_sis", min_images=1).numbers.index.tolist()[:2] == ["replicate 0",
                                                                                                 "replicate 1"]


def _two_models(orig_sizes, tuned_sizes):
    rows = [{"replicate": 0, "model": m, "image": i, "reduced size": s, "confidence (original)": 0.9,
             "confidence (reduced)": 0.6 + 0.1 * (m == "fine-tuned")}
            for m, sizes in (("original", orig_sizes), ("fine-tuned", tuned_sizes)) for i, s in enumerate(sizes)]
    return pd.DataFrame(rows)


def test_size_and_confidence_values_for_the_prose_on_a_hand_made_table():
    images = _two_models([1, 1, 4, 10], [8, 8, 8, 8])
    v = pages_input_reduction.size_values(images, pixels=16)
    assert v == {"size_orig": "4.0", "size_orig_pct": "25.0", "size_orig_median": "2", "n_one": 2, "n_rows": 4,
                 "size_tuned": "8.0"}
    c = pages_input_reduction.confidence_values(images)
    assert (c["conf_full_orig"], c["conf_red_orig"], c["conf_red_tuned"], c["n_more"]) == ("0.90", "0.60", "0.70", 0)


def test_size_verdict_quotes_feng_et_al_table2_from_the_papers_numbers():
    v = further_verdicts.size_verdict(_two_models([1, 2, 3], [2, 3, 4]), min_images=2)
    assert "(their Table 2: on all three tasks, e.g. SQuAD 2.27 to 4.97 words)." in v.claim
    assert experiments_input_reduction.feng_lengths().loc["SQuAD"].tolist() == [11.5, 2.3]
