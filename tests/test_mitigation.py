"""Ensembles and input dropout (paper 4.6, Fig. 6, S2): hand-computed cases, one tiny end-to-end run."""
import numpy as np
import pandas as pd
import pytest
import torch

from overinterp import mitigation as M
from overinterp.book import setup
from overinterp.sis_accuracy import SIZE


def _table(sizes: dict) -> pd.DataFrame:
    """model -> {image: size} at tau 0.9, as sis_table rows."""
    return pd.DataFrame([{"model": m, "kind": "single", "arch": "a", "image": i, "tau": 0.9, SIZE: s}
                         for m, d in sizes.items() for i, s in d.items()])


def test_bootstrap_mean_of_a_constant_is_the_constant_and_undefined_below_two_values():
    assert M.bootstrap_mean(np.full(7, 3.5)) == (3.5, 3.5)
    assert all(np.isnan(M.bootstrap_mean(np.array([1.0]))))
    low, high = M.bootstrap_mean(np.arange(100.0), seed=1)
    assert low < 49.5 < high and high - low < 30


def test_paired_increase_uses_only_images_where_every_model_has_an_sis():
    # image 2 has no SIS for member "b": left out. Per image: a - mean(b, c) = 4 - 2, 6 - 3 -> 2, 3
    table = _table({"a": {0: 4.0, 1: 6.0, 2: 9.0}, "b": {0: 1.0, 1: 2.0}, "c": {0: 3.0, 1: 4.0, 2: 1.0}})
    r = M.paired_increase(table, ["a"], ["b", "c"], 0.9)
    assert r["images"] == 2
    assert r["treated mean SIS (%)"] == pytest.approx(5.0) and r["control mean SIS (%)"] == pytest.approx(2.5)
    assert r["increase (points)"] == pytest.approx(2.5)
    assert 2.0 <= r["low"] <= r["high"] <= 3.0
    assert M.paired_increase(table, ["a"], ["b"], 0.5)["images"] == 0   # no row at that tau


def test_accuracy_gain_is_the_ensemble_minus_the_members_mean_on_the_same_images():
    labels = torch.tensor([0, 1, 0, 1])
    hit = lambda right: torch.stack([torch.eye(2)[y if ok else 1 - y] for y, ok in zip(labels, right)])
    ens = hit([1, 1, 1, 0])                                    # 75%
    mem = [hit([1, 1, 0, 0]), hit([1, 0, 0, 0])]               # 50% and 25%: mean 37.5%
    g = M.accuracy_gain(ens, mem, labels)
    assert g["ensemble accuracy (%)"] == 75 and g["members' mean accuracy (%)"] == 37.5
    assert g["gain (points)"] == pytest.approx(37.5)


def _rows(increase, low, images):
    return pd.DataFrame({"images": images, "increase (points)": increase, "low": low,
                         "high": [i + 1 for i in increase]}, index=["e1", "e2"])


def test_larger_sis_verdict_holds_fails_or_cannot_be_tested():
    assert M.ensembles_increase_sis(_rows([2, 3], [0.5, 1.0], [20, 20])).holds is True
    assert M.ensembles_increase_sis(_rows([2, 0.2], [0.5, -1.0], [20, 20])).holds is False
    assert M.ensembles_increase_sis(_rows([2, 3], [0.5, 1.0], [20, 3])).holds is None     # too few images
    v = M.ensembles_increase_accuracy(_rows([2, 3], [0.5, 1.0], [500, 500]), min_images=100)
    assert v.holds is True and "Verdict: the claim holds" in v._repr_markdown_()
    assert M.dropout_increases_sis(_rows([-2, 3], [-3.0, 1.0], [20, 20])).holds is False


def test_members_are_each_architectures_replicates_and_all_models_together():
    run = setup(profile="tiny", device="cpu", show=False)
    specs = M.members(run)
    assert specs == {"ensemble 2× small CNN": [("cnn", 0), ("cnn", 1)],
                     "ensemble 2× ResNet20": [("resnet20", 0), ("resnet20", 1)],
                     "ensemble of all 4": [("cnn", 0), ("cnn", 1), ("resnet20", 0), ("resnet20", 1)]}
    keys = [M.ensemble_config(run, s) for s in specs.values()]
    assert len({str(k) for k in keys}) == 3 and [c["seed"] for c in keys[0]["ensemble"]] == [0, 1]
    assert M.dropout_config(run, 0)["train"].keep_prob == run.profile.mitigation.keep_prob


def test_sis_table_has_every_model_and_caches_the_ensembles_backward_selection(monkeypatch):
    from overinterp.sis import find_sis, is_sufficient
    from overinterp import analysis as A, backselect as B
    run = setup(profile="tiny", device="cpu", show=False)
    table = M.sis_table(run, (0.1, run.profile.sis_threshold), dropout=True, progress=False)
    kinds = table.groupby("kind")["model"].nunique().to_dict()
    assert kinds == {"single": 4, "ensemble": 3, "input dropout": 2}
    assert table[SIZE].between(0, 100).all()
    # an ensemble's SIS is sufficient for the ensemble itself (forward pass of the masked images)
    spec = M.members(run)["ensemble of all 4"]
    sel = A.confident_selection(run, run.profile.sis_threshold)
    ens = M.ensemble(run, spec)
    res = M.backselect_model(run, ens, M.ensemble_config(run, spec), sel, progress=False)
    sis = find_sis(res, run.profile.sis_threshold)
    assert is_sufficient(ens, sel.load()[0], res, sis, run.profile.sis_threshold).all()
    monkeypatch.setattr(B, "backselect", lambda *a, **k: pytest.fail("backward selection ran again"))
    again = M.sis_table(run, (0.1, run.profile.sis_threshold), dropout=True, progress=False)
    pd.testing.assert_frame_equal(table, again)
    inc = M.ensemble_increase(table, M.members(run), (run.profile.sis_threshold,))
    assert list(inc.index.get_level_values("ensemble")) == list(M.members(run))
    rows = M.table1_rows(run, M.members(run))
    assert rows.shape == (6, 2) and rows.to_numpy().min() >= 0 and rows.to_numpy().max() <= 100
