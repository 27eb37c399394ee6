"""Launch buttons: Binder on every chapter, Colab on the GPU chapters, each chapter able
to install the project where it is launched (its hidden install cell, written by ``python -m overinterp
chapters --write``), and no launch button at all without a repository URL. The rendered links are checked
on a three-page book of small notebooks, built by the book's own ``render`` in a few seconds."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib

import nbformat
import pytest
import yaml

from overinterp.config.chapters import CHAPTERS, GPU_CHAPTERS
from overinterp.pages.launch import INSTALL_TAG, install_cell
from overinterp.pages.build import ROOT, chapters, render, repository, repository_config, write_parameters
from overinterp.pages.launch import installs_from

URL, BRANCH = "https://github.com/example-org/overinterp", "launch-test"
BINDER = "https://mybinder.org/v2/gh/example-org/overinterp/launch-test?urlpath=lab/tree/{}.ipynb"
COLAB = "https://colab.research.google.com/github/example-org/overinterp/blob/launch-test/{}.ipynb"


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


# -- which chapters are GPU chapters ------------------------------------------------------------------------

def test_the_gpu_chapters_are_those_that_train_or_backselect():
    """Colab is offered where the paper-scale run needs a GPU: every chapter that, run alone, trains the zoo
    first (the benchmark's "needs" 02_model_zoo), the zoo itself and ImageNet; not the three pages that read
    committed results."""
    assert GPU_CHAPTERS < set(CHAPTERS)
    bench = json.loads((ROOT / "benchmarks/results/chapters-quick-cpu.json").read_text())["chapters"]
    assert {s for s, c in bench.items() if "02_model_zoo" in c["needs"]} | {"02_model_zoo", "12_imagenet"} <= GPU_CHAPTERS
    for stem in set(CHAPTERS) - GPU_CHAPTERS:
        assert not bench.get(stem, {}).get("needs"), stem
    assert not GPU_CHAPTERS & {"01_introduction", "13_speed", "17_instructors", "18_report"}


# -- the install cell -------------------------------------------------------------------------------------

def test_the_install_cell_does_nothing_where_overinterp_imports(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError(f"the install cell ran {a}")
    monkeypatch.setattr(subprocess, "run", refuse)
    path = list(sys.path)
    exec(install_cell(URL, BRANCH), {})
    assert sys.path == path


def test_the_install_cell_clones_and_installs_with_the_book_extra_where_overinterp_is_missing(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd))
    monkeypatch.setitem(sys.modules, "overinterp", None)                 # find_spec("overinterp") is None
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    exec(install_cell(URL, BRANCH), {})
    assert calls == [["git", "clone", "-q", "--depth", "1", "-b", BRANCH, URL, "overinterp-book"],
                     [sys.executable, "-m", "pip", "install", "-q", "-e", "overinterp-book[book]"]]
    assert sys.path[0] == str(tmp_path / "overinterp-book")
    monkeypatch.setitem(sys.modules, "overinterp", None)
    with pytest.raises(RuntimeError, match="_config.yml"):              # no repository to install from
        exec(install_cell("", "main"), {})
    assert len(install_cell(URL, BRANCH).splitlines()) <= 7


@pytest.fixture
def copies(tmp_path):
    """The repository's _config.yml, _toc.yml and chapters, copied: the writer runs on these."""
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / f, tmp_path / f)
    (tmp_path / "book").mkdir()
    for nb in chapters():
        shutil.copy(nb, tmp_path / "book" / nb.name)
    return tmp_path


