"""Chapter parameters (overinterp.config.chapters): resolved against the profile in one place, checked
with errors naming the parameter, and rendered into the notebooks' parameters cells and the flags."""
import argparse
import dataclasses

import pytest

from overinterp.config.chapters import (CHAPTERS, ROOT, RunConfig, add_arguments, from_arguments, param,
                                        parameters_cell, resolve)
from overinterp.config.context import make_run
from overinterp.config.profiles import get_profile


@dataclasses.dataclass(frozen=True)
class Toy(RunConfig):
    tau: float | None = param(None, "threshold", inherit="sis_threshold", check="threshold")
    arch: str | None = param(None, "first architecture", inherit="archs.0")
    frac: float = param(0.05, "kept", check="fraction")
    taus: tuple = param((0.5, 0.9), "thresholds", check="threshold")
    how: str = param("std", "rule", check=("std", "percentile"))


def test_none_takes_the_profiles_value_and_a_given_value_stays():
    quick, tiny = get_profile("quick"), get_profile("tiny")
    assert resolve(Toy(), quick).tau == 0.99 and resolve(Toy(), tiny).tau == tiny.sis_threshold == 0.3
    assert resolve(Toy(), quick).arch == "resnet20" and resolve(Toy(), tiny).arch == "cnn"
    assert resolve(Toy(tau=0.5), quick).tau == 0.5


@pytest.mark.parametrize("bad, says", [({"tau": 1.5}, "parameter tau=1.5 is not valid: must lie in [0, 1]"),
                                       ({"frac": 0.0}, "parameter frac=0.0 is not valid: must lie in (0, 1]"),
                                       ({"taus": (0.5, 2.0)}, "parameter taus=(0.5, 2.0) is not valid"),
                                       ({"how": "max"}, "parameter how='max' is not valid: valid values: std, percentile")])
