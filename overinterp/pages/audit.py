"""What a reader of the rendered book must not meet (issue 21, "Pages a reader trusts"), checked on
the built HTML pages as headless Chromium lays them out at a 1400 px wide window:

- ``repr``: raw Python reprs in the page text (``<IPython.``, ``Verdict(``, ``Styler at``,
  ``<Figure size``, ``Text(``, ``<matplotlib``, ``… object at 0x…``): output nobody meant to show.
  Shown code (``.cell_input``) is not page text.
- ``nan``: a table cell printing ``NaN``/``nan`` (as a word) or exactly ``None``/``NaT``/``<NA>``.
- ``overflow``: a ``table``, ``pre`` or ``div.cell_output`` wider (``scrollWidth``) than the content
  box of the main column (``article.bd-article``), so that part of it hides behind a scroll bar.
  Collapsed ``<details>`` are opened first; of nested overflowing elements the outermost is reported.
- ``font``: a figure whose smallest text is under :data:`MIN_PX` CSS px at page width. The figure
  says its own sizes: :func:`figure_png` (what :func:`overinterp.pages.chapter.figure` glues) writes
  into the PNG the smallest font size in points among the text its draw puts on the canvas and the
  dpi it was rendered at; on the page that text is ``pt × dpi / 72 × drawn width / PNG width`` px.
- ``unmeasured``: a figure PNG without that record (glued some other way), so its fonts are unknown.

``audit(html_dir)`` returns the defects; ``python -m overinterp.pages.audit _build/html`` prints one
line per defect and exits 1 when there are any.
"""
from __future__ import annotations

import dataclasses
import html
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["Defect", "MIN_PX", "WINDOW", "text_sizes", "figure_png", "font_record", "probe", "pages", "audit"]

MIN_PX = 8.0           # smallest legible text in a figure, CSS px at page width
WINDOW = (1400, 1000)  # the reader's window, px (width, height)
FONT_KEY = "overinterp-fonts"  # the PNG text chunk holding a figure's font record
# one match per repr: a <...> repr is taken whole, so "<matplotlib.text.Text object at 0x…>" counts once
REPRS = re.compile(r"<(?:IPython\.|matplotlib|Figure size|Axes:)[^<>]*>?|<[\w.]+ object at 0x[0-9a-f]+>"
                   r"|\bVerdict\(|Styler at|\bText\(")
NAN_CELL = re.compile(r"(?<![\w.])(?:nan|NaN)(?!\w)|^(?:None|NaT|<NA>)$")
SKIP = {"genindex.html", "search.html", "py-modindex.html"}

# Runs in the page once it has loaded: opens collapsed boxes, measures, and writes what it saw into
# <pre id="overinterp-audit"> for --dump-dom to carry out.
PROBE = """<script>window.addEventListener("load", () => setTimeout(() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const col = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const cs = getComputedStyle(col), width = col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const label = (e) => (e.innerText || e.textContent).replace(/\\s+/g, " ").trim().slice(0, 70);
  const wide = [...col.querySelectorAll("table, pre, div.cell_output")].filter((e) => e.scrollWidth > width + 1);
  const text = col.cloneNode(true);
  text.querySelectorAll(".cell_input, script, style").forEach((e) => e.remove());
  const out = document.createElement("pre");
  out.id = "overinterp-audit";
  out.textContent = JSON.stringify({window: window.innerWidth, column: width, text: text.textContent,
    overflow: wide.filter((e) => !wide.some((o) => o !== e && o.contains(e)))
                  .map((e) => ({tag: e.tagName.toLowerCase(), width: e.scrollWidth, label: label(e)})),
    cells: [...col.querySelectorAll("td, th")].map((c) => {
      const t = c.closest("table"), r = c.closest("tr"), head = t.querySelector("tr");
      return {text: c.textContent.trim(), row: label(r.children[0]), table: label(t.querySelector("caption") || head),
              column: head && head !== r ? label(head.children[c.cellIndex] || head) : ""}; }),
    images: [...col.querySelectorAll("img")].map((i) => ({src: i.currentSrc, width: i.getBoundingClientRect().width,
      caption: label(i.closest("figure")?.querySelector("figcaption") || i)}))});
  document.body.appendChild(out);
}, 1000));</script>"""


@dataclasses.dataclass(frozen=True)
class Defect:
    """One thing a reader should not meet: on ``page`` (relative to the book's HTML folder), of
    ``kind`` (repr, nan, overflow, font, unmeasured), described by ``detail``."""
    page: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.detail}"


