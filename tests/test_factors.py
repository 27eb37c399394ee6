"""Tests for overinterp.experiments.factors: the one-factor-at-a-time sweeps of the chapter "Why it holds or fails
here", on the tiny profile (numbers meaningless, behaviour real), and the runner's ``target``."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import overinterp.engine.backselect
import overinterp.zoo.train
from overinterp.experiments import factors, factors_controls, runs
from overinterp.pages import factors as pages_factors
from overinterp.paper import further_verdicts
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.paper import verdicts
from overinterp.store import Store
from overinterp.engine.backselect import BackSelectConfig
from overinterp.config.context import make_run
from overinterp.zoo.models import build_model
from overinterp.engine.runner import KIND, run_backselect, run_config

SWEEPS = {"method": factors.method_sweep, "mask": factors.mask_sweep, "epochs": factors.epochs_sweep,
          "width": factors.width_sweep}


@pytest.fixture(scope="module")
def run():
    return make_run(profile="tiny", device="cpu")


@pytest.fixture(scope="module")
def sweeps(run):
    """Every sweep and the retraining controls, computed once (the first call trains and selects)."""
    return {name: fn(run) for name, fn in SWEEPS.items()}, factors_controls.retrain_controls(run)


# ----------------------------------------------------------------------------- the sweeps on the tiny profile

def test_method_sweep_runs_every_method_and_exact_only_on_its_small_sample(run, sweeps):
    df, f = sweeps[0]["method"], run.profile.factors
    ks = sorted(set(f.ks) | {run.profile.backselect.k})
    assert list(dict.fromkeys(df.setting)) == [f"gradient k={k}" for k in ks] + ["pruned m=16", "exact"]
    assert set(df.loc[df.setting == "exact", "sample"]) == {f"first {f.exact_images}"}
    assert (df.loc[df.setting == "exact", "images"] == f.exact_images).all()
    assert set(df["images"]) == {f.images, f.exact_images}
    base = df[df.baseline]
    assert set(base.setting) == {f"gradient k={run.profile.backselect.k}"} and len(base) == 2
    assert df.loc[df.paper, "setting"].tolist() == ["exact"]


def test_mask_sweep_compares_the_mean_pixel_with_black(run, sweeps):
    df = sweeps[0]["mask"]
    assert df.setting.tolist() == ["mean pixel", "black"]
    assert df.baseline.tolist() == [True, False] and df.paper.tolist() == [True, False]
    assert factors.black_value("fashion-mnist") == pytest.approx(-0.2860 / 0.3530)   # a 0 pixel, normalised
    assert (df["images"] == run.profile.factors.images).all()


@pytest.mark.parametrize("name,field", [("epochs", "epochs"), ("width", "widths")])
def test_model_sweeps_train_one_model_per_setting_and_report_its_confidence(run, sweeps, name, field):
    df = sweeps[0][name]
    assert df.value.tolist() == list(getattr(run.profile.factors, field))
    assert df.baseline.sum() == 1
    for col in ("test accuracy (%)", "mean confidence", "confident test images (%)", "final training loss"):
        assert df[col].map(math.isfinite).all(), col
    assert df["mean confidence"].between(0.1, 1).all()   # at least 1/classes: the max of a softmax


def test_every_measure_is_finite_where_it_is_defined(sweeps):
    for name, df in sweeps[0].items():
        for col in ("full images (%)", "own BS subsets (%)", "random subsets (%)", "other models (%)"):
            assert df[col].between(0, 100).all(), (name, col)
        assert df["drop (points)"].map(math.isfinite).all()
        # a mean SIS size exactly where some image is confident; a share where the source beats random
        assert (df["SIS size (% of pixels)"].notna() == (df["confident images"] > 0)).all(), name
        lift = df["own BS subsets (%)"] > df["random subsets (%)"]
        assert (df["share transferred"].notna() == lift).all(), name
        assert set(df.C1) | set(df.C2) | set(df.C3) <= set(verdicts.OUTCOMES)   # outcome strings
        assert (df.loc[df["confident images"] == 0, "C1"] == verdicts.UNTESTABLE).all()
        assert df["C2 95% interval"].str.fullmatch(r"\[-?\d+\.\d, -?\d+\.\d\]").all(), name
        shown = pages_factors.table(df)
        assert set(shown.loc[["C1", "C2", "C3"]].values.ravel()) <= set(verdicts.OUTCOMES)
        assert "nan" not in shown.to_string().lower() and len(shown.columns) == len(df)


def test_the_method_table_is_split_into_every_method_on_the_same_images_and_the_larger_samples(sweeps):
    methods = sweeps[0]["method"]
    same, more = pages_factors.method_tables(methods)
    smallest = methods["sample size"].min()
    settings = list(dict.fromkeys(methods.setting))
    assert [c.split("  ←")[0] for c in same.columns] == settings      # every method, exact included, one sample
    assert same.loc["images"].tolist() == [smallest] * len(settings)
    assert "exact" not in [c.split("  ←")[0] for c in more.columns]    # exact ran on the small sample only
    assert set(more.loc["images"]) == {methods["sample size"].max()}
    assert len(same.columns) + len(more.columns) == len(methods)
    one = methods[methods["sample size"] == smallest]
    assert pages_factors.method_tables(one)[1].empty                            # one sample: nothing more to show


def test_other_models_are_the_zoo_without_the_source(run):
    others, zoo = factors.other_models(run), runs.zoo(run)
    assert len(others) == sum(len(ms) for ms in zoo.values()) - 1
    assert all(m is not zoo[run.profile.factors.arch][0] for m in others)


def test_retrain_controls_report_every_control_per_replicate(run, sweeps):
    df = sweeps[1]
    assert list(dict.fromkeys(df.control)) == ["BS subsets", "random subsets", "full images", "keep-mask alone",
                                               "values of another class", "random target class",
                                               factors_controls.IMPUTED["bs"], factors_controls.IMPUTED["random"]]
    assert (df.groupby("control").size() == run.profile.replicates).all()
    assert df["test accuracy (%)"].between(0, 100).all()
    for acc, c in zip(df["test accuracy (%)"], df["correct"]):      # the per-image results behind each accuracy
        assert set(np.unique(c)) <= {0.0, 1.0} and len(c) == run.profile.test_size
        assert acc == pytest.approx(100 * c.mean())
    t = pages_factors.controls_table(df)
    assert t.columns.tolist() == [f"replicate {r} (%)" for r in range(run.profile.replicates)] + [
        "mean (%)", "std", "share surviving"]
    if t.loc["BS subsets", "mean (%)"] > 10:   # a lift above chance: BS itself keeps all of it
        assert t.loc["BS subsets", "share surviving"] == pytest.approx(1.0)
    else:
        assert df["share surviving"].isna().all()


def test_closing_values_give_every_claims_outcome_words_and_numbers(run, sweeps):
    v = pages_factors.closing_values(run, *sweeps)
    assert {v[f"close_{c}_verdict"] for c in ("C1", "C2", "C3")} <= set(verdicts.OUTCOMES)
    assert {v[f"close_{c}_expect"] for c in ("C1", "C2", "C3")} <= {"lower", "higher", "unchanged", "split", "—"}
    assert {v["close_C4_beats"], v["close_C4_near"]} <= set(verdicts.OUTCOMES)
    assert v["close_C4_rests"] in {"positions", "values", "—"}
    for c in ("C1", "C2", "C3"):
        assert v[f"close_{c}_lower"] + v[f"close_{c}_higher"] <= v[f"close_{c}_differ"]
    assert all(isinstance(x, (str, int)) and x != "" and "nan" not in str(x).lower() for x in v.values())
    e = factors.effects(run, sweeps[0])
    assert e.columns.tolist() == factors.EFFECT_COLUMNS and set(e.direction) <= {"lower", "higher", "unchanged"}
    assert set(e["read as"]) <= set(factors.READ_AS.values()) and (e["range"] >= 0).all()


def _sweep(factor, settings, values, sis, baseline, paper=None, size=None):
    """A hand-made sweep: C1 measured (mean SIS size), C2 and C3 present but untestable."""
    return pd.DataFrame([{"factor": factor, "setting": str(s), "value": v, "sample size": size or 40,
                          "baseline": s == baseline, "paper": s == paper, "SIS size (% of pixels)": x,
                          "drop (points)": 0.0, "share transferred": math.nan, "C1": verdicts.FAILS,
                          "C2": verdicts.HOLDS, "C3": verdicts.UNTESTABLE} for s, v, x in zip(settings, values, sis)])


def test_effects_read_each_factor_toward_the_papers_setting(run):
    sw = {"method": _sweep("method", ["gradient k=64", "gradient k=8", "pruned m=16"], [-64, -8, 0], [30, 20, 8],
                           "gradient k=8"),                        # no exact: the trend toward it, lower
          "mask": _sweep("mask", ["mean pixel", "black"], [0, 1], [20, 60], "mean pixel", paper="mean pixel"),
          "epochs": _sweep("epochs", [1, 3, 10], [1, 3, 10], [70, 50, 45], 10)}   # ours at the end: 3 -> 10
    e = factors.effects(run, sw)
    assert e.claim.tolist() == ["C1"] * 3 + ["C2"] * 3                # C3 cannot be tested anywhere
    assert (e.loc[e.claim == "C2", "range"] == 0).all()               # every drop 0: read, but flat
    e = e[e.claim == "C1"].set_index("factor")
    assert e.index.tolist() == ["mask value", "training length (epochs)", "backward-selection method"]  # by range
    assert e.loc["mask value", ["lowest", "lowest at", "highest", "highest at", "range"]].tolist() == [
        20, "mean pixel", 60, "black", 40]
    assert e.loc["backward-selection method", ["ours at", "ours", "compared with", "its value", "read as",
                                               "change toward the paper's", "direction"]].tolist() == [
        "gradient k=8", 20, "pruned m=16", 8, "toward the paper's", -12, "lower"]
    assert e.loc["training length (epochs)", ["ours at", "ours", "compared with", "its value", "read as",
                                              "change toward the paper's", "direction"]].tolist() == [
        "10 epochs", 45, "3 epochs", 50, "the step up to ours", -5, "lower"]
    assert e.loc["mask value", ["read as", "direction"]].tolist() == ["ours is the paper's", "unchanged"]


def test_closing_values_give_the_widest_factor_and_the_prediction_at_paper_scale(run):
    sw = {"method": _sweep("method", ["gradient k=64", "gradient k=8", "pruned m=16"], [-64, -8, 0], [30, 20, 8],
                           "gradient k=8"),
          "mask": _sweep("mask", ["mean pixel", "black"], [0, 1], [20, 60], "mean pixel", paper="mean pixel"),
          "epochs": _sweep("epochs", [1, 3, 10], [1, 3, 10], [70, 50, 45], 10)}
    v = pages_factors.closing_values(run, sw, _shared(_controls(keep=50, bs=100)))
    assert v["close_C1_verdict"] == verdicts.FAILS                    # the baseline's outcome string, as is
    assert [v[f"close_C1_{k}"] for k in ("factor", "lo", "lo_at", "hi", "hi_at")] == [
        "mask value", "20.00", "mean pixel", "60.00", "black"]            # the largest range
    assert [v[f"close_C1_{k}"] for k in ("differ", "lower", "higher", "expect")] == [2, 2, 0, "lower"]  # not the mask
    assert [v[f"close_C3_{k}"] for k in ("factor", "lo", "hi_at", "differ", "expect")] == [
        "none", "—", "—", 0, "—"]                                          # C3 untestable everywhere
    sw["epochs"] = _sweep("epochs", [1, 3, 10], [1, 3, 10], [70, 40, 45], 10)  # 3 -> 10 now rises: they disagree
    v = pages_factors.closing_values(run, sw, _shared(_controls(keep=50, bs=100)))
    assert [v[f"close_C1_{k}"] for k in ("differ", "lower", "higher", "expect")] == [2, 1, 1, "split"]
    sw["epochs"] = _sweep("epochs", [1, 3, 10], [1, 3, 10], [70, 20, 20], 10)
    sw["method"] = _sweep("method", ["gradient k=64", "gradient k=8"], [-64, -8], [30, 20], "gradient k=8")
    v = pages_factors.closing_values(run, sw, _shared(_controls(keep=50, bs=100)))   # k=8 is the sweep's end: the step to it
    assert [v[f"close_C1_{k}"] for k in ("differ", "lower", "higher", "expect")] == [2, 1, 0, "lower"]  # 1 unchanged


def test_a_second_call_recomputes_nothing(run, sweeps, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("recomputed")
    monkeypatch.setattr(overinterp.zoo.train, "fit", refuse)
    monkeypatch.setattr(overinterp.engine.backselect, "backselect", refuse)
    for name, fn in SWEEPS.items():
        pd.testing.assert_frame_equal(fn(run), sweeps[0][name])
    pd.testing.assert_frame_equal(factors_controls.retrain_controls(run), sweeps[1])


def test_random_target_subsets_are_selected_for_a_class_other_than_the_prediction(run):
    sel = runs.selection(run, "test")
    pred = runs.backselect_set(run, run.profile.factors.arch, sel, progress=False).pred
    images, keep, target = factors_controls.random_target_subsets(run, "test")
    assert (target != pred).all()
    assert images.shape == sel.load()[0].shape and keep.shape == images[:, 0].shape


# ----------------------------------------------------------------------------- the controls on hand-made tensors

def test_keep_mask_images_are_the_mask_itself_in_every_channel():
    keep = torch.tensor([[[True, False], [False, True]]])
    x = factors_controls.keep_mask_images(keep, 3)
    assert x.shape == (1, 3, 2, 2) and x.dtype == torch.float32
    assert torch.equal(x, torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]).expand(1, 3, 2, 2))


def test_other_class_partner_has_another_label_and_is_seeded():
    labels = torch.tensor([0, 0, 1, 2, 2, 2, 1, 0])
    p = factors_controls.other_class_partner(labels, seed=3)
    assert (labels[p] != labels).all()
    assert torch.equal(p, factors_controls.other_class_partner(labels, seed=3))
    with pytest.raises(ValueError, match="another class"):
        factors_controls.other_class_partner(torch.tensor([4, 4]))


def test_fill_from_other_class_puts_the_partners_values_at_the_kept_positions():
    images = torch.arange(12, dtype=torch.float32).view(3, 1, 2, 2)   # image i holds 4i .. 4i+3
    keep = torch.tensor([[[True, False], [False, False]], [[False, True], [True, False]],
                         [[False, False], [False, True]]])
    partner = torch.tensor([2, 0, 1])
    out = factors_controls.fill_from_other_class(images, keep, partner, mask_value=-9.0)
    expect = torch.tensor([[[8.0, -9], [-9, -9]], [[-9, 1], [2, -9]], [[-9, -9], [-9, 7]]]).view(3, 1, 2, 2)
    assert torch.equal(out, expect)


def test_random_other_class_never_draws_the_prediction_and_reaches_every_other_class():
    pred = torch.arange(10).repeat(200)
    t = factors_controls.random_other_class(pred, 10, seed=1)
    assert (t != pred).all() and t.min() >= 0 and t.max() <= 9
    assert all(set(t[pred == c].tolist()) == set(range(10)) - {c} for c in range(10))
    assert torch.equal(t, factors_controls.random_other_class(pred, 10, seed=1))


# ----------------------------------------------------------------------------- the runner's target

def _toy():
    torch.manual_seed(0)
    images = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    return build_model("cnn", 1, 10, width=2).eval(), images


def test_runner_key_is_unchanged_without_a_target_and_separate_with_one(tmp_path):
    model, images = _toy()
    store, cfg = Store(tmp_path), BackSelectConfig("gradient", k=8)
    kw = dict(model_config={"arch": "cnn"}, data_config={"set": "toy"}, config=cfg, shard_size=2, store=store,
              progress=False)
    plain = run_backselect(model, images, **kw)
    assert store.exists(KIND, run_config(model, images, {"arch": "cnn"}, {"set": "toy"}, cfg, 2))
    target = (plain.pred + 1) % 10
    aimed = run_backselect(model, images, target=target, **kw)
    assert torch.equal(aimed.pred, target) and (aimed.full_log_odds < plain.full_log_odds).all()  # not the argmax
    assert len(list((tmp_path / KIND).iterdir())) == 2
    with pytest.raises(ValueError, match="target must have shape"):
        run_backselect(model, images, target=target[:2], **kw)


@pytest.mark.parametrize("samples", [("all 40",), ("all 40", "first 8")])
def test_sweep_figure_draws_one_or_several_samples(samples):
    """The method sweep's hue ("sample") has one level when every method ran on all images."""
    import matplotlib.pyplot as plt
    from overinterp.pages.factor_plots import sweep_figure
    rows = [{"setting": s, "sample": smp, **{factors.MEASURES[c][0]: v for c in ("C1", "C2", "C3")}}
            for smp in samples for s, v in (("gradient k=8", 9.0), ("pruned m=16", 6.0))]
    fig = sweep_figure(pd.DataFrame(rows), "backward-selection method", 0.99, hue="sample")
    legend = fig.axes[3].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == list(samples)
    plt.close(fig)


