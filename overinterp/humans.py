"""The human classification benchmark of sparse pixel subsets (paper 3.4, 4.3, Table 2, S4).

The paper samples 100 CIFAR-10 test images, 10 per class, that its models classify
correctly with >= 99% confidence; keeps 5%, 30% and 50% of each image's pixels as
ranked by backward selection (the rest masked with the mean pixel); and asks four
people to classify all 300 images, level by level in increasing subset size
(larger subsets are supersets of smaller ones), shuffled within each level. The
subsets "are sampled across our three models": 35 ResNet20, 35 ResNet18, 30 VGG16
(S4). People reach 19.2 +- 4.8, 40.0 +- 2.5 and 68.2 +- 3.6 % (Table 2).

Construction here (:func:`build_benchmark`), for the profile's architectures
(replicate ``run.seed`` of each) on the profile's test sample:

* **assignment**: benchmark slots are filled class by class; slot ``s`` (counted over
  the whole benchmark) belongs to architecture ``archs[s % A]`` (round-robin), so the
  archs share the images as equally as possible (100 over 3 -> 34/33/33, the paper's
  35/35/30 is "roughly equal") and every class is spread over them;
* **sampling**: a slot takes the next image, in a permutation seeded by ``run.seed``,
  of its class that its architecture classifies correctly with confidence >=
  ``threshold``; when that architecture has none left, the next architecture (in
  round-robin order) that has one takes the slot; with ``fill`` (default: only on the
  ``tiny`` profile, whose models are barely trained) a slot nobody can fill takes the
  most confident *correctly* classified image left, flagged by ``confidence <
  threshold``; else the class is left short and :attr:`Benchmark.notes` says so;
* **subsets**: every level is cut from one removal order per image, the backward
  selection of the profile's test sample by the image's assigned model
  (:func:`overinterp.analysis.backselect_set`, shared with the pixel-subsets chapter),
  with :func:`overinterp.sis.pixel_subset`, so the levels are nested (5% in 30% in 50%).

:func:`quiz_html` turns a benchmark into the paper's task as a static HTML+JavaScript
widget; the chapter ``book/07_humans.ipynb`` explains both.

    bench = build_benchmark(run)                          # run = overinterp.book.setup(...)
    bench.model_accuracy                                  # {0.05: 100.0, 0.3: ..., 0.5: ...}
    HTML(quiz_html(bench, test.classes, test.mean, test.std))
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from . import data as D
from .analysis import backselect_set, selection
from .paper import ARCH_NAMES, TABLE2  # Table 2: {frac: (mean, std)} human accuracy (%), CIFAR-10
from .plots import show_masked, to_pixels
from .sis import pixel_subset
from .train import predict, trained_model

__all__ = ["TABLE2", "PAPER_SPLIT", "Benchmark", "select_images", "build_benchmark", "paper_humans", "accuracy_table",
           "summary", "notes_box", "example_rows", "quiz_html"]

PAPER_SPLIT = {"resnet20": 35, "resnet18": 35, "vgg16": 30}  # S4: whose subsets the 100 images are


@dataclass
class Benchmark:
    """N images, each with one subset per level; item order = class, then slot."""
    images: torch.Tensor       # (N, C, H, W) normalised, unmasked
    labels: torch.Tensor       # (N,) true classes
    pool_index: torch.Tensor   # (N,) position in the profile's test sample (analysis.selection(run, 'test'))
    arch: list                 # (N,) architecture that judged and backselected each image
    confidence: torch.Tensor   # (N,) its confidence in the true class on the full image
    fracs: tuple               # (L,) fraction of features kept per level, increasing
    keep: torch.Tensor         # (L, N, H, W) bool, True = pixel kept
    masked: torch.Tensor       # (L, N, C, H, W) images with the other pixels at the mask value (0 = mean pixel)
    model_pred: torch.Tensor   # (L, N) the assigned model's prediction on each masked image
    threshold: float
    per_class: int
    dataset: str
    profile: str
    engine: str = ""           # the backward-selection engine, e.g. "exact" or "gradient (k=4, block 2)"
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def model_correct(self) -> torch.Tensor:
        """(L, N) bool: the model that produced the subset classifies it correctly."""
        return self.model_pred == self.labels

    @property
    def model_accuracy(self) -> dict:
        """{frac: accuracy %} of the model that produced each subset, on its own subsets."""
        return {f: 100 * c.float().mean().item() for f, c in zip(self.fracs, self.model_correct)}

    @property
    def below_threshold(self) -> int:
        """Images filled in below the confidence threshold (``fill``)."""
        return int((self.confidence < self.threshold).sum())

    def counts(self, by: str = "arch") -> dict:
        """Images per architecture (``by="arch"``) or per class index (``by="class"``)."""
        keys = self.arch if by == "arch" else self.labels.tolist()
        return {k: keys.count(k) for k in dict.fromkeys(sorted(keys) if by == "class" else keys)}


# ----------------------------------------------------------------------------- construction

def select_images(labels: torch.Tensor, probs: dict, per_class: int, threshold: float = 0.99, seed: int = 0,
                  fill: bool = False, classes=None) -> tuple:
    """Pick ``per_class`` images per class and the architecture of each (module docstring).

    labels (N,); probs {arch: (N, K) softmax of that arch on the full images}.
    Returns (indices (n,) int64, archs (n,) list, confidence (n,) in the true class, notes list).
    """
    archs, n_classes = list(probs), next(iter(probs.values())).shape[1]
    classes = classes or [str(c) for c in range(n_classes)]
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed)).tolist()
    y = labels.tolist()
    conf = {a: p.gather(1, labels[:, None]).squeeze(1).tolist() for a, p in probs.items()}  # true-class prob
    correct = {a: (p.argmax(1) == labels).tolist() for a, p in probs.items()}
    idx, who, notes, slot = [], [], [], 0
    for c in range(n_classes):
        in_class = [i for i in order if y[i] == c]                                   # seeded order
        tiers = [{a: [i for i in in_class if correct[a][i] and conf[a][i] >= threshold] for a in archs}]
        if fill:  # then the most confident correctly classified images
            tiers.append({a: sorted((i for i in in_class if correct[a][i]), key=lambda i: -conf[a][i])
                          for a in archs})
        used = []
        for _ in range(per_class):
            turn = archs[slot % len(archs):] + archs[:slot % len(archs)]             # own arch first
            pick = next(((i, a) for tier in tiers for a in turn for i in tier[a] if i not in used), None)
            if pick is None:
                break
            used.append(pick[0])
            idx.append(pick[0]), who.append(pick[1])
            slot += 1
        if len(used) < per_class:
            notes.append(f"{classes[c]}: only {len(used)} of {per_class} images are classified correctly"
                         + ("" if fill else f" with confidence >= {threshold}") + " by any model")
    confidence = torch.tensor([conf[a][i] for i, a in zip(idx, who)])
    return torch.tensor(idx, dtype=torch.long), who, confidence, notes


def build_benchmark(run, per_class: int = 10, fracs=(0.05, 0.30, 0.50), threshold: float = 0.99,
                    fill: bool | None = None, progress: bool = False) -> Benchmark:
    """The paper's benchmark (3.4, S4) for ``run`` (an :class:`overinterp.book.Run`).

    ``fill``: fill slots below ``threshold`` (default: on the ``tiny`` profile only).
    The pool is the profile's test sample; models are replicate ``run.seed`` of ``run.profile.archs``.
    """
    fracs = tuple(float(f) for f in fracs)
    if per_class < 1:
        raise ValueError(f"per_class must be >= 1, got {per_class}")
    if not all(0 < f <= 1 for f in fracs) or list(fracs) != sorted(set(fracs)):
        raise ValueError(f"fracs must be increasing fractions in (0, 1], got {fracs}")
    p = run.profile
    fill = p.name == "tiny" if fill is None else fill
    pool_sel = selection(run, "test")
    pool, pool_labels = pool_sel.load()
    models = {a: trained_model(run.dataset, a, p.name, seed=run.seed, device=run.device, progress=progress)
              for a in p.archs}
    probs = {a: predict(m, pool, device=run.device) for a, m in models.items()}
    index, arch, confidence, notes = select_images(pool_labels, probs, per_class, threshold, run.seed, fill,
                                                   D.CLASSES[run.dataset])
    if not len(index):
        raise ValueError(f"no test image is classified correctly with confidence >= {threshold} by any model")
    images, labels = pool[index], pool_labels[index]
    L, (N, C, H, W) = len(fracs), images.shape
    keep = torch.zeros(L, N, H, W, dtype=torch.bool)
    masked = torch.zeros(L, N, C, H, W, dtype=images.dtype)
    model_pred = torch.zeros(L, N, dtype=torch.long)
    for a, model in models.items():
        rows = torch.tensor([i for i, x in enumerate(arch) if x == a], dtype=torch.long)
        if not len(rows):
            continue
        # the test sample's backward selection (shared with the pixel-subsets chapter)
        res = backselect_set(run, a, pool_sel, progress=progress)[index[rows]].to("cpu")
        for lvl, f in enumerate(fracs):          # one removal order -> nested subsets
            x, k = pixel_subset(res, images[rows], f)
            keep[lvl, rows], masked[lvl, rows] = k, x
            model_pred[lvl, rows] = predict(model, x, device=run.device).argmax(1)
    if fill and (confidence < threshold).any():
        notes.insert(0, f"{int((confidence < threshold).sum())} of {N} images are below the {threshold} "
                        f"confidence threshold, filled in with the most confident correctly classified images"
                        + (" (the tiny profile's models are barely trained)" if p.name == "tiny" else ""))
    engine = p.backselect.describe()
    return Benchmark(images, labels, index, arch, confidence, fracs, keep, masked, model_pred, threshold,
                     per_class, run.dataset, p.name, engine, notes)


# ----------------------------------------------------------------------------- tables and figures

def paper_humans(fracs) -> dict:
    """Table 2 aligned with ``fracs`` as keyword arguments of :func:`quiz_html` (None: no such row)."""
    rows = [TABLE2.get(round(f, 4)) for f in fracs]
    return {"paper": tuple(r and r[0] for r in rows), "paper_std": tuple(r and r[1] for r in rows)}


def _name(arch: str) -> str:
    return ARCH_NAMES.get(arch, arch)


def _pixels(bench: Benchmark, lvl: int) -> int:
    """Pixels kept per image at level ``lvl`` (mean over images; equal unless an image has fewer features)."""
    return round(bench.keep[lvl].sum(dim=(1, 2)).float().mean().item())


def accuracy_table(bench: Benchmark) -> pd.DataFrame:
    """Per level: the paper's humans (CIFAR-10, Table 2) beside our models on their own subsets."""
    ours = f"ours: model that made the subset, {bench.dataset}/{bench.profile} (%)"
    rows = {}
    for lvl, f in enumerate(bench.fracs):
        paper = TABLE2.get(round(f, 4))
        row = {"paper: humans, CIFAR-10 (%)": f"{paper[0]} ± {paper[1]}" if paper else "—",
               ours: f"{bench.model_accuracy[f]:.1f}"}
        for a in bench.counts():
            m = torch.tensor([x == a for x in bench.arch])
            row[f"ours: {_name(a)} only (n={int(m.sum())})"] = f"{100 * bench.model_correct[lvl, m].float().mean().item():.1f}"
        rows[f"{100 * f:g}% of pixels ({_pixels(bench, lvl)} px)"] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def summary(bench: Benchmark) -> dict:
    """Numbers for a chapter's prose (glue keys -> values)."""
    H, W = bench.keep.shape[2:]
    out = {"humans_n": len(bench), "humans_per_class": bench.per_class, "humans_threshold": bench.threshold,
           "humans_below": bench.below_threshold, "humans_hw": f"{H}×{W}", "humans_pixels": H * W,
           "humans_split": ", ".join(f"{n} {_name(a)}" for a, n in bench.counts().items()),
           "humans_levels": len(bench.fracs), "humans_engine": bench.engine,
           "humans_paper_split": ", ".join(f"{n} {_name(a)}" for a, n in PAPER_SPLIT.items())}
    for lvl, f in enumerate(bench.fracs):
        out[f"humans_frac_{lvl}"] = f"{100 * f:g}%"
        out[f"humans_px_{lvl}"] = _pixels(bench, lvl)
        out[f"humans_model_{lvl}"] = f"{bench.model_accuracy[f]:.1f}%"
    return out


