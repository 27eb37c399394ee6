"""What chapters 2-5 compute and show around the library (overinterp.experiments.runs, .subsets and
overinterp.pages.plots), on hand-made inputs: the same values as the notebook code they replace."""
from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from overinterp.config.context import Run
from overinterp.config.profiles import get_profile
from overinterp.engine.backselect import BackSelectConfig
from overinterp.engine.runner import KIND, run_backselect, run_config
from overinterp.engine.sis import SIS, sis_size_pct
from overinterp.experiments import runs as runs_module
from overinterp.pages import runs as pages_runs
from overinterp.experiments import subsets
from overinterp.pages import subsets as pages_subsets
from overinterp.pages import plots
from overinterp.paper import numbers as paper
from overinterp.paper import verdicts
from overinterp.store import Store
from overinterp.zoo.data import Selection
from overinterp.zoo.models import build_model


def _run(**changes) -> Run:
    from dataclasses import replace
    return Run("fashion-mnist", replace(get_profile("tiny"), **changes), torch.device("cpu"), 0)


# ----------------------------------------------------------------------------- backward selection entry

def test_backselect_model_writes_the_artifact_a_direct_runner_call_writes(tmp_path):
    torch.manual_seed(0)
    model = build_model("cnn", 1, 10, width=2).eval()
    images = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    run, store = _run(), Store(tmp_path)
    res = runs_module.backselect_model(run, model, {"arch": "cnn"}, (images, {"set": "toy"}), store=store, progress=False)
    engine = run.profile.engine("toy")                      # the profile's engine and shard size fill in
    assert store.exists(KIND, run_config(model, images, {"arch": "cnn"}, {"set": "toy"}, engine, run.profile.shard_size))
    direct = run_backselect(model, images, model_config={"arch": "cnn"}, data_config={"set": "toy"}, config=engine,
                            shard_size=run.profile.shard_size, store=store, progress=False)
    assert torch.equal(res.order, direct.order) and len(list((tmp_path / KIND).iterdir())) == 1


def test_backselect_model_of_a_selection_passes_its_key_and_its_sets_engine(monkeypatch):
    seen = []
    monkeypatch.setattr(runs_module, "run_backselect", lambda model, images, **kw: seen.append((len(images), kw)))
    train_engine = BackSelectConfig("pruned", block=4, m=3)
    run = _run(backselect_train=train_engine, shard_size=7)
    sel = Selection("fashion-mnist", "train", 12)
    runs_module.backselect_model(run, None, {"arch": "x"}, sel, progress=False)
    runs_module.backselect_model(run, None, {"arch": "x"}, sel, BackSelectConfig("exact"), shard_size=3, progress=False)
    (n, kw), (_, given) = seen
    assert n == 12 and kw["data_config"] == sel.key() and kw["model_config"] == {"arch": "x"}
    assert kw["config"] == train_engine and kw["shard_size"] == 7 and kw["device"] == run.device
    assert given["config"] == BackSelectConfig("exact") and given["shard_size"] == 3


# ----------------------------------------------------------------------------- chapter 3: SIS sizes

def test_sis_fractions_are_the_chapters_python_division_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(50, 28, 28, generator=g) < torch.rand(50, 1, 1, generator=g) * 0.2
    found = torch.rand(50, generator=g) > 0.2
    sis = SIS(mask.flatten(1), mask, torch.where(found, mask.flatten(1).sum(1), -1), found)
    old = [sis.mask[i].sum().item() / (28 * 28) for i in range(50) if sis.found[i]]   # the notebook's former cell
    assert runs_module.sis_fractions(sis) == old                                                # exactly, not approximately
    pct = sis_size_pct(None, 0.5, sis)                      # the percentage: same sizes, NaN where none (float32)
    assert np.isnan(pct[~found.numpy()]).all() and np.allclose(pct[found.numpy()] / 100, old, rtol=1e-6)