def test_prose_values_describe_the_execution(run, sweeps):
    v, f = pages_factors.prose_values(run), run.profile.factors
    assert v["tau"] == f"{run.profile.sis_threshold:g}" and v["n_images"] == f.images
    assert v["n_others"] == len(factors.other_models(run)) and v["epochs"] == ", ".join(map(str, f.epochs))
    assert v["black"] == f"{factors.black_value(run.dataset):.2f}" and v["mean_pixel"] == "0.29"   # one channel
    assert v["n_test"] == run.profile.test_size and v["n_train"] == run.profile.retrain_images
    assert v["n_exact"] == min(f.exact_images, f.images) and v["n_pruned"] == min(f.pruned_images or f.images, f.images)
    assert v["n_common"] == min(n for n in (v["n_images"], v["n_pruned"], v["n_exact"]) if n)
    assert all(isinstance(x, (int, str)) and ". " not in str(x) for x in v.values())    # numbers and words


def test_table_shows_the_sweeps_outcome_strings():
    sw = _sweep("mask", ["mean pixel", "black"], [0, 1], [20, 60], "mean pixel", paper="mean pixel")
    sw["sample"] = "all 40"
    sw.loc[1, "share transferred"] = math.nan
    shown = pages_factors.table(sw)                                            # measures as rows, settings as columns
    assert shown.loc[["C1", "C2", "C3"]].T.values.tolist() == [["does not hold", "holds", "cannot be tested"]] * 2
    assert shown.columns.tolist() == ["mean pixel  ← profile", "black"] and "factor" not in shown.index
    assert shown.loc["drop (points)"].tolist() == ["0.00", "0.00"] and shown.loc["SIS size (% of pixels)"].tolist() == [20, 60]
    assert shown.loc["share transferred", "black"] == "—"
    two = pd.concat([sw.assign(sample="all 40"), sw.assign(sample="first 8")], ignore_index=True)
    assert pages_factors.table(two).columns.tolist()[:2] == ["mean pixel (all 40)  ← profile", "black (all 40)"]


