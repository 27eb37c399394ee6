"""What a chapter's cells call around the library: :func:`setup` (parameters, run, opening box), numbered
tables ("Table <chapter>.<k>"), glued values and figures.

    run, p = setup("03_sis", globals(), deviations=("models", "backselect"))    # p.tau: resolved
"""
import dataclasses
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Image, Markdown, display
from myst_nb import glue

from overinterp.config.chapters import chapter_config, chapter_number, resolve, toc_chapters
from overinterp.config.context import make_run
from overinterp.experiments.blank import annotate
from overinterp.pages.plots import figure_png
from overinterp.paper import claims
from overinterp.paper.deviations import profile_deviations
from overinterp.paper.formatting import MISSING, number

#: columns (or rows of a turned table) that count things, shown as whole numbers
COUNTS = {"replicates", "images", "sources", "other models", "members", "treated models", "control models", "tested",
          "thresholds", "interval above 0", "interval below 0", "correct images", "incorrect images", "images larger",
          "images smaller", "images with an SIS"}
#: columns holding a setting, not a measure (shown as written: τ = 0.99 whatever the decimals)
THRESHOLDS = {"tau", "τ", "threshold"}
#: topics of :func:`~overinterp.paper.deviations.profile_deviations` -> the tables' names
TOPICS = {"models": "models", "evaluation": "evaluation", "backselect": "backward selection",
          "retraining": "retraining"}


def setup(chapter: str, namespace: dict | None = None, deviations: tuple = (), show: bool = True,
          **values) -> tuple:
    """(run, parameters) of ``chapter`` from ``namespace`` (papermill's ``globals()``) and ``values``, resolved
    against the profile; with ``show``, glue the run and box it with the ``deviations`` topics' deviations."""
    show_tables_without_nan()
    _TABLES.update(chapter=chapter_number(chapter) or 0, count=0)
    cls = chapter_config(chapter)
    given = {f.name: namespace[f.name] for f in dataclasses.fields(cls) if f.name in (namespace or {})}
    params = cls(**{**given, **values})
    run = make_run(params.dataset, params.profile, params.device, params.seed)
    params = resolve(dataclasses.replace(params, profile=run.profile.name), run.profile)
    _TABLES["run"] = run
    if show:
        devs = profile_deviations(run.profile, *deviations) if deviations else []
        display(Markdown(run_box(run, chapter)))
        show_deviations(devs, link=True)
        glue_all({"run_dataset": run.dataset, "run_profile": run.profile.name, "run_device": run.device.type})
    return run, params


def run_box(run, chapter: str) -> str:
    """MyST box of what this execution used: in full on the introduction, one line elsewhere."""
    root = toc_chapters()[0]
    if chapter == root:
        return f":::{{note}}\n{run.describe()}\n:::"
    return (f":::{{note}}\n**This execution:** profile `{run.profile.name}`, dataset `{run.dataset}`, "
            f"device `{run.device.type}`, seed {run.seed}; {{doc}}`the introduction <{root}>` describes the "
            "profile.\n:::")


def deviations_box(devs: list[str], title: str = "Deviations from the paper's protocol in this chapter",
                   link: bool = True) -> str:
    """A collapsed MyST box listing ``devs``; with ``link``, a link to the introduction's full list."""
    listed = "\n".join(f"- {d}" for d in devs)
    more = "\n\nEvery deviation of this profile, by topic: {ref}`deviations` in the introduction." if link else ""
    return f":::{{admonition}} {title} ({len(devs)})\n:class: dropdown\n{listed}{more}\n:::"


def show_deviations(devs: list[str], title: str = "Deviations from the paper's protocol in this chapter",
                    link: bool = False) -> None:
    """Display :func:`deviations_box` of ``devs`` in a notebook, nothing when there are none."""
    if devs:
        display(Markdown(deviations_box(devs, title, link)))


def deviations_table(run):
    """DataFrame of every deviation of ``run``'s profile from the paper's protocol, by topic; None if none."""
    rows = [{"topic": name, "deviation": d} for t, name in TOPICS.items() for d in profile_deviations(run.profile, t)]
    return pd.DataFrame(rows).drop_duplicates("deviation").set_index("topic") if rows else None


_TABLES = {"chapter": 0, "count": 0}   # the chapter being executed (set by setup) and its tables so far


def table_caption(caption: str) -> str:
    """The chapter's next table number with ``caption``: "Table <chapter>.<k>. <caption>"."""
    _TABLES["count"] += 1
    return f"Table {_TABLES['chapter']}.{_TABLES['count']}. {caption}"