def test_sis_values_format_the_verdicts_range():
    v = verdicts.sis_size({"a": [np.array([0.01, 0.03] * 20), np.array([0.02] * 30)], "b": [np.full(25, 0.1)]}, 0.99)
    assert set(pages_runs.sis_values(v)) == {"sis_mean_min", "sis_mean_max", "sis_below_5", "sis_high_max", "sis_images_min",
                                    "sis_images_max", "sis_replicates"}
    assert pages_runs.sis_values(v) == {"sis_mean_min": "2.0", "sis_mean_max": "10.0", "sis_below_5": "does not hold",
                               "sis_high_max": "10.0", "sis_images_min": 25, "sis_images_max": 70,
                               "sis_replicates": 2}


def test_pooled_concatenates_each_models_replicates():
    out = runs_module.pooled({"a": [np.array([1.0, 2.0]), [3.0]], "b": [np.array([0.5])]})
    assert list(out) == ["a", "b"] and out["a"].tolist() == [1.0, 2.0, 3.0] and out["a"].dtype == np.float64


def test_correct_is_one_per_image_the_model_gets_right(always):
    X, Y = torch.zeros(4, 1, 2, 2), torch.tensor([0, 2, 0, 1])
    c = runs_module.correct(always(0), X, Y)
    assert c.dtype == np.float64 and c.tolist() == [1.0, 0.0, 1.0, 0.0]


# ----------------------------------------------------------------------------- chapter 2: the zoo

def _with_history(model, losses):
    model.info = {"history": [{"epoch": i + 1, "loss": v} for i, v in enumerate(losses)]}
    return model


def test_zoo_table_names_the_confident_share_by_a_structured_column_and_display_names_its_threshold(always):
    X, Y = torch.zeros(4, 1, 2, 2), torch.tensor([0, 0, 1, 2])
    models = {"m": [_with_history(always(0), [1.0, 0.5]), _with_history(always(1), [1.0, 0.4])]}
    stats = runs_module.zoo_table(models, {"test": (X, Y)})
    assert stats.loc["m", (runs_module.CONFIDENT, "mean")] == pytest.approx(100.0)     # logit margin 20: confidence ~1
    shown = plots.zoo_stats(stats)
    assert shown.columns.tolist() == ["test accuracy", "mean confidence", "test at ≥ 0.99 (%)",
                                      "final training loss", "plateaued"]
    assert shown.loc["m", "test accuracy"] == "37.50 ± 17.68" and shown.loc["m", "plateaued"] == "0% of replicates"
    assert pages_runs.zoo_values(stats) == {"conf_min": "1.00", "conf_max": "1.00", "share_min": "100", "share_max": "100",
                                   "share_range": "100"}                         # a range with equal ends: once
    assert pages_runs.training_values(_run(), runs_module.zoo_histories({"cnn": models["m"]})) == {
        "n_models": 2, "n_plateau": 0, "epochs": get_profile("tiny").train.epochs}


def test_accuracy_values_name_the_best_and_whether_ood_is_lower():
    cols = pd.MultiIndex.from_tuples([("test", "mean"), ("test", "std"), ("ood", "mean"), ("ood", "std")])
    acc = pd.DataFrame([[80, 1, 70, 1], [85, 1, 60, 1], [90, 1, 91, 1]], columns=cols, index=["A", "B", "ens"])
    v = pages_runs.accuracy_values(acc, ["A", "B"], ["ens"])
    assert v["best_arch"] == "B" and v["best_acc"] == "85.0" and v["ens_name"] == "ens" and v["ens_acc"] == "90.0"
    assert (v["ood_lower_n"], v["ood_rows_n"]) == (2, 3)            # the ensemble's OOD accuracy is not lower
    two = pages_runs.accuracy_values(acc.iloc[:2], ["A"], ["B"])
    assert (two["ood_lower_n"], two["ood_rows_n"]) == (2, 2)


# ----------------------------------------------------------------------------- chapter 4: 5% subsets

def _hits(k, n=100):
    """1/0 per image: the first ``k`` of ``n`` images correct."""
    return np.r_[np.ones(int(k)), np.zeros(n - int(k))]


def _acc(archs=("resnet20", "cnn")) -> dict:
    """{arch: kind -> {set: one 1/0 array per replicate over 100 images}} (S.subset_correct's shape), hand-made:
    accuracies (%) v and v + 2 on test, 10 points less on ood."""
    return {a: {k: {"test": [_hits(v), _hits(v + 2)], "ood": [_hits(v - 10), _hits(v - 8)]}
                for k, v in (("full", 90 - i), ("bs", 88 - i), ("random", 20 + i))} for i, a in enumerate(archs)}


