"""The instructors' page (``book/17_instructors``): what each chapter teaches and costs, the exercises' run
times and the "known weak spots", as tables and glue values from committed ``benchmarks/`` files.

    bench = load("benchmarks/results", "chapters-quick-cpu.json")      # None when absent
    glue_all(values(bench))
    Markdown(times_table(bench, "benchmarks/results", "chapters-quick-cpu.json"))
    Markdown(exercise_table(bench))
"""
import dataclasses
import itertools
import json
from pathlib import Path

from overinterp.config.chapters import CHAPTERS, ROOT, chapter_number   # the sidebar's number, not the file's
from overinterp.config.profiles import get_profile
from overinterp.pages.report_seeds import seed_values
from overinterp.paper import claims
from overinterp.paper.formatting import MISSING, bounds, number, span
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.store import read_json

SCHEMA = 1   # version of the file benchmarks/bench_chapters.py writes

BOOK = "book-quick-cpu.json"                # the whole quick book from an empty store, as `make book` runs it
VERDICTS = "verdicts-quick-cpu.json"        # Part I's verdicts at two seeds (benchmarks/bench_verdicts.py)
SCALE = "scale-standard-cuda.json"           # the standard profile's scale study (python -m overinterp scale --json)
STANDARD_MODELS = "models-standard-cpu.json"  # the standard edition's zoo on the whole test set (bench_models.py)
STANDARD_EDITION = "editions/fashion-mnist-standard"  # from the repository root: manifest.json, verdicts-seed0.json

#: chapter stem -> (what it teaches, in one line; its parameters worth changing in class)
TEACHING = {
    "01_introduction": ("the paper's claims, this execution's verdicts at a glance, the profiles", ()),
    "02_model_zoo": ("training the replicates; accuracy and confidence on test and shifted images", ("seed",)),
    "03_sis": ("sufficient input subsets: backward selection, FindSIS at a threshold τ, SIS size (3.3, 4.1)",
               ("tau", "n_curves")),
    "04_pixel_subsets": ("5% backward-selection subsets: accuracy, confidence, transfer between models "
                         "(4.1, Table 1)", ("frac", "seed")),
    "05_retraining": ("retraining on 5% subsets: patterns of the data, or positions of the kept pixels? (4.2)",
                      ("frac",)),
    "06_why": ("one factor at a time (method, mask value, training length, width); position versus value", ("seed",)),
    "06b_scale": ("how Part I's measures and their spread between replicates move with training-set size and width",
                  ()),
    "07_humans": ("the human benchmark: classify 5%, 30% and 50% subsets yourself (3.4, 4.3)", ("fracs", "threshold")),
    "07b_critiques": ("the paper against its critiques: dilated subsets, saliency on the mask's edge, the blank input, "
                      "the mask's shape, calibration, insertion curves", ("kernels", "smoothgrad_samples")),
    "08_sis_accuracy": ("SIS size of correctly classified against misclassified images, per threshold (4.4, Figure 5)",
                        ("taus", "min_images")),
    "09_robust": ("adversarially robust models and their SIS (4.5)", ("tau",)),
    "10_ensembles": ("ensembles as a mitigation: accuracy and SIS size (4.6, Figure 6)", ("tau", "min_images")),
    "11_input_dropout": ("input dropout as a second mitigation: SIS size against τ", ("tau",)),
    "12_imagenet": ("the SIS of an ImageNet classifier, and where they lie (4.1.1, Figure 4)", ("tau", "border")),
    "13_speed": ("what backward selection costs: exact against batched gradient (S5)", ()),
    "14_shared_interest": ("Shared Interest: do explanations cover the garment?", ("high", "binarize")),
    "15_input_reduction": ("input reduction (Feng et al.) on pixels, and its entropy fine-tuning", ("min_images",)),
    "16_bayes_trex": ("Bayes-TrEx: confident in-distribution examples sampled with MCMC", ("tau",)),
    "17_instructors": ("this page: objectives, a session plan, discussion questions, weak spots, exercises with "
                       "run times, the pack", ()),
    "18_report": ("the reproduction report: scope, methodology, results per claim and edition, deviations, "
                  "compute, how to cite", ()),
}

