"""The page audit, tooling for the built book (not part of the library): what a reader of the rendered book must not meet (pages a reader can trust, pages that do not read
as generated), checked on the built HTML pages as headless Chromium lays them out at a 1400 px
wide window:

- ``repr``: raw Python reprs in the page text (``<IPython.``, ``Verdict(``, ``Styler at``,
  ``<Figure size``, ``Text(``, ``<matplotlib``, ``… object at 0x…``): output nobody meant to show.
  Shown code (``.cell_input``) is not page text.
- ``nan``: a table cell printing ``NaN``/``nan`` (as a word) or exactly ``None``/``NaT``/``<NA>``, or
  ``nan`` (any case, as a word, with or without a sign) anywhere in the page's prose: a value that does
  not exist is written "—" (:data:`overinterp.paper.formatting.MISSING`) in a table and in words in a
  sentence (``placeholder``), never "nan%" or "nan to nan".
- ``verb``: an outcome glued into a sentence written for another (:func:`missing_verbs`): "inconclusive"
  after a noun or verb rather than a form of "to be" (:data:`LINKING`), a determiner or a conjunction
  ("the claim inconclusive at this scale", "the kept pixels suffice inconclusive"); a form of "to be"
  before "holds", "does not hold" or "cannot be tested" ("is holds"); a claim's outcome after a colon and
  then "here" or "there" ("Springer's claim that …: “inconclusive at this scale” here"). "the claim is
  “inconclusive at this scale”" passes; so does a label ("**As accurate (4.1)** inconclusive at this
  scale"; "edge: inconclusive at this scale.").
- ``placeholder``: the missing value "—" standing as a value inside a sentence (:data:`PLACEHOLDER`):
  before a unit, a closing bracket or a punctuation mark ("—%", "— points", "The paper: —."), after an
  opening bracket ("(— times"), or as one end of a range ("between — and —", "—–—"). A dash between
  clauses ("the setting — the backward-selection method") and the symbol in quotes ("“—”: none of
  them") pass.
- ``count``: a count read as no count (:data:`ZERO_COUNT`): "the first 0", or a note of what 0 would
  mean after a count ("on the first 8 (0: not at this profile …)").
- ``doubled``: a word twice in a row ("the the", "of of"), in sentences (shown code and math left out).
- ``decimals``: a number in prose with more than three decimals ("0.74812"), not a DOI, URL or arXiv number.
- ``agreement``: "1" before a plural verb or noun ("1 do not", "1 are", "1 were", "1 images"), unless it
  ends a list ("seeds 0 and 1 are").
- ``float``: a raw float, in prose or a table cell: four or more decimals ending in three zeros
  (pandas' six decimals, ``0.990000``, ``64.400000``) or seven or more decimals (``0.30000000000000004``);
  and a count with decimals, a cell such as ``3.00`` in a column or row named by :data:`COUNTS`.
- ``range``: a range whose two ends read the same ("3–3%"): printed once ("3%").
- ``table``: the numbers of the tables' captions ("Table 4.2." opening a ``<caption>`` or a paragraph):
  a number without its chapter ("Table 1.", which reads as the paper's Table 1), a chapter other than the
  number of the page's title, numbers that do not go up one page's tables in order within one chapter (a
  restart), and a number used on two pages of one book (the pages of one folder: an edition's copies are
  a book of their own).
- ``title``: a chapter title (``h1``, without its number) that asserts an outcome of the paper's claims
  rather than naming a topic or asking: it is not a question and contains one of :data:`ASSERTING`
  ("Sparse subsets are real statistical patterns", "Humans struggle …", "Ensembles mitigate …").
- ``xref``: a link that reads "chapter N" to a page whose title is not numbered N.
- ``overflow``: a ``table``, ``pre`` or ``div.cell_output`` wider (``scrollWidth``) than the content
  box of the main column (``article.bd-article``), so that part of it hides behind a scroll bar.
  Collapsed ``<details>`` are opened first; of nested overflowing elements the outermost is reported.
- ``font``: a figure whose smallest text is under :data:`MIN_PX` CSS px at page width. The figure
  says its own sizes: :func:`overinterp.pages.plots.figure_png` (what :func:`overinterp.pages.chapter.figure` glues) writes
  into the PNG the smallest font size in points among the text its draw puts on the canvas and the
  dpi it was rendered at; on the page that text is ``pt × dpi / 72 × drawn width / PNG width`` px.
- ``unmeasured``: a figure PNG without that record (glued some other way), so its fonts are unknown.

``audit(html_dir)`` returns the defects; ``python -m tools.page_audit _build/html`` prints one
line per defect and exits 1 when there are any. The prose of an edition's page (``editions/<name>/``) is
the Markdown of the commit that executed it, mended only by executing the edition again: its defects of
the kinds of :data:`PROSE` are marked ``committed``, left out of ``audit(html_dir)`` and returned by
``audit(html_dir, committed=True)``; the command line prints them after the others, as notes that do not
fail it.
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

from overinterp.pages.chapter import COUNTS
from overinterp.pages.plots import FONT_KEY, figure_png, text_sizes

__all__ = ["Defect", "MIN_PX", "WINDOW", "COUNTS", "LINKING", "ASSERTING", "PROSE", "text_sizes", "figure_png",
           "font_record", "probe", "missing_verbs", "debris", "table_numbers", "pages", "audit"]

MIN_PX = 8.0           # smallest legible text in a figure, CSS px at page width
WINDOW = (1400, 1000)  # the reader's window, px (width, height)
# one match per repr: a <...> repr is taken whole, so "<matplotlib.text.Text object at 0x…>" counts once
REPRS = re.compile(r"<(?:IPython\.|matplotlib|Figure size|Axes:)[^<>]*>?|<[\w.]+ object at 0x[0-9a-f]+>"
                   r"|\bVerdict\(|Styler at|\bText\(")
NAN_CELL = re.compile(r"(?<![\w.])(?:nan|NaN)(?!\w)|^(?:None|NaT|<NA>)$")
NAN_TEXT = re.compile(r"(?<![\w.])[+-]?nan(?!\w)", re.I)   # "nan%", "(95% interval nan to nan)", "+NaN"
#: forms of "to be" (and adverbs that may stand between it and the word) after which "inconclusive" reads
LINKING = {"is", "are", "was", "were", "be", "been", "being", "remains", "remain", "stays", "stay", "seems", "seem",
           "appears", "appear", "still", "also", "now", "thus", "therefore", "then", "so"}
#: words after which "inconclusive" reads as an adjective in a sentence: forms of "to be" and verbs taking an
#: adjective (:data:`LINKING`), determiners, conjunctions, prepositions and adverbs ("an inconclusive verdict",
#: "holds, does not hold or inconclusive", "otherwise inconclusive")
BEFORE_ADJECTIVE = LINKING | {
    "a", "an", "the", "this", "that", "these", "those", "its", "their", "our", "his", "her", "each", "every", "any",
    "no", "all", "both", "either", "neither", "some", "most", "more", "less", "least", "many", "few", "one", "two",
    "three", "and", "or", "nor", "but", "not", "as", "of", "from", "to", "into", "at", "by", "with", "without", "than",
    "otherwise", "else", "mostly", "largely", "partly", "often", "again", "equally", "only", "even", "rather",
    "become", "becomes", "became", "turn", "turns", "turned", "left", "leaves", "leave", "look", "looks", "looked",
    "seemed", "appeared", "remained", "stayed", "called", "deemed", "judged", "rated", "found", "declared", "marked",
    "count", "counts", "counted", "read", "reads", "went", "goes", "go", "returns", "returned"}
VERDICT_VERB = re.compile(r"\b(?:is|are|was|were|be|been|being)\s+(?:holds|does not hold|cannot be tested)\b", re.I)
#: a claim's outcome after a colon, then "here" or "there": "Springer's claim that …: “inconclusive at this scale” here"
COLON_OUTCOME = re.compile(r"\bclaim\b[^.;!?]*:\s*[“”\"‘’*_]*(?:inconclusive\b[^.;!?:“”\"]*?|holds|does not hold"
                           r"|cannot be tested)[“”\"‘’*_]*\s+(?:here|there)\b", re.I)
QUOTES = "“”\"‘’'*_«»"
SENTENCE = re.compile(r"[.;:!?](?=\s)|[.;:!?]$|\n")   # where a sentence (or a box's title) ends
#: the missing value (:data:`overinterp.paper.formatting.MISSING`) standing as a value: "—" before a unit, a
#: closing bracket, a punctuation mark, an opening bracket, a range's dash or "and/to —"; after an opening
#: bracket, a range's dash or "between"; not inside quotes (the symbol named: "“—”")
PLACEHOLDER = re.compile(
    r"(?<![“”\"‘’'])—(?![“”\"‘’'])(?=[^\S\n]*(?:[%)\]},;.:(–-]|$|\n|(?:and|to|or)\s+—|(?:times|points?|images?|epochs?"
    r"|replicates?|pixels?|models?|percent|seconds?|s|h|px)\b))"
    r"|(?<=[(\[{–])[^\S\n]*—(?![“”\"‘’'])|\bbetween[^\S\n]+—")
#: a count that reads as none ("the first 0"), or a note of what 0 would mean ("(0: not at this profile")
ZERO_COUNT = re.compile(r"\bfirst 0\b(?!\.\d)|\(0:[^\S\n]+(?:not|none|no)\b")
DOUBLED = re.compile(r"\b([A-Za-z]+)[^\S\n]+\1\b", re.I)
#: more than three decimals, not in a version, path, DOI or arXiv number (arXiv:2506.19630)
DECIMALS = re.compile(r"(?<![\w./:−-])[+−-]?\d+\.\d{4,}(?!\w|\.\d)")
#: "1" before a plural verb or noun; "seeds 0 and 1 are" (the end of a list) is left alone
AGREEMENT = re.compile(r"(?<![\w.,+−-])(?<!and )(?<!or )(?<!to )(?<!– )(?<!Table )(?<!Figure )(?<!Fig\. )"
                       r"(?<!chapter )(?<!Chapter )(?<!section )(?<!seed )1[^\S\n]+(do|are|were|have|hold|lie|fail|show"
                       r"|agree|differ|images|replicates|models|seeds|members|claims|outcomes|pixels|points|subsets"
                       r"|thresholds|samples|classes|runs|chapters|editions|architectures|times|epochs)\b")
#: the kinds of defect that live in a page's Markdown prose: on an edition's page, the committed execution's
PROSE = {"verb", "placeholder", "count", "doubled", "decimals", "agreement"}
# a number with four or more decimals ending in 000, or with seven or more decimals; not part of a version (2.5.1)
# or of a path or DOI (10.1145/3491102.3501965)
RAW_FLOAT = re.compile(r"(?<![\w./])\d+\.(?:\d+000|\d{7,})(?!\w|\.\d)")
EQUAL_RANGE = re.compile(r"(?<![\w.,])([+-]?\d+(?:\.\d+)?)–\1(?!\w|\.\d)")
DECIMAL = re.compile(r"^[+-]?\d+\.\d+$")
#: words by which a title asserts what the paper's claims found (a title that is a question may use them)
ASSERTING = re.compile(r"\b(?:are|is) real\b|\bstruggles?\b|\bmitigates?\b|\breveals?\b|\bpredicts?\b|\bproves?\b"
                       r"|\bconfirms?\b|\bshows? that\b", re.I)
TABLE_LABEL = re.compile(r"^Table (\d+(?:\.\d+)?)\.(?:\s|$)")
CHAPTER_LINK = re.compile(r"^chapter (\d+)$", re.I)
SKIP = {"genindex.html", "search.html", "py-modindex.html"}

# Runs in the page once it has loaded: opens collapsed boxes, measures, and writes what it saw into
# <pre id="overinterp-audit"> for --dump-dom to carry out.
PROBE = """<script>window.addEventListener("load", () => setTimeout(() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const col = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const cs = getComputedStyle(col), width = col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const label = (e) => (e.innerText || e.textContent).replace(/\\s+/g, " ").trim().slice(0, 70);
  const grids = new Map();
  const columns = (t) => {  // each cell of table t -> the first column it covers, with row and column spans
    if (!grids.has(t)) {
      const at = new Map(), taken = [];
      [...t.rows].forEach((r, i) => {
        let x = 0;
        for (const c of r.cells) {
          while (taken[i] && taken[i][x]) x++;
          at.set(c, x);
          for (let dy = 0; dy < c.rowSpan; dy++) for (let dx = 0; dx < c.colSpan; dx++) (taken[i + dy] ||= [])[x + dx] = true;
          x += c.colSpan;
        }
      });
      grids.set(t, at);
    }
    return grids.get(t);
  };
  const wide = [...col.querySelectorAll("table, pre, div.cell_output")].filter((e) => e.scrollWidth > width + 1);
  const text = col.cloneNode(true);
  text.querySelectorAll(".cell_input, script, style, .headerlink").forEach((e) => e.remove());
  // a line break in the source is a space: only the end of a block ends a line (and so a sentence)
  const walk = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.parentElement || !n.parentElement.closest("pre")) n.nodeValue = n.nodeValue.replace(/\\s+/g, " ");
  }
  // the end of a block ends a line, so that the words of two blocks do not run together
  text.querySelectorAll("p, div, li, td, th, tr, caption, figcaption, pre, dt, dd, section, blockquote, "
                        + "h1, h2, h3, h4, h5, h6").forEach((e) => e.append("\\n"));
  const prose = text.cloneNode(true);
  prose.querySelectorAll("table").forEach((e) => e.remove());
  const sentences = prose.cloneNode(true);   // the prose without shown code and math
  sentences.querySelectorAll("pre, code, .highlight, .math, mjx-container, math, .MathJax").forEach((e) => e.remove());
  const h1 = col.querySelector("h1"), title = h1 && h1.cloneNode(true);
  title?.querySelectorAll(".section-number, .headerlink").forEach((e) => e.remove());
  const out = document.createElement("pre");
  out.id = "overinterp-audit";
  out.textContent = JSON.stringify({window: window.innerWidth, column: width, text: text.textContent,
    prose: prose.textContent, sentences: sentences.textContent,
    title: h1 ? {number: (h1.querySelector(".section-number")?.textContent || "").replace(/[.\\s]+$/, "").trim(),
                 text: title.textContent.replace(/\\s+/g, " ").trim()} : null,
    labels: [...col.querySelectorAll("caption, p")].map(label).filter((t) => /^Table \\S+\\.(\\s|$)/.test(t)),
    links: [...col.querySelectorAll("a[href]")].filter((a) => /^chapter \\d+$/i.test(a.textContent.trim()))
                 .map((a) => ({text: a.textContent.trim(), href: a.href})),
    overflow: wide.filter((e) => !wide.some((o) => o !== e && o.contains(e)))
                  .map((e) => ({tag: e.tagName.toLowerCase(), width: e.scrollWidth, label: label(e)})),
    cells: [...col.querySelectorAll("td, th")].map((c) => {
      const t = c.closest("table"), r = c.closest("tr"), head = t.querySelector("tr"), at = columns(t);
      const heads = t.tHead ? [...t.tHead.rows] : [head], x = at.get(c);
      // the column's name: the innermost header cell over the cell's column that says something
      const names = heads.flatMap((h) => [...h.cells]).filter((h) => at.get(h) <= x && x < at.get(h) + h.colSpan)
                         .map(label).filter((s) => s);
      return {text: c.textContent.trim(), row: label(r.children[0]), table: label(t.querySelector("caption") || head),
              column: heads.includes(r) ? "" : names[names.length - 1] || ""}; }),
    images: [...col.querySelectorAll("img")].map((i) => ({src: i.currentSrc, width: i.getBoundingClientRect().width,
      caption: label(i.closest("figure")?.querySelector("figcaption") || i)}))});
  document.body.appendChild(out);
}, 1000));</script>"""


@dataclasses.dataclass(frozen=True)
class Defect:
    """One thing a reader should not meet: on ``page`` (relative to the book's HTML folder), of
    ``kind`` (repr, nan, verb, placeholder, count, doubled, decimals, agreement, float, range, table, title,
    xref, overflow, font, unmeasured), described by ``detail``; ``committed`` where it lies in the prose of
    an edition's committed execution (mended by executing the edition again)."""
    page: str
    kind: str
    detail: str
    committed: bool = False

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.detail}" + (" (committed edition)" if self.committed else "")


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
    dom = ""
    # a loaded machine can starve the probe's timer; one more try tells that apart from a page
    # that never reports
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / page.name
            copy.write_text(source, encoding="utf-8")
            dom = subprocess.run(
                [shutil.which("chromium") or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--allow-file-access-from-files", "--hide-scrollbars",
                 f"--user-data-dir={tmp}/profile", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 "--virtual-time-budget=15000", "--dump-dom", copy.as_uri()],
                capture_output=True, text=True, timeout=timeout).stdout
        report = audit_report(dom)
        if report is not None:
            return report
    raise RuntimeError(f"chromium's DOM of {page} holds no readable audit report "
                       f"({len(dom)} characters, ending {dom[-200:]!r})")


