"""The scale study: its prepare units, its rows and intervals, its JSON and the chapter's glue."""
import json
import re
from pathlib import Path
from dataclasses import asdict

import numpy as np
import pytest

from overinterp.__main__ import main
from overinterp.config.context import make_run
from overinterp.config.profiles import get_profile
from overinterp.experiments import runs
from overinterp.experiments import scale as experiments_scale
from overinterp.experiments.prepare import prepare
from overinterp.pages import scale as pages_scale
from overinterp.store import write_json
from overinterp.pages.build import ROOT
from overinterp.paper import numbers as paper


@pytest.fixture(scope="module")
def rows():
    run = make_run(profile="tiny", device="cpu")
    prepare(run, progress=False, study="scale")
    return run, experiments_scale.study(run, progress=False)


def test_the_plan_lists_each_distinct_point_once_models_first():
    run = make_run(profile="tiny", device="cpu")
    c, units = run.profile.scale, experiments_scale.plan(run)
    distinct = {(p.train_size, p.epochs, p.width) for p in experiments_scale.points(run)}
    assert len(distinct) < len(experiments_scale.points(run))          # the curves share a point ...
    kinds = [u.kind for u in units]                     # ... computed once
    assert kinds == (["model"] * len(distinct) * c.replicates + ["backselect"] * len(distinct) * c.replicates
                     + ["retrained"] * len(distinct) * c.replicates)


def test_a_point_with_the_profiles_recipe_reuses_the_zoos_models():
    """The standard study's point of all training images at width 8 and 10 epochs is the standard zoo."""
    run = make_run(profile="standard", device="cpu")
    (pt,) = [p for p in experiments_scale.points(run) if p.train_size is None]
    pr = experiments_scale.point_run(run, pt)
    assert runs.model_key(pr.dataset, "resnet20", pr.profile.name, 1) == runs.model_key(run.dataset, "resnet20", "standard", 1)
    other = experiments_scale.point_run(run, experiments_scale.points(run)[0])
    assert runs.model_key(other.dataset, "resnet20", other.profile.name, 1) != runs.model_key(run.dataset, "resnet20",
                                                                                        "standard", 1)


def test_every_row_is_the_mean_of_its_replicates_inside_its_interval(rows):
    run, df = rows
    c = run.profile.scale
    assert set(df["curve"]) == {"size", "width"}
    assert {"test accuracy (%)", "accuracy drop (points)", "confidence drop", "BS - random (points)",
            "full - BS (points)"} <= set(df["measure"])
    assert set(df.loc[df["measure"] == "accuracy drop (points)", "setting"]) == set(experiments_scale.MASKS)
    for _, r in df.iterrows():
        assert r["replicates"] == c.replicates == len(r["values"])
        assert np.isclose(np.mean(r["values"]), r["estimate"], atol=1e-3)
        assert r["95% low"] <= r["estimate"] <= r["95% high"]


def test_the_shared_point_has_the_same_numbers_on_both_curves(rows):
    _, df = rows
    key = ["training images", "width", "epochs", "measure", "setting"]
    shared = df.groupby(key).filter(lambda g: set(g["curve"]) == {"size", "width"})
    assert len(shared)
    for _, g in shared.groupby(key):
        assert g["estimate"].nunique() == 1


def test_the_papers_numbers_come_from_its_tables():
    p = experiments_scale.paper_values("resnet20")
    full, bs = paper.TABLE1[("resnet20", "full", "full")][0][0], paper.TABLE1[("resnet20", "bs", "bs")][0][0]
    assert p["full - BS (points)"] == pytest.approx(full - bs)
    assert p["BS - random (points)"] == pytest.approx(bs - paper.TABLE1[("resnet20", "random", "random")][0][0])
    assert p["confidence drop"] == paper.CONFIDENCE_DROP["resnet20"][0]
    assert experiments_scale.paper_values("cnn") == {"SIS size (%)": 100 * paper.SIS_MEAN_SIZE_BELOW}