#: what an exercise computes beyond a complete build's store -> (the index's words, the run-time field that
#: bounds its time, "≈" about or "≤" at most)
RUNS = {
    "store": ("nothing new", "with_store", "≈"),
    "part": ("a little more", "full_build", "≤"),
    "own": ("the chapter's own work again", "full_build", "≈"),
    "new": ("new replicates, and what depends on them", "alone_from_empty_upper_bound", "≤"),
    "study": ("the scale study first (`prepare --study scale`)", None, ""),
}

#: exercise label -> its kind of work (a key of :data:`RUNS`), per what its solution recomputes
EXERCISE_RUNS = {
    "ex-02-seed": "new", "ex-02-epochs": "part",
    "ex-03-tau": "store", "ex-03-method": "store",
    "ex-04-frac": "store", "ex-04-seed": "new", "ex-04-mask": "store",
    "ex-05-frac": "own", "ex-05-position": "store",
    "ex-06-seed": "own", "ex-06-tau": "store",
    "ex-06-study": "study", "ex-06-engine": "store",
    "ex-07-fracs": "store", "ex-07-threshold": "store",
    "ex-07-kernels": "store", "ex-07-smoothgrad": "own",
    "ex-08-min-images": "store", "ex-08-taus": "store",
    "ex-10-tau": "store", "ex-10-min-images": "store",
    "ex-14-binarize": "store", "ex-14-high": "store",
}


def worth_changing(chapter: str) -> list[tuple[str, str]]:
    """(name, help) of the parameters of ``chapter`` worth changing in class (its dataclass's fields)."""
    fields = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(CHAPTERS[chapter])}
    return [(name, fields[name]) for name in TEACHING[chapter][1]]


def parameter_list() -> str:
    """A MyST Markdown list: per chapter with parameters worth changing, each with its help."""
    return "\n".join(f"- {{doc}}`{stem}`: " + "; ".join(f"`{n}`, {h}" for n, h in worth_changing(stem))
                     for stem in TEACHING if worth_changing(stem))


def load(results: str | Path, name: str) -> dict | None:
    """The run-time file ``results/name``, or None when absent; ValueError for another :data:`SCHEMA`."""
    path = Path(results) / name
    if not path.is_file():
        return None
    bench = json.loads(path.read_text())
    if bench.get("schema") != SCHEMA:
        raise ValueError(f"{path} has schema {bench.get('schema')!r}; this page reads schema {SCHEMA} "
                         f"(run benchmarks/bench_chapters.py again)")
    return bench