def notes_box(bench: Benchmark) -> str:
    """A MyST admonition listing where the benchmark departs from the paper's construction ('' if nowhere)."""
    if not bench.notes:
        return ""
    items = "\n".join(f"* {n}" for n in bench.notes)
    return f":::{{warning}}\nThis benchmark departs from the paper's construction:\n\n{items}\n:::"


def example_rows(bench: Benchmark, classes, mean, std, n: int = 10) -> tuple:
    """(rows, column titles) for :func:`overinterp.plots.image_rows`: the first image of up to
    ``n`` classes, unmasked and at every level (masked pixels in the plots' highlight colour)."""
    first = list(dict.fromkeys(bench.labels.tolist()))[:n]
    cols = torch.tensor([bench.labels.tolist().index(c) for c in first], dtype=torch.long)
    rows = {"original": show_masked(bench.images[cols], None, mean, std)}
    for lvl, f in enumerate(bench.fracs):
        rows[f"{100 * f:g}%"] = show_masked(bench.images[cols], bench.keep[lvl, cols], mean, std)
    return rows, [f"{classes[c]}\n({_name(bench.arch[i])})" for c, i in zip(first, cols.tolist())]


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
#{P} .oiq-stage img, #{P} .oiq-key img {{width: {px}px; height: {px}px; image-rendering: pixelated; border: 1px solid #999}}
#{P} .oiq-buttons button, #{P} .oiq-next {{margin: 2px; padding: .3em .6em; cursor: pointer}}
#{P} .oiq-key figure {{display: inline-block; margin: 4px; text-align: center; font-size: 80%; width: {px}px}}
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


