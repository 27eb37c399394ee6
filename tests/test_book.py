"""The book executes under the tiny profile and renders pages with their figures and tables."""
import json
import re
import shutil

import papermill as pm
import pytest

from overinterp.pages.build import ROOT, build, chapters

# chapter stem -> what its rendered page must contain
VERDICT = "Verdict: the claim"
EXPECT = {"01_introduction": ["<table"], "02_model_zoo": ["<table", "<figcaption"],
          "03_sis": ["<img", "<table", "<figcaption", VERDICT], "04_pixel_subsets": ["<img", "<table", "<figcaption", VERDICT],
          "05_retraining": ["<img", "<table", "<figcaption", VERDICT],
          "06_why": ["<img", "<table", "<figcaption"], "06b_scale": ["<img", "<table", "<figcaption"], "07_humans": ["<img", "<table", "<script", "<figcaption"], "13_speed": ["<img", "<table", "<figcaption"],
          "08_sis_accuracy": ["<img", "<table", "<figcaption", VERDICT]}
EXPECT.update({stem: ["<img", "<table", "<figcaption", VERDICT] for stem in (
    "09_robust", "10_ensembles", "11_input_dropout", "12_imagenet", "14_shared_interest", "15_input_reduction",
    "16_bayes_trex")})


def test_every_chapters_parameters_cell_is_generated_from_its_dataclass():
    """One configuration path: the names, defaults and comments of each parameters cell are the fields of
    the chapter's dataclass (overinterp.config.chapters), from which the command line's flags come too."""
    from overinterp.config.chapters import CHAPTERS, parameters_cell
    assert set(CHAPTERS) == {nb.stem for nb in chapters()}
    for nb in chapters():
        cells = json.loads(nb.read_text())["cells"]
        (params,) = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert "".join(params["source"]) == parameters_cell(CHAPTERS[nb.stem]), (
            f"{nb.name}: the parameters cell differs from its dataclass; run python -m overinterp chapters --write")


def test_notebooks_are_committed_without_outputs():
    for nb in chapters():
        cells = json.loads(nb.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), nb.name
        assert "parameters" in code[0].get("metadata", {}).get("tags", []), f"{nb.name}: first code cell is not the parameters cell"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    timings = build({"dataset": "fashion-mnist", "profile": "tiny", "device": "cpu", "seed": 0}, out=out)
    return out, timings


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
def test_the_rendered_pages_have_no_defect_a_reader_would_meet(built):
    """Issue 21's acceptance: no raw repr, no NaN in a table, nothing wider than the content column and no
    figure text under 8 px at page width, on every page of the tiny book (tools/page_audit.py)."""
    from tools import page_audit as audit
    out, _ = built
    assert len(audit.pages(out / "html")) >= len(chapters())
    defects = audit.audit(out / "html")
    assert not defects, "\n".join(map(str, defects))


def test_every_chapter_executes_and_renders_with_its_figures_and_tables(built):
    out, timings = built
    assert set(timings) == {nb.stem for nb in chapters()}
    for nb in chapters():
        page = out / "html" / "book" / f"{nb.stem}.html"
        html = page.read_text()
        for marker in EXPECT.get(nb.stem, []):
            assert marker in html, f"{page.name} lacks {marker}"
        assert "This execution" in html and "tiny" in html, page.name   # the run box
        assert not re.search(r"\{glue:?\w*\}", html), f"{page.name} has an unresolved glue role"
        # plumbing hidden: no setup call, and papermill's injected parameters not shown a second time
        assert '<span class="n">setup</span>' not in html, f"{page.name} shows its setup cell"
        assert "&quot;tiny&quot;" not in html, f"{page.name} shows papermill's injected parameters"
    assert (out / "html" / "index.html").exists()


