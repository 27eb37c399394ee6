"""The benchmark results chapter's module (overinterp.pages.speed): its readers and what it shows (glue values,
display tables, the figure), on small files that the tests write in the structure bench_backselect.py writes
(schema 2)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from overinterp.pages import bench_results, speed
from overinterp.paper.formatting import MISSING


def _note(text, sections=(), shared_cpu=False):
    return {"sections": list(sections), "text": text, "shared_cpu": shared_cpu}


def _result(device="cpu", gpu=None, smoke=False, notes=(), load=(0.5, 0.6), inception=False, drop=()):
    """A bench_backselect.py result in its structure (schema 2) with made-up small numbers."""
    info = {"device": device, "torch": "2.0", "threads": 2, "python": "3.11", "loadavg_start": [load[0], 0, 0],
            "cpu": "Test CPU", "threads_fidelity_projections": 2, "loadavg_end": [load[1], 0, 0], "wall_s": 7200.0}
    if gpu:
        info["gpu"] = gpu
    eff = {"model": "cnn-28x28x1", "arch": "cnn", "shape": [1, 28, 28], "width": None, "plain_sweep_img_s": {"nchw-64": 90.0, "cl-64": 100.0},
           "best_plain_config": "cl-64", "engine_config": {"chunk_size": 128, "channels_last": True}, "images": 4,
           "steps_timed": 4, "rounds": [{"plain_img_s": 100.0, "engine_evals_s": 80.0, "ratio": 0.8},
                                        {"plain_img_s": 110.0, "engine_evals_s": 110.0, "ratio": 1.0}],
           "ratio_median": 0.9, "ratio_of_bests": 1.0, "exact_s_per_image": 2793.1}
    base = {"threads": 2, "model": "cnn-28x28x1", "images": 2, "steps_timed": 4, "same_order": True, "reference_nchw_evals_s": 50.0,
            "reference_channels_last_evals_s": 100.0, "engine_evals_s": 100.0, "speedup_vs_reference_nchw": 2.0,
            "speedup_vs_reference_channels_last": 1.0}

    def variant(run, s, r9, r99):
        return {**run, "s_per_image": s, "subset_5pct": {"acc": 0.25, "kept_prediction": 0.25, "confidence": 0.2},
                "overlap_5pct_with_exact": 0.5, "iou_5pct_with_exact": 0.25,
                "sis": [{"tau": 0.9, "images_with_sis": 3, "mean_size": 10.0, "mean_size_ratio_vs_exact": r9,
                         "all_verified_f_ge_tau": True},
                        {"tau": 0.99, "images_with_sis": 2, "mean_size": 20.0, "mean_size_ratio_vs_exact": r99,
                         "all_verified_f_ge_tau": True}]}
    out = {"schema": 2, "info": info, "smoke": smoke, "section_seconds": {},
           "notes": [n if isinstance(n, dict) else _note(n) for n in notes],
           "efficiency": [{"threads": 2, **eff}, {"threads": 1, **eff}],
           "reference_style_baseline": [base],
           "fidelity": {"source": {"dataset": "fashion-mnist", "arch": "cnn", "profile": "quick", "seed": 0, "key": None},
                        "shape": [1, 28, 28], "block": 1, "test_acc": 0.9,
                        "images": 32, "full_images": {"acc": 0.8, "confidence": 0.9},
                        "random_5pct": {"acc": 0.1, "kept_prediction": 0.1, "confidence": 0.1},
                        "runs": [variant({"method": "exact"}, 100.0, 1.0, 1.0),
                                 variant({"method": "pruned", "m": 16}, 2.0, 1.05, None),
                                 variant({"method": "gradient", "k": 1}, 0.5, 1.5, 1.6)],
                        "chosen_m": 16, "chosen_m_rule": "rule", "chosen_m_reason": "why"},
           "projections": [{"dataset": "fashion-mnist", "arch": "cnn", "shape": [1, 28, 28], "images": 72000,
                            "batch": 64, "runs": [{"method": "exact", "s_per_image": 100.0, "projected_hours": 2000.0},
                                                  {"method": "gradient", "k": 1, "s_per_image": 0.5,
                                                   "projected_hours": 10.0}]}],
           "default_m_in_code": 16}
    if inception:
        out["inception_v3_gradient_sis"] = {"images": 32, "size": 299, "k": 100, "seconds": 48.0,
                                            "s_per_image": 1.5, "tau": 0.1, "sis_sizes": [1, 2],
                                            "all_verified_f_ge_tau": True}
    for section in drop:
        del out[section]
    return out


def _write(folder, name, data):
    (folder / name).write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_each_file_is_labelled_by_its_device_and_smoke_runs_are_skipped(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    _write(tmp_path, "backselect-cuda.json", _result("cuda", gpu="NVIDIA H100 80GB HBM3", inception=True))
    _write(tmp_path, "backselect-cpu-smoke.json", _result(smoke=True))
    _write(tmp_path, "train-cpu.json", {"info": {"device": "cpu"}})           # another benchmark: not read
    results = bench_results.load_results(tmp_path)
    assert list(results) == ["CPU (Test CPU, 2 threads)", "NVIDIA H100 80GB HBM3"]
    assert results["NVIDIA H100 80GB HBM3"]["file"] == "backselect-cuda.json"
    assert set(bench_results.exact_vs_reference(results)["device"]) == set(results)
    assert list(bench_results.files(results)["wall_h"]) == [2.0, 2.0]
    assert list(bench_results.files(results)["missing"]) == ["inception_v3_gradient_sis", MISSING]   # CUDA: all sections


def test_smoke_runs_are_read_and_labelled_when_no_other_file_exists(tmp_path):
    _write(tmp_path, "backselect-cpu-smoke.json", _result(smoke=True))
    (label,) = bench_results.load_results(tmp_path)
    assert label == "CPU (Test CPU, 2 threads) [smoke run]"
    assert bench_results.files(bench_results.load_results(tmp_path))["smoke"].tolist() == [True]


def test_two_files_of_the_same_device_keep_both_labels_apart(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    _write(tmp_path, "backselect-cpu-2.json", _result())
    assert list(bench_results.load_results(tmp_path)) == ["CPU (Test CPU, 2 threads)",                 # backselect-cpu-2.json
                                              "CPU (Test CPU, 2 threads) [backselect-cpu.json]"]


def test_tables_are_tidy_numbers_from_the_json(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    r = bench_results.load_results(tmp_path)
    ref = bench_results.exact_vs_reference(r).iloc[0]
    assert ref["same_order"] and ref["speedup"] == 2.0 and ref["threads"] == 2
    eff = bench_results.efficiency(r)
    assert list(eff["threads"]) == [2, 1] and eff["ratio_min"].iloc[0] == 0.8 and eff["ratio_max"].iloc[0] == 1.0
    assert eff["plain_max"].iloc[0] == 110.0 and eff["engine_evals_s"].iloc[0] == 110.0
    fid = bench_results.fidelity(r).set_index("setting")
    assert list(fid["method"]) == ["exact", "pruned", "gradient"] and fid.loc["m=16", "param"] == 16
    assert fid.loc["m=16", "speedup_vs_exact"] == 50.0 and fid.loc["k=1", "size_ratio_tau0.9"] == 1.5
    assert math.isnan(fid.loc["m=16", "size_ratio_tau0.99"])                  # null in the JSON: no image had both
    assert fid["verified"].all() and fid.loc["k=1", "iou_5pct"] == 0.25
    assert bench_results.fidelity_context(r).iloc[0][["dataset", "arch", "images", "chosen_m"]].tolist() == \
        ["fashion-mnist", "cnn", 32, 16]
    proj = bench_results.projections(r).set_index("method")
    assert proj.loc["exact", "hours"] == 2000.0 and proj.loc["gradient", "dataset"] == "fashion-mnist"
    assert proj.loc["gradient", "arch"] == "cnn" and proj.loc["gradient", "images"] == 72000


def test_s5_puts_the_paper_first_and_scales_ours_to_32_images(tmp_path):
    _write(tmp_path, "backselect-cuda.json", _result("cuda", gpu="GPU X", inception=True))
    t = bench_results.s5(bench_results.load_results(tmp_path))
    paper = t.iloc[0]
    assert paper["who"] == "paper" and (paper["minutes_32_low"], paper["minutes_32_high"]) == (1, 2)
    assert paper["steps"] == 895 and paper["k"] == 100
    inc = t[t["model"].str.startswith("Inception") & (t["who"] != "paper")].iloc[0]
    assert inc["who"] == "ours (GPU X)" and inc["minutes_32"] == pytest.approx(1.5 * 32 / 60) and inc["closest"]
    fid = t[t["how"].str.startswith("measured") & (t["features"] == 784)].iloc[0]
    assert fid["minutes_32"] == pytest.approx(0.5 * 32 / 60) and fid["steps"] == 784
    assert t["closest"].sum() == 1


def test_missing_sections_are_skipped_with_a_message(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result(drop=("fidelity", "projections")))
    r = bench_results.load_results(tmp_path)
    assert bench_results.fidelity(r).empty and bench_results.projections(r).empty and "size_ratio_tau0.9" not in bench_results.fidelity(r)
    assert bench_results.projections(r)["hours"].dtype == float                          # empty, yet sortable
    assert bench_results.files(r)["missing"].tolist() == ["fidelity, projections, inception_v3_gradient_sis"]
    assert speed.files_table(bench_results.files(r)).loc["sections missing"].tolist() == [
        "fidelity, projections, inception_v3_gradient_sis"]
    assert len(bench_results.s5(r)) == 1                                                  # the paper's row alone
    speed.plot_fidelity(bench_results.fidelity(r))                                            # an empty panel, not an error


@pytest.mark.parametrize("content, says", [("{not json", "not a readable JSON file"),
                                           ({"efficiency": {}}, "no info.device"),
                                           ({"info": {"device": "cpu"}, "efficiency": {}}, "schema None, not 2"),
                                           ({"schema": 2, "info": {"device": "cpu"}, "fidelity": [1]},
                                            "'fidelity' is not a JSON object"),
                                           ({"schema": 2, "info": {"device": "cpu"}, "efficiency": {}},
                                            "'efficiency' is not a JSON array")])
def test_a_malformed_file_raises_one_line_naming_the_file(tmp_path, content, says):
    _write(tmp_path, "backselect-cpu.json", _result())
    _write(tmp_path, "backselect-bad.json", content)
    with pytest.raises(ValueError) as err:
        bench_results.load_results(tmp_path)
    assert str(err.value).startswith("backselect-bad.json: ") and says in str(err.value)
    assert "\n" not in str(err.value)


def test_a_section_with_missing_keys_raises_naming_the_file(tmp_path):
    data = _result()
    del data["efficiency"][0]["rounds"]
    _write(tmp_path, "backselect-cpu.json", data)
    with pytest.raises(ValueError, match=r"^backselect-cpu.json: section 'efficiency' is malformed"):
        bench_results.efficiency(bench_results.load_results(tmp_path))


def test_no_result_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no backselect-"):
        bench_results.load_results(tmp_path)


def test_a_note_flagged_shared_cpu_or_a_load_above_the_threads_marks_the_cpu_shared(tmp_path):
    notes = [_note("efficiency: timed 4 steps, shared nothing", ["efficiency"])]   # wording does not count
    _write(tmp_path, "backselect-cpu.json", _result(notes=notes))
    assert bench_results.files(bench_results.load_results(tmp_path))["shared_cpu"].tolist() == [False]
    _write(tmp_path, "backselect-cpu.json", _result(notes=notes + [_note("the machine was busy", shared_cpu=True)]))
    assert bench_results.files(bench_results.load_results(tmp_path))["shared_cpu"].tolist() == [True]
    _write(tmp_path, "backselect-cpu.json", _result(load=(0.5, 3.5)))                 # 2 threads
    assert bench_results.files(bench_results.load_results(tmp_path))["shared_cpu"].tolist() == [True]


def test_the_fidelity_plot_has_one_panel_per_tau_and_one_marker_per_setting(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    fig = speed.plot_fidelity(bench_results.fidelity(bench_results.load_results(tmp_path)))
    assert [ax.get_title() for ax in fig.axes] == ["τ = 0.9", "τ = 0.99"]
    assert [len(ax.collections) for ax in fig.axes] == [3, 2]                 # tau 0.99: pruned has no ratio
    assert fig.axes[0].get_xscale() == "log"


@pytest.mark.parametrize("name", ["backselect-cpu.json", "backselect-cpu-smoke.json"])
def test_every_committed_result_file_has_the_current_schema_and_every_table_reads(tmp_path, name):
    _write(tmp_path, name, (bench_results.RESULTS / name).read_text())
    r = bench_results.load_results(tmp_path)
    for table in (bench_results.exact_vs_reference, bench_results.efficiency, bench_results.fidelity, bench_results.fidelity_context,
                  bench_results.projections, bench_results.s5):
        assert len(table(r)) > 0, table.__name__
    for measure, values, shown in ((bench_results.exact_vs_reference, speed.reference_values, speed.reference_table),
                                   (bench_results.efficiency, speed.efficiency_values, speed.efficiency_table),
                                   (bench_results.exact_check, speed.check_values, speed.check_table),
                                   (bench_results.projections, speed.projection_values, speed.projection_table),
                                   (bench_results.s5, speed.s5_values, speed.s5_table)):    # what the chapter glues and shows
        assert all(isinstance(x, str) for x in values(measure(r)).values()) and shown(measure(r)) is not None
    assert all(isinstance(x, str) for x in speed.fidelity_values(bench_results.fidelity(r), bench_results.fidelity_context(r)).values())


def test_the_speedup_over_exact_is_exacts_seconds_over_the_methods(tmp_path):
    data = _result()
    data["fidelity"]["runs"][0]["s_per_image"] = 12.0                         # exact
    data["fidelity"]["runs"][2]["s_per_image"] = 0.25                         # gradient k=1
    _write(tmp_path, "backselect-cpu.json", data)
    fid = bench_results.fidelity(bench_results.load_results(tmp_path)).set_index("setting")
    assert fid.loc["k=1", "speedup_vs_exact"] == 48.0 and fid.loc["", "speedup_vs_exact"] == 1.0
    assert fid.loc["k=1", "param"] == 1.0 and math.isnan(fid.loc["", "param"])


def test_setting_reads_the_fields_of_a_run_record():
    assert bench_results.setting({"method": "pruned", "m": 16}) == ("pruned", "m=16", 16.0)
    assert bench_results.setting({"method": "gradient", "k": 4, "s_per_image": 1.0}) == ("gradient", "k=4", 4.0)
    method, setting, param = bench_results.setting({"method": "exact"})
    assert (method, setting) == ("exact", "") and math.isnan(param)


def test_sis_size_in_percent_uses_the_shape_and_block_the_file_records(tmp_path):
    data = _result()
    data["fidelity"]["shape"] = [3, 10, 20]                                   # 200 pixels
    _write(tmp_path, "backselect-cpu.json", data)
    m = bench_results.claim_measures(bench_results.load_results(tmp_path), 0.99).set_index("method")
    assert m.loc["exact", "SIS size (% of pixels)"] == pytest.approx(100 * 20 / 200)
    t = bench_results.s5(bench_results.load_results(tmp_path))
    assert t.loc[t["how"].str.startswith("measured"), "features"].tolist() == [200]
    data["fidelity"]["shape"], data["fidelity"]["block"] = [3, 40, 20], 4     # 10 x 5 blocks of 4 x 4 pixels
    _write(tmp_path, "backselect-cpu.json", data)
    m = bench_results.claim_measures(bench_results.load_results(tmp_path), 0.99).set_index("method")
    assert m.loc["exact", "SIS size (% of pixels)"] == pytest.approx(100 * 20 / 50)  # sizes count blocks


def test_exact_claim_measures_are_percent_of_the_pixels_and_missing_facts_are_dashes(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    r = bench_results.load_results(tmp_path)
    m = bench_results.claim_measures(r, 0.99).set_index("method")
    assert m.loc["exact", "SIS size (% of pixels)"] == pytest.approx(100 * 20 / 784)   # 20 of 28 x 28 pixels
    assert m.loc["exact", "confident images"] == 2 and m.loc["exact", "full images (%)"] == 80.0
    assert m.loc["gradient", "own BS subsets (%)"] == 25.0
    facts = bench_results.exact_facts(r, 0.99, bound=2.0)
    assert facts["exact_sis"] == "2.6" and facts["bound"] == "above" and facts["coarse"] == "gradient k=1"
    assert bench_results.exact_facts(r, 0.99, bound=5.0)["bound"] == "below"
    assert (facts["dataset"], facts["arch"], facts["profile"]) == ("fashion-mnist", "small CNN", "quick")
    assert {bench_results.exact_facts(r, 0.5)[k] for k in ("exact_sis", "coarse_sis", "bound")} == {MISSING}  # no tau 0.5
    assert facts["relation"].startswith("not this chapter's")                 # the file names no model key
    keyed = _result()
    sample = {"dataset": "fashion-mnist", "set": "test", "n": 300, "seed": 0, "index": list(range(40))}
    keyed["fidelity"]["source"]["key"] = "0123456789abcdef"
    keyed["fidelity"]["selection"] = {**sample, "index": list(range(32))}
    _write(tmp_path, "backselect-cpu.json", keyed)
    r = bench_results.load_results(tmp_path)
    same = bench_results.exact_facts(r, source_key="0123456789abcdef", sample=sample)["relation"]
    assert same.startswith("this chapter's source model") and same.endswith("first 32 images of its sample")
    other = bench_results.exact_facts(r, source_key="0123456789abcdef", sample={**sample, "seed": 1})["relation"]
    assert other.endswith("on other images than its sample")
    other = bench_results.exact_facts(r, source_key="fedcba9876543210", sample=sample)["relation"]
    assert other.startswith("not this chapter's")
    _write(tmp_path, "backselect-cpu.json", _result(drop=("fidelity",)))
    assert set(bench_results.exact_facts(bench_results.load_results(tmp_path)).values()) == {MISSING}


def test_the_benchmark_reruns_one_section_into_the_existing_file(tmp_path):
    """--only fidelity fusion replaces those sections (and their notes) and keeps every other one of the file."""
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "backselect-cpu.json"
    _write(tmp_path, out.name, _result(notes=(_note("the old run's fidelity note", ["fidelity"]),
                                               _note("kept", ["efficiency"]))))
    env = {**os.environ, "OVERINTERP_ARTIFACTS": str(tmp_path / "store"), "PYTHONPATH": str(root),
           "OVERINTERP_DATA": os.environ.get("OVERINTERP_DATA") or str(root / "data")}
    subprocess.run([sys.executable, str(root / "benchmarks" / "bench_backselect.py"), "--smoke", "--only", "fidelity",
                    "fusion", "--out", str(out)], check=True, env=env, capture_output=True, cwd=tmp_path)
    new, old = json.loads(out.read_text()), _result()
    assert new["efficiency"] == old["efficiency"] and new["projections"] == old["projections"]
    src = new["fidelity"]["source"]
    assert (src["dataset"], src["arch"], src["profile"], src["seed"]) == ("fashion-mnist", "resnet20", "tiny", 0)
    assert new["fidelity"]["images"] == 2 and len(src["key"]) == 16 and new["fidelity"]["shape"] == [1, 28, 28]
    assert [bench_results.setting(r)[:2] for r in new["fidelity"]["runs"]] == [("exact", ""), ("pruned", "m=2"),
                                                                    ("gradient", "k=4")]
    assert [s["tau"] for s in new["fidelity"]["runs"][0]["sis"]] == [0.5]
    texts = [n["text"] for n in new["notes"]]
    assert "kept" in texts and "the old run's fidelity note" not in texts
    (rerun,) = [n for n in new["notes"] if n["text"].startswith("fidelity, fusion: re-run alone")]
    assert rerun["sections"] == ["fidelity", "fusion"]
    # the merged file reads, and the fusion section: plain and fused engines agree on the subsets they keep
    assert len(bench_results.fidelity(bench_results.load_results(tmp_path))) == 3
    assert [(r["arch"], r["method"]) for r in new["fusion"]] == [("cnn", "gradient"), ("cnn", "pruned")]
    # (pruned at smoke size, 1 image of 7 x 7 blocks: near-ties flip under folding, its IoU was 0.33)
    assert all(r["iou_5pct_fused_vs_plain"] >= 0.8 for r in new["fusion"] if r["method"] == "gradient")
    assert all(0 <= r["iou_5pct_fused_vs_plain"] <= 1 for r in new["fusion"])
    assert all(r["s_per_image_plain"] > 0 and r["s_per_image_fused"] > 0 for r in new["fusion"])


# ----------------------------------------------------------------------------- what the chapter glues

def test_numbers_ranges_lists_and_places_in_a_range_write_missing_the_same_way():
    assert speed.span([2.0, 1.0, float("nan")]) == "1.00–2.00" and speed.span([1.001, 0.999]) == "1.00"
    assert speed.span([], 0) == MISSING and speed.listed(["a", "b", "a"]) == "a, b" and speed.listed([]) == MISSING
    assert speed.span([1539.2, 3077.2], 0) == "1,539–3,077" and speed.span([82.078, 0.1014], "sig3") == "0.101–82.1"
    assert (speed.fmt(46132.4, "sig3"), speed.fmt(None), speed.fmt(float("inf"), 0)) == ("46,132", MISSING, MISSING)
    assert [speed.where(x, 1, 2) for x in (0.5, 1, 2, 3, float("nan"))] == ["below", "within", "within", "above",
                                                                           MISSING]


def test_paper_values_quote_s5_and_count_the_files(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    v = speed.paper_values(bench_results.load_results(tmp_path))
    assert v["n_files"] == "1" and (v["paper_lo"], v["paper_hi"], v["paper_images"]) == ("1", "2", "32")
    assert v["paper_steps"] == "895" and v["paper_pixels"] == "89,401" and v["paper_size"] == "299×299"
    assert all(isinstance(x, str) for x in v.values())


def test_fidelity_values_take_pruned_at_the_chosen_m_and_the_rule_field(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    r = bench_results.load_results(tmp_path)
    v = speed.fidelity_values(bench_results.fidelity(r), bench_results.fidelity_context(r))
    assert (v["fid_m"], v["fid_rule"], v["fid_reason"]) == ("16", "rule", "why")
    assert (v["fid_arch"], v["fid_taus"]) == ("small CNN", "0.9 and 0.99")
    assert v["fid_pruned_s"] == "2" and v["fid_exact_s"] == "100"
    assert v["fid_pruned_speedup"] == "50" and v["fid_pruned_ratio"] == "1.05"
    assert v["fid_grad_speedup"] == "200" and v["fid_grad_ratio"] == "1.50–1.60"
    assert v["fid_acc_random"] == "10.0" and (v["fid_verified"], v["fid_runs"]) == ("3", "3")
    data = _result()
    data["fidelity"]["runs"][2]["sis"][1]["all_verified_f_ge_tau"] = False    # gradient, tau 0.99
    _write(tmp_path, "backselect-cpu.json", data)
    r = bench_results.load_results(tmp_path)
    assert speed.fidelity_values(bench_results.fidelity(r), bench_results.fidelity_context(r))["fid_verified"] == "2"


def test_projection_values_name_the_fastest_approximation_per_dataset(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    v = speed.projection_values(bench_results.projections(bench_results.load_results(tmp_path)))
    assert (v["proj_fm_images"], v["proj_fm_exact_h"], v["proj_fm_exact_days"]) == ("72,000", "2,000", "83")
    assert (v["proj_fm_fast"], v["proj_fm_fast_h"], v["proj_fm_fast_device"]) == \
        ("gradient k=1", "10", "CPU (Test CPU, 2 threads)")
    assert v["proj_device"] == "CPU (Test CPU, 2 threads)"
    assert v["proj_c10_images"] == "—" and v["proj_batch"] == "64"            # no CIFAR-10 workload in the file
    shown = speed.projection_table(bench_results.projections(bench_results.load_results(tmp_path)))
    assert list(shown.columns) == ["exact", "gradient k=1"]


def test_s5_values_take_an_inception_row_first_and_name_its_device(tmp_path):
    _write(tmp_path, "backselect-cuda.json", _result("cuda", gpu="GPU X", inception=True))
    v = speed.s5_values(bench_results.s5(bench_results.load_results(tmp_path)))
    assert (v["s5_model"], v["s5_k"], v["s5_steps"], v["s5_features"]) == ("Inception-v3 (random weights)", "100",
                                                                           "895", "89,401")
    assert (v["s5_how"], v["s5_minutes"]) == ("measured, 32 images, BackSelect only", "0.80")
    assert v["s5_best_device"] == v["s5_device"] == "GPU X"
    _write(tmp_path, "backselect-cpu.json", _result())                         # no Inception-v3: the trained CNN
    v = speed.s5_values(bench_results.s5(bench_results.load_results(tmp_path)))
    assert (v["s5_best_device"], v["s5_device"]) == ("GPU X", "CPU (Test CPU, 2 threads), GPU X")
    (tmp_path / "backselect-cuda.json").unlink()
    v = speed.s5_values(bench_results.s5(bench_results.load_results(tmp_path)))
    assert (v["s5_model"], v["s5_data"], v["s5_features"]) == ("small CNN (trained, quick)", "fashion-mnist test, 28×28",
                                                               "784")
    (tmp_path / "backselect-cpu.json").unlink()
    _write(tmp_path, "backselect-cuda.json", _result("cuda", gpu="GPU X", inception=True))
    shown = speed.s5_table(bench_results.s5(bench_results.load_results(tmp_path)))
    assert shown.loc["paper", "minutes for 32 images"] == "1–2"
    assert "device" not in shown and set(shown.index) == {"paper", "ours"}     # the caption names GPU X
    assert set(speed.s5_values(bench_results.s5({})).values()) == {MISSING}                  # no measurement of gradient


def test_the_files_table_says_device_dates_load_and_sharing_without_the_lab_notes(tmp_path):
    notes = [_note("efficiency: timed", ["efficiency"]), _note("busy machine", shared_cpu=True)]
    _write(tmp_path, "backselect-cpu.json", _result(notes=notes))
    shown = speed.files_table(bench_results.files(bench_results.load_results(tmp_path)))
    (col,) = shown.columns
    assert col == "CPU (Test CPU, 2 threads)" and shown[col]["file"] == "backselect-cpu.json"
    assert (shown[col]["torch"], shown[col]["threads"], shown[col]["hours of benchmarking"]) == ("2.0", "2", "2.0")
    assert (shown[col]["1-min load average at start"], shown[col]["1-min load average at end"]) == ("0.5", "0.6")
    assert (shown[col]["CPU shared"], shown[col]["smoke run"]) == ("yes", "no")
    assert shown[col]["sections missing"] == "inception_v3_gradient_sis"      # a CPU file: no Inception-v3
    assert shown[col]["first commit"] == shown[col]["last commit"] == MISSING  # tmp_path is no git repository
    assert not shown[col].str.contains("timed|busy").any()                    # the files' own notes stay there


def test_the_committed_file_is_dated_by_its_commits():
    ((first, last),) = bench_results.files(bench_results.load_results())[["first_commit", "last_commit"]].values
    assert len(first) == len(last) == 10 and first <= last                    # YYYY-MM-DD


# ----------------------------------------------------------------------------- efficiency and the two exact timings

def _efficiency_row(threads=2, arch="resnet20", engine=(100.0, 200.0), plain=(150.0, 250.0), fuse=None):
    cfg = {"chunk_size": 128, "channels_last": True} | ({} if fuse is None else {"fuse": fuse})
    rounds = [{"plain_img_s": p, "engine_evals_s": e, "ratio": round(e / p, 3)} for p, e in zip(plain, engine)]
    return {"threads": threads, "model": f"{arch}-28x28x1", "arch": arch, "shape": [1, 28, 28], "width": None,
            "plain_sweep_img_s": {"cl-64": 300.0}, "best_plain_config": "cl-64", "engine_config": cfg, "images": 4,
            "steps_timed": 4, "rounds": rounds, "ratio_median": 0.7, "ratio_of_bests": 0.5,
            "exact_s_per_image": round(307720 / max(engine), 1)}


def _resnet_file(exact_s=100.0, fuse=None, fusion=(1.5, 2.0, 2.5), threads=(2, 1)):
    """A file whose fidelity section ran the quick profile's ResNet20 (8 initial filters) and whose
    efficiency rows time a ResNet20 at the paper's 16, with a fusion section for the trained model."""
    data = _result()
    data["efficiency"] = [_efficiency_row(t, fuse=fuse) for t in threads]
    data["info"]["threads_fidelity_projections"] = 2
    data["fidelity"]["source"] = {"dataset": "fashion-mnist", "arch": "resnet20", "profile": "quick", "seed": 0,
                                  "key": "k1"}
    data["fidelity"]["runs"][0]["s_per_image"] = exact_s
    if fusion:
        data["fusion"] = [{"arch": "resnet20", "method": "pruned", "model_key": "k1", "images": 4, "m": 16,
                           "s_per_image_plain": 2.0, "s_per_image_fused": 1.0, "speedup_of_bests": 2.0,
                           "speedups_per_round": list(fusion), "same_order_share": 1.0,
                           "iou_5pct_fused_vs_plain": 1.0},
                          {"arch": "resnet20", "method": "gradient", "model_key": "k1", "images": 64, "k": 8,
                           "s_per_image_plain": 2.0, "s_per_image_fused": 1.0, "speedup_of_bests": 9.0,
                           "speedups_per_round": [9.0], "same_order_share": 1.0, "iou_5pct_fused_vs_plain": 1.0}]
    return data