def text_sizes(fig) -> list[float]:
    """Font sizes in points of every piece of text a draw of ``fig`` puts on the canvas: hidden
    artists, empty strings and the tick labels of an axis turned off draw nothing and do not count."""
    from matplotlib.backends.backend_agg import RendererAgg
    w, h = fig.get_size_inches() * fig.dpi
    renderer, sizes = RendererAgg(int(w), int(h), fig.dpi), []
    draw_text = renderer.draw_text

    def spy(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            sizes.append(prop.get_size_in_points())
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = spy
    fig.draw(renderer)
    return sizes


def figure_png(fig) -> bytes:
    """``fig`` as the notebook's inline backend renders it (PNG at the figure's dpi, tight bounding
    box), carrying its font record: the smallest drawn font size in points and that dpi."""
    sizes = text_sizes(fig)
    record = {"min_pt": min(sizes) if sizes else None, "dpi": float(fig.dpi)}
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor(),
                edgecolor=fig.get_edgecolor(), metadata={FONT_KEY: json.dumps(record)})
    return buf.getvalue()


def font_record(png: Path) -> tuple[dict | None, int]:
    """(the font record :func:`figure_png` wrote into ``png``, or None; the PNG's width in px)."""
    from PIL import Image
    with Image.open(png) as im:
        record = im.info.get(FONT_KEY)
        return (json.loads(record) if record else None), im.width


def probe(page: Path, timeout: float = 120) -> dict:
    """What headless Chromium sees of ``page`` in a :data:`WINDOW` window: the window and column
    widths, the page text without shown code, table cells, overflowing blocks and images drawn."""
    page = page.resolve()
    source = page.read_text(encoding="utf-8")
    base = f'<base href="{page.parent.as_uri()}/">'
    source = re.sub(r"<head[^>]*>", lambda m: m.group(0) + base, source, count=1) if "<head" in source else base + source
    source = source.replace("</body>", PROBE + "</body>") if "</body>" in source else source + PROBE
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(source, encoding="utf-8")
        dom = subprocess.run(
            [shutil.which("chromium") or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--allow-file-access-from-files", "--hide-scrollbars",
             f"--user-data-dir={tmp}/profile", f"--window-size={WINDOW[0]},{WINDOW[1]}",
             "--virtual-time-budget=15000", "--dump-dom", copy.as_uri()],
            capture_output=True, text=True, timeout=timeout).stdout
    found = re.search(r'<pre id="overinterp-audit">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError(f"chromium reported nothing for {page}: {dom[-500:]!r}")
    return json.loads(html.unescape(found.group(1)))


def _check(name: str, seen: dict) -> list[Defect]:
    """The defects of one page from what :func:`probe` saw of it."""
    out = []
    for m in REPRS.finditer(seen["text"]):
        context = " ".join(seen["text"][max(0, m.start() - 30):m.end() + 50].split())
        out.append(Defect(name, "repr", f"{m.group(0)!r} in “{context}”"))
    out += [Defect(name, "nan", f"“{c['text'][:70]}” in column “{c['column']}”, row “{c['row']}” of table "
                   f"“{c['table']}”") for c in seen["cells"] if NAN_CELL.search(c["text"])]
    out += [Defect(name, "overflow", f"{o['tag']} {o['width']} px wide in a {seen['column']:.0f} px column: "
                   f"“{o['label']}”") for o in seen["overflow"]]
    for img in seen["images"]:
        url = urlparse(img["src"])
        png = Path(unquote(url.path))
        if url.scheme != "file" or png.suffix.lower() != ".png" or png.parent.name != "_images" or img["width"] <= 0:
            continue
        record, natural = font_record(png)
        if record is None or record.get("min_pt") is None:
            out.append(Defect(name, "unmeasured", f"{png.name} carries no font record: “{img['caption']}”"))
            continue
        px = record["min_pt"] * record["dpi"] / 72 * img["width"] / natural
        if px < MIN_PX:
            out.append(Defect(name, "font", f"{px:.1f} px < {MIN_PX:g} px: {record['min_pt']:g} pt at "
                              f"{record['dpi']:g} dpi, {natural} px drawn {img['width']:.0f} px wide "
                              f"({png.name}: “{img['caption']}”)"))
    return out


def pages(html_dir: Path) -> list[Path]:
    """The book's pages under ``html_dir``: not Sphinx's index, search, ``_``-folders or redirects."""
    return sorted(p for p in Path(html_dir).rglob("*.html")
                  if p.name not in SKIP and not any(part.startswith("_") for part in p.relative_to(html_dir).parts)
                  and not re.search(r'http-equiv="refresh"', p.read_text(encoding="utf-8")[:2000], re.I))


def audit(html_dir: Path) -> list[Defect]:
    """Every defect of every page of the book rendered in ``html_dir``."""
    html_dir = Path(html_dir)
    return [d for p in pages(html_dir) for d in _check(p.relative_to(html_dir).as_posix(), probe(p))]


if __name__ == "__main__":
    defects = audit(Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html"))
    print("\n".join(map(str, defects)) or "no defects")
    sys.exit(1 if defects else 0)
