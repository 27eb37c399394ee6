"""The command line (`python -m overinterp`): one config path with the chapters, sharded runs the
book reuses, the prepare plan, and one-line errors with exit code 2."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from overinterp.experiments import runs
from overinterp.zoo import train
from overinterp.__main__ import build_parser, main, parse_shards
from overinterp.engine.backselect import BackSelectConfig
from overinterp.config.context import Run
from overinterp.config.profiles import get_profile
from overinterp.store import safe_load

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, store: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "overinterp", *args, "--profile", "tiny", "--device", "cpu",
                           "--artifacts", str(store)], capture_output=True, text=True, env=env, timeout=600)


def test_parse_shards():
    assert parse_shards("0:10") == slice(0, 10) and parse_shards("3") == slice(3, 4)
    assert parse_shards("5:") == slice(5, None)
    for bad in ("a:b", "5:3", "2:2", "-1:2"):
        with pytest.raises(argparse.ArgumentTypeError, match="--shards"):
            parse_shards(bad)


def test_help_documents_every_option(capsys):
    for command, options in {"backselect": ("--dataset", "--set", "--n", "--arch", "--profile", "--seed", "--method",
                                            "--block", "--k", "--m", "--mask-value", "--shards", "--device",
                                            "--chunk-size", "--artifacts"),
                             "prepare": ("--profile", "--dataset", "--shards", "--list", "--device", "--artifacts"),
                             "train": ("--dataset", "--arch", "--profile", "--seed", "--device", "--artifacts")}.items():
        with pytest.raises(SystemExit) as e:
            build_parser().parse_args([command, "--help"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert all(opt in out for opt in options), command


def exit_code(argv) -> int:
    """What ``python -m overinterp ARGV`` exits with (argparse's SystemExit or main's return)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("argv, says", [
    (["backselect", "--shards", "5:3"], "--shards '5:3' is empty"),
    (["backselect", "--k", "0"], "k must be an integer >= 1, got 0"),
    (["backselect", "--k", "two"], "--k expects int, got 'two'"),
    (["backselect", "--method", "fast"], "valid choices: exact, gradient, pruned"),
    (["train", "--dataset", "cifar10-c"], "parameter dataset='cifar10-c' is not valid; valid values: "),
    (["prepare", "--profile", "huge"], "parameter profile='huge' is not valid; valid values: tiny, quick, standard, gpu, paper"),
    (["book", "--device", "tpu"], "parameter device='tpu' is not valid"),
    (["verdicts", "--only", "sis", "everything"], "unknown claim 'everything'; valid claims: sis, accurate,"),
    (["verdicts", "--merge"], "verdicts --merge needs --json FILE, the verdicts to merge into"),
    (["verdicts", "--only", "sis", "--merge", "--json", "/nonexistent/v.json"], "no verdicts at /nonexistent/v.json"),
])
def test_bad_arguments_end_with_one_line_and_exit_code_2(capsys, argv, says):
    code = exit_code(argv)
    err = capsys.readouterr().err
    assert code == 2 and says in err.strip().splitlines()[-1] and "Traceback" not in err


def test_verdicts_merge_into_a_file_of_another_seed_fails_before_computing(capsys, monkeypatch, tmp_path):
    from overinterp.experiments import claims
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"dataset": "fashion-mnist", "profile": "tiny", "seed": 3, "rows": []}))
    monkeypatch.setattr(claims, "verdicts", lambda *a: pytest.fail("computed before checking the file"))
    code = exit_code(["verdicts", "--profile", "tiny", "--only", "sis", "--merge", "--json", str(path)])
    assert code == 2 and "cannot merge verdicts of seed 0 into a file of seed 3" in capsys.readouterr().err


