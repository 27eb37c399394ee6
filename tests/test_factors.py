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
from overinterp.experiments import runs as A
from overinterp.experiments import factors as F
from overinterp.paper import verdicts
from overinterp.store import Store
from overinterp.engine.backselect import BackSelectConfig
from overinterp.config.context import make_run
from overinterp.zoo.models import build_model
from overinterp.engine.runner import KIND, run_backselect, run_config

SWEEPS = {"method": F.method_sweep, "mask": F.mask_sweep, "epochs": F.epochs_sweep, "width": F.width_sweep}


@pytest.fixture(scope="module")
def run():
    return make_run(profile="tiny", device="cpu")


@pytest.fixture(scope="module")
def sweeps(run):
    """Every sweep and the retraining controls, computed once (the first call trains and selects)."""
    return {name: fn(run) for name, fn in SWEEPS.items()}, F.retrain_controls(run)


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
    assert F.black_value("fashion-mnist") == pytest.approx(-0.2860 / 0.3530)   # a 0 pixel, normalised
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
        shown = F.table(df)
        assert set(shown.loc[["C1", "C2", "C3"]].values.ravel()) <= set(verdicts.OUTCOMES)
        assert "nan" not in shown.to_string().lower() and len(shown.columns) == len(df)


def test_other_models_are_the_zoo_without_the_source(run):
    others, zoo = F.other_models(run), A.zoo(run)
    assert len(others) == sum(len(ms) for ms in zoo.values()) - 1
    assert all(m is not zoo[run.profile.factors.arch][0] for m in others)


def test_retrain_controls_report_every_control_per_replicate(run, sweeps):
    df = sweeps[1]
    assert list(dict.fromkeys(df.control)) == ["BS subsets", "random subsets", "full images", "keep-mask alone",
                                               "values of another class", "random target class",
                                               F.IMPUTED["bs"], F.IMPUTED["random"]]
    assert (df.groupby("control").size() == run.profile.replicates).all()
    assert df["test accuracy (%)"].between(0, 100).all()
    for acc, c in zip(df["test accuracy (%)"], df["correct"]):      # the per-image results behind each accuracy
        assert set(np.unique(c)) <= {0.0, 1.0} and len(c) == run.profile.test_size
        assert acc == pytest.approx(100 * c.mean())
    t = F.controls_table(df)
    assert t.columns.tolist() == [f"replicate {r} (%)" for r in range(run.profile.replicates)] + [
        "mean (%)", "std", "share surviving"]
    if t.loc["BS subsets", "mean (%)"] > 10:   # a lift above chance: BS itself keeps all of it
        assert t.loc["BS subsets", "share surviving"] == pytest.approx(1.0)
    else:
        assert df["share surviving"].isna().all()


def test_summary_has_one_row_per_claim_with_a_verdict(run, sweeps):
    s = F.summary(run, *sweeps)
    assert s.index.tolist() == ["C1", "C2", "C3", "C4"]
    assert s.columns.tolist() == ["verdict at the tiny profile", "which factor moves it",
                                  "what we expect at paper scale"]
    assert set(s.iloc[:3, 0]) <= set(verdicts.OUTCOMES)
    assert s.map(lambda v: isinstance(v, str) and len(v) > 0).all().all()
    html = F.sentences(s).to_html()                          # shown whole, not cut at 50 characters
    assert all(v.replace("'", "&#x27;") in html or v in html for v in s["what we expect at paper scale"])


def _sweep(factor, settings, values, sis, baseline, paper=None, size=None):
    """A hand-made sweep: C1 measured (mean SIS size), C2 and C3 present but untestable."""
    return pd.DataFrame([{"factor": factor, "setting": str(s), "value": v, "sample size": size or 40,
                          "baseline": s == baseline, "paper": s == paper, "SIS size (% of pixels)": x,
                          "drop (points)": 0.0, "share transferred": math.nan, "C1": verdicts.FAILS,
                          "C2": verdicts.HOLDS, "C3": verdicts.UNTESTABLE} for s, v, x in zip(settings, values, sis)])


def test_summary_reads_each_factor_toward_the_papers_setting(run, sweeps):
    sw = {"method": _sweep("method", ["gradient k=64", "gradient k=8", "pruned m=16"], [-64, -8, 0], [30, 20, 8],
                           "gradient k=8"),                        # no exact: the trend toward it, lower
          "mask": _sweep("mask", ["mean pixel", "black"], [0, 1], [20, 60], "mean pixel", paper="mean pixel"),
          "epochs": _sweep("epochs", [1, 3, 10], [1, 3, 10], [70, 50, 45], 10)}   # ours at the end: 3 -> 10
    s = F.summary(run, sw, sweeps[1])
    moves, expect = s.loc["C1", "which factor moves it"], s.loc["C1", "what we expect at paper scale"]
    assert s.loc["C1", "verdict at the tiny profile"] == verdicts.FAILS   # the baseline's outcome string, as is
    assert moves.startswith("mask value") and "20.00 (mean pixel) to 60.00 (black)" in moves   # the largest range
    assert expect.startswith("expect a lower mean SIS size at paper scale, toward the claim")
    assert "8.00 at pruned m=16 against 20.00 at ours, toward the paper's exact" in expect
    assert "45.00 at ours against 50.00 at 3 epochs" in expect and "mask value" not in expect  # the paper's mask
    assert s.loc["C3", "which factor moves it"] == "no factor could be read"              # untestable everywhere