def test_efficiency_is_the_median_of_paired_rounds_and_exact_runs_span_the_rounds(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _resnet_file())
    eff = bench_results.efficiency(bench_results.load_results(tmp_path)).iloc[0]
    assert eff["width"] == 16 and not eff["folded"]                           # width null: the paper's 16
    assert (eff["plain_median"], eff["engine_median"], eff["ratio_median"]) == (200.0, 150.0, 0.7)
    assert eff["exact_s_fastest"] == pytest.approx(307720 / 200) and eff["exact_s_slowest"] == pytest.approx(3077.2)
    v = speed.efficiency_values(bench_results.efficiency(bench_results.load_results(tmp_path)))
    assert v["eff_median"] == "0.70" and v["eff_bests"] == "0.50" and v["eff_rounds_span"] == "0.67–0.80"
    assert v["eff_exact_s"] == "1,539–3,077" and (v["eff_folded"], v["eff_rows"]) == ("0", "2")
    shown = speed.efficiency_table(bench_results.efficiency(bench_results.load_results(tmp_path)))
    assert shown.index.names == ["model", "threads"] and "ratio of bests" not in shown  # one device: no column
    assert shown.iloc[0]["full exact run (s/image)"] == "1,539–3,077"
    assert shown.iloc[0]["single rounds"] == "0.67–0.80"


