"""The human benchmark as the reader meets it (paper section 3.4, Table 2): :func:`example_rows` for the
chapter's figure and :func:`quiz_html`, the task as one static HTML + JavaScript widget.
"""
import base64
import hashlib
import html
import io
import json

import numpy as np
import torch

from overinterp.experiments.humans import Benchmark, paper_humans
from overinterp.pages.humans import arch_name
from overinterp.pages.plots import show_masked, to_pixels


def example_rows(bench: Benchmark, classes, mean, std, n: int = 10) -> tuple:
    """(rows, column titles) for :func:`~overinterp.pages.plots.image_rows`: the first image of up to ``n``
    classes, unmasked and at every level."""
    first = list(dict.fromkeys(bench.labels.tolist()))[:n]
    cols = torch.tensor([bench.labels.tolist().index(c) for c in first], dtype=torch.long)
    rows = {"original": show_masked(bench.images[cols], None, mean, std)}
    for lvl, f in enumerate(bench.fracs):
        rows[f"{100 * f:g}%"] = show_masked(bench.images[cols], bench.keep[lvl, cols], mean, std)
    return rows, [f"{classes[c]}\n({arch_name(bench.arch[i])})" for c, i in zip(first, cols.tolist())]


# ----------------------------------------------------------------------------- the quiz

def _png(pixels: np.ndarray) -> str:
    """(H, W, 3) floats in [0, 1] -> a PNG data URI."""
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.rint(pixels * 255).astype(np.uint8)).save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


_CSS = """
#{P} {{font-family: sans-serif; border: 1px solid #ccc; border-radius: 6px; padding: .8em; margin: 1em 0}}
#{P} [hidden] {{display: none !important}}
#{P} .oiq-stage img, #{P} .oiq-key img {{width: 128px; height: 128px; image-rendering: pixelated; border: 1px solid #999}}
#{P} .oiq-buttons button, #{P} .oiq-next {{margin: 2px; padding: .3em .6em; cursor: pointer}}
#{P} .oiq-key figure {{display: inline-block; margin: 4px; text-align: center; font-size: 80%; width: 128px}}
#{P} table {{border-collapse: collapse; margin: .5em 0}} #{P} td, #{P} th {{border: 1px solid #ccc; padding: .2em .5em}}
"""

# Vanilla JS; cfg = {prefix, labels (N,), classes (K,), levels (L,), paper, paperStd, model (L,) in [0, 1]}.
_JS = r"""
(function () {
  const cfg = %s;
  const $ = (s) => document.getElementById(cfg.prefix + s);
  const buttons = Array.from($("-buttons").querySelectorAll("button"));
  const answers = cfg.levels.map(() => []);     // answers[level][item] = class picked
  let level = 0, pos = 0, locked = false;
  const n = cfg.labels.length, pct = (x) => (100 * x).toFixed(1) + "%%";
  const fmt = (m, s) => (m === null ? "-" : m.toFixed(1) + (s === null ? "" : " \u00b1 " + s.toFixed(1)) + "%%");
  function show() {
    $("-status").textContent = "Level " + (level + 1) + " of " + cfg.levels.length + " (" + cfg.levels[level] +
      " of pixels kept): image " + (pos + 1) + " of " + n;
    $("-L" + level + "-" + pos).hidden = false;
  }
  function answer(k) {
    if (locked || level >= cfg.levels.length) return;     // no double submission
    const img = $("-L" + level + "-" + pos), item = +img.dataset.item;
    if (answers[level][item] !== undefined) return;
    answers[level][item] = k;
    img.hidden = true;
    locked = true;
    if (++pos < n) { show(); setTimeout(() => { locked = false; }, 150); return; }
    const right = answers[level].filter((a, i) => a === cfg.labels[i]).length;
    $("-rows").insertAdjacentHTML("beforeend", "<tr><td>" + cfg.levels[level] + "</td><td>" + right + "/" + n +
      " = " + pct(right / n) + "</td><td>" + fmt(cfg.paper[level], cfg.paperStd[level]) + "</td><td>" +
      pct(cfg.model[level]) + "</td></tr>");
    $("-result").hidden = false;
    $("-buttons").hidden = true;
    if (level + 1 < cfg.levels.length) { $("-next").hidden = false; $("-status").textContent = "Level done."; }
    else finish();
  }
  function finish() {
    level = cfg.levels.length;
    $("-status").textContent = "Done. The answer key is below, with your answers per level.";
    cfg.labels.forEach((y, i) => {
      $("-you-" + i).textContent = "you: " + answers.map((lv) => (lv[i] === y ? "\u2713" : cfg.classes[lv[i]])).join(" / ");
    });
    $("-key").hidden = false;
  }
  $("-next").addEventListener("click", () => {
    if ($("-next").hidden) return;
    $("-next").hidden = true;
    level += 1; pos = 0; locked = false;
    $("-buttons").hidden = false;
    show();
  });
  buttons.forEach((b) => b.addEventListener("click", () => answer(+b.dataset.class)));
  show();
})();
"""


