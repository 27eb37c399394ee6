"""The chapters' exercises: every chapter of Part I and chapters 9, 11 and 15 end with an
Exercises section of 2-3 sphinx-exercise exercises, each with a folded solution; a command changes
only parameters the chapter has; a number in a solution is glued, from a key its notebook glues; a
solution says what the reader should see and why, not only where to look."""
import html as html_lib
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml

from overinterp.config.chapters import CHAPTERS
from overinterp.experiments.factors import MEASURES
from overinterp.experiments.runs import CONFIDENT
from overinterp.pages import exercises as exercises_module
from overinterp.pages.build import ROOT

PART_ONE = [c["file"].split("/")[-1] for c in yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"][0]["chapters"]]
WITH_EXERCISES = PART_ONE + ["08_sis_accuracy", "10_ensembles", "14_shared_interest"]
EXERCISE = re.compile(r"^(`{3,})\{exercise\}[^\n]*\n:label: (\S+)\n(.*?)^\1$", re.S | re.M)
SOLUTION = re.compile(r"^(`{3,})\{solution\} (\S+)\n((?::\w+:[^\n]*\n)*)(.*?)^\1$", re.S | re.M)
GLUE = re.compile(r"\{glue:text\}`(?:([\w.]+)\.ipynb::)?(\w+)(?::\w+)?`")


def cells(stem):
    return json.loads((ROOT / "book" / f"{stem}.ipynb").read_text())["cells"]


def section(stem) -> str:
    """The Exercises section: the notebook's last cell, a Markdown cell opening with its heading."""
    last = cells(stem)[-1]
    assert last["cell_type"] == "markdown" and "".join(last["source"]).startswith("## Exercises"), stem
    return "".join(last["source"])


def glued_by(stem) -> set:
    """Keys a notebook glues, as far as its own text shows: the keys its other Markdown cells paste, and
    the keys of :mod:`overinterp.pages.exercises` where a cell calls it."""
    keys = set()
    for c in cells(stem)[:-1]:
        src = "".join(c["source"])
        if c["cell_type"] == "markdown":
            keys |= {k for d, k in GLUE.findall(src) if not d}
        elif "exercises.sweep_values(" in src:
            keys |= set(exercises_module.sweep_values(SWEEPS))
        elif "exercises.threshold_values(" in src:
            keys |= set(exercises_module.threshold_values(MEANS))
    return keys


def _sweep(factor, settings, trains=False, samples=None):
    rows = []
    for i, s in enumerate(settings):
        for n in samples or [None]:
            row = {"setting": s, MEASURES["C1"][0]: 10.0 + i, MEASURES["C2"][0]: 1.0 * i,
                   MEASURES["C3"][0]: np.nan if i == 0 else 0.5}
            if n is not None:
                row["sample size"] = n
            if trains:
                row[CONFIDENT] = 20.0 * (i + 1)
            rows.append(row)
    return pd.DataFrame(rows)


SWEEPS = {"method": _sweep("method", ["gradient k=8", "exact"], samples=[6, 2]),
          "mask": _sweep("mask", ["mean pixel", "black"]), "epochs": _sweep("epochs", ["1", "2"], trains=True),
          "width": _sweep("width", ["4", "8"], trains=True)}
MEANS = pd.DataFrame([{"model": m, "kind": k, "arch": a, "tau": t, "mean": v}
                      for m, k, a, base in (("ResNet20 #0", "single", "ResNet20", 1.0),
                                            ("ensemble of all 4", "ensemble", "all", 3.0),
                                            ("ensemble 2× ResNet20", "ensemble", "ResNet20", 2.0))
                      for t, v in ((0.9, base + 1), (0.5, base))])


@pytest.mark.parametrize("stem", WITH_EXERCISES)
def test_the_chapter_ends_with_two_or_three_exercises_each_with_a_folded_solution(stem):
    text = section(stem)
    exercises = EXERCISE.findall(text)
    solutions = {label: (options, body) for _, label, options, body in SOLUTION.findall(text)}
    assert 2 <= len(exercises) <= 3, f"{stem}: {len(exercises)} exercises"
    for _, label, body in exercises:
        assert label.startswith(f"ex-{stem[:2]}-"), label
        assert label in solutions, f"{stem}: exercise {label} has no solution"
        assert ":class: dropdown" in solutions[label][0], f"{stem}: the solution of {label} is not folded"
        assert "```bash\npapermill book/" in body or "```python\n" in body, f"{label}: no command or call"
    assert len(solutions) == len(exercises)


@pytest.mark.parametrize("stem", WITH_EXERCISES)
def test_a_command_changes_one_parameter_of_its_chapter(stem):
    fields = {f.name for f in __import__("dataclasses").fields(CHAPTERS[stem])}
    for command in re.findall(r"^papermill book/(\S+)\.ipynb out\.ipynb (.*)$", section(stem), re.M):
        chapter, args = command
        assert chapter == stem
        names = re.findall(r"-p (\w+) ", args + " ") + re.findall(r'-y "(\w+):', args)
        assert len(names) == 1 and names[0] in fields, (stem, args)


@pytest.mark.parametrize("stem", WITH_EXERCISES)
def test_every_number_a_solution_quotes_is_glued_from_a_key_its_notebook_glues(stem):
    text = section(stem)
    for doc, key in GLUE.findall(text):
        assert key in glued_by(doc or stem), f"{stem} pastes {doc or stem}::{key}, which that notebook does not glue"
    for _, label, _, body in SOLUTION.findall(text):
        prose = re.sub(r"```.*?```|\{[\w:]+\}`[^`]*`|`[^`]*`", "", body, flags=re.S)
        prose = re.sub(r"\b95%\s+intervals?|\b5%\s+(BS\s+)?subsets", "", prose)   # definitions, not results
        assert not re.search(r"\d\s*(%|points|s\b|min\b)", prose), f"{label}: a number written by hand: {prose}"


@pytest.mark.parametrize("stem", WITH_EXERCISES)
def test_a_solution_says_what_the_reader_should_see_and_why(stem):
    for _, label, _, body in SOLUTIONS_OF(stem):
        body = body.strip()
        assert body.startswith("**What you should see:**"), f"{label}: no expectation first"
        assert "**Why:**" in body, f"{label}: no reason"
        expectation = body.split("**Why:**")[0]
        assert "out.ipynb" not in expectation.replace("`out.ipynb`'s", ""), f"{label}: the expectation points elsewhere"


def SOLUTIONS_OF(stem):
    return SOLUTION.findall(section(stem))


def test_sweep_values_read_each_measure_along_the_settings():
    v = exercises_module.sweep_values(SWEEPS)
    assert v["ex_mask_C1"] == "10.0 (mean pixel), 11.0 (black)"
    assert v["ex_epochs_confident"] == "20.0 (1 epoch), 40.0 (2 epochs)" and v["ex_width_C2"] == "0.0 (4 filters), 1.0 (8 filters)"
    assert v["ex_method_C1"] == "10.0 (gradient k=8), 11.0 (exact)"      # the sample every method ran on
    assert v["ex_mask_C3"] == "— (mean pixel), 0.50 (black)"              # undefined: a dash
    assert "ex_mask_confident" not in v and "ex_method_confident" not in v


def test_threshold_values_follow_one_model_and_the_ensemble_of_all_along_tau():
    v = exercises_module.threshold_values(MEANS)
    assert v == {"ex_tau_model": "ResNet20 #0", "ex_tau_model_sizes": "1.0 (τ = 0.5), 2.0 (τ = 0.9)",
                 "ex_tau_ensemble": "ensemble of all 4", "ex_tau_ensemble_sizes": "3.0 (τ = 0.5), 4.0 (τ = 0.9)"}


# ---------------------------------------------------------------------------------------------- rendered
@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Chapters 3 and 10 (and the introduction, the book's root) executed at tiny and rendered."""
    from overinterp.pages.build import build
    out = tmp_path_factory.mktemp("book")
    build({"dataset": "fashion-mnist", "profile": "tiny", "device": "cpu", "seed": 0}, out=out,
          only=["01_introduction", "03_sis", "10_ensembles"])
    return out / "html" / "book"


def test_exercises_render_as_directives_with_nothing_left_raw(pages):
    for stem in ("03_sis", "10_ensembles"):
        html = (pages / f"{stem}.html").read_text()
        assert html.count('<div class="exercise admonition"') == len(EXERCISE.findall(section(stem)))
        assert html.count('<div class="solution dropdown admonition"') == len(SOLUTION.findall(section(stem)))
        assert "{exercise}" not in html and "{solution}" not in html and ":class: dropdown" not in html
        assert not re.search(r"\{glue:?\w*\}", html)
    html = (pages / "03_sis.html").read_text()
    solution = html[html.index('href="#ex-03-tau"'):]
    solution = solution[:solution.index("</div>")]
    # a number pasted across pages inside a folded solution: chapter 10's sizes along tau
    assert re.search(r'<span class="pasted-text">[\d.]+ \(τ = [\d.]+\)', solution), solution


DRIVER = """<script>window.addEventListener("load", () => setTimeout(() => {
  const seen = (el) => getComputedStyle(el).visibility !== "hidden" && el.getBoundingClientRect().height > 0;
  const rows = [...document.querySelectorAll("div.solution")].map((s) => {
    const body = s.querySelector("section"), before = {hidden: s.classList.contains("toggle-hidden"), seen: seen(body)};
    s.querySelector(".admonition-title").click();
    return {before, after: {hidden: s.classList.contains("toggle-hidden"), seen: seen(body)}};
  });
  const exercises = [...document.querySelectorAll("div.exercise section")].map(seen);
  const o = document.createElement("pre"); o.id = "log"; o.textContent = JSON.stringify({rows, exercises});
  document.body.appendChild(o);
}, 500));</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
def test_a_solution_is_hidden_until_its_title_is_clicked_in_a_browser(pages):
    """sphinx-togglebutton folds every solution (class dropdown) when the page loads; a click on the
    title opens it. The page is copied beside itself with a script that clicks each title."""
    page = pages / "03_sis.driven.html"
    page.write_text((pages / "03_sis.html").read_text().replace("</body>", DRIVER + "</body>"))
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    log = json.loads(html_lib.unescape(re.search(r'<pre id="log">(.*?)</pre>', dom, re.S).group(1)))
    assert len(log["rows"]) == 2 and all(log["exercises"])
    for row in log["rows"]:
        assert row["before"] == {"hidden": True, "seen": False}, row
        assert row["after"] == {"hidden": False, "seen": True}, row