def _controls(keep, bs, full=None, n=100, reps=3, imputed=(10, 10)):
    """A hand-made controls frame: per control, replicates with the first k of n test images correct."""
    rows = []
    for control, k in (("BS subsets", bs), ("keep-mask alone", keep), ("random subsets", 10),
                       ("full images", full if full is not None else bs), (factors_controls.IMPUTED["bs"], imputed[0]),
                       (factors_controls.IMPUTED["random"], imputed[1])):
        for r in range(reps):
            c = np.r_[np.ones(k), np.zeros(n - k)]
            rows.append({"control": control, "replicate": r, "test accuracy (%)": 100 * c.mean(), "correct": c})
    return pd.DataFrame(rows)


def test_position_values_give_the_keep_masks_share_of_the_lift_with_intervals(run):
    chance = 100 / 10                                           # fashion-mnist: 10 classes
    v = pages_factors.position_values(run, _controls(keep=55, bs=100))
    assert v["pos_chance"] == "10" and v["pos_replicates"] == 3 and v["pos_images"] == 100
    assert v["pos_share"] == f"{(55 - chance) / (100 - chance):.0%}" == "50%"
    lo, hi = (int(x.rstrip("%")) for x in v["pos_share_interval"].strip("[]").split(", "))
    assert lo < 50 < hi and hi - lo < 40
    assert v["pos_keep_acc"].startswith("55.0 [") and v["pos_bs_acc"] == "100.0 [100.0, 100.0]"
    assert pages_factors.position_values(run, _controls(keep=55, bs=100)) == v                    # seeded
    none = pages_factors.position_values(run, _controls(keep=10, bs=100))
    assert none["pos_share"] == "0%"


