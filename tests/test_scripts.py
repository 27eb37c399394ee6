"""scripts/: gpu_edition.py (the one command of the GPU machine stops on its time budget, says what is
left, and brings back files of at most 16 MiB) and compare_books.py (the restructuring check)."""
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


def _executed(folder: Path, stem: str, glued: dict, table: str) -> None:
    """An executed notebook as myst-nb and papermill write it: glue outputs and one displayed table."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [nbformat.v4.new_output("display_data", {"application/papermill.record/text/plain": repr(v)},
                                           metadata={"scrapbook": {"name": k, "mime_prefix": "application/papermill.record/"}})
                    for k, v in glued.items()]
    cell.outputs.append(nbformat.v4.new_output("execute_result", {"text/html": table}, execution_count=1))
    nb.cells = [cell]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{stem}.ipynb")


def test_compare_books_finds_a_moved_glued_value_and_ignores_a_stylers_random_id(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("compare_books", ROOT / "scripts" / "compare_books.py")
    compare_books = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_books)
    table = '<style>#T_{}  td {{}}</style><table id="T_{}_"><tr><td>8.8</td></tr></table>'
    _executed(tmp_path / "a", "03_sis", {"sis_mean": "8.8", "n": 20}, table.format("896e3", "896e3"))
    _executed(tmp_path / "b", "03_sis", {"sis_mean": "8.8", "n": 20}, table.format("f1350", "f1350"))
    assert compare_books.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    _executed(tmp_path / "c", "03_sis", {"sis_mean": "8.9", "n": 20}, table.format("f1350", "f1350"))
    assert compare_books.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "glue sis_mean: \"'8.8'\" -> \"'8.9'\"" in capsys.readouterr().out
    _executed(tmp_path / "d", "03_sis", {"sis_mean": "8.8", "n": 20}, table.replace("8.8", "9.1").format("1", "1"))
    assert compare_books.main([str(tmp_path / "a"), str(tmp_path / "d")]) == 1
    assert compare_books.main([str(tmp_path / "a"), str(tmp_path / "empty")]) == 2


def test_the_two_seed_script_trains_the_zoo_first_then_the_rest_then_both_seeds_verdicts(tmp_path):
    """scripts/standard_two_seeds.sh with a Python that records its calls: the zoo (units 0-14) in two
    ranks, then the rest in two ranks, then the verdicts of the claims whose chapters the edition's
    manifest lists, at seed 0 and at the second seed, then their comparison into the edition's folder."""
    import os
    import subprocess
    import sys
    from overinterp.paper.claims import CLAIMS
    edition = tmp_path / "edition"
    edition.mkdir()
    (edition / "manifest.json").write_text(json.dumps({"chapters": {"03_sis": {}, "10_ensembles": {}}}))
    calls = tmp_path / "calls.txt"
    stub = tmp_path / "python"
    stub.write_text(f'#!/usr/bin/env bash\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\n'
                    f'echo "RANK=${{RANK:-}} $*" >> {calls}\n')
    stub.chmod(0o755)
    env = {**os.environ, "PYTHON": str(stub), "OVERINTERP_ARTIFACTS": str(tmp_path / "store"),
           "LOGS": str(tmp_path / "logs"), "EDITION": str(edition)}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "standard_two_seeds.sh"), "11"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = calls.read_text().splitlines()
    prepares = [ln for ln in lines if " prepare " in ln]
    assert len(prepares) == 4 and all("--profile standard --seed 11" in ln for ln in prepares)
    assert all("--shards 0:15" in ln for ln in prepares[:2]) and not any("--shards" in ln for ln in prepares[2:])
    assert sorted(ln.split()[0] for ln in prepares[:2]) == ["RANK=0", "RANK=1"]
    claims = " ".join(c for c, claim in CLAIMS.items() if claim.chapter in ("03_sis", "10_ensembles"))
    verdicts = [ln for ln in lines if " verdicts " in ln]
    assert sorted(ln.split("--seed ")[1].split()[0] for ln in verdicts) == ["0", "11"]   # side by side
    assert all(f"--only {claims} --json" in ln for ln in verdicts)
    assert "bench_verdicts.py" in lines[-1] and f"--out {edition}/verdicts-seeds.json" in lines[-1]

    # run again with seed 0's file holding one claim and seed 11's every claim: seed 0 computes the others
    # and merges them into its file, seed 11 computes nothing
    first, *rest = claims.split()
    for seed, held in (("0", [first]), ("11", claims.split())):
        (edition / f"verdicts-seed{seed}.json").write_text(json.dumps({"rows": [{"claim": c} for c in held]}))
    calls.write_text("")
    res = subprocess.run(["bash", str(ROOT / "scripts" / "standard_two_seeds.sh"), "11"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    verdicts = [ln for ln in calls.read_text().splitlines() if " verdicts " in ln]
    assert len(verdicts) == 1 and "--seed 0 " in verdicts[0]
    assert f"--only {' '.join(rest)} --merge --json {edition}/verdicts-seed0.json" in verdicts[0]
    assert "seed 11: " in res.stdout and "has every claim" in res.stdout


def test_compute_report_counts_a_unit_once_across_a_run_and_its_resumption(tmp_path):
    spec = importlib.util.spec_from_file_location("compute_report", ROOT / "scripts" / "compute_report.py")
    cr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cr)
    first, resumed = tmp_path / "rest.jsonl", tmp_path / "rest-rank0.log"
    first.write_text("\n".join(json.dumps(u) for u in [
        {"unit": "resnet20 on 5% bs subsets", "kind": "retrained", "seconds": 800.0},
        {"unit": "resnet20 seed 5 SIS sizes", "kind": "backselect", "seconds": 100.0},
        {"unit": "resnet20 seed 5 train", "kind": "backselect", "seconds": 50.0}]) + "\n")
    # prepare's closing JSON of the resumed run: the stored unit is listed again at its loading time
    resumed.write_text("progress...\n" + json.dumps({"study": "chapters", "seconds": {
        "retrained: resnet20 on 5% bs subsets": 1.5, "retrained: vgg16 on full images (control)": 300.0}},
        indent=1) + "\n")
    doc = cr.report(cr.units([first, resumed]), "test machine")
    assert doc["stages"]["retraining"] == {"units": 2, "process_seconds": 1101.5, "process_hours": 0.31}
    assert doc["stages"]["SIS sizes (pruned)"]["units"] == 1 and doc["stages"]["backward selection"]["units"] == 1
    assert doc["units"] == 4 and doc["total_process_hours"] == round(1251.5 / 3600, 2)


def test_pack_zoo_packs_the_profiles_zoo_models_only_and_lists_the_missing_ones(tmp_path, capsys):
    import torch
    from overinterp.experiments.runs import model_config
    from overinterp.store import Store, unpack
    spec = importlib.util.spec_from_file_location("pack_zoo", ROOT / "scripts" / "pack_zoo.py")
    pack_zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack_zoo)
    store = Store(tmp_path / "store")
    have = [("cnn", 0), ("cnn", 1), ("resnet20", 0)]        # the tiny zoo of seed 0 but resnet20 seed 1
    for arch, seed in have:
        store.save("model", model_config("fashion-mnist", arch, "tiny", seed), {"state_dict": {"w": torch.ones(2)}})
    store.save("model", model_config("fashion-mnist", "cnn", "tiny", 7), {"state_dict": {}})   # not of seed 0
    store.save("retrained", {"arch": "cnn"}, {"state_dict": {}})                               # not a zoo model
    out = tmp_path / "zoo.tar.gz"
    assert pack_zoo.main(["--profile", "tiny", "--seeds", "0", "--artifacts", str(store.root), "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["models"] == 3 and report["missing"] == pack_zoo.zoo_keys("tiny", "fashion-mnist", [0])[3:]
    fresh = Store(tmp_path / "fresh")
    unpack(out, fresh)
    assert sorted(p.name for p in (fresh.root / "model").iterdir()) == sorted(
        pack_zoo.zoo_keys("tiny", "fashion-mnist", [0])[:3])
    assert not (fresh.root / "retrained").exists()
    assert fresh.load("model", model_config("fashion-mnist", "resnet20", "tiny", 0))["state_dict"]["w"].sum() == 2
    empty = Store(tmp_path / "empty")
    assert pack_zoo.main(["--profile", "tiny", "--artifacts", str(empty.root), "--out", str(tmp_path / "x.tar.gz")]) == 2
    # a hand-off pack adds every stored artifact of the kinds asked for
    handoff = tmp_path / "handoff.tar.gz"
    assert pack_zoo.main(["--profile", "tiny", "--seeds", "0", "--artifacts", str(store.root), "--out", str(handoff),
                          "--also", "retrained"]) == 0
    assert json.loads(capsys.readouterr().out)["retrained"] == 1
    unpack(handoff, later := Store(tmp_path / "later"))
    assert later.load("retrained", {"arch": "cnn"})["state_dict"] == {}
    assert len(list((later.root / "model").iterdir())) == 3                    # the seed-7 model stays out


def test_same_code_ignores_docstrings_and_comments_but_not_a_changed_string_or_name():
    from tools.same_code import code_of
    before = 'def f(x):\n    """Long.\n\n    Story."""\n    return x + 1  # why\n'
    assert code_of(before) == code_of('def f(x):\n    """Short."""\n    # a reason\n    return x + 1\n')
    assert code_of(before) == code_of("def f(x):\n    return x + 1\n")
    assert code_of(before) != code_of('def f(x):\n    """Long."""\n    return x + 2\n')
    assert code_of(before) != code_of('def f(y):\n    """Long."""\n    return y + 1\n')
    # a string that is not the first statement is code (a glued sentence)
    assert code_of('def f():\n    x = 1\n    "said"\n') != code_of('def f():\n    x = 1\n    "told"\n')
