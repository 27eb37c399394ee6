"""benchmarks/bench_book.py: the whole book's time from a build's records, the earlier measurement kept."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_book", ROOT / "benchmarks" / "bench_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_reused_build_gives_stage_seconds_the_budget_and_the_models_origin(tmp_path):
    bench = _bench()
    out = tmp_path / "build"
    out.mkdir()
    (out / "timings.json").write_text(json.dumps({"parameters": {}, "seconds": {"prepare": 1200.0, "01_a": 30.0,
                                                                                "02_b": 50.0},
                                                  "wall_seconds": {"chapters": 60.0, "render": 20.0}}))
    (out / "book.log").write_text("[book] unpacked 14 trained models from editions/x/zoo.tar.gz (packed at ...)\n"
                                  "[book] total 2700 s\n")
    target = tmp_path / "book.json"
    target.write_text(json.dumps({"total_minutes": 73.8, "previous": {"total_minutes": 43.8}}))
    assert bench.main(["--reuse", str(out), "--out", str(target), "--note", "n"]) == 0
    doc = json.loads(target.read_text())
    assert doc["total_seconds"] == 2700 and doc["total_minutes"] == 45.0 and doc["within_45_minutes"] is True
    assert doc["execute_seconds"] == 2680 and doc["render_seconds"] == 20.0 and doc["chapters_wall_seconds"] == 60.0
    assert doc["models"] == "unpacked 14 trained models from editions/x/zoo.tar.gz" and doc["notes"] == ["n"]
    assert doc["previous"] == {"total_minutes": 73.8}          # one measurement back, not a chain
    assert "cores" in doc["device"] and doc["device"].startswith("CPU (") and doc["commit"]
    (out / "book.log").write_text("[book] total 2701 s\n")
    bench.main(["--reuse", str(out), "--out", str(target)])
    doc = json.loads(target.read_text())
    assert doc["within_45_minutes"] is False and doc["models"].startswith("trained by the build")


def test_the_measured_build_starts_from_an_empty_store_log_and_data_cache(tmp_path):
    cmd, env = _bench().command(tmp_path, "quick")
    assert cmd[-4:] == ["overinterp", "book", "--out", str(tmp_path)] or cmd[-3:] == ["book", "--out", str(tmp_path)]
    assert {env[k] for k in ("OVERINTERP_ARTIFACTS", "OVERINTERP_STORE_LOG", "OVERINTERP_DATA")} == {
        str(tmp_path / "artifacts"), str(tmp_path / "store-log.jsonl"), str(tmp_path / "data")}
    assert env["OVERINTERP_PROFILE"] == "quick"
