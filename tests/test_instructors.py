"""The instructors' page: every exercise of the book indexed with what it computes and
the run time that bounds it, the page's numbers read from the committed files they name (the whole
book's time beside the profile's aim, the weak spots), every key it pastes glued, its chapter numbers
the sidebar's; and the page executes. The run-time file itself: tests/test_bench_chapters.py."""
import json
import re

import papermill as pm
import pytest

from overinterp.config.chapters import ROOT
from overinterp.pages import exercises
from overinterp.pages import instructors
from overinterp.pages.chapter import chapter_number
from overinterp.paper.formatting import MISSING

RESULTS = ROOT / "benchmarks" / "results"
GLUE = re.compile(r"\{glue:text\}`(?:([\w.]+)\.ipynb::)?(\w+)(?::\w+)?`")
CHAPTER_REF = re.compile(r"\{doc\}`[Cc]hapters? (\d+) <([\w.]+)>`")


def markdown(stem: str, last: bool = True) -> str:
    cells = json.loads((ROOT / "book" / f"{stem}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in (cells if last else cells[:-1]) if c["cell_type"] == "markdown")


def section(text: str, heading: str) -> str:
    """The Markdown of ``text`` from the heading ``heading`` to the next heading of its level."""
    start = text.index(f"## {heading}")
    nxt = text.find("\n## ", start + 3)
    return text[start:nxt if nxt > 0 else None]


BENCH = {"schema": instructors.SCHEMA, "profile": "quick", "device": "CPU (Toy, 2 threads)", "date": "2026-01-01",
         "full_build_seconds": 600.0,
         "chapters": {"03_sis": {"with_store": 15.0, "full_build": 150.0, "alone_from_empty_upper_bound": 990.0},
                      "05_retraining": {"with_store": 18.0, "full_build": 316.0, "alone_from_empty_upper_bound": 1500.0},
                      "02_model_zoo": {"with_store": 17.0, "full_build": 846.0, "alone_from_empty_upper_bound": 846.0}}}


# -------------------------------------------------------------------------------------------- exercises
def test_every_exercise_of_the_book_has_a_kind_of_work_and_every_kind_a_meaning():
    labels = [e.label for stem in instructors.TEACHING for e in exercises.exercises(stem)]
    assert len(labels) == len(set(labels)) and labels, "exercise labels repeat"
    assert set(labels) == set(instructors.EXERCISE_RUNS), set(labels) ^ set(instructors.EXERCISE_RUNS)
    assert set(instructors.EXERCISE_RUNS.values()) <= set(instructors.RUNS)


def test_an_exercise_is_read_with_its_title_and_what_it_changes(tmp_path):
    text = ("## Exercises\n\nIntro.\n\n````{exercise} A title\n:label: ex-99-a\n\nDo:\n\n```bash\n"
            "papermill book/99_x.ipynb out.ipynb -p tau 0.9\n```\n````\n\n````{solution} ex-99-a\n:class: dropdown\n\n"
            "**What you should see:** x.\n````\n\n````{exercise} Another\n:label: ex-99-b\n\n```python\n"
            "from dataclasses import replace\nfactors.table(factors.mask_sweep(run))\nruns.model_stats(m)\n```\n````\n")
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1"]}, {"cell_type": "markdown", "source": [text]}]}
    (tmp_path / "99_x.ipynb").write_text(json.dumps(nb))
    (tmp_path / "98_y.ipynb").write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": ["# no exercises"]}]}))
    assert exercises.exercises("99_x", tmp_path) == [exercises.Exercise("99_x", "ex-99-a", "A title", "-p tau 0.9"),
                                              exercises.Exercise("99_x", "ex-99-b", "Another", "factors.mask_sweep(…)")]
    assert exercises.exercises("98_y", tmp_path) == []


def test_the_index_bounds_each_exercise_by_the_time_its_kind_of_work_reads():
    rows = {re.search(r"<(ex-[\w-]+)>", line).group(1): line for line in instructors.exercise_table(BENCH).splitlines()[2:]}
    assert len(rows) == len(instructors.EXERCISE_RUNS)
    assert rows["ex-03-tau"].endswith("| ≈ 15 s |")               # nothing new: alone from the pack
    assert rows["ex-05-frac"].endswith("| ≈ 5.3 min |")           # the chapter's own work in a complete build
    assert rows["ex-02-seed"].endswith("| ≤ 14.1 min |")          # new replicates: the bound from an empty store
    assert rows["ex-06-study"].endswith("| not in the measured file |") and "| nothing new |" in rows["ex-03-tau"]
    assert rows["ex-04-frac"].endswith("| not measured |")        # a chapter the file does not hold
    assert rows["ex-03-tau"].startswith("| {doc}`chapter 2 <03_sis>` | {ref}`A lower threshold <ex-03-tau>` | `-p tau 0.9` |")
    assert all(line.endswith("| not measured |") or "not in the measured file" in line
               for line in instructors.exercise_table(None).splitlines()[2:])


# ------------------------------------------------------------------------------ values from the files
def test_the_whole_book_s_time_is_read_against_the_profile_s_aim(tmp_path):
    doc = {"device": "CPU (Toy)", "date": "2026-01-02", "profile": "quick", "execute_seconds": 2874.1,
           "render_seconds": 9.9, "total_minutes": 48.1, "within_45_minutes": False,
           "previous": {"device": "CPU (Other)", "total_minutes": 39.7}}
    (tmp_path / instructors.BOOK).write_text(json.dumps(doc))
    v = instructors.book_values(tmp_path)
    assert (v["book_run"], v["book_total"], v["book_against_target"]) == (
        "executed in 47.9 min and rendered in 10 s", "48.1 min", "over")
    assert (v["book_previous_total"], v["book_previous_device"]) == ("39.7 min", "CPU (Other)")
    (tmp_path / instructors.BOOK).write_text(json.dumps({**doc, "within_45_minutes": True, "previous": None}))
    assert instructors.book_values(tmp_path)["book_against_target"] == "within"
    (tmp_path / instructors.BOOK).write_text(json.dumps({**doc, "render_seconds": None}))
    assert instructors.book_values(tmp_path)["book_run"] == "executed and rendered (the rendering not timed apart)"
    assert set(instructors.book_values(tmp_path / "none").values()) == {"not measured"}


def test_the_committed_book_time_and_the_page_agree_with_the_file():
    doc = json.loads((RESULTS / instructors.BOOK).read_text())
    v = instructors.book_values(RESULTS)
    assert v["book_total"] == f"{doc['total_minutes']:.1f} min"
    assert v["book_against_target"] == ("within" if doc["within_45_minutes"] else "over")


def test_the_weak_spots_numbers_are_the_committed_files():
    v = instructors.weak_spot_values(RESULTS)
    models = json.loads((RESULTS / instructors.STANDARD_MODELS).read_text())["models"]
    acc = [m["test_acc"] for m in models if m["stored"]]
    assert v["std_acc_range"] == f"{min(acc):.1f}–{max(acc):.1f}" and v["std_models"] == len(acc)
    verdicts = json.loads((RESULTS / instructors.VERDICTS).read_text())
    s0, s1 = (str(s) for s in verdicts["seeds"][:2])
    assert v["v_rows"] == len(verdicts["rows"])
    assert v["v_changed"] == sum(r["seeds"][s0]["outcome"] != r["seeds"][s1]["outcome"] for r in verdicts["rows"])
    study = json.loads((RESULTS / instructors.SCALE).read_text())
    size = [r for r in study["rows"] if r["curve"] == "size" and r["measure"] == "test accuracy (%)"]
    last = max(size, key=lambda r: r["training images"])
    assert v["s_acc_values"] == ", ".join(f"{x:.1f}" for x in last["values"]) and v["s_images"] == last["images per replicate"]
    assert float(v["s_ratio_min"]) <= float(v["s_ratio_max"])
    manifest = json.loads((ROOT / instructors.STANDARD_EDITION / "manifest.json").read_text())
    assert v["std_chapters"] == instructors._numbers_span([chapter_number(c) for c in manifest["chapters"]])


def test_without_the_files_every_weak_spot_value_is_a_dash(tmp_path):
    assert set(instructors.weak_spot_values(tmp_path, root=tmp_path).values()) == {MISSING}


def test_numbers_run_as_ranges():
    assert instructors._numbers_span([9, 1, 2, 3, 4, 7]) == "1–4, 7, 9" and instructors._numbers_span([5]) == "5"


# ------------------------------------------------------------------------------------------- the page
def test_every_key_the_page_pastes_is_glued():
    text = markdown("17_instructors")
    ours = {**instructors.values(None), **instructors.book_values(RESULTS), **instructors.weak_spot_values(RESULTS),
            "replicates": 3}
    for doc, key in GLUE.findall(text):
        if doc:
            assert key in {k for d, k in GLUE.findall(markdown(doc, last=False)) if not d}, f"{doc} does not paste {key}"
        else:
            assert key in ours, f"the page pastes {key}, which it does not glue"


@pytest.mark.parametrize("stem", ["17_instructors"] + [s for s in instructors.TEACHING if exercises.exercises(s)])
def test_a_chapter_reference_names_the_sidebar_s_number(stem):
    refs = CHAPTER_REF.findall(markdown(stem))
    assert refs or stem != "17_instructors"
    for number, target in refs:
        assert int(number) == chapter_number(target), f"{stem}: chapter {number} links to {target}"


def test_the_weak_spots_write_no_result_by_hand():
    """Numbers in the section are glued; what remains are the paper's (quoted), the standard edition's
    aim, the paper's bound and threshold, and the quick engine's setting."""
    text = section(markdown("17_instructors"), "Known weak spots")
    prose = re.sub(r"\{[\w:]+\}`[^`]*`|`[^`]*`", "", text)
    assert set(re.findall(r"\d[\d.,–]*\s*(?:%|points|min\b|s\b)", prose)) <= {"92–95%", "93%", "5%"}


def test_the_page_executes_alone_with_its_glue(tmp_path):
    out = tmp_path / "17.ipynb"
    pm.execute_notebook(str(ROOT / "book" / "17_instructors.ipynb"), str(out), parameters={"device": "cpu"},
                        progress_bar=False, kernel_name="python3", cwd=str(ROOT / "book"))
    cells = json.loads(out.read_text())["cells"]
    glued = {o["metadata"]["scrapbook"]["name"] for c in cells if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})}
    assert {k for d, k in GLUE.findall(markdown("17_instructors")) if not d} <= glued
    shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in cells if c["cell_type"] == "code"
                    for o in c.get("outputs", []))
    assert shown.count("{ref}`") == len(instructors.EXERCISE_RUNS)