def test_as_accuracies_round_trips_subset_correct_to_replicates_by_sets():
    acc = subsets.as_accuracies(_acc()["resnet20"]["bs"])
    assert acc.columns.tolist() == ["test", "ood"] and acc.to_dict("list") == {"test": [88.0, 90.0],
                                                                              "ood": [78.0, 80.0]}


def test_table1_rows_label_our_rows_and_set_the_papers_beside_them_only_at_5_percent():
    table, rows = pages_subsets.table1_rows(_acc(), 0.05)
    assert table.index.tolist() == [("ResNet20", "full images"), ("ResNet20", "5% BS subsets"),
                                    ("ResNet20", "5% random"), ("small CNN", "full images"),
                                    ("small CNN", "5% BS subsets"), ("small CNN", "5% random")]
    assert table.loc[("ResNet20", "5% BS subsets"), ("test", "mean")] == 89.0
    assert rows[("ResNet20", "5% BS subsets")]["CIFAR-10 test"] == "92.48" and rows[("small CNN", "full images")] == {}
    assert all(r == {} for r in pages_subsets.table1_rows(_acc(), 0.1)[1].values())
    assert pages_subsets.table1_rows(_acc(), 0.1)[0].index[1] == ("ResNet20", "10% BS subsets")


def test_accurate_values_and_by_model():
    acc = _acc()
    bs = subsets.by_model(acc, "bs")
    assert list(bs) == ["ResNet20", "small CNN"] and bs["ResNet20"] is acc["resnet20"]["bs"]["test"]
    assert subsets.by_model(acc, "full", "ood")["small CNN"][1].mean() == pytest.approx(0.81)
    v = verdicts.subsets_accurate(full=subsets.by_model(acc, "full"), bs=bs)
    assert v.numbers.loc["ResNet20", "drop (points)"] == pytest.approx(2.0)     # 2 of 100 images per replicate
    vals = pages_subsets.accurate_values(v, acc)
    assert set(vals) == {"accurate", "gap_min", "gap_max", "gap_low_min", "gap_high_max", "gap_halfwidth_max",
                         "gap_images", "gap_replicates", "tolerance", "rnd_max"}
    assert {k: vals[k] for k in ("accurate", "gap_min", "gap_max", "gap_images", "gap_replicates", "tolerance",
                                 "rnd_max")} == {"accurate": v.word, "gap_min": "2.0", "gap_max": "2.0",
                                                 "gap_images": 100, "gap_replicates": 2, "tolerance": "5",
                                                 "rnd_max": "22.0"}
    # replicates that agree exactly: a t interval of zero width (its coverage is the simulation's business)
    assert float(vals["gap_low_min"]) <= 2.0 <= float(vals["gap_high_max"]) and float(vals["gap_halfwidth_max"]) >= 0


def test_confidence_table_puts_the_papers_mean_drop_first():
    kept = verdicts.confidence_kept({"ResNet20": [np.array([-0.01, 0.01] * 20)], "small CNN": [np.array([0.2, 0.3] * 20)]})
    t = pages_subsets.confidence_table(kept, {"resnet20": None, "cnn": None}, 0.05)
    assert t.columns[0] == "paper mean drop (CIFAR-10)" and t.iloc[:, 0].tolist() == [-0.035, "—"]
    assert "mean drop (ours)" in t.columns and "mean drop" not in t.columns
    assert pages_subsets.confidence_table(kept, ["resnet20", "cnn"], 0.3).iloc[:, 0].tolist() == ["—", "—"]
    assert pages_subsets.kept_values(kept) == {"kept": "does not hold", "drop_min": "0.000", "drop_max": "0.250",
                                   "drop_high_max": f"{kept.numbers['95% high'].max():.3f}", "drop_tolerance": "0.05"}
    assert float(pages_subsets.kept_values(kept)["drop_high_max"]) >= 0.25


