"""benchmarks/bench_verdicts.py: the records it reads from executed chapters and what counts as a flip."""
import importlib.util
import json
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("bench_verdicts", ROOT / "benchmarks" / "bench_verdicts.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _rec(claim, model, outcome):
    return {"claim": claim, "model": model, "estimate": 1.0, "low": 0.5, "high": 1.5, "margin": "≤ 5",
            "outcome": outcome}


def test_a_flip_is_holds_at_one_seed_and_does_not_hold_at_the_other():
    rows = bench.compare({0: [_rec("sis", "A", "holds"), _rec("sis", "B", "holds"), _rec("kept", "A", "holds")],
                          1: [_rec("sis", "A", "does not hold"), _rec("sis", "B", "inconclusive at this scale"),
                              _rec("kept", "A", "holds")]})
    assert [(r["claim"], r["model"], r["flip"]) for r in rows] == [("sis", "A", True), ("sis", "B", False),
                                                                   ("kept", "A", False)]
    assert rows[0]["seeds"]["1"]["outcome"] == "does not hold"


def test_records_read_the_glued_json_of_executed_notebooks(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    recs = [_rec("accurate", "ResNet20", "does not hold")]
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "application/papermill.record/text/plain": repr(json.dumps(recs))},
        metadata={"scrapbook": {"name": "res_accurate_json"}}),
        nbformat.v4.new_output("display_data", data={"text/plain": "'holds'"},
                               metadata={"scrapbook": {"name": "res_accurate_verdict"}})]
    nb.cells.append(cell)
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / "04_pixel_subsets.ipynb")
    assert bench.records(tmp_path) == [{**recs[0], "chapter": "04_pixel_subsets"}]


def test_part_one_is_the_toc_part_of_the_papers_claims():
    stems = bench.part_one()
    assert stems[0] == "02_model_zoo" and "05_retraining" in stems and "08_sis_accuracy" not in stems