def test_exact_check_scales_the_efficiency_rounds_by_multiply_adds_and_folding(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _resnet_file(exact_s=100.0))
    chk = bench_results.exact_check(bench_results.load_results(tmp_path)).set_index("threads")
    ratio = bench_results.macs("resnet20", (1, 28, 28), 8) / bench_results.macs("resnet20", (1, 28, 28), 16)
    assert 0.25 < ratio < 0.26 and chk.loc[2, "macs_ratio"] == pytest.approx(ratio)
    assert (chk.loc[2, "eff_width"], chk.loc[2, "fid_width"]) == (16, 8)        # quick profile: ResNet20 at 8
    assert chk.loc[2, "fold_speedup"] == 2.0                                  # pruned's median round, not gradient's
    assert chk.loc[2, "folded_fast"] == pytest.approx(307720 / 200 * ratio / 2)
    assert chk.loc[2, "folded_slow"] == pytest.approx(307720 / 100 * ratio / 2)   # 193–386 s
    v = speed.check_values(bench_results.exact_check(bench_results.load_results(tmp_path)))
    assert (v["chk_where"], v["chk_off"], v["chk_pred"], v["chk_pred_threads"]) == ("below", "48", "193–386", "2")
    assert (v["chk_measured"], v["chk_macs_x"], v["chk_fold"], v["chk_rate"]) == ("100", f"{1 / ratio:.2f}", "2.00",
                                                                                 "3,077")
    assert v["chk_rate_eq"] == f"{3077.2 * ratio / 2:,.0f}" and v["chk_rate_where"] == "above"   # 386 > 200
    assert v["chk_plain_where"] == "above" and v["chk_plain"] == "150–250"   # it outpaced every plain round
    assert (v["chk_eff_folded"], v["chk_fid_folded"]) == ("no", "yes")
    _write(tmp_path, "backselect-cpu.json", _resnet_file(exact_s=300.0))
    v = speed.check_values(bench_results.exact_check(bench_results.load_results(tmp_path)))
    assert (v["chk_where"], v["chk_off"], v["chk_rate_where"]) == ("within", "0", "within")   # 129 evals/s
    assert v["chk_plain_where"] == "below"
    _write(tmp_path, "backselect-cpu.json", _resnet_file(exact_s=300.0, threads=(1,)))   # no row at 2 threads
    v = speed.check_values(bench_results.exact_check(bench_results.load_results(tmp_path)))
    assert (v["chk_pred_threads"], v["chk_threads"]) == ("1", "2")            # predicted from the rows there are