def test_example_masks_are_each_architectures_bs_rows_then_the_first_random():
    keep = lambda v: torch.full((5, 2, 2), v)
    subs = {"resnet20": {"test": {"bs": (None, keep(True)), "random": (None, keep(False))}},
            "cnn": {"test": {"bs": (None, keep(False)), "random": (None, keep(True))}}}
    rows = subsets.example_masks(subs, 3)
    assert list(rows) == ["ResNet20 BS", "small CNN BS", "random"]
    assert rows["random"].shape == (3, 2, 2) and not rows["random"].any()   # the first architecture's


def test_transfer_table_and_verdict_on_models_of_known_accuracy(always):
    X, Y = torch.zeros(4, 1, 2, 2), torch.tensor([0, 0, 0, 1])
    models = {"resnet20": [always(0), always(1)], "cnn": [always(1)]}
    bs_images = {a: [X] * len(ms) for a, ms in models.items()}       # every replicate is a source
    table, per_image = subsets.transfer(_run(), models, bs_images, Y)
    assert table.columns.tolist() == ["ResNet20 #0", "ResNet20 #1", "small CNN #0"] == table.index.tolist()
    assert table.loc["ResNet20 #0"].tolist() == [75.0, 25.0, 25.0]
    assert [len(v) for v in per_image.values()] == [2, 1] and list(per_image["resnet20"][0]) == table.columns.tolist()
    assert per_image["resnet20"][0]["ResNet20 #0"].tolist() == [1.0, 1.0, 1.0, 0.0]   # always class 0
    assert per_image["cnn"][0]["ResNet20 #1"].tolist() == [0.0, 0.0, 0.0, 1.0]       # always class 1
    rnd = np.array([0.0, 0.0, 0.0, 0.0])                   # 0% on random subsets
    v = subsets.no_transfer(per_image, {"resnet20": {"random": {"test": [rnd, rnd]}}, "cnn": {"random": {"test": [rnd]}}})
    # source #0 (75% own, others 25% and 25%) and source #1 (25% own, others 75% and 25%): shares 1/3 and 2
    assert v.numbers.loc["ResNet20", "share of lift transferred"] == pytest.approx((1 / 3 + 2) / 2)
    assert v.numbers.loc["ResNet20", "own accuracy"] == 50.0 and v.numbers.loc["ResNet20", "other models"] == 2
    assert v.numbers.loc["ResNet20", "replicates"] == 2
    assert v.numbers.loc["small CNN", "others' accuracy"] == pytest.approx(50.0)
    assert v.numbers.loc["small CNN", "share of lift transferred"] == pytest.approx(50 / 25)
    assert v.numbers.loc["small CNN", "outcome"] != verdicts.HOLDS and v.holds is not True
    assert pages_subsets.transfer_values(v)["transfer"] == v.word


# ----------------------------------------------------------------------------- chapter 5: retraining

def _retrain_runs() -> dict:
    """{(arch, kind, augment): S.retrained_correct's {set: 1/0 array per replicate over 100 images}}: test
    accuracies 50 + i + len(kind) and 52 + augment (%), ood 40 and 41 (%)."""
    runs = {}
    for i, a in enumerate(("resnet20", "cnn")):
        for augment in (False, True):
            for kind in subsets.RETRAIN_KINDS if not augment else ("bs", "random"):
                runs[(a, kind, augment)] = {"test": [_hits(50 + i + len(kind)), _hits(52 + augment)],
                                            "ood": [_hits(40), _hits(41)]}
    return runs