def audit_report(dom: str) -> dict | None:
    """The JSON the probe wrote into its ``<pre id="overinterp-audit">`` (whatever other attributes
    or order the browser serialises it with), or None when the DOM holds no whole report."""
    tag = re.search(r'<pre\b[^>]*\bid="overinterp-audit"[^>]*>', dom)
    end = dom.find("</pre>", tag.end()) if tag else -1
    if end < 0:
        return None
    try:
        return json.loads(html.unescape(dom[tag.end():end]))
    except json.JSONDecodeError:
        return None


def _around(text: str, start: int, end: int, before: int = 30, after: int = 50) -> str:
    return " ".join(text[max(0, start - before):end + after].split())


def _where(c: dict) -> str:
    return f"in column “{c['column']}”, row “{c['row']}” of table “{c['table']}”"


def missing_verbs(text: str) -> list[str]:
    """The sentences of ``text`` in which an outcome word stands without its verb, quotes and emphasis
    between words allowed: "inconclusive" right after a word that is not a form of "to be", a determiner,
    a conjunction, a preposition or an adverb (:data:`BEFORE_ADJECTIVE`; after a number or a punctuation
    mark it is an item of a list or a label); "is holds", "are cannot be tested"
    (:data:`VERDICT_VERB`); and a claim's outcome after a colon and then "here" (:data:`COLON_OUTCOME`)."""
    found = []
    for sentence in SENTENCE.split(text):
        for m in re.finditer(r"\binconclusive\b", sentence, re.I):
            word = re.search(r"(\w+)$", sentence[:m.start()].rstrip().rstrip(QUOTES).rstrip())
            if word and not word.group(1).isdigit() and word.group(1).lower() not in BEFORE_ADJECTIVE:
                found.append(" ".join(sentence.split()))
                break
        else:
            if VERDICT_VERB.search(sentence):
                found.append(" ".join(sentence.split()))
    # a colon ends no sentence here: the outcome after it belongs to the claim before it
    for m in COLON_OUTCOME.finditer(text):
        start = max(text.rfind(".", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
        found.append(" ".join(text[start:m.end()].split()))
    return found


def debris(text: str, sentences: str | None = None) -> list[tuple[str, str]]:
    """(kind, what) of each template pattern in ``text`` (a page's prose): ``placeholder``
    (:data:`PLACEHOLDER`), ``count`` (:data:`ZERO_COUNT`), ``doubled`` (:data:`DOUBLED`, in ``sentences``
    where given: the prose without shown code and math), ``decimals`` (:data:`DECIMALS`) and ``agreement``
    (:data:`AGREEMENT`); the ``verb`` kind is :func:`missing_verbs`."""
    out = []
    for kind, pattern in (("placeholder", PLACEHOLDER), ("count", ZERO_COUNT), ("doubled", DOUBLED),
                          ("decimals", DECIMALS), ("agreement", AGREEMENT)):
        where = sentences if kind == "doubled" and sentences is not None else text
        out += [(kind, f"{m.group(0).strip()!r} in “{_around(where, m.start(), m.end())}”")
                for m in pattern.finditer(where)]
    return out


def table_numbers(labels: list[str], chapter: str = "") -> list[str]:
    """What is wrong with the numbers of one page's table captions, in order: a number without its
    chapter ("Table 1."), one of another chapter than the page's title number ``chapter`` (where it has
    one), or one that does not follow the one before it within the same chapter."""
    out, last = [], None
    for text in labels:
        m = TABLE_LABEL.match(text)
        if not m:
            continue
        number = m.group(1)
        if "." not in number:
            out.append(f"“Table {number}.” has no chapter number and reads as the paper's Table {number}: "
                       f"“{text}”")
            continue
        key = tuple(int(x) for x in number.split("."))
        if chapter and str(key[0]) != chapter:
            out.append(f"“Table {number}.” on the page of chapter {chapter}: “{text}”")
        elif last is not None and (key[0] != last[0] or key[1] <= last[1]):
            out.append(f"“Table {number}.” after “Table {last[0]}.{last[1]}.”: the numbering restarts: "
                       f"“{text}”")
        last = key
    return out


def _check(name: str, seen: dict) -> list[Defect]:
    """The defects of one page from what :func:`probe` saw of it."""
    out = []
    for m in REPRS.finditer(seen["text"]):
        out.append(Defect(name, "repr", f"{m.group(0)!r} in “{_around(seen['text'], m.start(), m.end())}”"))
    out += [Defect(name, "nan", f"“{c['text'][:70]}” {_where(c)}")
            for c in seen["cells"] if NAN_CELL.search(c["text"])]
    prose = seen.get("prose", "")
    out += [Defect(name, "nan", f"{m.group(0)!r} in “{_around(prose, m.start(), m.end())}”")
            for m in NAN_TEXT.finditer(prose)]
    out += [Defect(name, "verb", f"an outcome without its verb: “{s[:160]}”") for s in missing_verbs(prose)]
    out += [Defect(name, kind, what) for kind, what in debris(prose, seen.get("sentences", prose))]
    out += [Defect(name, "float", f"raw float {m.group(0)!r} in “{_around(prose, m.start(), m.end())}”")
            for m in RAW_FLOAT.finditer(prose)]
    for c in seen["cells"]:
        if RAW_FLOAT.search(c["text"]):
            out.append(Defect(name, "float", f"raw float “{c['text'][:70]}” {_where(c)}"))
        elif DECIMAL.match(c["text"]) and {c["column"], c["row"]} & COUNTS:
            out.append(Defect(name, "float", f"a count with decimals, “{c['text']}” {_where(c)}"))
    out += [Defect(name, "range", f"{m.group(0)!r}: both ends read the same, in "
                                  f"“{_around(prose, m.start(), m.end())}”") for m in EQUAL_RANGE.finditer(prose)]
    out += [Defect(name, "range", f"“{c['text'][:70]}”: both ends read the same, {_where(c)}")
            for c in seen["cells"] if EQUAL_RANGE.search(c["text"])]
    title = seen.get("title") or {}
    out += [Defect(name, "table", p) for p in table_numbers(seen.get("labels", []), title.get("number", ""))]
    asserting = ASSERTING.search(title.get("text", ""))
    if asserting and not title["text"].rstrip().endswith("?"):
        out.append(Defect(name, "title", f"“{title['text']}” asserts an outcome ({asserting.group(0)!r}): "
                                         "name the topic or ask the question"))
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


def _across(html_dir: Path, seen: dict[Path, dict]) -> list[Defect]:
    """The defects between pages (``seen``: what :func:`probe` saw of each, by resolved path): a table
    number used on two pages of one book (one folder), and a link reading "chapter N" to a page whose
    title has another number, or none."""
    def rel(page: Path) -> str:
        return page.relative_to(html_dir).as_posix() if page.is_relative_to(html_dir) else page.name

    out, first = [], {}
    for page, s in seen.items():
        for text in s.get("labels", []):
            m = TABLE_LABEL.match(text)
            if not m:
                continue
            key = (page.parent, m.group(1))
            if first.setdefault(key, page) != page:
                out.append(Defect(rel(page), "table",
                                  f"“Table {m.group(1)}.” is also a table of {rel(first[key])}: “{text}”"))
        # an edition's pages (editions/<name>/) are unnumbered copies of the chapters: their "chapter N"
        # names the number the book's own part gives that chapter
        edition = page.is_relative_to(html_dir) and page.relative_to(html_dir).parts[:1] == ("editions",)
        for link in [] if edition else s.get("links", []):
            url = urlparse(link["href"])
            target = Path(unquote(url.path)).resolve()
            number = (seen.get(target, {}).get("title") or {}).get("number", "")
            if url.scheme == "file" and number != CHAPTER_LINK.match(link["text"]).group(1):
                out.append(Defect(rel(page), "xref", f"“{link['text']}” links to {rel(target)}, whose title is "
                                                     f"numbered “{number or 'nothing'}”"))
    return out


def _committed(page: str, defects: list[Defect]) -> list[Defect]:
    """``defects`` of ``page``, those of the kinds of :data:`PROSE` marked ``committed`` on an edition's page."""
    if not page.startswith("editions/"):
        return defects
    return [dataclasses.replace(d, committed=True) if d.kind in PROSE else d for d in defects]


def audit(html_dir: Path, committed: bool = False) -> list[Defect]:
    """Every defect of every page of the book rendered in ``html_dir``; the prose defects of an edition's
    committed pages (``committed``, see :data:`PROSE`) only where ``committed`` is true."""
    html_dir = Path(html_dir)
    seen = {p.resolve(): probe(p) for p in pages(html_dir)}
    out = ([d for p, s in seen.items() for name in [p.relative_to(html_dir.resolve()).as_posix()]
            for d in _committed(name, _check(name, s))] + _across(html_dir.resolve(), seen))
    return out if committed else [d for d in out if not d.committed]


if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html")
    if not pages(folder):     # nothing audited is not a clean book
        sys.exit(f"page audit: error: no HTML pages in {folder} (build the book first: make book)")
    defects = audit(folder, committed=True)
    failing = [d for d in defects if not d.committed]
    print("\n".join(map(str, failing + [d for d in defects if d.committed])) or "no defects")
    sys.exit(1 if failing else 0)