def test_a_bad_value_is_named_with_what_is_valid(bad, says):
    with pytest.raises(ValueError, match=r"^" + says.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        resolve(Toy(**bad), get_profile("quick"))


def test_a_results_folder_is_read_from_the_repository_root():
    p = resolve(CHAPTERS["13_speed"](), get_profile("tiny"))
    assert p.results == str(ROOT / "benchmarks" / "results")
    with pytest.raises(ValueError, match="parameter results=.*no such folder"):
        resolve(CHAPTERS["13_speed"](results="no/such/folder"), get_profile("tiny"))


def test_the_parameters_cell_lists_each_field_with_its_default_and_help():
    cell = parameters_cell(Toy)
    lines = cell.splitlines()
    code = [l for l in lines if not l.startswith("#")]
    assert [l.split(" = ")[0] for l in code] == [f.name for f in dataclasses.fields(Toy)]
    assert lines[lines.index("tau = None") - 1] == "# threshold"          # each help above its parameter
    assert max(map(len, lines)) <= 78 and max(map(len, parameters_cell(CHAPTERS["10_ensembles"]).splitlines())) <= 78
    namespace = {}
    exec(cell, namespace)                       # valid Python whose values are the defaults
    assert Toy(**{f.name: namespace[f.name] for f in dataclasses.fields(Toy)}) == Toy()


def test_flags_parse_into_the_same_dataclass():
    parser = add_arguments(argparse.ArgumentParser(), Toy)
    assert from_arguments(Toy, parser.parse_args([])) == Toy()
    got = from_arguments(Toy, parser.parse_args(["--tau", "0.9", "--taus", "0.1,0.2", "--profile", "quick",
                                                 "--seed", "3"]))
    assert got == Toy(tau=0.9, taus=(0.1, 0.2), profile="quick", seed=3)


def test_every_chapter_resolves_at_every_profile():
    for name in ("tiny", "quick", "gpu", "paper"):
        for cls in CHAPTERS.values():
            p = resolve(cls(profile=name), get_profile(name))
            assert all(getattr(p, f.name) is not None for f in dataclasses.fields(p)
                       if f.metadata.get("inherit")), (cls.__name__, name)


def test_make_run_names_a_bad_parameter():
    with pytest.raises(ValueError, match="parameter profile='huge' is not valid; valid values: tiny, quick"):
        make_run(profile="huge")
    assert make_run(profile="tiny", device="cpu").profile.name == "tiny"


def test_the_deviations_box_is_collapsed_and_links_to_the_full_list_when_asked():
    from overinterp.pages.chapter import deviations_box
    box = deviations_box(["a", "b"])
    assert box.startswith(":::{admonition} Deviations from the paper's protocol in this chapter (2)\n:class: dropdown\n")
    assert "- a\n- b" in box and "{ref}`deviations`" in box and box.endswith(":::")
    assert "{ref}" not in deviations_box(["a"], "T", link=False) and deviations_box(["a"], "T", link=False).endswith("- a\n:::")


def test_show_deviations_shows_a_box_only_where_there_are_deviations(monkeypatch):
    from overinterp.pages import chapter
    shown = []
    monkeypatch.setattr(chapter, "display", shown.append)
    chapter.show_deviations([], "T")
    assert shown == []
    chapter.show_deviations(["a"], "T")
    (md,) = shown
    assert md.data == chapter.deviations_box(["a"], "T", link=False)


def test_a_retraining_recipe_other_than_the_papers_is_listed_as_a_deviation():
    from dataclasses import replace
    from overinterp.config.profiles import get_profile
    quick = get_profile("quick")
    from overinterp.paper.deviations import profile_deviations
    line = [d for d in profile_deviations(quick, "retraining") if "learn at rate" in d]
    assert line == [f"retrained models learn at rate {quick.retrain.lr:g} with batches of {quick.retrain.batch_size} "
                    "(the paper: 0.1 and 128, its original models' recipe)"]
    paper_recipe = replace(quick, retrain=replace(quick.retrain, lr=0.1, batch_size=128))
    assert not [d for d in profile_deviations(paper_recipe, "retraining") if "learn at rate" in d]


# ----------------------------------------------------------------------------- a bad parameter reads as one line

@pytest.mark.parametrize("chapter, bad", [("03_sis", {"tau": 1}), ("03_sis", {"tau": 0.0}), ("03_sis", {"tau": 2}),
                                          ("09_robust", {"tau": 1.0}), ("12_imagenet", {"tau": 1}),
                                          ("08_sis_accuracy", {"taus": (0.5, 1.0)}), ("10_ensembles", {"tau": "0.9"})])
def test_an_sis_threshold_that_cannot_be_met_is_refused_in_one_line_naming_it_and_the_range(chapter, bad):
    """tau is the predicted class's probability an SIS must reach (log-odds >= logit(tau)): a softmax never
    reaches 1 and every subset reaches 0, so only 0 < tau < 1 is a threshold."""
    from overinterp.config.chapters import ParameterError
    (name, value), = bad.items()
    with pytest.raises(ParameterError) as e:
        resolve(CHAPTERS[chapter](**bad), get_profile("quick"))
    message = str(e.value)
    assert isinstance(e.value, ValueError) and "\n" not in message
    assert message.startswith(f"parameter {name}={value!r} is not valid: must lie strictly between 0 and 1 (")
    assert resolve(CHAPTERS[chapter](**{name: (0.5, 0.99) if name == "taus" else 0.5}), get_profile("quick"))


def test_a_bad_parameter_shows_one_line_in_a_notebook_instead_of_a_traceback():
    """IPython (a notebook, papermill) renders a ParameterError as its one line, not the ~70 lines of frames
    from setup() down to the check."""
    from IPython.core.interactiveshell import InteractiveShell
    from overinterp.config.chapters import ParameterError
    shown = []
    shell = InteractiveShell.instance()
    try:
        shell._showtraceback = lambda etype, evalue, stb: shown.append(stb)
        shell.run_cell("from overinterp.config.chapters import CHAPTERS, resolve\n"
                       "from overinterp.config.profiles import get_profile\n"
                       "resolve(CHAPTERS['03_sis'](tau=1), get_profile('quick'))")
        shell.run_cell("from overinterp.config.context import make_run\nmake_run(profile='huge')")
    finally:
        InteractiveShell.clear_instance()
    assert len(shown) == 2 and all(len(stb) == 1 for stb in shown), shown
    assert shown[0][0].startswith("ParameterError: parameter tau=1 is not valid: must lie strictly between 0 and 1")
    assert shown[1][0].startswith("ParameterError: parameter profile='huge' is not valid; valid values: tiny")
    assert ParameterError("x")._render_traceback_() == ["ParameterError: x"]


def test_a_seed_that_is_not_an_integer_is_named():
    with pytest.raises(ValueError, match=r"^parameter seed='one' is not valid: must be an integer$"):
        make_run(profile="tiny", device="cpu", seed="one")
    assert make_run(profile="tiny", device="cpu", seed="3").seed == 3


def test_chapter_numbers_are_the_sidebars_read_from_the_table_of_contents(tmp_path):
    """One function maps a notebook to the number the rendered book's sidebar gives it: the chapters of the
    numbered parts of _toc.yml counted on across parts, the root (the introduction) unnumbered. 03_sis is
    chapter 2, not 3."""
    from overinterp.config.chapters import chapter_label, chapter_number, toc_chapters
    from overinterp.pages.chapter import chapter_number as page_number
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/01_intro\nparts:\n- caption: A\n  numbered: true\n  chapters:\n"
                   "  - file: book/02_a\n  - file: book/06b_x\n- caption: B\n  chapters:\n  - file: book/07_plain\n"
                   "- caption: C\n  numbered: true\n  chapters:\n  - file: book/08_c\n")
    assert toc_chapters(toc) == ["01_intro", "02_a", "06b_x", "07_plain", "08_c"]
    assert [chapter_number(s, toc) for s in toc_chapters(toc)] == [None, 1, 2, None, 3]
    assert chapter_number("book/06b_x.ipynb", toc) == 2 and chapter_label("08_c", toc) == "chapter 3 (08_c)"
    assert chapter_number("03_sis") == 2 and chapter_label("book/04_pixel_subsets.ipynb") == "chapter 3 (04_pixel_subsets)"
    assert chapter_label("01_introduction") == "01_introduction" and toc_chapters()[0] == "01_introduction"
    assert set(toc_chapters()) == set(CHAPTERS)
    assert all(chapter_number(s) == page_number(s) for s in toc_chapters())    # the pages' tables agree