def test_retraining_table_equals_the_table_built_from_parsed_labels():
    runs, frac = _retrain_runs(), 0.05
    labels = {"bs": "5% BS subsets", "random": "5% random", "full": "full images (control)"}
    named = {pages_subsets.retrain_label(k, frac): v for k, v in runs.items()}
    assert list(named)[:4] == [("ResNet20", "5% BS subsets"), ("ResNet20", "5% random"),
                               ("ResNet20", "full images (control)"), ("ResNet20", "5% BS subsets (+)")]
    old_rows = {}                                               # the notebook's former cell, parsing the labels
    for (name, label) in named:
        a = next(k for k, v in paper.ARCH_NAMES.items() if v == name)
        kind = next(k for k, v in labels.items() if label.startswith(v))
        table = paper.TABLE_S1 if label.endswith("(+)") else paper.TABLE1
        old_rows[(name, label)] = paper.table1(a, kind, kind, table) if frac == 0.05 and kind != "full" else {}
    ours, rows = pages_subsets.retraining_table(runs, frac)
    assert rows == old_rows and rows[("ResNet20", "5% BS subsets (+)")]["CIFAR-10 test"] == "92.23 ± 0.03"
    pd.testing.assert_frame_equal(ours, pd.DataFrame({k: runs_module.mean_std(subsets.as_accuracies(v)) for k, v in named.items()}).T)
    assert ours.loc[("ResNet20", "5% BS subsets"), ("test", "mean")] == pytest.approx(52.0)
    assert ours.loc[("small CNN", "5% random (+)"), ("ood", "mean")] == pytest.approx(40.5)


def test_retraining_verdicts_read_the_runs_without_augmentation():
    runs = _retrain_runs()
    # runs with augmentation must not be read: make them wildly different
    for key in [k for k in runs if k[2]]:
        runs[key] = {"test": [_hits(100), _hits(0)], "ood": [_hits(0), _hits(0)]}
    beats, near = subsets.retraining_verdicts(_run(), runs)
    assert beats.numbers.index.tolist() == ["ResNet20", "small CNN"]
    assert beats.numbers.loc["ResNet20", "BS subsets"] == pytest.approx((52 + 52) / 2)     # 50 + 0 + len("bs")
    assert beats.numbers.loc["ResNet20", "random subsets"] == pytest.approx((56 + 52) / 2)
    assert near.numbers.loc["small CNN", "full images"] == pytest.approx((55 + 52) / 2)   # 50 + 1 + len("full")
    assert beats.numbers.loc["ResNet20", "replicates"] == 2 and beats.numbers.loc["ResNet20", "images"] == 100
    # BS no better than random: a difference about -2 points, whose interval over 2 replicates is wide
    assert beats.numbers.loc["ResNet20", "difference (points)"] == pytest.approx(-2.0) and beats.holds is not True
    v = pages_subsets.retraining_verdict_values(beats, near)
    assert v["beats"] == beats.word and v["near"] == near.word
    assert v["rnd_min"] == "54.0" and v["full_max"] == "53.5" and v["bs_min"] == "52.0" and v["bs_max"] == "52.5"
    assert (v["bs_range"], v["rnd_range"]) == ("52.0–52.5", f"{v['rnd_min']}–{v['rnd_max']}")
    assert v["retrain_images"] == 100 and v["retrain_replicates"] == 2 and v["n_archs"] == 2
    assert v["far_more"] == "10" and v["diff_min"] == "-2.0"
    assert v["n_beating_control"] == int((near.numbers["95% high"] < 0).sum())
    flat = [{"loss": 1.0}, {"loss": 1.0}, {"loss": 1.0}]
    assert pages_subsets.plateau_values([flat, [{"loss": 3.0}, {"loss": 2.0}, {"loss": 1.0}]]) == {
        "n_retrained": 2, "n_retrained_plateau": 1}


def test_values_of_the_chapters_opening_cells():
    run = _run()
    assert pages_subsets.pixel_subsets_values(run, 0.05) == {"pct": "5", "method": run.profile.backselect.describe(),
                                                 "n_eval": run.profile.test_size, "replicates": run.profile.replicates}
    assert pages_subsets.retraining_values(run, 0.3)["pct"] == "30"


# ----------------------------------------------------------------------------- figure builders

def test_backselect_panels_draw_one_titled_panel_per_result():
    res = SimpleNamespace(values=torch.rand(6, 16), confidence=torch.ones(6))
    fig = plots.backselect_panels({"A": res, "B": res}, 4, threshold=0.5)
    assert [ax.get_title() for ax in fig.axes] == ["A", "B"] and len(fig.axes[0].lines) == 4 + 1  # + tau's line
    plt.close(fig)


