"""The instructors' page (``book/17_instructors``, issue 22): what each chapter teaches, what it costs
alone, and the parameters worth changing in class.

Run times come from ``benchmarks/bench_chapters.py``, which writes ``chapters-<profile>-<device>.json``
into ``benchmarks/results/`` (``"schema"``: :data:`SCHEMA`). Per chapter it holds ``with_store``
(executed alone with every artifact stored: the time from an unpacked pack) and
``alone_from_empty_upper_bound`` (an upper bound from an empty store, built from the store's access
log), and for the pack its size and chapter 04's time after ``store unpack``. This module only reads
the file (:func:`load`) and lays it out (:func:`table`, :func:`values`); without the file the table
says "not measured" and the page says why.

    bench = load("benchmarks/results", "chapters-quick-cpu.json")      # None when absent
    Markdown(times_table(bench, "benchmarks/results", "chapters-quick-cpu.json"))
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from overinterp.config.chapters import CHAPTERS, ROOT

__all__ = ["SCHEMA", "TEACHING", "load", "table", "times_table", "values", "worth_changing", "parameter_list"]

SCHEMA = 1   # the structure of the file benchmarks/bench_chapters.py writes

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
    "17_instructors": ("this page: run times, the pack, parameters for a class", ()),
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
    """The run-time file ``name`` of ``results``, or None when it is absent; a file of another schema
    raises a one-line ``ValueError`` naming it."""
    path = Path(results) / name
    if not path.is_file():
        return None
    bench = json.loads(path.read_text())
    if bench.get("schema") != SCHEMA:
        raise ValueError(f"{path} has schema {bench.get('schema')!r}; this page reads schema {SCHEMA} "
                         f"(run benchmarks/bench_chapters.py again)")
    return bench


def _seconds(s: float | None) -> str:
    if s is None:
        return "not measured"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def times_table(bench: dict | None, results: str | Path, name: str) -> str:
    """:func:`table`, after a note box saying that the times are not measured where ``bench`` is None
    (the file ``name`` of ``results``, named relative to the repository root when it lies inside)."""
    if bench is not None:
        return table(bench)
    folder = Path(results).resolve()
    shown = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
    return (f":::{{note}}\nNo run-time file `{name}` in `{shown}`: the times below are not measured yet. "
            f"`python benchmarks/bench_chapters.py --profile quick` measures them (see the last section).\n:::\n\n"
            + table(bench))


def table(bench: dict | None) -> str:
    """A MyST Markdown table: per chapter, a link, what it teaches, its time from an unpacked pack and
    its upper bound from an empty store (from ``bench``; "not measured" without it), and the
    parameters worth changing."""
    rows = (bench or {}).get("chapters", {})
    lines = ["| chapter | what it teaches | alone, from an unpacked pack | alone, from an empty store "
             "(upper bound) | worth changing in class |", "|---|---|---|---|---|"]
    for stem, (teaches, _) in TEACHING.items():
        r = rows.get(stem, {})
        params = ", ".join(f"`{n}`" for n, _ in worth_changing(stem)) or "—"
        bound = r.get("alone_from_empty_upper_bound")
        lines.append(f"| {{doc}}`{stem}` | {teaches} | {_seconds(r.get('with_store'))} | "
                     f"{'≤ ' + _seconds(bound) if bound is not None else _seconds(None)} | {params} |")
    return "\n".join(lines)


def values(bench: dict | None) -> dict:
    """Glue values of the page: ``times_measured``, where, when and at which profile the times were
    measured and how long the whole book took, ``validated``, chapter 04 measured alone from an empty
    store beside its upper bound (where ``bench_chapters.py --validate`` ran), and ``pack_measured``,
    the pack's size and chapter 04's time after unpacking it; each says "not measured" without ``bench``."""
    if not bench:
        return {"times_measured": "Not measured yet (see the note below the table)", "pack_measured": "not measured yet",
                "validated": "No chapter has been measured alone from an empty store beside its bound yet."}
    from overinterp.pages.chapter import chapter_number     # the sidebar's number, not the file name's
    pack, check = bench.get("pack") or {}, bench.get("validate")
    validated = (f"Measured once to check the bound: chapter {chapter_number(check['chapter'])} alone from an empty store took "
                 f"{_seconds(check['seconds_from_empty'])}, against its upper bound of {_seconds(check['upper_bound'])}."
                 if check else "No chapter has been measured alone from an empty store beside its bound yet.")
    times = (f"Measured at the `{bench['profile']}` profile on {bench['device']} ({bench['date']}); the whole book, "
             f"executed in order from an empty store, took {_seconds(bench['full_build_seconds'])}")
    packed = (f"{pack['bytes'] / 2**20:.1f} MiB ({pack['files']} files); unpacking it into an empty store took "
              f"{_seconds(pack['unpack_seconds'])}, and chapter {chapter_number(pack['chapter'])} then ran alone in "
              f"{_seconds(pack['chapter_seconds_after_unpack'])}") if pack else "not measured yet"
    return {"times_measured": times, "pack_measured": packed, "validated": validated}