def captioned(df, caption: str, digits: int = 2):
    """``df``'s Styler captioned "Table <chapter>.<k>. <caption>", measures to ``digits`` decimals, "—" for NaN."""
    caption = table_caption(caption)
    label = caption.split(" ")[1].rstrip(".")
    num = [c for c in df.select_dtypes("number").columns if not pd.api.types.is_bool_dtype(df[c])]
    kind = {c: "count" if _name(c) in COUNTS else "label" if _name(c) in THRESHOLDS else "measure" for c in num}
    other = [c for c in df.columns if c not in kind]
    return (df.style.format(precision=digits, na_rep=MISSING, subset=[c for c in num if kind[c] == "measure"])
            .format(precision=0, na_rep=MISSING, subset=[c for c in num if kind[c] == "count"])
            .format(_label, subset=[c for c in num if kind[c] == "label"])
            .format(lambda v: _value(v, digits), subset=other)
            .format_index(_label, axis=0).format_index(_label, axis=1)
            .set_caption(caption)
            .set_uuid(f"t{label.replace('.', '-')}").set_table_attributes('class="dataframe"'))


def _name(column) -> str:
    """A column's name; a column of a two-level header by its last level."""
    return str(column[-1] if isinstance(column, tuple) else column)


def _label(v) -> str:
    """A label or setting as written: 0.99, 0.5, 3 (no trailing zeros, at most 6 decimals); "—" where undefined."""
    if isinstance(v, (bool, np.bool_, str)) or not isinstance(v, (int, float, np.number)):
        return str(v)
    if not np.isfinite(v):
        return MISSING
    return np.format_float_positional(float(v), precision=6, trim="-")


def _value(v, digits: int, column=None) -> str:
    """A cell as text: text as is, yes/no, "—" where undefined; in a ``column`` of a turned verdict table a count
    whole, a setting as written, a measure to ``digits`` decimals; else integers whole and floats to at most
    ``digits`` decimals."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if column is not None:
        if column in THRESHOLDS:
            return _label(v) if v is not None else MISSING
        return number(v, 0 if column in COUNTS else digits)
    if v is None or (isinstance(v, (float, np.floating)) and not np.isfinite(v)):
        return MISSING
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return _label(v) if round(float(v), digits) == float(v) else number(v, digits)
    return str(v)


def verdict_table(verdict, digits: int = 2, max_columns: int = 8):
    """:func:`captioned` table of a verdict's numbers, transposed beyond ``max_columns`` columns to fit the page."""
    cols = list(verdict.numbers.columns)
    measure = cols[cols.index("95% low") - 1] if "95% low" in cols else "the measures"
    shown = verdict.numbers
    if len(cols) > max_columns:
        shown = pd.DataFrame({c: [_value(v, digits, c) for v in shown[c]] for c in cols}, index=shown.index).T
        shown.columns = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in shown.columns]
    return captioned(shown, f"The numbers behind the verdict ({verdict.word}): per row, {measure}, its 95% "
                            "interval, the margin where the claim holds and the outcome.", digits)


def table_html(df) -> str:
    """A DataFrame as the notebook shows it, with an undefined value (NaN) written "—"."""
    return df.to_html(na_rep=MISSING, notebook=True, border=0, max_rows=60, max_cols=30)


def show_tables_without_nan() -> None:
    """Make this kernel show DataFrames through :func:`table_html` (no "NaN" on a page); no-op outside IPython."""
    try:
        ip = get_ipython()  # noqa: F821  (defined in IPython kernels)
    except NameError:
        return
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def glue_all(values: dict) -> None:
    """Glue every ``name: value`` for the prose, showing nothing."""
    for name, value in values.items():
        glue(name, value, display=False)


def figure(name: str, fig) -> None:
    """Glue a figure (or Axes) as :func:`~overinterp.pages.plots.figure_png` for ``{glue:figure}``, unshown."""
    fig = getattr(fig, "figure", fig)  # an Axes gives its figure
    glue(name, Image(data=figure_png(fig)), display=False)
    plt.close(fig)


def record(claim: str, verdict) -> None:
    """Annotate ``verdict`` (engine, blank check) and glue ``res_<claim>_{paper,ours,verdict,json}``."""
    if _TABLES.get("run") is not None:
        annotate(_TABLES["run"], claim, verdict)
    glue_all({f"res_{claim}_paper": claims.paper_number(claim), f"res_{claim}_ours": claims.result_text(verdict, claim),
              f"res_{claim}_verdict": verdict.word,
              f"res_{claim}_json": json.dumps(claims.records(verdict, claim))})