def test_a_second_call_recomputes_nothing(run, sweeps, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("recomputed")
    monkeypatch.setattr(overinterp.zoo.train, "fit", refuse)
    monkeypatch.setattr(overinterp.engine.backselect, "backselect", refuse)
    for name, fn in SWEEPS.items():
        pd.testing.assert_frame_equal(fn(run), sweeps[0][name])
    pd.testing.assert_frame_equal(F.retrain_controls(run), sweeps[1])


def test_random_target_subsets_are_selected_for_a_class_other_than_the_prediction(run):
    sel = A.selection(run, "test")
    pred = A.backselect_set(run, run.profile.factors.arch, sel, progress=False).pred
    images, keep, target = F.random_target_subsets(run, "test")
    assert (target != pred).all()
    assert images.shape == sel.load()[0].shape and keep.shape == images[:, 0].shape


# ----------------------------------------------------------------------------- the controls on hand-made tensors

def test_keep_mask_images_are_the_mask_itself_in_every_channel():
    keep = torch.tensor([[[True, False], [False, True]]])
    x = F.keep_mask_images(keep, 3)
    assert x.shape == (1, 3, 2, 2) and x.dtype == torch.float32
    assert torch.equal(x, torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]).expand(1, 3, 2, 2))


def test_other_class_partner_has_another_label_and_is_seeded():
    labels = torch.tensor([0, 0, 1, 2, 2, 2, 1, 0])
    p = F.other_class_partner(labels, seed=3)
    assert (labels[p] != labels).all()
    assert torch.equal(p, F.other_class_partner(labels, seed=3))
    with pytest.raises(ValueError, match="another class"):
        F.other_class_partner(torch.tensor([4, 4]))


def test_fill_from_other_class_puts_the_partners_values_at_the_kept_positions():
    images = torch.arange(12, dtype=torch.float32).view(3, 1, 2, 2)   # image i holds 4i .. 4i+3
    keep = torch.tensor([[[True, False], [False, False]], [[False, True], [True, False]],
                         [[False, False], [False, True]]])
    partner = torch.tensor([2, 0, 1])
    out = F.fill_from_other_class(images, keep, partner, mask_value=-9.0)
    expect = torch.tensor([[[8.0, -9], [-9, -9]], [[-9, 1], [2, -9]], [[-9, -9], [-9, 7]]]).view(3, 1, 2, 2)
    assert torch.equal(out, expect)


def test_random_other_class_never_draws_the_prediction_and_reaches_every_other_class():
    pred = torch.arange(10).repeat(200)
    t = F.random_other_class(pred, 10, seed=1)
    assert (t != pred).all() and t.min() >= 0 and t.max() <= 9
    assert all(set(t[pred == c].tolist()) == set(range(10)) - {c} for c in range(10))
    assert torch.equal(t, F.random_other_class(pred, 10, seed=1))


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
    rows = [{"setting": s, "sample": smp, **{F.MEASURES[c][0]: v for c in ("C1", "C2", "C3")}}
            for smp in samples for s, v in (("gradient k=8", 9.0), ("pruned m=16", 6.0))]
    fig = sweep_figure(pd.DataFrame(rows), "backward-selection method", 0.99, hue="sample")
    legend = fig.axes[3].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == list(samples)
    plt.close(fig)


def test_prose_values_describe_the_execution(run, sweeps):
    v, f = F.prose_values(run), run.profile.factors
    assert v["tau"] == f"{run.profile.sis_threshold:g}" and v["n_images"] == f.images
    assert v["n_others"] == len(F.other_models(run)) and v["epochs"] == ", ".join(map(str, f.epochs))
    assert v["black"] == f"{F.black_value(run.dataset):.2f}" and v["mean_pixel"] == "0.29"   # one channel
    assert v["n_test"] == run.profile.test_size and v["n_train"] == run.profile.retrain_images


def test_table_shows_the_sweeps_outcome_strings():
    sw = _sweep("mask", ["mean pixel", "black"], [0, 1], [20, 60], "mean pixel", paper="mean pixel")
    sw["sample"] = "all 40"
    sw.loc[1, "share transferred"] = math.nan
    shown = F.table(sw)                                            # measures as rows, settings as columns
    assert shown.loc[["C1", "C2", "C3"]].T.values.tolist() == [["does not hold", "holds", "cannot be tested"]] * 2
    assert shown.columns.tolist() == ["mean pixel  ← profile", "black"] and "factor" not in shown.index
    assert shown.loc["drop (points)"].tolist() == ["0.00", "0.00"] and shown.loc["SIS size (% of pixels)"].tolist() == [20, 60]
    assert shown.loc["share transferred", "black"] == "—"
    two = pd.concat([sw.assign(sample="all 40"), sw.assign(sample="first 8")], ignore_index=True)
    assert F.table(two).columns.tolist()[:2] == ["mean pixel (all 40)  ← profile", "black (all 40)"]