@pytest.mark.filterwarnings("ignore::nbformat.warnings.MissingIDFieldWarning")   # papermill's injected cell
def test_the_writer_puts_the_install_cell_after_the_parameters_cell_and_papermill_still_injects(copies):
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook
    write_parameters(copies, url=URL, branch=BRANCH)
    assert write_parameters(copies, url=URL, branch=BRANCH) == []            # a second run changes nothing
    for path in chapters(copies):
        nb = nbformat.read(path, as_version=4)
        params, install = _code(nb)[:2]
        assert "parameters" in params.metadata.tags, path.name
        assert install.metadata.tags == ["remove-cell", INSTALL_TAG] and install.source == install_cell(URL, BRANCH)
        assert sum(INSTALL_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1
        assert not install.outputs and install.execution_count is None
        injected = parameterize_notebook(load_notebook_node(str(path)), {"profile": "tiny"}, kernel_name="python3")
        tags = [c.metadata.get("tags", []) for c in _code(injected)[:3]]
        assert ["parameters" in tags[0], "injected-parameters" in tags[1], INSTALL_TAG in tags[2]] == [True] * 3
    _install_cells_as_written(copies)
    # another repository: the one install cell is rewritten in place
    assert len(write_parameters(copies, url="https://github.com/fork/overinterp", branch="main")) == len(CHAPTERS)
    nb = nbformat.read(copies / "book" / "02_model_zoo.ipynb", as_version=4)
    assert _code(nb)[1].source == install_cell("https://github.com/fork/overinterp", "main")
    assert sum(INSTALL_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1


def _install_cells_as_written(root=ROOT) -> None:
    """Each chapter of ``root`` has its install cell right after its parameters cell, as the writer makes it
    for the repository the cell names."""
    for path in chapters(root):
        nb = nbformat.read(path, as_version=4)
        cell = _code(nb)[1]
        assert INSTALL_TAG in cell.metadata.get("tags", []), (
            f"{path.name}: no install cell after the parameters cell; run python -m overinterp chapters --write")
        named = re.search(r'"-b", ("[^"]*"),\s*("[^"]*"), "overinterp-book"', cell.source)
        url, branch = (json.loads(g) for g in reversed(named.groups())) if named else ("", "main")
        assert cell.source == install_cell(url, branch), path.name
        assert "remove-cell" in cell.metadata.tags


def test_every_chapter_holds_the_install_cell_the_writer_writes():
    """(`python -m overinterp chapters --write` writes them.)"""
    _install_cells_as_written()


# -- configuration and Binder ------------------------------------------------------------------------------

def test_launch_buttons_are_left_out_without_a_repository_url(monkeypatch):
    monkeypatch.delenv("OVERINTERP_REPOSITORY_URL", raising=False)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["launch_buttons"]["binderhub_url"] and config["launch_buttons"]["colab_url"]
    assert "overinterp.pages.launch" in config["sphinx"]["extra_extensions"]
    assert "launch_buttons" not in repository_config({**config, "repository": {"url": ""}})
    resolved = repository_config(config, url=URL + "/")
    assert resolved["launch_buttons"] == config["launch_buttons"]
    assert resolved["repository"]["url"] == URL and resolved["repository"]["branch"] == config["repository"]["branch"]
    monkeypatch.setenv("OVERINTERP_REPOSITORY_URL", URL)
    assert repository({"repository": {"url": "", "branch": BRANCH}}) == (URL, BRANCH)


def test_binder_installs_the_project_with_the_book_extra_on_a_supported_python():
    binder = ROOT / "binder"
    post = binder / "postBuild"
    assert post.stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert 'pip install --no-cache-dir -e ".[book]"' in post.read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    python = (binder / "runtime.txt").read_text().strip()
    assert python == "python-" + project["requires-python"].removeprefix(">=")
    torch = {r.replace(" ", "") for r in project["dependencies"] if r.startswith("torch")}
    listed = {line.strip() for line in (binder / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith(("#", "-"))}
    assert listed == torch


# -- the rendered links -----------------------------------------------------------------------------------

def _book(tmp, url: str):
    """Render a three-page book (introduction, zoo, speed: small notebooks with the writer's cells) and an
    edition of the zoo chapter (executed before the install cell existed) with ``url`` as the repository;
    the zoo chapter's install cell names ``url`` and a second GPU chapter's (SIS) another repository."""
    root = tmp / "root"
    (root / "book").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"].update(url=url, branch=BRANCH)
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    pages = ["01_introduction", "02_model_zoo", "03_sis", "13_speed"]
    toc = {"format": "jb-book", "root": "book/01_introduction",
           "parts": [{"caption": "Chapters", "numbered": True, "chapters": [{"file": f"book/{s}"} for s in pages[1:]]}]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    shutil.copy(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    kernel = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    for stem in pages:
        nb = nbformat.v4.new_notebook(metadata=kernel)
        nb.cells = [nbformat.v4.new_markdown_cell(f"# Page {stem}\n\nText."),
                    nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})]
        nbformat.write(nb, root / "book" / f"{stem}.ipynb")
    edition = tmp / "editions" / "fashion-mnist-gpu"
    (edition / "book").mkdir(parents=True)
    shutil.copy(root / "book" / "02_model_zoo.ipynb", edition / "book" / "02_model_zoo.ipynb")
    (edition / "manifest.json").write_text(json.dumps(
        {"name": "fashion-mnist-gpu", "profile": "gpu", "dataset": "fashion-mnist", "device": "a GPU", "torch": "2",
         "commit": "0", "date": "today", "seconds": {"02_model_zoo": 1.0}}))
    write_parameters(root, url=URL, branch=BRANCH)
    sis = nbformat.read(root / "book" / "03_sis.ipynb", as_version=4)
    _code(sis)[1].source = install_cell("https://github.com/someone-else/overinterp", BRANCH)
    nbformat.write(sis, root / "book" / "03_sis.ipynb")
    out = tmp / "out"
    shutil.copytree(root / "book", out / "stage" / "book")
    (out / "timings.json").write_text(json.dumps({"parameters": {"profile": "tiny"}, "seconds": {}}))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OVERINTERP_REPOSITORY_URL", raising=False)
        render(out / "stage", out, root, tmp / "editions")
    return out / "html"


def _launch_links(page) -> set[str]:
    html = page.read_text()
    return {h for h in re.findall(r'href="([^"]+)"', html) if "mybinder.org" in h or "colab.research" in h}


@pytest.fixture(scope="module")
def with_url(tmp_path_factory):
    return _book(tmp_path_factory.mktemp("launch"), URL)


def test_binder_on_every_chapter_and_colab_on_the_gpu_chapters_that_install_from_the_linked_repository(with_url):
    book = with_url / "book"
    assert installs_from(with_url.parent / "stage" / "book" / "02_model_zoo.ipynb", URL, BRANCH)
    assert _launch_links(book / "02_model_zoo.html") == {BINDER.format("book/02_model_zoo"),
                                                         COLAB.format("book/02_model_zoo")}
    for stem in ("01_introduction", "13_speed", "03_sis"):     # not GPU chapters; SIS installs from elsewhere
        assert _launch_links(book / f"{stem}.html") == {BINDER.format(f"book/{stem}")}, stem
    edition = "editions/fashion-mnist-gpu/book/02_model_zoo"     # committed in the repository at that path
    assert _launch_links(with_url / f"{edition}.html") == {BINDER.format(edition)}
    assert not (with_url / "editions" / "fashion-mnist-gpu" / "index.html").read_text().count("launch-buttons")
    assert "_install(" not in (book / "02_model_zoo.html").read_text()   # the install cell is not shown


def test_no_launch_button_without_a_repository_url(tmp_path):
    html = _book(tmp_path, "")
    for page in html.rglob("*.html"):
        assert not _launch_links(page) and "launch-buttons" not in page.read_text(), page


def test_an_edition_copied_into_the_stage_owns_its_labels_and_links_to_this_build_for_what_it_lacks(tmp_path):
    """Sphinx labels are global: the edition's figure must not answer a reference of this build's chapter."""
    import nbformat
    from overinterp.pages.build import localise
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("```{glue:figure} fig_a\n:name: fig-sis\n\nA.\n```\n\n"
                                              "(sec-x)=\n## X\n\nSee {numref}`fig-sis`, {numref}`fig-sis-sizes`, "
                                              "{doc}`chapter 1 <02_model_zoo>`, {doc}`the intro <01_introduction>` and "
                                              "{glue:text}`17_instructors.ipynb::v_rows:s`, {glue:text}`03_sis.ipynb::n:s`."),
                nbformat.v4.new_code_cell("box()", outputs=[nbformat.v4.new_output(
                    "display_data", data={"text/markdown": "as {doc}`chapter 0 <01_introduction>` says"})])]
    nbformat.write(nb, tmp_path / "03_sis.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "02_model_zoo.ipynb")
    assert localise(tmp_path, "standard") == 2
    out = nbformat.read(tmp_path / "03_sis.ipynb", as_version=4)
    text = out.cells[0].source
    assert ":name: standard-fig-sis\n" in text and "(standard-sec-x)=" in text
    assert "{numref}`standard-fig-sis`" in text and "{numref}`fig-sis-sizes`" in text   # not its label: untouched
    assert "{doc}`chapter 1 <02_model_zoo>`" in text and "{doc}`the intro </book/01_introduction>`" in text
    assert "{glue:text}`/book/17_instructors.ipynb::v_rows:s`" in text and "{glue:text}`03_sis.ipynb::n:s`" in text
    assert out.cells[1].outputs[0]["data"]["text/markdown"] == "as {doc}`chapter 0 </book/01_introduction>` says"