def test_the_lift_share_is_one_for_the_whole_zero_at_chance_and_its_interval_holds_the_estimate():
    whole = [np.r_[np.ones(90), np.zeros(10)]] * 3
    at_chance = [np.r_[np.ones(10), np.zeros(90)]] * 3
    half = [np.r_[np.ones(50), np.zeros(50)], np.r_[np.ones(48), np.zeros(52)], np.r_[np.ones(52), np.zeros(48)]]
    assert factors_controls.lift_share(whole, whole, 10.0, seed=0).estimate == pytest.approx(1.0)
    assert factors_controls.lift_share(at_chance, whole, 10.0, seed=0).estimate == pytest.approx(0.0)
    s = factors_controls.lift_share(half, whole, 10.0, seed=0)
    assert s.estimate == pytest.approx(0.5) and s.low < 0.5 < s.high
    acc = factors_controls.accuracy_interval(half, seed=0)
    assert acc.estimate == pytest.approx(50.0) and acc.low < 50 < acc.high <= 100      # percent, not a fraction


def test_retrain_verdicts_read_the_controls_per_image_results(run):
    name = ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch)
    good = factors_controls.retrain_verdicts(run, _controls(keep=50, bs=90, full=91))
    assert set(good) == {"beats random", "near full"}
    assert good["beats random"].holds is True and good["near full"].holds is True
    assert good["beats random"].numbers.loc[name, "difference (points)"] == pytest.approx(80.0)
    bad = factors_controls.retrain_verdicts(run, _controls(keep=50, bs=12, full=91))
    assert bad["beats random"].holds is False and bad["near full"].holds is False