def test_the_json_round_trips_and_feeds_every_glue_of_the_chapter(rows, tmp_path):
    run, df = rows
    path = tmp_path / "scale.json"
    write_json(path, pages_scale.document(run, df, 1.0, "cpu"))
    back = pages_scale.load(path)
    assert back.attrs["profile"] == "tiny" and back.attrs["config"]["arch"] == run.profile.scale.arch
    assert np.allclose(back["estimate"], df["estimate"])
    values = {**pages_scale.values(back, run), **pages_scale.edition_values(back, None)}
    cells = json.loads((ROOT / "book" / "06b_scale.ipynb").read_text())["cells"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    used = set(re.findall(r"\{glue:text\}`(\w+)`", prose))
    run_box = {"run_dataset", "run_profile"}
    assert used - run_box <= set(values), used - run_box - set(values)
    assert values["study_profile"] == "tiny" and values["study_arch"] == "small CNN"


def test_a_missing_or_foreign_study_file_fails_in_one_line_naming_it(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        pages_scale.load(tmp_path / "nope.json")
    (tmp_path / "foreign.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="foreign.json"):
        pages_scale.load(tmp_path / "foreign.json")
    from overinterp.config.chapters import CHAPTERS, resolve
    with pytest.raises(ValueError, match="study="):
        resolve(CHAPTERS["06b_scale"](study=str(tmp_path / "nope.json")), get_profile("tiny"))


def test_prepare_lists_the_studys_units(capsys):
    assert main(["prepare", "--profile", "tiny", "--study", "scale", "--list"]) == 0
    out = capsys.readouterr().out
    assert "model      scale 256 images, width 4" in out and "retrained  scale" in out


def test_toward_words_a_move_only_when_the_end_points_are_apart():
    t = {"from": 10.0, "to": 2.0, "apart": True, "paper": 0.0}
    assert pages_scale.toward(t) == "toward the paper's number"
    assert pages_scale.toward({**t, "paper": 20.0}) == "away from the paper's number"
    assert pages_scale.toward({**t, "apart": False}) == "no move beyond the intervals"
    assert pages_scale.toward({**t, "paper": float("nan")}) == "no paper number"


def test_the_committed_standard_study_is_the_standard_profiles_and_feeds_the_chapter():
    from overinterp.config.profiles import STANDARD_SCALE
    std = get_profile("standard")
    assert std.scale.results == STANDARD_SCALE == get_profile("quick").scale.results
    rows = pages_scale.load(ROOT / STANDARD_SCALE)
    cfg = {k: v for k, v in rows.attrs["config"].items() if k != "results"}
    want = json.loads(json.dumps({k: v for k, v in asdict(std.scale).items() if k != "results"}))
    assert rows.attrs["profile"] == "standard" and cfg == want
    from overinterp.pages.report import edition_verdicts
    values = {**pages_scale.values(rows), **pages_scale.edition_values(rows, edition_verdicts())}
    cells = json.loads((ROOT / "book" / "06b_scale.ipynb").read_text())["cells"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    used = set(re.findall(r"\{glue:text\}`(\w+)`", prose)) - {"run_dataset", "run_profile"}
    assert used <= set(values), used - set(values)
    assert values["size_measures_n"] == values["width_measures_n"] == len(pages_scale.SHORT)
    assert 0 <= values["size_apart_n"] <= values["size_measures_n"]


def test_the_studys_largest_point_is_read_beside_the_standard_editions_sis_verdict():
    """The study's largest training set and the standard edition's SIS verdict for its architecture, with whether
    their intervals overlap, in sentences that say which is missing where the edition has no such row or the
    study no SIS size."""
    from overinterp.pages import scale as scale_pages
    rows = scale_pages.load(Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "scale-standard-cuda.json")
    sis = rows[(rows["measure"] == "SIS size (%)") & (rows["curve"] == "size") & rows["setting"].str.startswith("pruned")]
    last = sis.sort_values("training images").iloc[-1]
    near = {"rows": [{"claim": "sis", "model": "ResNet20", "estimate": last["estimate"], "low": last["95% low"] - 1,
                      "high": last["95% high"] + 1, "replicates": 5, "images": 200}]}
    far = {"rows": [{**near["rows"][0], "low": last["95% high"] + 1, "high": last["95% high"] + 3}]}
    v = scale_pages.edition_values(rows, near)
    assert v["ed_overlap"] == "overlap" and v["pt_models"] == int(last["replicates"]) and v["ed_models"] == 5
    assert scale_pages.edition_values(rows, far)["ed_overlap"] == "do not overlap"
    assert "The two intervals overlap." in v["ed_beside"] and v["pt_sis"] in v["ed_beside"]
    alone = scale_pages.edition_values(rows, None)
    assert {alone[k] for k in alone if k.startswith("ed_") and k != "ed_beside"} == {"—"}
    assert alone["pt_sis"] == v["pt_sis"] and "No committed standard edition" in alone["ed_beside"]
    none = scale_pages.edition_values(rows[rows["measure"] != "SIS size (%)"], near)
    assert {none[k] for k in none if k != "ed_beside"} == {"—"} and "measured no SIS size" in none["ed_beside"]
