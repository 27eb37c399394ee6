"""The page audit of issue 21 (:mod:`overinterp.pages.audit`): each check fails on a small
hand-written page with the defect and passes on the same page without it, in headless Chromium at
the reader's 1400 px window; a figure's smallest text is measured from the font record its PNG
carries. The whole tiny book is audited by the last test, skipped until the book's defects are fixed."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from overinterp.pages import audit as A  # noqa: E402
from overinterp.pages import chapter  # noqa: E402

needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
COLUMN = 800  # px, the content column of the hand-written pages


def page(folder: Path, body: str, name: str = "p.html") -> Path:
    """A page whose main column (``article.bd-article``, as sphinx-book-theme names it) is 800 px wide."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>'
                    f'<main><article class="bd-article" style="width:{COLUMN}px;padding:0">{body}</article>'
                    f"</main></body></html>")
    return path


def kinds(folder: Path) -> list[str]:
    return [d.kind for d in A.audit(folder)]


def ticks_figure(points: float, dpi: float = 100, inches=(4, 3)):
    fig, ax = plt.subplots(figsize=inches, dpi=dpi)
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title", fontsize=12)
    ax.tick_params(labelsize=points)
    return fig


def figure_page(folder: Path, fig, style: str = "") -> Path:
    """A page showing ``fig`` as the book does: its PNG (with font record) under ``_images/``."""
    (folder / "_images").mkdir(parents=True, exist_ok=True)
    (folder / "_images" / "f.png").write_bytes(A.figure_png(fig))
    plt.close(fig)
    return page(folder, f'<figure><img src="_images/f.png" style="{style}"><figcaption>ticks</figcaption></figure>')


# --- the figure's own record --------------------------------------------------------------------

def test_text_sizes_count_only_the_text_a_figure_draws():
    fig = ticks_figure(4)
    assert min(A.text_sizes(fig)) == 4 and max(A.text_sizes(fig)) == 12
    fig.axes[0].axis("off")                          # tick labels still exist but are not drawn
    fig.axes[0].set_xlabel("hidden with its axis", fontsize=3)
    fig.text(0.5, 0.5, "", fontsize=2)               # an empty string draws nothing
    assert set(A.text_sizes(fig)) == {12}
    legend = fig.axes[0].legend(["line"], fontsize=6)
    assert min(A.text_sizes(fig)) == 6
    legend.set_visible(False)
    assert min(A.text_sizes(fig)) == 12
    plt.close(fig)


def test_figure_png_carries_its_smallest_font_and_dpi(tmp_path):
    fig = ticks_figure(5, dpi=150)
    (tmp_path / "f.png").write_bytes(A.figure_png(fig))
    record, width = A.font_record(tmp_path / "f.png")
    assert record == {"min_pt": 5.0, "dpi": 150.0}
    assert 0.8 * 4 * 150 < width <= 4 * 150 + 2      # tight bounding box, at the figure's dpi
    plt.close(fig)


def test_chapter_figure_glues_the_png_with_its_font_record(monkeypatch, tmp_path):
    glued = {}
    monkeypatch.setattr(chapter, "glue", lambda name, obj, display: glued.update({name: obj}))
    fig = ticks_figure(7)
    chapter.figure("fig_x", fig.axes[0])             # an Axes gives its figure
    (tmp_path / "x.png").write_bytes(glued["fig_x"].data)
    assert A.font_record(tmp_path / "x.png")[0] == {"min_pt": 7.0, "dpi": 100.0}
    assert not plt.fignum_exists(fig.number)         # closed, so the notebook shows it only where glued


# --- each check fails on its defect and passes without it ---------------------------------------