def test_backselect_panels_of_three_models_keep_their_text_readable_at_page_width():
    from overinterp.pages.plots import text_sizes
    res = SimpleNamespace(values=torch.rand(6, 16), confidence=torch.ones(6))
    fig = plots.backselect_panels({"A": res, "B": res, "C": res}, 4, threshold=0.5)
    shrink = min(1.0, plots.PAGE_PX / (fig.get_size_inches()[0] * fig.dpi))   # drawn at most PAGE_PX wide
    assert min(text_sizes(fig)) * fig.dpi / 72 * shrink >= 8.9
    plt.close(fig)


def test_sis_sizes_box_and_retrain_bars_draw_on_fresh_axes():
    plt.close("all")
    ax = plots.sis_sizes_box({"A": [0.01, 0.02], "B": [0.03]})
    assert ax.get_ylabel() == "SIS size (% of pixels)" and ax.lines[-1].get_ydata()[0] == pytest.approx(5.0)
    plt.close(ax.figure)
    runs = {("A", "bs"): pd.DataFrame({"test": [50.0, 52.0]}), ("A", "random"): pd.DataFrame({"test": [20.0, 22.0]})}
    ax = plots.retrain_bars(runs)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["bs", "random"]
    assert sorted(p.get_height() for p in ax.patches if p.get_height() > 0) == [21.0, 51.0]
    plt.close(ax.figure)
    assert math.isclose(100 * paper.SIS_MEAN_SIZE_BELOW, 5.0)


def test_empty_values_give_the_range_of_the_share_of_empty_sis():
    sizes = {"a": [np.array([0.0, 0.02, np.nan]), np.array([0.0, 0.01])], "b": [np.array([0.03, 0.04])]}
    assert pages_runs.empty_values(sizes) == {"sis_empty_min": "0", "sis_empty_max": "50",      # a: 2 of 4; b: none
                                     "sis_empty_range": "0–50"}
    assert pages_runs.empty_values({"c": [np.array([np.nan])]}) == {"sis_empty_min": "—", "sis_empty_max": "—", "sis_empty_range": "—"}


def test_sis_sizes_come_from_the_profiles_own_sis_engine_on_each_replicates_confident_images(monkeypatch):
    """Issue 27: C1 from its own engine (``Profile.sis_engine``, e.g. pruned) on the first ``sis_images``
    confident test images of each replicate, cached by those images; without it, chapter 4's runs serve."""
    import dataclasses
    from overinterp.engine import backselect
    from overinterp.engine.backselect import BackSelectConfig
    from overinterp.engine.sis import find_sis, is_sufficient
    from overinterp.config.context import make_run
    run = make_run(profile="tiny", device="cpu")
    tau = 0.3
    plain = runs_module.sis_sizes_by_replicate(run, tau)
    own = dataclasses.replace(run, profile=dataclasses.replace(run.profile, sis_engine=BackSelectConfig("pruned", m=2),
                                                               sis_images=3))
    sizes = runs_module.sis_sizes_by_replicate(own, tau)
    assert list(sizes) == list(plain) and all(len(r) == run.profile.replicates for r in sizes.values())
    X, Y = runs_module.selection(run, "test").load()
    for a in run.profile.archs:
        for r in range(run.profile.replicates):
            res = runs_module.sis_result(own, a, run.seed + r, tau)
            model = runs_module.trained_model(run.dataset, a, run.profile.name, seed=run.seed + r, device="cpu", progress=False)
            idx = runs_module.confident(model, X, Y, tau)[:3]
            assert res.method == "pruned" and len(res.pred) == len(idx) == len(sizes[paper.ARCH_NAMES[a]][r])
            assert is_sufficient(model, X[idx], res, find_sis(res, tau), tau).all()
    monkeypatch.setattr(backselect, "backselect", lambda *a, **k: pytest.fail("backward selection ran again"))
    assert {k: [v.tolist() for v in vs] for k, vs in runs_module.sis_sizes_by_replicate(own, tau).items()} == \
        {k: [v.tolist() for v in vs] for k, vs in sizes.items()}


def test_figure_2s_titles_give_each_architecture_its_mean_confidence_to_two_decimals():
    assert pages_subsets.map_titles({"ResNet20": 0.9871, "VGG16": 0.5}) == {
        "ResNet20": "ResNet20\nmean confidence on subsets 0.99", "VGG16": "VGG16\nmean confidence on subsets 0.50"}
