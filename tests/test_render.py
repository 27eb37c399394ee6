"""The rendered book lists its references and typesets its formulas offline, with the MathJax 3
served beside the pages (``make mathjax``), not from a CDN: the introduction is built alone (the
other chapters are neither executed nor rendered) and opened in a headless chromium."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from overinterp.pages.build import ROOT, build

MATHJAX = ROOT / ".mathjax" / "node_modules" / "mathjax" / "es5" / "tex-mml-chtml.js"
needs_mathjax = pytest.mark.skipif(not MATHJAX.exists(), reason="no local MathJax: run `make mathjax` (needs npm)")
TITLES = ["Overinterpretation reveals image classification model pathologies",
          "What made you do this? Understanding black-box decisions with sufficient input subsets",
          "Pathologies of neural models make interpretations difficult",
          "Shared Interest: human annotations vs. AI saliency",
          "Bayes-TrEx: a Bayesian sampling approach to model transparency by example"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    build({"dataset": "fashion-mnist", "profile": "tiny", "device": "cpu", "seed": 0}, out=out,
          only=["01_introduction"])
    return out / "html" / "book" / "01_introduction.html"


def _paragraph(html: str, text: str) -> str:
    """The <p> element around ``text``."""
    i = html.index(text)
    return html[html.rindex("<p>", 0, i):html.index("</p>", i)]


def test_references_are_listed_and_every_citation_resolves(page):
    html = page.read_text()
    refs = html[html.index('id="references"'):]
    refs = refs[:refs.index("</section>")]
    for title in TITLES:
        assert title in refs, title
    cites = re.findall(r'<span class="bibtex-citation"[^>]*>(.*?)</span>', html, re.S)
    assert len(cites) == len(TITLES)
    assert all('<a class="reference internal" href="#' in c for c in cites), cites   # none left as "[]"
    assert "{cite}" not in html and "could not find bibtex key" not in html
    intro = _paragraph(html, "This book re-runs")
    assert "Carter <em>et al.</em>, 2021" in intro


def test_mathjax_comes_from_the_book_not_a_cdn(page):
    html = page.read_text()
    assert not re.search(r"(https?:)?//[^\s\"'<>]*mathjax", html, re.I), "MathJax referenced by URL"
    (src,) = [s for s in re.findall(r'<script[^>]*\ssrc="([^"]+)"', html) if "mathjax" in s.lower()]
    assert src.split("?")[0].endswith("_static/mathjax/es5/tex-mml-chtml.js")
    if MATHJAX.exists():
        assert (page.parent / src.split("?")[0]).is_file()


@needs_mathjax
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
def test_formulas_are_typeset_offline_in_a_browser(page):
    html = page.read_text()
    anchor = "Backward selection removes"
    assert r"\(f_c(x_S)\)" in _paragraph(html, anchor)               # as Sphinx wrote it
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    para = _paragraph(dom, anchor)
    assert "<mjx-container" in para and "\\(" not in para, para[:2000]
    assert dom.count("<mjx-container") == html.count('class="math notranslate nohighlight"')