@needs_chromium
def test_raw_reprs_in_page_text_fail_and_shown_code_does_not(tmp_path):
    page(tmp_path / "bad", "<p>&lt;IPython.core.display.Markdown object&gt;</p><p>Text(0.5, 1.0, 'x')</p>"
                           "<div><p>&lt;pandas.io.formats.style.Styler at 0x7f12&gt; Verdict(word='holds')</p></div>")
    defects = A.audit(tmp_path / "bad")
    assert [d.kind for d in defects] == ["repr"] * 4
    assert {d.detail.split(" in ")[0] for d in defects} == {"'<IPython.core.display.Markdown object>'",
                                                            "'Text('", "'Styler at'", "'Verdict('"}
    page(tmp_path / "good", '<p>The verdict holds.</p><div class="cell_input"><pre>Verdict(word="holds")</pre></div>')
    assert kinds(tmp_path / "good") == []


@needs_chromium
def test_nan_or_none_in_a_table_cell_fails(tmp_path):
    page(tmp_path / "bad", "<table><tr><th>model</th><th>acc</th><th>ci</th></tr>"
                           "<tr><td>ResNet20</td><td>nan</td><td>NaN – 0.91</td></tr><tr><td>VGG</td><td>None</td>"
                           "<td>None of the runs</td></tr></table>")
    head = "model acc ci"
    assert [d.detail for d in A.audit(tmp_path / "bad")] == [
        f"“nan” in column “acc”, row “ResNet20” of table “{head}”",
        f"“NaN – 0.91” in column “ci”, row “ResNet20” of table “{head}”",
        f"“None” in column “acc”, row “VGG” of table “{head}”"]
    page(tmp_path / "good", "<table><tr><td>nano</td><td>0.91</td><td>—</td><td>none</td></tr></table>")
    assert kinds(tmp_path / "good") == []


@needs_chromium
def test_blocks_wider_than_the_column_fail(tmp_path):
    wide_code = "x = " + "1 + " * 400
    page(tmp_path / "bad", f'<table style="width:3000px"><tr><td>wide</td></tr></table>'
                           f'<div class="cell_input"><pre style="overflow:auto">{wide_code}</pre></div>'
                           f'<div class="cell_output"><div style="width:1200px">an image</div></div>')
    defects = A.audit(tmp_path / "bad")
    assert [d.kind for d in defects] == ["overflow"] * 3
    assert defects[0].detail.startswith(f"table 3000 px wide in a {COLUMN} px column")
    page(tmp_path / "good", '<table style="width:100%"><tr><td>fits</td></tr></table><pre>x = 1</pre>'
                            '<div class="cell_output"><pre>short</pre></div>')
    assert kinds(tmp_path / "good") == []


@needs_chromium
def test_overflow_is_measured_at_the_readers_1400_px_window(tmp_path):
    seen = A.probe(page(tmp_path, "<p>x</p>"))
    assert seen["window"] == A.WINDOW[0] and seen["column"] == COLUMN


@needs_chromium
def test_a_figure_with_4_pt_tick_labels_fails_and_10_pt_passes(tmp_path):
    figure_page(tmp_path / "bad", ticks_figure(4))   # 4 pt at 100 dpi, drawn at its own width: 5.6 px
    (defect,) = A.audit(tmp_path / "bad")
    assert defect.kind == "font" and defect.detail.startswith("5.6 px < 8 px: 4 pt at 100 dpi")
    figure_page(tmp_path / "good", ticks_figure(10))  # 13.9 px
    assert kinds(tmp_path / "good") == []


@needs_chromium
def test_figure_fonts_are_measured_at_the_width_the_page_draws_them(tmp_path):
    """10-pt text at 100 dpi is 13.9 px in the PNG; the page draws that PNG (about 360 px wide) 90 px wide."""
    figure_page(tmp_path / "shrunk", ticks_figure(10), style="width:90px")
    (defect,) = A.audit(tmp_path / "shrunk")
    assert defect.kind == "font" and defect.detail.startswith("3.5 px")
    # a wide figure at 200 dpi squeezed into the column: 10 pt -> 27.8 px in the PNG, x (800 / ~2000)
    figure_page(tmp_path / "wide", ticks_figure(10, dpi=200, inches=(10, 3)), style="max-width:100%")
    assert kinds(tmp_path / "wide") == []             # ~11 px: still legible
    figure_page(tmp_path / "wider", ticks_figure(6, dpi=200, inches=(10, 3)), style="max-width:100%")
    assert kinds(tmp_path / "wider") == ["font"]      # ~6.7 px