def test_every_command_takes_the_chapters_run_parameters_with_their_defaults():
    """One configuration path: the flags every command shares are RunConfig's fields, with its defaults,
    the same names and defaults as every chapter's papermill parameters."""
    from dataclasses import fields
    from overinterp.config.chapters import CHAPTERS, RunConfig
    parser = build_parser()
    for command in ("train", "backselect", "prepare", "book"):
        args = parser.parse_args([command])
        for f in fields(RunConfig):
            assert getattr(args, f.name) == f.default, (command, f.name)
    for cls in CHAPTERS.values():
        assert {f.name: f.default for f in fields(RunConfig)}.items() <= {f.name: f.default for f in fields(cls)}.items()


def test_engine_flags_are_the_fields_of_backselectconfig_and_default_to_the_profile():
    from dataclasses import fields
    args = build_parser().parse_args(["backselect"])
    assert all(getattr(args, f.name) is None for f in fields(BackSelectConfig))
    args = build_parser().parse_args(["backselect", "--mask-value", "-1.5", "--k", "4"])
    assert args.mask_value == -1.5 and args.k == 4


def test_errors_while_running_end_with_one_line_and_exit_code_2(capsys, monkeypatch, tmp_path):
    from overinterp.zoo import data
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path))

    def missing(*a, **k):
        raise data.DataUnavailable("CIFAR-10 is not available (no network).\nPut the files in data/cifar-10-batches-py")
    monkeypatch.setattr(data, "load", missing)
    assert main(["train", "--dataset", "cifar10", "--profile", "tiny", "--artifacts", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("python -m overinterp train: error: CIFAR-10 is not available (no network). "
                   "Put the files in data/cifar-10-batches-py")
    monkeypatch.undo()
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path))
    assert main(["backselect", "--set", "validation", "--profile", "tiny", "--device", "cpu",
                 "--artifacts", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "valid sets: train, test, fashion-mnist-c" in err and len(err.strip().splitlines()) == 1


def test_a_mismatched_artifact_ends_with_one_line_and_exit_code_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path))
    argv = ["train", "--arch", "cnn", "--profile", "tiny", "--device", "cpu", "--artifacts", str(tmp_path)]
    assert main(argv) == 0 and main(argv + ["--seed", "1"]) == 0
    seed0, seed1 = sorted(tmp_path.glob("model/*/result.pt"), key=lambda p: json.loads(
        (p.parent / "config.json").read_text())["config"]["seed"])
    seed0.write_bytes(seed1.read_bytes())                  # another model's weights under seed 0's key
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "was produced by model version" in err and '"seed": 1' not in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """The tiny profile's test selection (64 images, shards of 32) backselected by two CLI processes."""
    store = tmp_path_factory.mktemp("cli-store")
    first = cli("backselect", "--arch", "cnn", "--shards", "0", store=store)
    second = cli("backselect", "--arch", "cnn", "--shards", "1", store=store)
    return store, first, second


def test_a_sharded_command_line_run_is_the_artifact_a_chapter_loads(sharded, monkeypatch):
    store, first, second = sharded
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert (a["complete"], b["complete"]) == (False, True) and a["shards"] == "0:1 of 2" and b["reused_by_the_book"]
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(store))
    monkeypatch.setattr(train, "fit", lambda *a, **k: pytest.fail("the chapter retrained the CLI's model"))
    monkeypatch.setattr(BackSelectConfig, "run", lambda *a, **k: pytest.fail("the chapter recomputed the run"))
    run = Run("fashion-mnist", get_profile("tiny"), torch.device("cpu"), 0)
    res = runs.backselect_set(run, "cnn", runs.selection(run, "test"), progress=False)
    assert len(res) == 64 and res.method == get_profile("tiny").backselect.method
    result = next((store / "backselect").iterdir()) / "result.pt"
    payload = safe_load(result)["payload"]
    assert torch.equal(payload["order"].long(), res.order)
    assert [m["engine_version"] for m in payload["meta"]] == [2, 2]


