"""benchmarks/bench_verdicts.py: what counts as a flip, overlapping seeds, and seeds read from verdicts JSON."""
import importlib.util
import json
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("bench_verdicts", ROOT / "benchmarks" / "bench_verdicts.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _rec(claim, model, outcome):
    return {"claim": claim, "model": model, "estimate": 1.0, "low": 0.5, "high": 1.5, "margin": "≤ 5",
            "outcome": outcome}


def test_a_flip_is_holds_at_one_seed_and_does_not_hold_at_the_other():
    rows = bench.seed_rows({0: [_rec("sis", "A", "holds"), _rec("sis", "B", "holds"), _rec("kept", "A", "holds")],
                          1: [_rec("sis", "A", "does not hold"), _rec("sis", "B", "inconclusive at this scale"),
                              _rec("kept", "A", "holds")]})
    assert [(r["claim"], r["model"], r["flip"]) for r in rows] == [("sis", "A", True), ("sis", "B", False),
                                                                   ("kept", "A", False)]
    assert rows[0]["seeds"]["1"]["outcome"] == "does not hold"


def test_overlapping_seeds_are_named_and_reused_json_rows_are_compared(tmp_path, capsys):
    assert bench.overlapping([0, 1, 5], 3) == [(0, 1)] and bench.overlapping([0, 5], 5) == []
    for seed, outcome in ((0, "holds"), (5, "does not hold")):
        (tmp_path / f"v{seed}.json").write_text(json.dumps({"rows": [_rec("sis", "ResNet20", outcome)],
                                                            "device": f"machine {seed}"}))
    out = tmp_path / "out.json"
    code = bench.main(["--profile", "tiny", "--seeds", "0", "5", "--reuse", f"0={tmp_path / 'v0.json'}",
                       f"5={tmp_path / 'v5.json'}", "--out", str(out)])
    doc = json.loads(out.read_text())
    assert code == 1 and doc["flips"] == 1 and doc["seeds"] == [0, 5] and doc["overlapping_seeds"] == []
    assert doc["device"] == "machine 0; machine 5"     # where the reused verdicts ran, not where they were compared
    assert doc["profile"] == "tiny" and doc["date"]
    assert doc["rows"][0]["seeds"]["5"]["outcome"] == "does not hold" and "FLIP" in capsys.readouterr().out