@needs_chromium
def test_a_figure_png_without_font_record_is_reported_unmeasured(tmp_path):
    fig = ticks_figure(10)
    (tmp_path / "_images").mkdir()
    fig.savefig(tmp_path / "_images" / "f.png")
    plt.close(fig)
    page(tmp_path, '<figure><img src="_images/f.png"><figcaption>glued by hand</figcaption></figure>')
    assert kinds(tmp_path) == ["unmeasured"]


def test_only_the_books_own_pages_are_audited(tmp_path):
    for name in ("genindex.html", "search.html", "_static/x.html", "book/01_a.html"):
        page(tmp_path / Path(name).parent, "<p>x</p>", Path(name).name)
    (tmp_path / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=book/01_a.html" />')
    assert [p.relative_to(tmp_path).as_posix() for p in A.pages(tmp_path)] == ["book/01_a.html"]


@needs_chromium
def test_command_line_prints_defects_and_exits_1_only_when_there_are_any(tmp_path):
    page(tmp_path / "bad", "<table><tr><td>nan</td></tr></table>")
    page(tmp_path / "good", "<p>fine</p>")
    run = [sys.executable, "-m", "overinterp.pages.audit"]
    bad = subprocess.run(run + [str(tmp_path / "bad")], capture_output=True, text=True)
    good = subprocess.run(run + [str(tmp_path / "good")], capture_output=True, text=True)
    assert (bad.returncode, bad.stdout.strip()) == (1, "p.html: nan: “nan” in column “”, row “nan” of table “nan”")
    assert (good.returncode, good.stdout.strip()) == (0, "no defects")


# --- the whole tiny book ------------------------------------------------------------------------

def test_tables_show_an_undefined_value_as_a_dash_not_nan():
    import numpy as np
    import pandas as pd
    from overinterp.pages.chapter import table_html
    html = table_html(pd.DataFrame({"mean": [1.5, np.nan], "n": [3, None]}, index=["a", "b"]))
    assert "NaN" not in html and "None" not in html and html.count("<td>—</td>") == 2 and "<td>1.5</td>" in html


def test_text_pt_keeps_text_at_least_the_asked_pixels_on_the_page():
    from overinterp.pages.plots import PAGE_PX, text_pt
    assert text_pt(5.0) == pytest.approx(9 * 72 / 100)                  # 500 px: shown at its own size
    wide = text_pt(13.0)                                               # 1300 px: shrunk to the page
    assert wide * 100 / 72 * PAGE_PX / 1300 == pytest.approx(9.0) and wide > text_pt(5.0)


def test_captioned_tables_are_numbered_per_chapter_and_show_no_nan():
    import numpy as np
    import pandas as pd
    from overinterp.pages import chapter as C
    from overinterp.paper import verdicts as V
    C._TABLES.update(chapter=4, count=0)
    first = C.captioned(pd.DataFrame({"x": [1.234, np.nan], "w": ["a", None]}), "Two rows.").to_html()
    assert "<caption>Table 4.1. Two rows.</caption>" in first and ">1.23<" in first
    assert "nan" not in first.lower().replace("na_rep", "") and first.count(">—<") == 2
    v = V.subsets_accurate(full={"m": [np.ones(20)]}, bs={"m": [np.ones(20)]})
    second = C.verdict_table(v).to_html()
    assert "<caption>Table 4.2. The numbers behind the verdict (holds): per row, drop (points)" in second
    assert 'id="T_t4-2"' in second                                     # a fixed id: the same page on every build