def test_imputation_values_and_verdict_read_the_imputed_controls(run):
    name = ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch) + ", imputed (ROAD)"
    v = pages_factors.imputation_values(run, _controls(keep=50, bs=100, imputed=(55, 12)))
    assert v["road_share"] == "50%" and v["road_bs_acc"].startswith("55.0 [") and v["road_random_acc"].startswith("12.0")
    lo, hi = (int(x.rstrip("%")) for x in v["road_share_interval"].strip("[]").split(", "))
    assert lo < 50 < hi and v["road_noise"] == "0.01"
    numbers = factors_controls.imputed_correct(run, _controls(keep=50, bs=100, imputed=(80, 12)))
    assert set(numbers) == {"model", "bs", "random"} and name == numbers["model"] + ", imputed (ROAD)"
    assert len(numbers["bs"]) == 3 and [c.mean() for c in numbers["random"]] == [0.12] * 3
    survives = further_verdicts.imputed_verdict(**numbers)
    assert survives.holds is True and survives.numbers.loc[name, "difference (points)"] == pytest.approx(68.0)
    closed = further_verdicts.imputed_verdict(**factors_controls.imputed_correct(run, _controls(keep=50, bs=100,
                                                                                                imputed=(13, 12))))
    assert closed.holds is False


def _shared(df):
    """``df`` with the share surviving, as retrain_controls adds it (fashion-mnist: chance 10%)."""
    lift = df.loc[df.control == "BS subsets", "test accuracy (%)"].mean() - 10
    return df.assign(**{"share surviving": (df["test accuracy (%)"] - 10) / lift if lift > 0 else math.nan})