def _seconds(s: float | None, sign: str = "") -> str:
    """'42 s' or '2.5 min' (after ``sign``, as '≤ 2.5 min'); "not measured" for None."""
    if s is None:
        return "not measured"
    return (f"{sign} " if sign else "") + (f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min")


def times_table(bench: dict | None, results: str | Path, name: str) -> str:
    """MyST table per chapter: what it teaches, its times alone, the parameters worth changing; where ``bench``
    is None, after a note that the times are not measured."""
    rows, note = (bench or {}).get("chapters", {}), ""
    if bench is None:
        folder = Path(results).resolve()
        shown = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
        note = (f":::{{note}}\nNo run-time file `{name}` in `{shown}`: the times below are not measured yet. "
                f"`python benchmarks/bench_chapters.py --profile quick` measures them (see the last section).\n:::\n\n")
    lines = ["| chapter | what it teaches | alone, from an unpacked pack | alone, from an empty store "
             "(upper bound) | worth changing in class |", "|---|---|---|---|---|"]
    for stem, (teaches, _) in TEACHING.items():
        r = rows.get(stem, {})
        params = ", ".join(f"`{n}`" for n, _ in worth_changing(stem)) or "—"
        lines.append(f"| {{doc}}`{stem}` | {teaches} | {_seconds(r.get('with_store'))} | "
                     f"{_seconds(r.get('alone_from_empty_upper_bound'), '≤')} | {params} |")
    return note + "\n".join(lines)


def values(bench: dict | None) -> dict:
    """Glue values ``times_*``, ``validate_*``, ``pack_*`` of ``bench``, and per chapter ``t_pack_<stem>``,
    ``t_own_<stem>`` (in a complete build) and ``t_empty_<stem>``; "not measured" where it lacks them."""
    bench = bench or {}
    pack, check, rows = bench.get("pack") or {}, bench.get("validate") or {}, bench.get("chapters", {})
    out = {"times_profile": bench.get("profile", "not measured"), "times_device": bench.get("device", "not measured"),
           "times_date": bench.get("date", "not measured"),
           "times_full_build": _seconds(bench.get("full_build_seconds")),
           "validate_chapter": chapter_number(check["chapter"]) if check else "not measured",
           "validate_seconds": _seconds(check.get("seconds_from_empty")),
           "validate_bound": _seconds(check.get("upper_bound")),
           "pack_size": f"{pack['bytes'] / 2**20:.1f} MiB" if pack else "not measured",
           "pack_files": pack.get("files", "not measured"), "pack_unpack": _seconds(pack.get("unpack_seconds")),
           "pack_chapter": chapter_number(pack["chapter"]) if pack else "not measured",
           "pack_chapter_seconds": _seconds(pack.get("chapter_seconds_after_unpack"))}
    for stem in TEACHING:
        r = rows.get(stem, {})
        out.update({f"t_pack_{stem}": _seconds(r.get("with_store")), f"t_own_{stem}": _seconds(r.get("full_build")),
                    f"t_empty_{stem}": _seconds(r.get("alone_from_empty_upper_bound"))})
    return out


def book_values(results: str | Path, name: str = BOOK) -> dict:
    """Glue values ``book_*`` of the whole book's run-time file; "not measured" without it."""
    doc = read_json(Path(results) / name)
    keys = ("book_device", "book_date", "book_profile", "book_run", "book_total",
            "book_against_target", "book_previous_total", "book_previous_device")
    if not doc:
        return dict.fromkeys(keys, "not measured")
    previous = doc.get("previous") or {}
    return {"book_device": doc["device"], "book_date": doc["date"], "book_profile": doc["profile"],
            "book_run": (f"executed in {_seconds(doc['execute_seconds'])} and rendered in "
                         f"{_seconds(doc['render_seconds'])}" if doc.get("render_seconds") is not None
                         else "executed and rendered (the rendering not timed apart)"),
            "book_total": f"{doc['total_minutes']:.1f} min",
            "book_against_target": "within" if doc["within_45_minutes"] else "over",
            "book_previous_total": f"{previous['total_minutes']:.1f} min" if previous else "not measured",
            "book_previous_device": previous.get("device", "not measured")}


def exercise_table(bench: dict | None, book: Path | None = None) -> str:
    """MyST table of every exercise and its run time; KeyError for one missing from :data:`EXERCISE_RUNS`."""
    from overinterp.pages.exercises import exercises
    rows = (bench or {}).get("chapters", {})
    lines = ["| chapter | exercise | changes | computes | run time |", "|---|---|---|---|---|"]
    for stem in TEACHING:
        for ex in exercises(stem, book):
            if ex.label not in EXERCISE_RUNS:
                raise KeyError(f"exercise {ex.label} of {stem} has no kind of work in EXERCISE_RUNS")
            computes, field, sign = RUNS[EXERCISE_RUNS[ex.label]]
            time = _seconds(rows.get(stem, {}).get(field), sign) if field else "not in the measured file"
            lines.append(f"| {{doc}}`chapter {chapter_number(stem)} <{stem}>` | {{ref}}`{ex.title} <{ex.label}>` | "
                         f"`{ex.runs}` | {computes} | {time} |")
    return "\n".join(lines)


def _numbers_span(numbers: list[int]) -> str:
    """'1–4, 7, 9': sorted numbers with each run of consecutive ones as a range."""
    runs = [[n for _, n in run] for _, run in itertools.groupby(enumerate(sorted(numbers)), lambda p: p[1] - p[0])]
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def _verdict_values(doc: dict | None) -> dict:
    """Glue values ``v_*`` of Part I's verdicts at two seeds: changes, inconclusive ones, widest interval."""
    seeds = {k: v for k, v in seed_values(doc, "v").items()
             if k in ("v_seeds", "v_rows", "v_changed", "v_changed_which")}
    keys = ("v_inconclusive", "v_widest_claim", "v_widest_model", "v_widest_interval", "v_widest_width", "v_device",
            "v_date")
    if not doc or not doc.get("rows"):
        return {**seeds, **dict.fromkeys(keys, MISSING)}
    s0, rows = str(doc["seeds"][0]), doc["rows"]
    widest = max(rows, key=lambda r: r["seeds"][s0]["high"] - r["seeds"][s0]["low"])
    w, claim = widest["seeds"][s0], claims.CLAIMS.get(widest["claim"])
    digits = claim.digits if claim else 1
    return {**seeds,
            "v_inconclusive": sum(r["seeds"][s0]["outcome"].startswith("inconclusive") for r in rows),
            "v_widest_claim": claim.short if claim else widest["claim"],
            "v_widest_model": widest["model"], "v_widest_interval": bounds(w["low"], w["high"], digits),
            "v_widest_width": number(w["high"] - w["low"], digits), "v_device": doc.get("device", MISSING),
            "v_date": doc.get("date", MISSING)}


def _scale_values(path: Path) -> dict:
    """Glue values ``s_*`` of the scale study at its size curve's last point (accuracy, SIS size per engine)."""
    keys = ("s_arch", "s_point_images", "s_point_width", "s_images", "s_acc", "s_acc_values", "s_sis_gradient",
            "s_sis_pruned", "s_ratio_min", "s_ratio_max", "s_device")
    if not path.is_file():
        return dict.fromkeys(keys, MISSING)
    from overinterp.pages import scale
    rows = scale.load(path)
    size = rows[rows["curve"] == "size"]
    point = size[size["training images"] == size["training images"].max()]
    acc = point[point["measure"] == "test accuracy (%)"].iloc[0]
    sis = point[point["measure"] == "SIS size (%)"].set_index("setting")["estimate"]
    arch = rows.attrs.get("config", {}).get("arch", MISSING)
    v = scale.values(rows)
    return {"s_arch": ARCH_NAMES.get(arch, arch), "s_point_images": f"{int(acc['training images']):,}",
            "s_point_width": int(acc["width"]), "s_images": int(acc["images per replicate"]),
            "s_acc": number(acc["estimate"]), "s_acc_values": ", ".join(number(x) for x in acc["values"]),
            "s_sis_gradient": number(next((x for k, x in sis.items() if k.startswith("gradient")), None)),
            "s_sis_pruned": number(next((x for k, x in sis.items() if k.startswith("pruned")), None)),
            "s_ratio_min": v["engine_ratio_min"], "s_ratio_max": v["engine_ratio_max"],
            "s_device": rows.attrs.get("device", MISSING)}


def _standard_values(models: dict | None, edition: Path) -> dict:
    """Glue values ``std_*`` of the standard edition: models' accuracy, epochs, chapters, SIS engine and sizes."""
    out = dict.fromkeys(("std_acc_range", "std_models", "std_below", "std_epochs", "std_chapters", "std_sis_range",
                         "std_sis_outcome", "std_engine"), MISSING)
    if models and models.get("models"):
        acc = [m["test_acc"] for m in models["models"] if m.get("stored")]
        out.update({"std_acc_range": span(acc, 1), "std_models": len(acc), "std_below": len(models.get("below_93", [])),
                    "std_epochs": models.get("recipe", {}).get("epochs", MISSING)})
    manifest = read_json(edition / "manifest.json")
    if manifest:
        out["std_chapters"] = _numbers_span([n for n in map(chapter_number, manifest["chapters"]) if n])
    verdicts = read_json(edition / "verdicts-seed0.json")
    if verdicts:
        sis = [r for r in verdicts["rows"] if r["claim"] == "sis"]
        outcomes = list(dict.fromkeys(r["outcome"] for r in sis))
        out["std_sis_range"] = span([r["estimate"] for r in sis], 1)
        out["std_sis_outcome"] = (f"“{outcomes[0]}” for every architecture" if len(outcomes) == 1 else
                                  "; ".join(f"“{r['outcome']}” for {r['model']}" for r in sis)) if sis else MISSING
        engine = get_profile(verdicts.get("profile", "standard")).sis_engine
        out["std_engine"] = engine.describe() if engine else MISSING
    return out


def weak_spot_values(results: str | Path, root: Path = ROOT) -> dict:
    """Glue values of the "known weak spots" (``v_*``, ``s_*``, ``std_*``) from committed files; "—" if absent."""
    results = Path(results)
    return {**_verdict_values(read_json(results / VERDICTS)), **_scale_values(results / SCALE),
            **_standard_values(read_json(results / STANDARD_MODELS), root / STANDARD_EDITION)}
