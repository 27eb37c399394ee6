"""``book --jobs 2``: chapters in one-thread processes with the report last, and the committed pack of
trained models unpacked (or refused, in one line) before anything trains."""
import json
import os
import tarfile

import nbformat
import pytest
import torch

from overinterp.config.context import make_run
from overinterp.experiments.prepare import model_keys
from overinterp.pages import build, packs
from overinterp.store import Store, pack, pack_manifest


def _toy_book(root, code: dict):
    (root / "book").mkdir(parents=True)
    stems = list(code)
    (root / "_toc.yml").write_text(f"format: jb-book\nroot: book/{stems[0]}\nchapters:\n"
                                   + "".join(f"- file: book/{s}\n" for s in stems[1:]))
    for stem, line in code.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("out = ''", metadata={"tags": ["parameters"]}),
                    nbformat.v4.new_code_cell(f"import os, pathlib, time\n{line}")]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "book" / f"{stem}.ipynb")


def test_chapters_execute_in_one_thread_processes_and_the_last_after_all_others(tmp_path):
    root, out = tmp_path / "repo", tmp_path / "out"
    out.mkdir()
    write = ('time.sleep(1); pathlib.Path(out, "{0}").write_text(os.environ.get("OMP_NUM_THREADS", "all") + " "'
             ' + os.environ["OVERINTERP_CHAPTER"])')
    _toy_book(root, {"a": write.format("a"), "b": write.format("b"), "c": write.format("c"),
                     "report": 'assert sorted(p.name for p in pathlib.Path(out).iterdir()) == ["a", "b", "c"]\n'
                               + write.format("report")})
    timings = build.execute({"out": str(out)}, tmp_path / "stage", root, jobs=2)
    assert list(timings) == ["a", "b", "c", "report"]
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "a": "1 a", "b": "1 b", "c": "1 c", "report": f"{os.environ.get('OMP_NUM_THREADS', 'all')} report"}
    assert all((tmp_path / "stage" / "book" / f"{s}.ipynb").is_file() for s in timings)


def test_a_failing_chapter_ends_the_parallel_build_in_one_line_naming_it(tmp_path):
    root = tmp_path / "repo"
    _toy_book(root, {"a": "pass", "b": "raise ValueError('bad value')", "c": "pass", "report": "pass"})
    with pytest.raises(SystemExit, match=r"failed in cell \d+: ValueError: bad value"):
        build.execute({"out": ""}, tmp_path / "stage", root, jobs=2)


@pytest.fixture
def tiny_pack(tmp_path):
    """A pack of the tiny book's trained models (small tensors standing in for the weights)."""
    run = make_run("fashion-mnist", "tiny", "cpu", 0)
    source = Store(tmp_path / "source")
    for i, key in enumerate(model_keys(run)):
        folder = source.root / "model" / key
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"version": 2, "key": key}))
        torch.save({"state_dict": {"w": torch.full((2,), float(i))}}, folder / "result.pt")
    file = tmp_path / "zoo.tar.gz"
    pack(file, source, profile="tiny")
    return run, file


def test_the_pack_is_unpacked_once_and_the_zoo_chapter_says_where_its_models_come_from(tmp_path, tiny_pack,
                                                                                      monkeypatch):
    run, file = tiny_pack
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path / "store"))
    assert packs.models_origin(run, file)["zoo_origin"] == "The store holds none of this execution's trained models yet."
    line = packs.unpack_models(run, file)
    n = len(model_keys(run))
    assert line.startswith(f"[book] unpacked {n} trained models from ") and "--train" in line
    assert all((tmp_path / "store" / "model" / k / "result.pt").is_file() for k in model_keys(run))
    assert packs.unpack_models(run, file) is None                       # nothing left to unpack
    origin = packs.models_origin(run, file)["zoo_origin"]
    assert origin.startswith(f"This execution's {n} trained models (the zoo") and "were unpacked from" in origin
    assert "`" not in origin and "--" not in origin                      # glue:text shows plain text
    other = tmp_path / "store" / "model" / model_keys(run)[0]              # one model trained here instead
    torch.save({"state_dict": {"w": torch.zeros(5)}}, other / "result.pt")
    origin = packs.models_origin(run, file)["zoo_origin"]
    assert origin.startswith(f"{n - 1} of this execution's {n} trained models were unpacked") and "1 was trained here" in origin
    for f in (tmp_path / "store" / "model").glob("*/result.pt"):            # all trained here
        torch.save({"state_dict": {"w": torch.ones(7)}}, f)
    assert packs.models_origin(run, file)["zoo_origin"] == f"This execution trained its {n} models itself."


def test_a_damaged_pack_is_reported_in_one_line_and_the_models_train_instead(tmp_path, tiny_pack, monkeypatch):
    run, file = tiny_pack
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path / "store"))
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    line = packs.unpack_models(run, bad)
    assert line.startswith("[book] not unpacking the trained models: ") and line.endswith("they train here instead")
    assert "\n" not in line and not (tmp_path / "store" / "model").exists()
    assert packs.unpack_models(run, tmp_path / "none.tar.gz") is None


def test_the_committed_quick_pack_holds_exactly_the_quick_books_trained_models():
    """A change to a training recipe changes the models' keys: repack (scripts/pack_zoo.py --profile quick
    --seeds 0) so that the quick book keeps within its time budget."""
    file = packs.models_pack("fashion-mnist", "quick")
    manifest = pack_manifest(file)
    held = {f.split("/")[1] for f in manifest["files"] if f.endswith("result.pt")}
    assert held == set(model_keys(make_run("fashion-mnist", "quick", "cpu", 0))), (
        f"{file} is stale: python scripts/pack_zoo.py --profile quick --seeds 0 --artifacts STORE --out {file}")
    with tarfile.open(file) as tar:
        assert all(m.name == "manifest.json" or m.name.startswith("store/model/") for m in tar)
