"""The store's access log ($OVERINTERP_STORE_LOG): one JSON line per load and save, naming the chapter
that the book build sets in $OVERINTERP_CHAPTER for each chapter's kernel."""
import json

import nbformat

from overinterp.pages import build
from overinterp.store import CHAPTER_ENV, LOG_ENV, Store


def _lines(path):
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_nothing_is_logged_unless_the_log_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(LOG_ENV, raising=False)
    st = Store(tmp_path / "store")
    st.save("model", {"a": 1}, 1)
    assert st.load("model", {"a": 1}) == 1
    assert not any(p.suffix == ".jsonl" for p in tmp_path.rglob("*"))


def test_each_save_load_and_miss_is_one_line_with_the_chapter(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv(LOG_ENV, str(log))
    monkeypatch.setenv(CHAPTER_ENV, "04_pixel_subsets")
    st = Store(tmp_path / "store")
    assert st.load("model", {"a": 1}) is None
    st.save("backselect", {"a": 1}, [1], name="shard-00000.pt")
    st.save("model", {"a": 1}, 1)
    monkeypatch.delenv(CHAPTER_ENV)
    st.load("model", {"a": 1})
    key = st.dir("model", {"a": 1}).name
    got = _lines(log)
    assert [(e["event"], e["kind"], e["name"], e["chapter"]) for e in got] == [
        ("miss", "model", "result.pt", "04_pixel_subsets"), ("save", "backselect", "shard-00000.pt", "04_pixel_subsets"),
        ("save", "model", "result.pt", "04_pixel_subsets"), ("load", "model", "result.pt", None)]
    assert got[2]["key"] == f"model/{key}" and got[0]["time"] <= got[3]["time"]


def test_the_book_build_names_each_chapter_in_its_kernels_environment(tmp_path, monkeypatch):
    """Two toy chapters executed by build.execute: the second loads what the first saved, and the log
    says which chapter did what; the variable is unset again afterwards."""
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/a\nchapters:\n- file: book/b\n")
    code = {"a": 'Store().save("model", {"x": 1}, 1)', "b": 'assert Store().load("model", {"x": 1}) == 1'}
    for stem, line in code.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 0", metadata={"tags": ["parameters"]}),
                    nbformat.v4.new_code_cell(f"from overinterp.store import Store\n{line}")]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "book" / f"{stem}.ipynb")
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv(LOG_ENV, str(log))
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path / "store"))
    monkeypatch.delenv(CHAPTER_ENV, raising=False)
    build.execute({"x": 1}, tmp_path / "stage", root)
    assert [(e["event"], e["chapter"]) for e in _lines(log)] == [("save", "a"), ("load", "b")]
    import os
    assert CHAPTER_ENV not in os.environ