def quiz_html(bench: Benchmark, classes, mean, std, paper=(19.2, 40.0, 68.2), seed: int = 0, *,
              paper_std=(4.8, 2.5, 3.6), highlight: bool = False, px: int = 128, uid: str | None = None) -> str:
    """The paper's human benchmark (3.4, S4) as one self-contained HTML + JavaScript string.

    The reader classifies the ``bench`` images level by level in increasing subset size,
    shuffled within each level (seeded by ``seed``), one button per class; after each level
    the page shows the reader's accuracy beside ``paper`` +- ``paper_std`` (Table 2, one
    entry per level, None = no paper number) and the accuracy of the models that made the
    subsets; after the last level it reveals the answer key (the unmasked images with their
    classes). Images are base64 PNG data URIs: by default exactly what the model sees
    (masked pixels at the mean pixel, paper 3.3); ``highlight`` draws them in the plots'
    highlight colour instead. Element ids start with ``uid`` (default: a hash of the content),
    so two widgets on one page do not collide. Deterministic for fixed inputs.
    """
    L, N = len(bench.fracs), len(bench)
    if len(paper) != L or len(paper_std) != L:
        raise ValueError(f"paper and paper_std need one entry per level ({L}), got {paper} and {paper_std}")
    gen = torch.Generator().manual_seed(seed)
    orders = [torch.randperm(N, generator=gen).tolist() for _ in range(L)]
    levels = [f"{100 * f:g}%" for f in bench.fracs]
    stage = []
    for lvl in range(L):
        px_lvl = (show_masked(bench.images, bench.keep[lvl], mean, std) if highlight
                  else to_pixels(bench.masked[lvl], mean, std))
        for pos, i in enumerate(orders[lvl]):
            stage.append(f'<img id="{{P}}-L{lvl}-{pos}" data-item="{i}" hidden alt="{levels[lvl]} subset, '
                         f'image {pos + 1} of {N}" src="{_png(px_lvl[i])}">')
    originals = to_pixels(bench.images, mean, std)
    key = [f'<figure><img alt="answer {i + 1}" src="{_png(originals[i])}"><figcaption>{i + 1}. '
           f'<b>{html.escape(classes[y])}</b><br>subset by {html.escape(_name(bench.arch[i]))}<br>'
           f'<span id="{{P}}-you-{i}"></span></figcaption></figure>' for i, y in enumerate(bench.labels.tolist())]
    buttons = [f'<button type="button" data-class="{k}">{html.escape(c)}</button>' for k, c in enumerate(classes)]
    model_name = f"models that made the subsets ({', '.join(map(_name, bench.counts()))}), {bench.dataset}/{bench.profile}"
    cfg = {"labels": bench.labels.tolist(), "classes": list(classes), "levels": levels, "paper": list(paper),
           "paperStd": list(paper_std), "model": [bench.model_correct[lvl].float().mean().item() for lvl in range(L)]}
    body = "\n".join([
        '<p><b>Classify the sparse subsets yourself.</b> {n} images per level, levels {levels} of pixels kept '
        '(backward selection), in that order; larger subsets contain the smaller ones. '
        'Masked pixels are {mask}.</p>'.format(n=N, levels=", ".join(levels),
                                               mask="drawn in light blue-grey" if highlight else
                                               "set to the mean pixel, as the model sees them"),
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
    return (f'<div id="{prefix}" class="oiq">\n<style>{_CSS.format(P=prefix, px=px)}</style>\n'
            + body.replace("{P}", prefix) + f"\n<script>{script}</script>\n</div>")
