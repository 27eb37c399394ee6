"""The verdicts' JSON as the introduction's edition table (overinterp.pages.report)."""
import json

import pytest

from overinterp.pages import report
from overinterp.paper.claims import CLAIMS
from overinterp.paper.formatting import number


def _row(claim, model, estimate, low, high, outcome, to_decide=None, verdict="holds"):
    return {"claim": claim, "model": model, "estimate": estimate, "low": low, "high": high, "margin": "below 5",
            "outcome": outcome, "replicates": 5, "images": 40, "to decide": to_decide, "verdict": verdict}


def test_the_edition_table_keeps_every_row_with_its_interval_sample_and_decision(tmp_path):
    rows = [_row("sis", "ResNet20", 3.2109, 2.5, 4.01, "holds", verdict="inconclusive at this scale"),
            _row("sis", "VGG16", 6.0, 4.2, 7.9, "inconclusive at this scale", 9, "inconclusive at this scale"),
            _row("accurate", "ResNet20", None, None, None, None, verdict="cannot be tested")]
    path = tmp_path / "verdicts.json"
    report.write(path, {"schema": 1, "profile": "standard", "dataset": "fashion-mnist", "rows": rows})
    t = report.table(report.load(path))
    assert len(t) == 3 and list(t["model"]) == ["ResNet20", "VGG16", "ResNet20"]
    d, c = CLAIMS["sis"].digits, CLAIMS["sis"]
    ours = t["ours [95%] (replicates × images)"]
    assert ours[0] == f"{number(3.2109, d)} [{number(2.5, d)}, {number(4.01, d)}] (5 × 40)"
    assert t["claim"][0] == f"{c.short} ({c.section}; paper: {c.paper}): inconclusive at this scale"
    assert t["claim"][1] == "" and t["claim"][2].endswith(": cannot be tested")   # a claim named once
    assert t["outcome"][1] == "inconclusive at this scale (9 replicates to decide)"
    assert ours[2] == "— (5 × 40)" and t["outcome"][2] == "—"


def test_a_missing_or_foreign_verdicts_file_fails_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="none.json"):
        report.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="x.json"):
        report.load(tmp_path / "x.json")
