"""The blank check (overinterp.experiments.blank): the fully masked input of every fill, the bound of an
uninformative blank, the search for a fill every model passes, and section 4.1's claims with the blank's
classes set aside; counterfactual training (overinterp.experiments.masked). Models whose answer is known
by hand (conftest's ``Always``, a uniform one) and the tiny profile's zoo."""
import json
import math

import numpy as np
import pytest
import torch

from overinterp.config.context import make_run
from overinterp.experiments import blank as experiments_blank
from overinterp.experiments import masked
from overinterp.experiments import runs
from overinterp.experiments.factors import black_value
from overinterp.pages import blank as pages_blank
from overinterp.zoo import data


class Uniform(torch.nn.Module):
    """Equal logits for every class: the most uninformative blank there is (probability 1 / 10)."""

    def forward(self, x):
        return torch.zeros(len(x), 10)


class Brightness(torch.nn.Module):
    """Calls an image class 0 when its mean pixel value is below 0 (normalised), class 1 otherwise, with a
    logit margin of 20: a blank whose class moves with the grey of the fill."""

    def forward(self, x):
        out = torch.zeros(len(x), 10)
        out[:, 0] = 20.0 * (x.flatten(1).mean(1) < 0)
        out[:, 1] = 20.0 * (x.flatten(1).mean(1) >= 0)
        return out


@pytest.fixture(scope="module")
def run():
    return make_run(profile="tiny", device="cpu")


def test_fills_are_the_mean_pixel_a_ladder_of_greys_from_black_and_the_training_mean_image(run):
    f = experiments_blank.fills(run.dataset)
    assert list(f)[0] == experiments_blank.PAPER_FILL and float(f[experiments_blank.PAPER_FILL].abs().max()) == 0.0
    assert len(f) == 2 + len(experiments_blank.LEVELS) and experiments_blank.LEVELS[0] == 0.0 and experiments_blank.LEVELS[-1] == 1.0
    assert torch.allclose(f["grey 0.0"], torch.full_like(f["grey 0.0"], black_value(run.dataset)))
    assert float(f["grey 1.0"].min()) > float(f["grey 0.5"].max()) > float(f["grey 0.0"].max())
    train = data.load(run.dataset, "train").images
    assert f["training-mean image"].shape == train.shape[1:]
    assert torch.allclose(f["training-mean image"], train.mean(0))


def test_a_confident_blank_fails_the_bound_and_a_uniform_one_passes(run, always):
    check = experiments_blank.blank_check(run, models={"resnet20": [always(3)], "vgg16": [Uniform()]})
    assert check.bound == pytest.approx(experiments_blank.UNINFORMATIVE_MULTIPLE / 10)
    confident = check.rows[check.rows["model"] == "ResNet20"]
    assert set(confident["class"]) == {data.CLASSES[run.dataset][3]} and not confident["passes"].any()
    # probability from log-softmax: 1 - 9 e^-20, not a saturated float32 1.0; its log-odds 20 - log 9
    assert confident["probability"].iloc[0] == pytest.approx(1 / (1 + 9 * math.exp(-20)), rel=1e-12)
    assert confident["log-odds"].iloc[0] == pytest.approx(20 - math.log(9))
    # every random subset gets class 3: entropy 0 bits, all called the blank's class, which is also its prior
    assert (confident["subset entropy (bits)"] == 0).all() and (confident["called the blank's class (%)"] == 100).all()
    assert (confident["class prior (%)"] == 100).all()
    uniform = check.rows[check.rows["model"] == "VGG16"]
    assert uniform["probability"].to_numpy() == pytest.approx(0.1) and uniform["passes"].all()
    assert check.passes() == {"ResNet20": False, "VGG16": True} and check.accepted() == []
    assert check.classes_of()["ResNet20"] == [data.CLASSES[run.dataset][3]]


def test_the_fill_search_accepts_the_fills_every_model_passes(run):
    """A model whose blank is class 0 below the mean grey and class 1 above it fails every fill; beside a
    uniform model the accepted fills are none, and on its own too."""
    check = experiments_blank.blank_check(run, models={"cnn": [Brightness()], "vgg16": [Uniform()]})
    cls = check.rows[check.rows["model"] == "small CNN"].set_index("fill")["class"]
    names = data.CLASSES[run.dataset]
    assert cls["grey 0.0"] == names[0] and cls["grey 1.0"] == names[1]
    assert check.accepted() == []
    only_uniform = experiments_blank.blank_check(run, models={"vgg16": [Uniform(), Uniform()]})
    assert only_uniform.accepted() == list(experiments_blank.fills(run.dataset))
    v = pages_blank.blank_values(only_uniform)
    assert v["blank_n_pass"] == "2" and v["blank_n_models"] == "2" and v["blank_accepted"].startswith(experiments_blank.PAPER_FILL)
    assert pages_blank.blank_values(check)["blank_accepted"] == "none"