def _controls(keep, bs, full=None, n=100, reps=3, imputed=(10, 10)):
    """A hand-made controls frame: per control, replicates with the first k of n test images correct."""
    rows = []
    for control, k in (("BS subsets", bs), ("keep-mask alone", keep), ("random subsets", 10),
                       ("full images", full if full is not None else bs), (F.IMPUTED["bs"], imputed[0]),
                       (F.IMPUTED["random"], imputed[1])):
        for r in range(reps):
            c = np.r_[np.ones(k), np.zeros(n - k)]
            rows.append({"control": control, "replicate": r, "test accuracy (%)": 100 * c.mean(), "correct": c})
    return pd.DataFrame(rows)


def test_position_values_give_the_keep_masks_share_of_the_lift_with_intervals(run):
    chance = 100 / 10                                           # fashion-mnist: 10 classes
    v = F.position_values(run, _controls(keep=55, bs=100))
    assert v["pos_chance"] == "10" and v["pos_replicates"] == 3 and v["pos_images"] == 100
    assert v["pos_share"] == f"{(55 - chance) / (100 - chance):.0%}" == "50%"
    lo, hi = (int(x.rstrip("%")) for x in v["pos_share_interval"].strip("[]").split(", "))
    assert lo < 50 < hi and hi - lo < 40
    assert v["pos_keep_acc"].startswith("55.0 [") and v["pos_bs_acc"] == "100.0 [100.0, 100.0]"
    assert F.position_values(run, _controls(keep=55, bs=100)) == v                    # seeded
    none = F.position_values(run, _controls(keep=10, bs=100))
    assert none["pos_share"] == "0%"


def test_retrain_verdicts_read_the_controls_per_image_results(run):
    name = F.ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch)
    good = F.retrain_verdicts(run, _controls(keep=50, bs=90, full=91))
    assert set(good) == {"beats random", "near full"}
    assert good["beats random"].holds is True and good["near full"].holds is True
    assert good["beats random"].numbers.loc[name, "difference (points)"] == pytest.approx(80.0)
    bad = F.retrain_verdicts(run, _controls(keep=50, bs=12, full=91))
    assert bad["beats random"].holds is False and bad["near full"].holds is False


def test_imputation_values_and_verdict_read_the_imputed_controls(run):
    name = F.ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch) + ", imputed (ROAD)"
    v = F.imputation_values(run, _controls(keep=50, bs=100, imputed=(55, 12)))
    assert v["road_share"] == "50%" and v["road_bs_acc"].startswith("55.0 [") and v["road_random_acc"].startswith("12.0")
    lo, hi = (int(x.rstrip("%")) for x in v["road_share_interval"].strip("[]").split(", "))
    assert lo < 50 < hi and v["road_noise"] == "0.01"
    survives = F.imputed_verdict(run, _controls(keep=50, bs=100, imputed=(80, 12)))
    assert survives.holds is True and survives.numbers.loc[name, "difference (points)"] == pytest.approx(68.0)
    closed = F.imputed_verdict(run, _controls(keep=50, bs=100, imputed=(13, 12)))
    assert closed.holds is False


def test_the_closing_tables_c4_row_leaves_out_the_imputed_random_control(run):
    df = _controls(keep=50, bs=100, imputed=(55, 30))
    df["share surviving"] = (df["test accuracy (%)"] - 10) / (100 - 10)      # as retrain_controls adds it
    row = F._c4_row(run, df)
    assert "BS subsets, imputed (ROAD) 50%" in row["which factor moves it"]
    assert "random subsets, imputed" not in row["which factor moves it"]


def test_method_samples_say_one_sample_or_name_each_methods():
    same = F.method_samples(40, 40, 0)
    assert same["method_samples"] == "Every method runs on the same 40 images." and "first" not in same[
        "method_samples_caption"]
    differ = F.method_samples(40, 20, 8)
    assert "gradient on all 40; pruned on the first 20; exact on the first 8" in differ["method_samples"]
    assert "the same first 8 images" in differ["method_samples"] and "the first 8)" in differ["method_samples_caption"]


def test_the_width_sweeps_baseline_says_it_is_not_the_zoos_model():
    sw = _sweep("width", [4, 8], [4, 8], [30, 20], 8)
    sw["sample"], sw["ours"] = "all 40", "the profile's width, trained 12 epochs (the zoo: 60)"
    assert F.table(sw).columns.tolist() == ["4", "8  ← the profile's width, trained 12 epochs (the zoo: 60)"]
    assert "ours" not in F.table(sw).index