def test_prepare_lists_the_plan_and_runs_a_range_of_it(tmp_path, monkeypatch):
    listed = cli("prepare", "--list", store=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    tiny = get_profile("tiny")
    assert sum(" model " in l for l in lines) == len(tiny.archs) * tiny.replicates
    # bs and random with and without augmentation, and the full-image control
    assert sum(" retrained " in l for l in lines) == len(tiny.archs) * 5
    assert sum("full images (control)" in l for l in lines) == len(tiny.archs)
    assert any("test shard 2/2" in l for l in lines) and any("SIS images" in l for l in lines)
    # every replicate backselects the test images (4.1); only the first the training images (4.2)
    last = tiny.replicates - 1
    assert any(f"seed {last} test shard" in l for l in lines) and not any(f"seed {last} train" in l for l in lines)
    book = cli("prepare", "--study", "book", "--list", store=tmp_path).stdout.splitlines()
    # the book's plan adds the counterfactually fine-tuned models (verdicts --controls) and the chapters' units
    assert sum("masked training" in l for l in book) == len(tiny.masked.archs) * (tiny.masked.replicates or tiny.replicates)
    assert sum(" chapter " in l for l in book) == 2 and len(book) > len(lines)
    done = cli("prepare", "--shards", "0:1", "--log", str(tmp_path / "units.jsonl"), store=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["seconds"]) == [f"model: {tiny.archs[0]} seed 0"]
    (logged,) = [json.loads(l) for l in (tmp_path / "units.jsonl").read_text().splitlines()]   # one line a unit
    assert logged["unit"] == f"{tiny.archs[0]} seed 0" and logged["kind"] == "model" and logged["seconds"] > 0
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path))
    monkeypatch.setattr(train, "fit", lambda *a, **k: pytest.fail("prepare did not store the model"))
    runs.trained_model("fashion-mnist", tiny.archs[0], "tiny", seed=0, device="cpu", progress=False)
    outside = cli("prepare", "--shards", f"{len(lines)}:", store=tmp_path)
    assert outside.returncode == 2 and "outside the plan" in outside.stderr


def _artifacts(store: Path) -> dict:
    """kind/key -> payload of result.pt, for every artifact of a store."""
    return {f"{p.parent.parent.name}/{p.parent.name}": safe_load(p)["payload"]
            for p in sorted(store.glob("*/*/result.pt"))}


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):       # bit for bit; NaN (inside gradient blocks) equals NaN
        return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a.isnan() & b.isnan())).all())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a if k not in ("seconds", "meta", "device"))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_prepare_under_torchrun_with_two_processes_equals_one_process(tmp_path):
    one = cli("prepare", store=tmp_path / "one")
    assert one.returncode == 0, one.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    two = subprocess.run([str(Path(sys.executable).parent / "torchrun"), "--nproc-per-node", "2", "-m", "overinterp",
                          "prepare", "--profile", "tiny", "--device", "cpu", "--artifacts", str(tmp_path / "two")],
                         capture_output=True, text=True, env=env, timeout=900)
    assert two.returncode == 0, two.stderr[-3000:]
    assert '"process": "0 of 2"' in two.stdout and '"process": "1 of 2"' in two.stdout
    a, b = _artifacts(tmp_path / "one"), _artifacts(tmp_path / "two")
    kinds = {k.split("/")[0] for k in a}
    assert kinds == {"model", "backselect", "retrained"}
    assert a.keys() == b.keys()                       # same keys: same weights, images and engine everywhere
    for key in a:
        assert _same(a[key], b[key]), key


def test_prepare_in_two_one_thread_processes_equals_one_process(tmp_path):
    """What ``make book`` runs before the chapters (pages.build.prepare_first): the plan's kinds one after
    another in a pool of two processes; the same artifacts, bit for bit, as one process."""
    from overinterp.experiments.prepare import plan, prepare_parallel
    from overinterp.store import Store
    one = cli("prepare", store=tmp_path / "one")
    assert one.returncode == 0, one.stderr
    run = Run("fashion-mnist", get_profile("tiny"), torch.device("cpu"), 0)
    with Store.using(tmp_path / "two"):
        seconds = prepare_parallel(run, workers=2, progress=False)
    assert sorted(seconds) == sorted(f"{u.kind}: {u.name}" for u in plan(run))
    a, b = _artifacts(tmp_path / "one"), _artifacts(tmp_path / "two")
    assert a.keys() == b.keys()
    for key in a:
        assert _same(a[key], b[key]), key