def test_exact_check_folds_only_where_one_side_folded_and_says_when_it_cannot(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _resnet_file(fuse=True))          # both folded: nothing to undo
    assert set(bench_results.exact_check(bench_results.load_results(tmp_path))["fold_speedup"]) == {1.0}
    _write(tmp_path, "backselect-cpu.json", _resnet_file(fusion=None))        # folding never measured
    r = bench_results.load_results(tmp_path)
    assert bench_results.exact_check(r)["folded_fast"].isna().all()
    v = speed.check_values(bench_results.exact_check(r))
    assert v["chk_where"] == v["chk_off"] == v["chk_pred"] == v["chk_rate_where"] == MISSING   # not predicted
    assert list(speed.check_table(bench_results.exact_check(r)).iloc[0]) == ["1,539–3,077", "386–772", MISSING]
    _write(tmp_path, "backselect-cpu.json", _result())                        # no efficiency row of the model
    assert set(speed.check_values(bench_results.exact_check(bench_results.load_results(tmp_path))).values()) <= {MISSING} or \
        bench_results.exact_check(bench_results.load_results(tmp_path))["eff_width"].eq(32).all()  # the CNN at its own width: ratio 1


def test_fusion_reads_the_median_of_alternating_rounds(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _resnet_file(fusion=(4.0, 1.3, 1.2)))
    f = bench_results.fusion(bench_results.load_results(tmp_path)).set_index("method")
    assert f.loc["pruned", "speedup_median"] == 1.3 and f.loc["pruned", "speedup_max"] == 4.0
    assert f.loc["pruned", "setting"] == "m=16" and f.loc["gradient", "rounds"] == 1