def test_every_verdict_on_masked_inputs_carries_the_blank_check_and_its_engine(run):
    from overinterp.experiments import claims
    vs = claims.verdicts(run, only=["accurate", "ensemble_accuracy"], progress=False, controls=True)
    acc = vs["accurate"]
    assert acc.engine == run.profile.backselect.describe() and set(acc.blank_passes) == {"small CNN", "ResNet20"}
    assert "**Blank check.**" in acc._repr_markdown_() and "**Engine.**" in acc._repr_markdown_()
    assert vs["ensemble_accuracy"].blank_passes is None and vs["ensemble_accuracy"].engine == ""
    rows = claims.table(vs)
    plain = [r for r in rows if r["claim"] == "accurate" and "condition" not in r]
    assert [r["blank passes"] for r in plain] == [acc.blank_passes[r["model"]] for r in plain]
    controlled = [r for r in rows if r.get("condition")]
    assert {r["condition"] for r in controlled} == {claims.BLANK_ASIDE, claims.MASKED_TRAINED, claims.MASKED_ALL}
    assert all(r["model"].endswith(" · " + r["condition"]) for r in controlled)


def test_the_claims_with_the_blank_class_set_aside_count_only_the_other_images(run):
    check = experiments_blank.blank_check(run, which={experiments_blank.PAPER_FILL: experiments_blank.fills(run.dataset)[experiments_blank.PAPER_FILL]})
    r = experiments_blank.restricted(run, check)
    _, Y = runs.selection(run, "test").load()
    names = data.CLASSES[run.dataset]
    for model, row in r.called.iterrows():
        kept = ~torch.isin(Y, torch.tensor([names.index(c) for c in row["blank's classes"].split(", ")]))
        assert row["images kept"] == int(kept.sum()) and row["images"] == len(Y)
        assert r.accurate.numbers.loc[model, "images"] == int(kept.sum())
        assert 0 <= row["BS subsets called the blank's class (%)"] <= 100
    assert r.accurate.word in ("holds", "does not hold", "inconclusive at this scale", "cannot be tested")


def test_counterfactual_training_doubles_each_batch_with_a_masked_copy_at_the_same_labels():
    perturb = masked.masked_copy((0.5, 0.9), seed=0)
    x, y = torch.randn(64, 1, 28, 28) + 5, torch.arange(64) % 10
    x2, y2 = perturb(None, x, y)
    assert x2.shape[0] == 128 and torch.equal(x2[:64], x) and torch.equal(y2, torch.cat([y, y]))
    removed = float((x2[64:] == 0).float().mean())
    assert min(abs(removed - 0.5), abs(removed - 0.9)) < 0.03        # one share of the pixels per batch
    again = masked.masked_copy((0.5, 0.9), seed=0)(None, x, y)[0]
    assert torch.equal(again, x2)                                     # seeded: the same masks


def test_masked_claims_fine_tune_the_configured_replicates_and_decide_section_4_1(run):
    m = masked.masked_claims(run, progress=False)
    c = run.profile.masked
    assert len(m.models) == (c.replicates or run.profile.replicates) * len(c.archs)
    assert (m.models["accepted"] == (m.models["blank uninformative"] &
                                    (m.models["drop (points)"] <= c.max_drop))).all()
    assert set(m.accurate.numbers.index) == {"small CNN"}
    assert {"own BS subsets (%)", "random subsets (%)"} <= set(m.models.columns)
    # the fine-tuned model is another artifact than its zoo model, and a second call loads it
    zoo = runs.trained_model(run.dataset, "cnn", "tiny", seed=run.seed, device="cpu", progress=False)
    tuned = masked.masked_model(run, "cnn", run.seed, progress=False)
    assert not all(torch.equal(a, b) for a, b in zip(zoo.state_dict().values(), tuned.state_dict().values()))
    assert np.isfinite(m.models["clean accuracy (%)"]).all()
    # the batch norms keep the zoo model's statistics: masked copies never enter them
    norms = [(k, v) for k, v in zoo.state_dict().items() if k.endswith(("running_mean", "running_var"))]
    assert norms and all(torch.equal(v, tuned.state_dict()["model." + k]) for k, v in norms)
    # only accepted replicates decide; an architecture without one cannot test the claim
    if not m.models["accepted"].any():
        assert m.accurate.word == "cannot be tested" and m.kept.word == "cannot be tested"
    else:
        assert m.accurate.numbers.loc["small CNN", "replicates"] == int(m.models["accepted"].sum())
    # the sensitivity analysis waives acceptance: every replicate that did not diverge decides, paired on the
    # same images as the accepted ones
    tested = int(np.isfinite(m.models["own BS subsets (%)"]).sum())
    assert m.accurate_all.numbers.loc["small CNN", "replicates"] == tested == len(m.models)
    assert m.kept_all.numbers.loc["small CNN", "replicates"] == tested
    if m.models["accepted"].any():
        assert m.accurate_all.numbers.loc["small CNN", "images"] == m.accurate.numbers.loc["small CNN", "images"]