def test_the_books_plan_adds_the_input_dropout_models_and_later_chapters_retraining(monkeypatch):
    """``book`` computes first (book_plan) what chapters 2-5 need, the input-dropout models among the
    models (one unit per seed, through the function the chapter "Input dropout" loads them with), and
    last the retraining controls and the dilated retraining, through the chapters' own functions with
    the chapters' default parameters, after every retrained model they reuse."""
    from overinterp.config.chapters import Critiques
    from overinterp.experiments import critiques
    from overinterp.experiments import factors_controls
    from overinterp.experiments import masked
    from overinterp.experiments import mitigation
    from overinterp.experiments.prepare import book_plan, plan
    run = Run("fashion-mnist", get_profile("tiny"), torch.device("cpu"), 3)
    units, base = book_plan(run), plan(run)
    extra = [u for u in units if u.name not in {b.name for b in base}]
    n_masked = len(run.profile.masked.archs) * run.profile.replicates
    assert len(units) == len(base) + mitigation.dropout_count(run) + n_masked + 2 and mitigation.dropout_count(run) > 0
    kinds = [u.kind for u in units]
    assert kinds == sorted(kinds, key=["model", "backselect", "retrained", "chapter"].index)   # as prepare_parallel runs them
    assert kinds.count("chapter") == 2 and kinds[-1] == "chapter"
    seen = []
    monkeypatch.setattr(mitigation, "dropout_model", lambda run, seed, progress=True: seen.append(seed))
    monkeypatch.setattr(masked, "masked_model", lambda run, arch, seed, progress=True: seen.append((arch, seed)))
    monkeypatch.setattr(factors_controls, "retrain_controls", lambda r: seen.append(("controls", r.seed)))
    monkeypatch.setattr(critiques, "dilated_retraining", lambda r, kernel, frac: seen.append(("dilated", kernel, frac)))
    for u in extra:
        u.run()
    c = Critiques()
    assert seen == ([3 + r for r in range(mitigation.dropout_count(run))] + [("cnn", 3 + r) for r in range(n_masked)] +
                    [("controls", 3), ("dilated", c.kernels[0], c.frac)])


