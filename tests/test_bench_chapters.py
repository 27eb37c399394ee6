"""benchmarks/bench_chapters.py: which chapters each chapter needs, read from a hand-made store access
log, the upper bound built from them, and the JSON the instructors' page reads."""
import importlib.util
import json
from pathlib import Path

from overinterp.pages import instructors

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("bench_chapters", ROOT / "benchmarks" / "bench_chapters.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _e(event, chapter, key, name="result.pt"):
    return {"event": event, "kind": key.split("/")[0], "key": key, "name": name, "chapter": chapter, "time": 0.0}


# 02 trains the models; 03 and 04 load them; 04 backselects, 05 loads 04's selections and its own model
# twice; 06 loads 05's retrained model only (so needs 05, 04 and 02); 07 computes everything itself.
LOG = [_e("miss", "02", "model/a"), _e("save", "02", "model/a"), _e("save", "02", "model/b"),
       _e("load", "03", "model/a"),
       _e("load", "04", "model/b"), _e("miss", "04", "backselect/x"),
       _e("save", "04", "backselect/x", "shard-00000.pt"), _e("save", "04", "backselect/x"),
       _e("load", "05", "backselect/x"), _e("save", "05", "retrained/r"), _e("load", "05", "retrained/r"),
       _e("load", "06", "retrained/r"), _e("load", "06", "model/z"),        # model/z: saved outside the log
       _e("save", "07", "vae/v"), _e("load", "07", "vae/v"), _e("load", None, "model/a")]
SECONDS = {"02": 100.0, "03": 5.0, "04": 40.0, "05": 30.0, "06": 7.0, "07": 3.0}


def test_a_chapter_depends_on_the_chapter_that_first_saved_what_it_loads():
    deps, unlogged = bench.loads_from(LOG)
    assert deps == {"02": set(), "03": {"02"}, "04": {"02"}, "05": {"04"}, "06": {"05"}, "07": set()}
    assert unlogged == {"06": 1}          # loaded, but saved by nothing in the log: counted, not guessed


def test_needs_is_the_transitive_closure_and_the_bound_adds_their_seconds():
    deps, _ = bench.loads_from(LOG)
    assert bench.needs(deps, "06") == {"05", "04", "02"}
    assert bench.needs(deps, "07") == set() and bench.needs(deps, "02") == set()
    assert bench.upper_bound(SECONDS, deps, "06") == 7 + 30 + 40 + 100
    assert bench.upper_bound(SECONDS, deps, "03") == 105 and bench.upper_bound(SECONDS, deps, "07") == 3


def test_a_cycle_in_the_log_ends():
    deps = {"a": {"b"}, "b": {"a"}}
    assert bench.needs(deps, "a") == {"b"}


def test_the_json_holds_each_chapter_and_the_page_reads_it(tmp_path):
    with_store = {c: s / 10 for c, s in SECONDS.items()}
    rows = bench.chapter_rows(SECONDS, with_store, LOG, {"05": 1})
    assert rows["06"]["needs"] == ["02", "04", "05"] and rows["06"]["loads_from"] == ["05"]
    assert rows["06"]["alone_from_empty_upper_bound"] == 177 and rows["06"]["with_store"] == 0.7
    assert rows["05"]["saved_when_alone"] == 1 and rows["04"]["saved_when_alone"] == 0
    pack = {"bytes": 3 * 2**20, "files": 12, "unpack_seconds": 1.5, "chapter": "04_pixel_subsets",
            "chapter_seconds_after_unpack": 4.0}
    params = {"dataset": "fashion-mnist", "profile": "quick", "device": "cpu", "seed": 0}
    out = bench.result(params, "CPU (Toy, 2 threads)", rows, pack, None, "python benchmarks/bench_chapters.py")
    assert out["schema"] == instructors.SCHEMA and out["full_build_seconds"] == sum(SECONDS.values())
    assert "upper bound" in out["notes"][0] and out["profile"] == "quick"
    (tmp_path / "c.json").write_text(json.dumps(out))
    read = instructors.load(tmp_path, "c.json")
    assert read == json.loads(json.dumps(out))
    words = instructors.values(read)
    assert (words["times_device"], words["times_profile"]) == ("CPU (Toy, 2 threads)", "quick")
    assert (words["pack_size"], words["pack_files"], words["pack_chapter"], words["pack_chapter_seconds"]) == (
        "3.0 MiB", 12, 3, "4 s")
    assert words["validate_chapter"] == "not measured"
    checked = {**out, "validate": {"chapter": "04_pixel_subsets", "seconds_from_empty": 150.0, "upper_bound": 145.0}}
    assert [instructors.values(checked)[k] for k in ("validate_chapter", "validate_seconds", "validate_bound")] == [
        3, "2.5 min", "2.4 min"]


def test_the_page_says_not_measured_without_the_file_and_refuses_another_schema(tmp_path):
    assert instructors.load(tmp_path, "chapters-quick-cpu.json") is None
    assert "not measured" in instructors.times_table(None, tmp_path, "c.json")
    assert set(instructors.values(None).values()) == {"not measured"}
    (tmp_path / "old.json").write_text(json.dumps({"schema": 0}))
    try:
        instructors.load(tmp_path, "old.json")
    except ValueError as e:
        assert "old.json has schema 0" in str(e)
    else:
        raise AssertionError("a file of another schema was read")


def test_every_chapter_says_what_it_teaches_and_names_only_parameters_it_has():
    from overinterp.config.chapters import CHAPTERS
    assert list(instructors.TEACHING) == list(CHAPTERS)
    for stem in CHAPTERS:
        assert instructors.TEACHING[stem][0]
        assert [n for n, _ in instructors.worth_changing(stem)] == list(instructors.TEACHING[stem][1])   # KeyError on an unknown one
    assert "- {doc}`04_pixel_subsets`: `frac`, fraction of pixels kept" in instructors.parameter_list()


def test_without_the_file_the_table_comes_after_a_note_naming_it(tmp_path):
    text = instructors.times_table(None, ROOT / "benchmarks" / "results", "chapters-quick-cpu.json")
    assert text.startswith(":::{note}\nNo run-time file `chapters-quick-cpu.json` in `benchmarks/results`")
    assert text.split(":::\n\n")[1].startswith("| chapter | what it teaches |") and "{doc}`17_instructors`" in text


def test_a_book_built_as_make_book_runs_it_counts_its_prepare_stage_in_the_bounds(monkeypatch):
    """`book --jobs 2` computes chapters 2-5's artifacts first, with the access log naming the stage "prepare";
    a chapter that loads them needs it, and its bound adds its seconds."""
    import os
    from overinterp.experiments import prepare
    from overinterp.pages import build
    from overinterp.store import CHAPTER_ENV
    named = []
    monkeypatch.setattr(prepare, "prepare_parallel", lambda run, jobs, study: named.append(os.environ.get(CHAPTER_ENV)))
    monkeypatch.delenv(CHAPTER_ENV, raising=False)
    assert "prepare" in build.prepare_first({"profile": "tiny", "device": "cpu"}, jobs=2)
    assert named == ["prepare"] and CHAPTER_ENV not in os.environ
    log = [_e("save", "prepare", "model/a"), _e("load", "03", "model/a"), _e("save", "03", "sis/s"),
           _e("load", "04", "sis/s")]
    rows = bench.chapter_rows({"prepare": 600.0, "03": 5.0, "04": 7.0}, {"03": 1.0, "04": 2.0}, log)
    assert rows["04"]["needs"] == ["prepare", "03"] and rows["04"]["alone_from_empty_upper_bound"] == 612.0
