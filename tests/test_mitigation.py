"""Ensembles and input dropout (paper 4.6, Fig. 6, S2): hand-computed cases, one tiny end-to-end run."""
import numpy as np
import pandas as pd
import pytest

from overinterp.paper import further_verdicts
import torch

from overinterp.experiments import mitigation
from overinterp.pages import mitigation as pages_mitigation
from overinterp.paper.formatting import counted
from overinterp.config.context import make_run
from overinterp.experiments.sis_accuracy import SIZE


def _table(sizes: dict) -> pd.DataFrame:
    """model -> {image: size} at tau 0.9, as sis_table rows."""
    return pd.DataFrame([{"model": m, "kind": "single", "arch": "a", "image": i, "tau": 0.9, SIZE: s}
                         for m, d in sizes.items() for i, s in d.items()])


def _old_bootstrap_mean(x, n_resamples=2000, confidence_level=0.95, seed=0):
    """mitigation.bootstrap_mean written out, the reference that intervals.bootstrap must match."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    stat = x[rng.integers(0, len(x), (n_resamples, len(x)))].mean(1)
    a = (1 - confidence_level) / 2
    low, high = np.quantile(stat, [a, 1 - a], method="inverted_cdf")
    return float(low), float(high)


@pytest.mark.parametrize("seed", range(6))
def test_mean_interval_is_bitwise_the_old_bootstrap_mean_on_random_data(seed):
    rng = np.random.default_rng(200 + seed)
    for x in [rng.gamma(2.0, 3.0, rng.integers(2, 80)), rng.normal(0, 5, 300), 100 * rng.integers(-1, 2, 40) / 3,
              np.array([1.5, 2.5])]:
        for args in [(2000, 0.95, seed), (301, 0.8, seed + 3)]:
            assert mitigation._mean_interval(x, *args) == _old_bootstrap_mean(x, *args)


def test_mean_interval_of_a_constant_is_the_constant_and_undefined_below_two_values():
    assert mitigation._mean_interval(np.full(7, 3.5), 2000, 0.95, 0) == (3.5, 3.5)
    for few in (np.array([1.0]), np.array([])):
        assert all(np.isnan(mitigation._mean_interval(few, 2000, 0.95, 0))) and all(np.isnan(_old_bootstrap_mean(few)))
    low, high = mitigation._mean_interval(np.arange(100.0), 2000, 0.95, 1)
    assert low < 49.5 < high and high - low < 30


def test_paired_increase_uses_only_images_where_every_model_has_an_sis():
    # image 2 has no SIS for member "b": left out. Per image: a - mean(b, c) = 4 - 2, 6 - 3 -> 2, 3
    table = _table({"a": {0: 4.0, 1: 6.0, 2: 9.0}, "b": {0: 1.0, 1: 2.0}, "c": {0: 3.0, 1: 4.0, 2: 1.0}})
    r = mitigation.paired_increase(table, ["a"], ["b", "c"], 0.9)
    assert r["images"] == 2
    assert r["treated mean SIS (%)"] == pytest.approx(5.0) and r["control mean SIS (%)"] == pytest.approx(2.5)
    assert r["increase (points)"] == pytest.approx(2.5)
    # a t interval over the two controls as replicates (3.5 and 1.5 below a): 1 degree of freedom, wide
    assert r["low"] == pytest.approx(2.5 - 12.706 * 1.0, abs=0.01) and r["high"] == pytest.approx(2.5 + 12.706, abs=0.01)
    assert mitigation.paired_increase(table, ["a"], ["b"], 0.5)["images"] == 0   # no row at that tau


def test_accuracy_gain_is_the_ensemble_minus_the_members_mean_on_the_same_images():
    labels = torch.tensor([0, 1, 0, 1])
    hit = lambda right: torch.stack([torch.eye(2)[y if ok else 1 - y] for y, ok in zip(labels, right)])
    ens = hit([1, 1, 1, 0])                                    # 75%
    mem = [hit([1, 1, 0, 0]), hit([1, 0, 0, 0])]               # 50% and 25%: mean 37.5%
    g = mitigation.accuracy_gain(ens, mem, labels)
    assert g["ensemble accuracy (%)"] == 75 and g["members' mean accuracy (%)"] == 37.5
    assert g["gain (points)"] == pytest.approx(37.5)


def _rows(increase, low, images):
    return pd.DataFrame({"images": images, "increase (points)": increase, "low": low,
                         "high": [i + 1 for i in increase]}, index=["e1", "e2"])


def test_larger_sis_verdict_holds_fails_is_inconclusive_or_cannot_be_tested():
    assert further_verdicts.ensembles_increase_sis(_rows([2, 3], [0.5, 1.0], [20, 20])).word == "holds"
    straddle = further_verdicts.ensembles_increase_sis(_rows([2, 0.2], [0.5, -1.0], [20, 20]))   # second interval contains 0
    assert straddle.word == "inconclusive at this scale"
    below = further_verdicts.ensembles_increase_sis(pd.DataFrame({"images": [20, 20], "increase (points)": [2, -3], "low": [0.5, -4],
                                                   "high": [3, -1]}, index=["e1", "e2"]))
    assert below.word == "does not hold" and below.numbers["outcome"].tolist() == ["holds", "does not hold"]
    assert further_verdicts.ensembles_increase_sis(_rows([2, 3], [0.5, 1.0], [20, 3])).word == "inconclusive at this scale"
    assert further_verdicts.ensembles_increase_sis(_rows([2, 3], [0.5, 1.0], [3, 3])).word == "cannot be tested"
    v = further_verdicts.ensembles_increase_accuracy(_rows([2, 3], [0.5, 1.0], [500, 500]), min_images=100)
    assert v.holds is True and "Verdict: the claim's outcome here is “holds”" in v._repr_markdown_()
    d = further_verdicts.dropout_increases_sis(_rows([-2, 3], [-3.0, 1.0], [20, 20]))
    assert d.word == "does not hold" and "input dropout can each help mitigate" in d.claim


def test_paired_increase_resamples_the_models_as_replicates():
    # two controls that disagree by 8 points on every image: the interval spans both
    table = _table({"t": {i: 5.0 for i in range(30)}, "c1": {i: 0.0 for i in range(30)},
                    "c2": {i: 8.0 for i in range(30)}})
    r = mitigation.paired_increase(table, ["t"], ["c1", "c2"], 0.9)
    assert r["increase (points)"] == pytest.approx(1.0) and r["control models"] == 2 and r["images"] == 30
    # per control: 5 and -3; their mean 1 +- t(0.975, 1) * 8 / (sqrt(2) * sqrt(2))
    assert r["low"] == pytest.approx(1 - 12.706 * 4, abs=0.01) and r["high"] == pytest.approx(1 + 12.706 * 4, abs=0.01)
    assert counted(pd.DataFrame([r])) == "30 images × (1 + 2 models)"
    assert counted(pd.DataFrame([r, r])) == "30 images × (1 + 2 models)"     # two comparisons of one size: once
    assert counted(pd.DataFrame([r, {**r, "images": 12}])) == "30 images × (1 + 2 models); 12 images × (1 + 2 models)"
    assert counted(pd.DataFrame([{**r, "images": 1}])) == "1 image × (1 + 2 models)"      # English at one image


def test_members_are_each_architectures_replicates_and_all_models_together():
    run = make_run(profile="tiny", device="cpu")
    specs = mitigation.members(run)
    assert specs == {"ensemble 2× small CNN": [("cnn", 0), ("cnn", 1)],
                     "ensemble 2× ResNet20": [("resnet20", 0), ("resnet20", 1)],
                     "ensemble of all 4": [("cnn", 0), ("cnn", 1), ("resnet20", 0), ("resnet20", 1)]}
    keys = [mitigation.ensemble_config(run, s) for s in specs.values()]
    assert len({str(k) for k in keys}) == 3 and [c["seed"] for c in keys[0]["ensemble"]] == [0, 1]
    assert mitigation.dropout_config(run, 0)["train"].keep_prob == run.profile.mitigation.keep_prob


def test_sis_table_has_every_model_and_caches_the_ensembles_backward_selection(monkeypatch):
    from overinterp.engine.sis import find_sis, is_sufficient
    from overinterp.experiments import runs
    from overinterp.engine import backselect
    run = make_run(profile="tiny", device="cpu")
    table = mitigation.sis_table(run, (0.1, run.profile.sis_threshold), dropout=True, progress=False)
    kinds = table.groupby("kind")["model"].nunique().to_dict()
    assert kinds == {"single": 4, "ensemble": 3, "input dropout": 2, "input dropout, no masks": 2,
                     "standard through masks": 2}
    # the like-for-like comparisons pair each input-dropout model with the standard replicate of its seed
    inc = mitigation.dropout_increase(table, (run.profile.sis_threshold,))
    assert [i.split(", ")[-1] for i in inc.index.get_level_values("models")] == list(mitigation.DROPOUT_COMPARISONS)
    assert (inc["treated models"] == 2).all() and (inc["control models"] == 2).all()
    assert table[SIZE].between(0, 100).all()
    # an ensemble's SIS is sufficient for the ensemble itself (forward pass of the masked images)
    spec = mitigation.members(run)["ensemble of all 4"]
    sel = runs.confident_selection(run, run.profile.sis_threshold)
    ens = mitigation.ensemble(run, spec)
    res = runs.backselect_model(run, ens, mitigation.ensemble_config(run, spec), sel, progress=False)
    sis = find_sis(res, run.profile.sis_threshold)
    assert is_sufficient(ens, sel.load()[0], res, sis, run.profile.sis_threshold).all()
    monkeypatch.setattr(backselect, "backselect", lambda *a, **k: pytest.fail("backward selection ran again"))
    again = mitigation.sis_table(run, (0.1, run.profile.sis_threshold), dropout=True, progress=False)
    pd.testing.assert_frame_equal(table, again)
    inc = mitigation.ensemble_increase(table, mitigation.members(run), (run.profile.sis_threshold,))
    assert list(inc.index.get_level_values("ensemble")) == list(mitigation.members(run))
    rows = mitigation.table1_rows(run, mitigation.members(run))
    assert rows.shape == (6, 2) and rows.to_numpy().min() >= 0 and rows.to_numpy().max() <= 100


# ----------------------------------------------------------------------------- the chapters' tables and prose

def test_thresholds_add_the_verdicts_tau_once_in_increasing_order():
    from overinterp.config.chapters import thresholds
    assert thresholds((0.9, 0.5), 0.99) == (0.5, 0.9, 0.99)
    assert thresholds((0.9, 0.5, 0.9), 0.9) == (0.5, 0.9) and thresholds([1], 0.5) == (0.5, 1.0)


def test_accuracy_pct_and_the_dropout_accuracy_table_of_standard_dropout_and_ensemble():
    labels = torch.tensor([0, 1, 1, 0])
    z = lambda preds: torch.eye(2)[torch.tensor(preds)]
    assert mitigation.accuracy_pct(z([0, 1, 0, 0]), labels) == 75
    std = [z([0, 1, 0, 0]), torch.tensor([[3.0, 0.0], [0, 1], [0, 1], [1, 0]])]       # 75% and 100%
    table = mitigation.dropout_accuracy(std, {"d0": z([1, 1, 1, 1]), "d1": z([0, 0, 0, 0])}, labels, "CNN")
    assert list(table.index) == ["CNN, standard training (2 models)", "CNN, input dropout (2 models)",
                                 "ensemble of the 2 standard CNNs"]
    # the ensemble's mean logits [[2, 0], [0, 1], [.5, .5], [1, 0]] predict 0, 1, 0 (a tie: the first), 0: 75%
    assert table[("test accuracy (%)", "mean")].tolist() == [87.5, 50, 75]
    v = pages_mitigation.dropout_accuracy_values(table, {}, 4)
    assert v == {"n_acc": 4, "n_dropout_plateau": 0, "acc_std": "87.50", "acc_drop": "50.00", "acc_ens": "75.00"}


def test_means_table_shows_mean_interval_and_images_per_model_and_tau():
    means = pd.DataFrame({"model": ["a", "a", "b"], "kind": "single", "arch": "x", "tau": [0.5, 0.9, 0.5],
                          "images": [10, 1, 4], "mean": [3.14, 2.0, 5.55], "low": [2.0, np.nan, 5.0],
                          "high": [4.26, np.nan, 6.0]})
    t = pages_mitigation.means_table(means)
    assert list(t.columns) == ["τ = 0.5", "τ = 0.9"] and list(t.index) == ["a", "b"]
    assert t.loc["a"].tolist() == ["3.1 [2.0, 4.3] (10)", "2.0 (1)"] and t.loc["b"].tolist() == ["5.5 [5.0, 6.0] (4)", "—"]


def test_increase_table_and_values_of_the_ensembles():
    inc = pd.DataFrame({"ensemble": ["e1", "e1", "e2"], "tau": [0.5, 0.9, 0.5], "images": [12, 0, 3],
                        "increase (points)": [1.25, np.nan, -0.5], "low": [0.5, np.nan, np.nan],
                        "high": [2.0, np.nan, np.nan]}).set_index(["ensemble", "tau"])
    t = pages_mitigation.increase_table(inc, {"e2": [], "e1": []})
    assert list(t.index) == ["e2", "e1"] and t.loc["e1"].tolist() == ["+1.2 [+0.5, +2.0] (12)", "—"]
    assert t.loc["e2", "τ = 0.5"] == "-0.5 (3)"
    v = further_verdicts.ensembles_increase_sis(_rows([2, 3], [0.5, -1.0], [20, 20]))
    assert pages_mitigation.increase_values(v) == {"sis_verdict": "inconclusive at this scale", "inc_min": "+2.0",
                                    "inc_max": "+3.0", "inc_effect": "0.5", "inc_above": 1, "inc_n": 2,
                                    "inc_counted": "20 images"}
    d = further_verdicts.dropout_increases_sis(_rows([2.04, 3], [0.5, 1.0], [20, 20]))   # both at or above the minimal 0.5
    d.numbers["treated models"], d.numbers["control models"] = 2, 2
    assert pages_mitigation.dropout_verdict_values(d) == {
        "verdict": "holds", "counted": "20 images × (2 + 2 models)",
        "inc_masks": "+2.0", "inc_masks_low": "+0.5", "inc_masks_high": "+3.0", "inc_masks_images": 20,
        "outcome_masks": "holds", "inc_plain": "+3.0", "inc_plain_low": "+1.0", "inc_plain_high": "+4.0",
        "inc_plain_images": 20, "outcome_plain": "holds",
        "said_masks": "by +2.0 points of the image on 20 images (95% interval +0.5 to +3.0: holds)",
        "said_plain": "by +3.0 points of the image on 20 images (95% interval +1.0 to +4.0: holds)"}
    d.numbers.loc[d.numbers.index[0], ["increase (points)", "low", "high", "images"]] = [np.nan, np.nan, np.nan, 0]
    said = pages_mitigation.dropout_verdict_values(d)["said_masks"]
    assert "—" not in said and said.startswith("by an amount this execution cannot measure (no image with an SIS")
    d.numbers.loc[d.numbers.index[0], "images"] = 1
    assert "(1 image with" in pages_mitigation.dropout_verdict_values(d)["said_masks"]


def test_ensemble_gains_average_the_members_logits():
    labels = torch.tensor([0, 1])
    out = {"a (seed 0)": torch.tensor([[2.0, 0.0], [2.0, 0.0]]), "a (seed 1)": torch.tensor([[0.0, 1.0], [0.0, 3.0]])}
    g = mitigation.ensemble_gains(out, {"e": [("a", 0), ("a", 1)]}, labels, 100, seed=0)
    assert g.loc["e", "ensemble accuracy (%)"] == 100 and g.loc["e", "members' mean accuracy (%)"] == 50


def test_sis_size_pct_gives_the_figure_s2_labels_the_old_float32_expression_gave():
    """Figure S2's row labels: sis_size_pct (result, tau, sis) at the shown images, formatted, equal the
    notebook's former 100 * mask.flatten(1).float().mean(1) of the shown rows."""
    from overinterp.engine.backselect import BackSelectResult
    from overinterp.engine.sis import find_sis, sis_size_pct
    g = torch.Generator().manual_seed(0)
    backselect, P = 12, 28 * 28
    order = torch.stack([torch.randperm(P, generator=g) for _ in range(backselect)])
    after = torch.sort(torch.randn(backselect, P, generator=g, dtype=torch.float64) * 4 + 3, 1, descending=True)[0]
    res = BackSelectResult(order, after, torch.zeros(backselect, dtype=torch.long), after[:, 0] + torch.rand(backselect, generator=g) * 3,
                           torch.zeros(backselect, dtype=torch.long), torch.zeros(1), (28, 28), 1, "exact")
    for tau in (0.5, 0.9, 0.99):
        s = find_sis(res, tau)
        both = (s.size >= 0).nonzero().flatten()[:6]
        old = " ".join(f"{p:.0f}%" for p in 100 * s.mask[both].flatten(1).float().mean(1))
        new = " ".join(f"{p:.0f}%" for p in sis_size_pct(res, tau, s)[both.numpy()])
        assert new == old and len(both)
        assert (sis_size_pct(res, tau, s)[both.numpy()] == (100 * s.mask[both].flatten(1).float().mean(1)).numpy()).all()


def test_the_s2_gallerys_rows_name_each_model_over_its_sis_sizes_in_whole_percent():
    masks = torch.zeros(2, 4, 4, dtype=torch.bool)
    rows = pages_mitigation.gallery_rows({"ensemble": (np.array([1.4, 12.6]), masks),
                                          "ResNet18 #1": (np.array([0.2, 50.0]), masks)})
    assert list(rows) == ["ensemble\n1% 13%", "ResNet18 #1\n0% 50%"]
    assert all(m is masks for m in rows.values())