def _glued_records(stage) -> dict:
    """(claim, model) -> the record each executed chapter glued as ``res_<claim>_json`` (pages.chapter.record)."""
    import ast
    out = {}
    for nb in sorted((stage / "book").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for o in cell.get("outputs", []):
                name = o.get("metadata", {}).get("scrapbook", {}).get("name", "")
                if name.startswith("res_") and name.endswith("_json"):
                    data = {k.replace("application/papermill.record/", ""): v for k, v in o["data"].items()}
                    text = "".join(data["text/plain"]) if isinstance(data["text/plain"], list) else data["text/plain"]
                    out.update({(r["claim"], r["model"]): r for r in json.loads(ast.literal_eval(text))})
    return out


def test_the_verdicts_command_gives_the_outcomes_the_chapters_show(built, capsys):
    """Issue 26: ``python -m overinterp verdicts`` computes, from the store the chapters filled, the very
    estimates, intervals and outcomes the chapters glued, without executing a notebook."""
    from overinterp.__main__ import main
    out, _ = built
    glued = _glued_records(out / "stage")
    claims = sorted({c for c, _ in glued})
    from overinterp.paper.claims import CLAIMS
    critiques = [c for c, v in CLAIMS.items() if v.chapter == "07b_critiques"]
    assert len(critiques) == 9
    assert claims == sorted(["sis", "accurate", "kept", "transfer", "beats", "near", *critiques])
    assert main(["verdicts", "--profile", "tiny", "--device", "cpu", "--only", *claims,
                 "--json", str(out / "verdicts.json")]) == 0
    rows = json.loads((out / "verdicts.json").read_text())["rows"]
    assert {(r["claim"], r["model"]) for r in rows} == set(glued)
    for r in rows:
        g = glued[r["claim"], r["model"]]
        assert (r["outcome"], r["estimate"], r["low"], r["high"]) == (g["outcome"], g["estimate"], g["low"],
                                                                      g["high"]), (r, g)
    assert "Part I" in capsys.readouterr().out


@pytest.mark.parametrize("params, bad", [({"profile": "huge"}, "profile"), ({"dataset": "mnist"}, "dataset"),
                                         ({"frac": 1.5}, "frac")])
def test_bad_parameters_fail_in_the_first_cell_naming_the_parameter(tmp_path, params, bad):
    nb = ROOT / "book" / "04_pixel_subsets.ipynb"
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(str(nb), str(tmp_path / "out.ipynb"), parameters=params, progress_bar=False,
                            kernel_name="python3", cwd=str(ROOT))
    assert f"parameter {bad}=" in str(err.value)
    assert "setup(" in err.value.source     # the chapter's first cell after its parameters


def test_an_edition_is_saved_with_its_manifest_and_rendered_as_its_own_part(built, tmp_path):
    """The edition machinery without a GPU: the tiny chapters executed here on the CPU become an
    edition, rendered from their stored outputs beside freshly executed chapters."""
    from overinterp.pages.build import editions, render, save_edition
    out, timings = built
    folder = tmp_path / "editions"
    params = {"dataset": "fashion-mnist", "profile": "tiny", "device": "cpu", "seed": 0}
    path = save_edition(out / "stage", params, timings, folder)
    (found,) = editions(folder)
    assert found["path"] == path and found["profile"] == "tiny" and found["device"].startswith("CPU")
    assert found["seconds"] == timings and found["commit"] and found["torch"]
    for nb in chapters():                                   # executed copies, outputs kept
        cells = json.loads((path / "book" / nb.name).read_text())["cells"]
        assert any(c.get("outputs") for c in cells if c["cell_type"] == "code"), nb.name
    html_out = tmp_path / "site"
    html_out.mkdir()
    (html_out / "timings.json").write_text((out / "timings.json").read_text())
    stage = tmp_path / "stage"
    import shutil
    shutil.copytree(out / "stage" / "book", stage / "book")
    render(stage, html_out, edition_folder=folder)
    index = (html_out / "html" / "editions" / "fashion-mnist-tiny" / "index.html").read_text()
    assert "executed once, on CPU" in index and "commit" in index and "Verdicts." in index
    assert "--profile tiny --edition" in re.sub(r"<[^>]+>", "", index)     # how to re-execute it
    page = (html_out / "html" / "editions" / "fashion-mnist-tiny" / "book" / "03_sis.html").read_text()
    assert "<img" in page and "This execution" in page and "Tiny edition · 2. " in page
    toc_page = (html_out / "html" / "book" / "02_model_zoo.html").read_text()
    assert "executed by this build (tiny profile)" in toc_page and "The tiny edition (fashion-mnist, executed on CPU" in toc_page


def test_an_edition_executed_a_few_chapters_at_a_time_keeps_the_earlier_ones(tmp_path):
    """save_edition with --only: a later run adds its chapters to the edition of the same profile, dataset
    and seed (with its own seconds and commit), and an edition of another seed replaces it."""
    from overinterp.pages.build import editions, save_edition
    folder = tmp_path / "editions"
    params = {"dataset": "fashion-mnist", "profile": "tiny", "device": "cpu", "seed": 0}

    def stage(*stems):
        s = tmp_path / f"stage-{'-'.join(stems)}"
        (s / "book").mkdir(parents=True)
        for stem in stems:
            (s / "book" / f"{stem}.ipynb").write_text(json.dumps({"cells": [], "stem": stem}))
        return s
    save_edition(stage("02_model_zoo", "03_sis"), params, {"02_model_zoo": 5.0, "03_sis": 7.0}, folder)
    first = json.loads((folder / "fashion-mnist-tiny" / "manifest.json").read_text())["chapters"]["02_model_zoo"]
    # a stage shared with the earlier run still holds 02: only the chapter this run executed is copied and dated
    shared = stage("05_retraining", "02_model_zoo")
    (shared / "book" / "02_model_zoo.ipynb").write_text(json.dumps({"cells": [], "stem": "stale"}))
    path = save_edition(shared, params, {"05_retraining": 11.0}, folder)
    assert json.loads((path / "book" / "02_model_zoo.ipynb").read_text())["stem"] == "02_model_zoo"
    (found,) = editions(folder)
    assert found["chapters"]["02_model_zoo"] == first
    assert sorted(p.name for p in (path / "book").glob("*.ipynb")) == ["02_model_zoo.ipynb", "03_sis.ipynb",
                                                                       "05_retraining.ipynb"]
    assert found["seconds"] == {"02_model_zoo": 5.0, "03_sis": 7.0, "05_retraining": 11.0}
    assert set(found["chapters"]["05_retraining"]) == {"seconds", "commit", "date"}
    save_edition(stage("04_pixel_subsets"), {**params, "seed": 5}, {"04_pixel_subsets": 3.0}, folder)
    (found,) = editions(folder)
    assert found["seconds"] == {"04_pixel_subsets": 3.0}
    assert [p.name for p in (path / "book").glob("*.ipynb")] == ["04_pixel_subsets.ipynb"]


def test_glue_gaps_name_what_an_edition_chapter_quotes_from_an_older_execution_of_another(tmp_path):
    """An edition chapter re-executed alone may quote a value that the edition's older execution of another
    chapter never glued; the -W build would fail on it, so the gap is named at save time."""
    from overinterp.pages.build import glue_gaps

    def nb(path, text, names):
        outs = [{"output_type": "display_data", "data": {"text/plain": "1"}, "metadata": {"scrapbook": {"name": n}}}
                for n in names]
        path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": text},
                                              {"cell_type": "code", "source": "", "outputs": outs}]}))
    nb(tmp_path / "03_sis.ipynb", "see {glue:text}`06_why.ipynb::new_key` and {glue:text}`06_why.ipynb::old_key:s`, "
       "{glue:text}`own` and {glue:text}`99_absent.ipynb::x`", ["own"])
    nb(tmp_path / "06_why.ipynb", "no quotes", ["old_key"])
    assert glue_gaps(tmp_path) == {"03_sis": ["06_why.ipynb::new_key"]}
    nb(tmp_path / "06_why.ipynb", "no quotes", ["old_key", "new_key"])
    assert glue_gaps(tmp_path) == {}