def test_the_chapter_says_how_a_fine_tuning_departs_from_hase_et_al_and_reads_the_measured_variants(tmp_path):
    from dataclasses import replace
    from overinterp.config.profiles import MaskedTrainingConfig
    hase = MaskedTrainingConfig()
    assert pages_blank.departures(hase) == "These are Hase et al.'s shares."
    both = pages_blank.departures(replace(hase, removed=(*hase.removed, 1.0), lr=hase.lr / 10))
    assert "100%" in both and "10⁻⁴" in both and both.count(";") == 1       # the rate in powers of ten, not 0.0001
    assert "100%" not in pages_blank.departures(replace(hase, lr=hase.lr / 10))
    rows = [{"variant": v, "model": "ResNet20", "config": {"removed": removed, "lr": lr}, "drop (points)": drop,
             "blank probability": p, "blank passes": p <= 0.2, "accepted": p <= 0.2 and drop <= 1}
            for v, removed, lr, drop, p in [("a", [0.5, 0.95], 1e-3, 2.6, 0.45), ("b", [0.5, 1.0], 1e-4, 0.3, 0.1)]]
    (tmp_path / "v.json").write_text(json.dumps({"rows": rows}))
    t = pages_blank.variants_table(tmp_path / "v.json")
    assert list(t["accepted"]) == [False, True] and t.loc[("b", "ResNet20"), "shares removed (%)"] == "50 and 100"
    assert list(t["learning rate"]) == ["0.001", "10⁻⁴"]
    assert pages_blank.variants_table(tmp_path / "absent.json") is None


def test_the_fine_tuning_strength_script_decides_both_claims_under_both_fine_tunings_and_the_chapter_reads_it(
        run, tmp_path):
    import importlib.util
    from dataclasses import replace
    from overinterp.config.chapters import ROOT
    from overinterp.config.profiles import MaskedTrainingConfig
    spec = importlib.util.spec_from_file_location("finetuning_strength", ROOT / "scripts" / "finetuning_strength.py")
    strength = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(strength)
    hase = MaskedTrainingConfig()
    gentle = replace(hase, removed=(*hase.removed, 1.0), lr=hase.lr / 10, epochs=3)
    f = strength.finetunings(gentle)
    assert f["the profile's"] == gentle
    assert (f["Hase et al.'s shares"].removed, f["Hase et al.'s shares"].lr, f["Hase et al.'s shares"].epochs) == (
        hase.removed, hase.lr, 3)                                  # only the shares and the rate move
    out = tmp_path / "strength.json"
    assert strength.main(["--profile", "tiny", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    m = masked.masked_claims(run, progress=False)                  # the tiny profile fine-tunes as Hase et al.
    assert len(rows) == 2 * 2 * 2 * len(run.profile.masked.archs)
    waived = {r["claim"]: r for r in rows if r["fine-tuning"] == "the profile's" and r["condition"] == "acceptance waived"}
    assert waived["kept"]["estimate"] == pytest.approx(float(m.kept_all.numbers.loc["small CNN", "mean drop"]))
    assert {r["accepted models"] for r in rows} == {int(m.models["accepted"].sum())}
    t = pages_blank.strength_table(out)
    assert list(t.index) == [("Hase et al.'s shares", "small CNN"), ("the profile's", "small CNN")]
    assert [c[1] for c in t.columns] == ["models accepted", "accepted", "acceptance waived", "accepted", "acceptance waived"]
    assert t.iloc[1, 4].split(" ")[1] == f"{waived['kept']['estimate']:.3f}"
    assert pages_blank.strength_table(tmp_path / "absent.json") is None
    # the tiny profile's own fine-tuning is Hase et al.'s: both decide alike, until one row reads otherwise
    assert pages_blank.strength_words(out) == "The two fine-tunings decide every claim alike."
    doc = json.loads(out.read_text())
    flip = next(r for r in doc["rows"] if r["fine-tuning"] == "the profile's" and r["condition"] == "acceptance waived"
                and r["claim"] == "kept")
    flip["outcome"] = "holds" if flip["outcome"] != "holds" else "does not hold"
    out.write_text(json.dumps(doc))
    words = pages_blank.strength_words(out)
    assert words.startswith("The two fine-tunings decide 1 verdict differently: “as confident") and f"“{flip['outcome']}” with the profile's" in words
    assert pages_blank.strength_words(tmp_path / "absent.json") == ""