def test_the_committed_exact_timings_agree_once_scaled():
    """The fidelity section's exact run (the quick, narrower ResNet20, batch norms
    folded) lies inside what the efficiency rounds predict for it at its thread count."""
    v = speed.check_values(bench_results.exact_check(bench_results.load_results()))
    assert v["chk_where"] == "within", (v["chk_measured"], v["chk_pred"])


# ----------------------------------------------------------------------------- what a reader sees

def test_display_tables_write_dashes_for_missing_numbers_and_name_a_single_device_once(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    r = bench_results.load_results(tmp_path)
    shown = speed.fidelity_table(bench_results.fidelity(r))
    assert "device" not in shown.columns and shown.index.names == ["method"]
    assert shown.loc["pruned m=16", "SIS size / exact's, τ = 0.99"] == MISSING  # null in the JSON, not NaN
    assert not shown.apply(lambda c: c.str.contains("nan", case=False)).any().any()
    assert shown.loc["exact", "s/image"] == "100" and shown.loc["gradient k=1", "s/image"] == "0.5"
    for table in (speed.reference_table(bench_results.exact_vs_reference(r)), speed.efficiency_table(bench_results.efficiency(r)),
                  speed.projection_table(bench_results.projections(r))):
        assert "device" not in list(table.columns) + list(table.index.names)
    assert list(speed.reference_table(bench_results.exact_vs_reference(r)).index.get_level_values("model")) == \
        ["small CNN, 28×28×1"]                                                # named from the efficiency row
    no_eff = _result(drop=("efficiency",))
    _write(tmp_path, "backselect-cpu.json", no_eff)
    assert list(speed.reference_table(bench_results.exact_vs_reference(bench_results.load_results(tmp_path))).index.get_level_values(
        "model")) == ["cnn-28x28x1"]                                          # else its own name
    _write(tmp_path, "backselect-cuda.json", _result("cuda", gpu="GPU X"))
    two = speed.reference_table(bench_results.exact_vs_reference(bench_results.load_results(tmp_path)))
    assert two.index.names[0] == "device" and speed.reference_values(bench_results.exact_vs_reference(
        bench_results.load_results(tmp_path)))["ref_device"] == "CPU (Test CPU, 2 threads), GPU X"  # the caption names both


def test_the_fidelity_figure_fits_the_page_with_text_of_at_least_9_points(tmp_path):
    _write(tmp_path, "backselect-cpu.json", _result())
    fig = speed.plot_fidelity(bench_results.fidelity(bench_results.load_results(tmp_path)))
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_text()]
    assert fig.get_size_inches()[0] <= 8 and min(sizes) >= 9, sorted(sizes)[:3]
