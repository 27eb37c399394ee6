"""scripts/gpu_edition.py: the one command of the GPU machine stops on its time budget, says what is
left, and brings back files of at most 16 MiB."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gpu_edition", ROOT / "scripts" / "gpu_edition.py")
gpu_edition = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_edition)


def test_split_file_cuts_parts_of_at_most_16_mib_that_join_back(tmp_path):
    big = tmp_path / "edition.tar.gz"
    data = bytes(range(256)) * (gpu_edition.PART * 2 // 256 + 1000)
    big.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    names = gpu_edition.split_file(big, out)
    assert names == ["edition.tar.gz.part00", "edition.tar.gz.part01", "edition.tar.gz.part02"]
    assert all((out / n).stat().st_size <= 16 * 2**20 for n in names)
    assert b"".join((out / n).read_bytes() for n in names) == data
    small = tmp_path / "status.json"
    small.write_text("{}")
    assert gpu_edition.split_file(small, out) == ["status.json"]


def test_a_call_that_runs_out_of_budget_stops_after_a_unit_and_says_what_is_left(tmp_path):
    code = gpu_edition.main([str(tmp_path), "--profile", "tiny", "--device", "cpu", "--budget-s", "0.5"])
    status = json.loads((tmp_path / "status.json").read_text())
    assert code == 3 and not status["complete"] and status["files"] == []
    assert len(status["units"]) >= 1 and status["units_left"] > 0
    assert next(iter(status["units"])).startswith("0 model:")
