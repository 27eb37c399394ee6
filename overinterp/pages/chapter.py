"""What a chapter's cells call around the library: its opening box and its glued figures.

``setup`` is a chapter's first call: it reads the chapter's papermill parameters (the fields of
its dataclass in :mod:`overinterp.config.chapters`) from the notebook's namespace, checks them (an
error names the bad parameter), resolves the ones that default to the profile's values, builds the
:class:`overinterp.config.context.Run`, glues the run for the prose, and shows what this execution
used with the profile's deviations from the paper's protocol:

    run, p = setup("03_sis", globals(), deviations=("models", "backselect"))    # p.tau: resolved
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from IPython.display import Image, Markdown, display
from myst_nb import glue

import dataclasses

import json

import numpy as np
import pandas as pd

from overinterp.config.chapters import chapter_config, resolve
from overinterp.config.context import make_run
from overinterp.config.profiles import deviations_box
from overinterp.pages.audit import figure_png
from overinterp.paper.formatting import MISSING, number
from overinterp.paper import claims as CL

__all__ = ["setup", "deviations_box", "deviations_table", "captioned", "verdict_table", "table_html",
           "show_tables_without_nan", "glue_all", "figure", "record"]


def setup(chapter: str, namespace: dict | None = None, deviations: tuple = (), show: bool = True,
          **values) -> tuple:
    """(run, parameters) of ``chapter`` (a notebook stem): its dataclass filled from ``namespace``
    (the notebook's ``globals()``, where papermill put the parameters) and ``values``, checked and
    resolved against the profile (:func:`overinterp.config.chapters.resolve`). With ``show``, glue
    the run and show it in a box with the profile's deviations from the paper's protocol on the
    ``deviations`` topics (:meth:`overinterp.config.profiles.Profile.deviations`)."""
    show_tables_without_nan()
    _TABLES.update(chapter=int(chapter[:2]) if chapter[:2].isdigit() else 0, count=0)
    cls = chapter_config(chapter)
    given = {f.name: namespace[f.name] for f in dataclasses.fields(cls) if f.name in (namespace or {})}
    params = cls(**{**given, **values})
    run = make_run(params.dataset, params.profile, params.device, params.seed)
    params = resolve(dataclasses.replace(params, profile=run.profile.name), run.profile)
    if show:
        devs = run.profile.deviations(*deviations) if deviations else []
        display(Markdown(f":::{{note}}\n{run.describe()}\n:::"))
        if devs:
            display(Markdown(deviations_box(devs)))
        glue("run_dataset", run.dataset, display=False)
        glue("run_profile", run.profile.name, display=False)
        glue("run_device", run.device.type, display=False)
    return run, params


def deviations_table(run):
    """Every deviation of ``run``'s profile from the paper's protocol, by topic (each chapter's box lists
    those of the topics it depends on): the introduction's full list; None for the paper's profile."""
    import pandas as pd
    topics = {"models": "models", "evaluation": "evaluation", "backselect": "backward selection",
              "retraining": "retraining"}
    rows = [{"topic": name, "deviation": d} for t, name in topics.items() for d in run.profile.deviations(t)]
    return pd.DataFrame(rows).drop_duplicates("deviation").set_index("topic") if rows else None


_TABLES = {"chapter": 0, "count": 0}   # the chapter being executed (set by setup) and its tables so far


def captioned(df, caption: str, digits: int = 2):
    """``df`` shown with a numbered caption above it, "Table <chapter>.<k>. <caption>" (numbered in the
    order the chapter shows its tables), numbers to ``digits`` decimals and "—" for an undefined value."""
    _TABLES["count"] += 1
    label = f"{_TABLES['chapter']}.{_TABLES['count']}" if _TABLES["chapter"] else str(_TABLES["count"])
    num = df.select_dtypes("number").columns
    return (df.style.format(precision=digits, na_rep=MISSING, subset=list(num)).format(na_rep=MISSING, subset=[
        c for c in df.columns if c not in num]).set_caption(f"Table {label}. {caption}")
            .set_uuid(f"t{label.replace('.', '-')}").set_table_attributes('class="dataframe"'))


#: columns of a verdict's table that count things (shown as whole numbers when the table is turned)
COUNTS = {"replicates", "images", "sources", "other models", "members", "treated models", "control models", "tested",
          "thresholds", "interval above 0", "interval below 0", "correct images", "incorrect images", "images larger",
          "images smaller", "images with an SIS"}


def verdict_table(verdict, digits: int = 2, max_columns: int = 8):
    """:func:`captioned` table of a verdict's numbers, with a caption saying what they are. A table of
    more than ``max_columns`` columns is turned (one column per model, one row per number) so that it
    fits the page, its numbers formatted first (counts whole, the rest to ``digits`` decimals)."""
    cols = list(verdict.numbers.columns)
    measure = cols[cols.index("95% low") - 1] if "95% low" in cols else "the measures"
    shown = verdict.numbers
    if len(cols) > max_columns:
        shown = pd.DataFrame({c: [_cell(v, c, digits) for v in shown[c]] for c in cols}, index=shown.index).T
        shown.columns = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in shown.columns]
    return captioned(shown, f"The numbers behind the verdict ({verdict.word}): per row, {measure}, its 95% "
                            "interval, the margin where the claim holds and the outcome.", digits)


def _cell(v, column: str, digits: int) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if column in COUNTS:
        return number(v, 0)
    return number(v, digits)


def table_html(df) -> str:
    """A DataFrame as the notebook shows it, with an undefined value (NaN) written "—"."""
    return df.to_html(na_rep=MISSING, notebook=True, border=0, max_rows=60, max_cols=30)


def show_tables_without_nan() -> None:
    """Make this kernel show every DataFrame through :func:`table_html`, so that no page prints
    "NaN" for a value that does not exist (a measure undefined for a model, a paper's number we do
    not have); no-op outside IPython."""
    import pandas as pd
    try:
        ip = get_ipython()  # noqa: F821  (defined in IPython kernels)
    except NameError:
        return
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def glue_all(values: dict) -> None:
    """Glue every ``name: value`` of ``values`` for the prose (``{glue:}`name```), showing nothing."""
    for name, value in values.items():
        glue(name, value, display=False)


def figure(name: str, fig) -> None:
    """Glue a matplotlib figure for a captioned ``{glue:figure}`` in the prose, without showing it here:
    its PNG carries the smallest font size it draws and its dpi, which :mod:`overinterp.pages.audit`
    turns into the smallest text's size at page width (:func:`overinterp.pages.audit.figure_png`)."""
    fig = getattr(fig, "figure", fig)  # an Axes gives its figure
    glue(name, Image(data=figure_png(fig)), display=False)
    plt.close(fig)


def record(claim: str, verdict) -> None:
    """Glue a claim's result (``claim``: a key of :data:`overinterp.paper.claims.CLAIMS`) for the
    introduction's results table: ``res_<claim>_paper`` (the source's number), ``_ours`` (each
    model's estimate and 95% interval), ``_verdict`` (the outcome) and ``_json`` (the per-model
    records of :func:`overinterp.paper.claims.records`, what ``python -m overinterp verdicts`` writes)."""
    glue_all({f"res_{claim}_paper": CL.paper_number(claim), f"res_{claim}_ours": CL.result_text(verdict, claim),
              f"res_{claim}_verdict": verdict.word,
              f"res_{claim}_json": json.dumps(CL.records(verdict, claim))})