def quiz_html(bench: Benchmark, classes, mean, std, seed: int = 0, *, uid: str | None = None) -> str:
    """The paper's human benchmark (sections 3.4, S4) as one self-contained, deterministic HTML + JS string.

    The reader classifies ``bench``'s images level by level (shuffled by ``seed``), masked pixels shown as the
    model sees them; each level's accuracy is shown beside the paper's humans (Table 2) and the models'.
    Element ids start with ``uid`` (default: a content hash).
    """
    L, N = len(bench.fracs), len(bench)
    table2 = paper_humans(bench.fracs)
    gen = torch.Generator().manual_seed(seed)
    orders = [torch.randperm(N, generator=gen).tolist() for _ in range(L)]
    levels = [f"{100 * f:g}%" for f in bench.fracs]
    stage = []
    for lvl in range(L):
        pixels = to_pixels(bench.masked[lvl], mean, std)
        for pos, i in enumerate(orders[lvl]):
            stage.append(f'<img id="{{P}}-L{lvl}-{pos}" data-item="{i}" hidden alt="{levels[lvl]} subset, '
                         f'image {pos + 1} of {N}" src="{_png(pixels[i])}">')
    originals = to_pixels(bench.images, mean, std)
    key = [f'<figure><img alt="answer {i + 1}" src="{_png(originals[i])}"><figcaption>{i + 1}. '
           f'<b>{html.escape(classes[y])}</b><br>subset by {html.escape(arch_name(bench.arch[i]))}<br>'
           f'<span id="{{P}}-you-{i}"></span></figcaption></figure>' for i, y in enumerate(bench.labels.tolist())]
    buttons = [f'<button type="button" data-class="{k}">{html.escape(c)}</button>' for k, c in enumerate(classes)]
    model_name = f"models that made the subsets ({', '.join(map(arch_name, bench.counts()))}), {bench.dataset}/{bench.profile}"
    cfg = {"labels": bench.labels.tolist(), "classes": list(classes), "levels": levels,
           "paper": list(table2["paper"]), "paperStd": list(table2["paper_std"]),
           "model": [bench.model_correct[lvl].float().mean().item() for lvl in range(L)]}
    body = "\n".join([
        '<p><b>Classify the sparse subsets yourself.</b> {n} images per level, levels {levels} of pixels kept '
        '(backward selection), in that order; larger subsets contain the smaller ones. '
        'Masked pixels are set to the mean pixel, as the model sees them.</p>'.format(n=N, levels=", ".join(levels)),
        '<p id="{P}-status" class="oiq-status" aria-live="polite"></p>',
        '<div id="{P}-stage" class="oiq-stage">', *stage, "</div>",
        '<div id="{P}-buttons" class="oiq-buttons">', *buttons, "</div>",
        '<div id="{P}-result" class="oiq-result" hidden><table><thead><tr><th>level</th><th>you</th>'
        '<th>paper: humans, CIFAR-10 (Table 2)</th><th>' + html.escape(model_name) + '</th></tr></thead>'
        '<tbody id="{P}-rows"></tbody></table></div>',
        '<button type="button" id="{P}-next" class="oiq-next" hidden>Next level</button>',
        '<div id="{P}-key" class="oiq-key" hidden><h4>Answer key</h4>', *key, "</div>"])
    prefix = uid or "oiq-" + hashlib.sha256(f"{seed}{json.dumps(cfg)}{body}".encode()).hexdigest()[:10]
    cfg["prefix"] = prefix
    script = _JS % json.dumps(cfg).replace("</", "<\\/")
    return (f'<div id="{prefix}" class="oiq">\n<style>{_CSS.format(P=prefix)}</style>\n'
            + body.replace("{P}", prefix) + f"\n<script>{script}</script>\n</div>")