def test_closing_values_of_c4_leave_out_the_imputed_random_control(run):
    v = pages_factors.closing_values(run, {"method": _sweep("method", ["gradient k=8"], [-8], [20], "gradient k=8")},
                               _shared(_controls(keep=50, bs=100, imputed=(55, 30))))
    assert v["close_C4_beats"] == verdicts.HOLDS and v["close_C4_near"] == verdicts.HOLDS
    # keep-mask alone (50 - 10) / 90 = 44% is the least: not the imputed random subsets' 22%
    assert [v[f"close_C4_{k}"] for k in ("least", "least_share", "keep", "rests")] == [
        "keep-mask alone", "44%", "44%", "values"]


def test_closing_values_of_c4_say_what_retraining_rests_on(run):
    method = {"method": _sweep("method", ["gradient k=8"], [-8], [20], "gradient k=8")}
    v = pages_factors.closing_values(run, method, _shared(_controls(keep=70, bs=100, imputed=(40, 10))))
    assert [v[f"close_C4_{k}"] for k in ("least", "least_share", "keep", "rests")] == [
        factors_controls.IMPUTED["bs"], "33%", "67%", "positions"]
    v = pages_factors.closing_values(run, method, _shared(_controls(keep=50, bs=10)))    # BS at chance: nothing to share
    assert [v[f"close_C4_{k}"] for k in ("least", "least_share", "keep", "rests")] == ["—"] * 4
    assert v["close_C4_beats"] == verdicts.FAILS


def test_the_width_sweeps_baseline_says_it_is_not_the_zoos_model():
    sw = _sweep("width", [4, 8], [4, 8], [30, 20], 8)
    sw["sample"], sw["ours"] = "all 40", "the profile's width, trained 12 epochs (the zoo: 60)"
    assert pages_factors.table(sw).columns.tolist() == ["4", "8  ← the profile's width, trained 12 epochs (the zoo: 60)"]
    assert "ours" not in pages_factors.table(sw).index