def test_worker_reads_torchrun_and_slurm_array_variables():
    from overinterp.experiments.prepare import worker
    assert worker({}) == (0, 1, None)
    assert worker({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == (3, 4, 1)
    assert worker({"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "4"}) == (2, 4, None)


def test_the_retraining_images_get_the_profiles_train_engine(monkeypatch):
    from dataclasses import replace
    seen = {}
    monkeypatch.setattr(runs, "run_backselect", lambda model, images, **kw: seen.setdefault(kw["data_config"]["set"],
                                                                                        kw["config"]))
    monkeypatch.setattr(runs, "trained_model", lambda *a, **k: None)
    train_engine = BackSelectConfig("pruned", block=4, m=3)
    profile = replace(get_profile("tiny"), backselect_train=train_engine)
    run = Run("fashion-mnist", profile, torch.device("cpu"), 0)
    for name in ("train", "test", "fashion-mnist-c"):
        runs.backselect_set(run, "cnn", runs.selection(run, name))
    assert seen == {"train": train_engine, "test": profile.backselect, "fashion-mnist-c": profile.backselect}


# ----------------------------------------------------------------------------- a newcomer's first minutes

def test_the_top_level_help_lists_every_command_in_plain_text_without_importing_torch():
    """``python -m overinterp --help`` (and no command at all) answers at once: neither torch nor the library
    is imported before it, and it lists every command with its one-line description, in plain text."""
    code = """
import json, sys
from overinterp.__main__ import main
out = {}
for argv in (["--help"], []):
    try:
        out[" ".join(argv) or "none"] = main(argv)
    except SystemExit as e:
        out[" ".join(argv) or "none"] = e.code
out["imported"] = sorted(m for m in ("torch", "numpy", "pandas", "overinterp.store", "overinterp.experiments")
                         if m in sys.modules)
print("RESULT " + json.dumps(out))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    got = json.loads(res.stdout.splitlines()[-1].removeprefix("RESULT "))
    assert got == {"--help": 0, "none": 2, "imported": []}, res.stderr
    helped = res.stdout
    from overinterp.__main__ import commands
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(commands()) == list(subparsers.choices) and len(commands()) == 8
    for name, line in commands().items():
        assert "\n" not in line and "`" not in line and ":class:" not in line, name
        assert any(l.split() == [name, *line.split()] for l in helped.splitlines()), name   # name and line, one line
    assert "`" not in helped and "`" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == ("python -m overinterp: error: name a command: " +
                                                   ", ".join(commands()))
    assert all(name in res.stderr for name in commands())          # no command: the same list, and exit code 2


def test_a_subcommands_help_still_documents_its_options_and_an_unknown_command_is_refused(capsys):
    assert exit_code(["bogus"]) == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err
    assert exit_code(["verdicts", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--only" in out and "--controls" in out and "95% interval" in out


def test_book_only_an_unknown_chapter_ends_with_one_line_listing_the_valid_names(capsys, monkeypatch):
    from overinterp.config.chapters import toc_chapters
    from overinterp.pages import build
    built = []
    monkeypatch.setattr(build, "build", lambda parameters, **k: built.append(k["only"]))
    monkeypatch.setattr(build, "prepare_first", lambda *a, **k: pytest.fail("computed before checking --only"),
                        raising=False)
    assert exit_code(["book", "--profile", "tiny", "--device", "cpu", "--only", "03_sis", "99_nothing"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and built == []
    assert err.startswith("python -m overinterp book: error: --only: unknown chapter '99_nothing'; valid chapters")
    assert err.strip().endswith(", ".join(toc_chapters())) and "03_sis" in toc_chapters()
    assert exit_code(["book", "--profile", "tiny", "--device", "cpu", "--only", "book/03_sis.ipynb", "04_pixel_subsets",
                      "--out", "/nonexistent-build"]) == 0
    assert built == [["03_sis", "04_pixel_subsets"]]       # a notebook's path names its chapter too



@pytest.mark.parametrize("argv, says", [
    (["--only", "03_sis", "-p", "tau", "2"], "parameter tau=2 is not valid: must lie strictly between 0 and 1"),
    (["--only", "03_sis", "-p", "tau", "1"], "parameter tau=1 is not valid"),
    (["--only", "03_sis", "-p", "bogus", "3"], "parameter bogus: no chapter executed here takes it; theirs: n_curves"),
    (["-p", "seed", "3"], "parameter seed: use --seed"),
])
def test_book_refuses_a_bad_chapter_parameter_in_one_line_before_executing(capsys, monkeypatch, argv, says):
    from overinterp.pages import build
    monkeypatch.setattr(build, "build", lambda parameters, **k: pytest.fail("executed before checking -p"))
    assert exit_code(["book", "--profile", "tiny", "--device", "cpu", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and says in err


def test_book_passes_a_checked_chapter_parameter_read_as_a_literal(monkeypatch):
    from overinterp.pages import build
    built = []
    monkeypatch.setattr(build, "build", lambda parameters, **k: built.append(parameters))
    assert exit_code(["book", "--profile", "tiny", "--device", "cpu", "--only", "03_sis", "-p", "tau", "0.9",
                      "-p", "n_show", "3", "--out", "/nonexistent-build"]) == 0
    assert built[0]["tau"] == 0.9 and built[0]["n_show"] == 3 and built[0]["profile"] == "tiny"

ROWS = [{"claim": "sis", "model": "ResNet20", "estimate": 8.0019, "low": 5.1814, "high": 10.8224, "margin": "≤ 5",
         "outcome": "does not hold", "replicates": 5.0, "images": 200.0, "to decide": None, "part": "I",
         "chapter": "03_sis", "verdict": "does not hold"},
        {"claim": "kept", "model": "ResNet20", "estimate": 0.4174, "low": 0.357, "high": 0.4778, "margin": "≤ 0.05",
         "outcome": "does not hold", "replicates": 5.0, "images": 1000.0, "to decide": None, "part": "I",
         "chapter": "04_pixel_subsets", "verdict": "does not hold"},
        {"claim": "sis_accuracy", "model": "ResNet20 / test", "estimate": -25.4, "low": -50.2, "high": None,
         "margin": "", "outcome": "does not hold", "replicates": 5.0, "images": 40.0, "to decide": None, "part": "II",
         "chapter": "08_sis_accuracy", "verdict": "does not hold"}]


def test_every_claims_measure_has_a_unit():
    from overinterp.paper.claims import CLAIMS
    got = {c: CLAIMS[c].measured for c in CLAIMS}
    assert all(name and unit for name, unit in got.values()), got
    assert got["sis"] == ("mean SIS size", "%") and got["accurate"] == ("drop", "points")
    assert got["kept"] == ("mean drop", "probability of the predicted class")


@pytest.mark.parametrize("profile", ["quick", "tiny"])
def test_verdicts_rows_name_the_measure_its_unit_and_the_95_interval_and_tiny_ones_are_a_smoke_test(
        capsys, monkeypatch, tmp_path, profile):
    from types import SimpleNamespace
    from overinterp.pages.report import TINY_MARK, TINY_WARNING
    from overinterp.experiments import claims
    monkeypatch.setattr(claims, "verdicts", lambda run, only, controls=False: SimpleNamespace(seconds={}))
    monkeypatch.setattr(claims, "table", lambda vs: ROWS)
    assert main(["verdicts", "--profile", profile, "--device", "cpu", "--artifacts", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [l for l in out if l.startswith("      ")]
    expected = [
        "ResNet20: mean SIS size (%) 8.0, 95% interval [5.2, 10.8], margin ≤ 5, does not hold (5 replicates, 200 images)",
        "ResNet20: mean drop (probability of the predicted class) 0.417, 95% interval [0.357, 0.478], margin ≤ 0.05, "
        "does not hold (5 replicates, 1000 images)",
        "ResNet20 / test: increase (%) -25.4, 95% interval [-50.2, —], does not hold (5 replicates, 40 images)"]
    mark = TINY_MARK if profile == "tiny" else ""
    assert rows == ["      " + mark + r for r in expected]
    assert (out[0] == TINY_WARNING) == (profile == "tiny") and "not findings" in TINY_WARNING
    headers = [l for l in out if l.startswith("  ") and not l.startswith("      ")]
    # the sidebar's numbers: 03_sis is chapter 2, 04_pixel_subsets chapter 3, 08_sis_accuracy chapter 9
    assert [h.rsplit("; ", 1)[1] for h in headers] == ["chapter 2 (03_sis)]", "chapter 3 (04_pixel_subsets)]",
                                                       "chapter 9 (08_sis_accuracy)]"]
    assert not any("chapter 03" in l or "chapter 04" in l for l in out)


def test_messages_that_name_a_chapter_give_the_sidebars_number(capsys):
    from overinterp.config.chapters import chapter_number
    assert main(["chapters"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("01_introduction: ") and out[1].startswith("chapter 1 (02_model_zoo): ")
    assert any(l.startswith("chapter 2 (03_sis): tau=None") for l in out)
    assert exit_code(["prepare", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (f"chapters {chapter_number('02_model_zoo')}-{chapter_number('05_retraining')} need" in text
            and "chapters 1-4" in text and "chapters 2-5" not in text)
