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
  threshold``; else the class is left short (:attr:`Benchmark.short`);
* **subsets**: every level is cut from one removal order per image, the backward
  selection of the profile's test sample by the image's assigned model
  (:func:`overinterp.experiments.runs.backselect_set`, shared with the pixel-subsets chapter),
  with :func:`overinterp.engine.sis.pixel_subset`, so the levels are nested (5% in 30% in 50%).

:func:`overinterp.pages.quiz.quiz_html` turns a benchmark into the paper's task as a static HTML+JavaScript
widget; the chapter ``book/07_humans.ipynb`` explains both.

    bench = build_benchmark(run)                          # run = overinterp.config.context.make_run(...)
    bench.model_accuracy                                  # {0.05: 100.0, 0.3: ..., 0.5: ...}
    HTML(quiz_html(bench, test.classes, test.mean, test.std))
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import torch

from overinterp.engine.sis import pixel_subset
from overinterp.experiments.runs import backselect_set, selection, trained_model
from overinterp.paper.formatting import MISSING
from overinterp.paper.numbers import (ARCH_NAMES, HUMANS_PER_CLASS, HUMANS_SPLIT, SIS_THRESHOLD,
                                      TABLE2)  # Table 2: {frac: (mean, std)} human accuracy (%), CIFAR-10
from overinterp.zoo import data
from overinterp.zoo.train import predict

__all__ = ["TABLE2", "PAPER_SPLIT", "Benchmark", "select_images", "build_benchmark", "paper_humans", "accuracy_table",
           "summary"]

PAPER_SPLIT = HUMANS_SPLIT  # S4: whose subsets the 100 images are


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
    short: dict = field(default_factory=dict)  # {class index: images found} of the classes short of per_class

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

def select_images(labels: torch.Tensor, probs: dict, per_class: int, threshold: float = SIS_THRESHOLD,
                  seed: int = 0, fill: bool = False) -> tuple:
    """Pick ``per_class`` images per class and the architecture of each (module docstring).

    labels (N,); probs {arch: (N, K) softmax of that arch on the full images}.
    Returns (indices (n,) int64, archs (n,) list, confidence (n,) in the true class, short: {class index:
    images found} for every class with fewer than ``per_class``).
    """
    archs, n_classes = list(probs), next(iter(probs.values())).shape[1]
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed)).tolist()
    y = labels.tolist()
    conf = {a: p.gather(1, labels[:, None]).squeeze(1).tolist() for a, p in probs.items()}  # true-class prob
    correct = {a: (p.argmax(1) == labels).tolist() for a, p in probs.items()}
    idx, who, short, slot = [], [], {}, 0
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
            short[c] = len(used)
    confidence = torch.tensor([conf[a][i] for i, a in zip(idx, who)])
    return torch.tensor(idx, dtype=torch.long), who, confidence, short


def build_benchmark(run, per_class: int = HUMANS_PER_CLASS, fracs=tuple(TABLE2),
                    threshold: float = SIS_THRESHOLD, fill: bool | None = None, progress: bool = False) -> Benchmark:
    """The paper's benchmark (3.4, S4) for ``run`` (an :class:`overinterp.config.context.Run`).

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
    index, arch, confidence, short = select_images(pool_labels, probs, per_class, threshold, run.seed, fill)
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
    engine = p.backselect.describe()
    return Benchmark(images, labels, index, arch, confidence, fracs, keep, masked, model_pred, threshold,
                     per_class, run.dataset, p.name, engine, short)


# ----------------------------------------------------------------------------- tables and figures

def paper_humans(fracs) -> dict:
    """Table 2 aligned with ``fracs`` as keyword arguments of :func:`overinterp.pages.quiz.quiz_html`
    (None: no such row)."""
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
        row = {"paper: humans, CIFAR-10 (%)": f"{paper[0]} ± {paper[1]}" if paper else MISSING,
               ours: f"{bench.model_accuracy[f]:.1f}"}
        for a in bench.counts():
            m = torch.tensor([x == a for x in bench.arch])
            row[f"ours: {_name(a)} only (n={int(m.sum())})"] = f"{100 * bench.model_correct[lvl, m].float().mean().item():.1f}"
        rows[f"{100 * f:g}% of pixels ({_pixels(bench, lvl)} px)"] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def summary(bench: Benchmark) -> dict:
    """Numbers for a chapter's prose (glue keys -> values): among them the images filled in below the
    threshold (``humans_below``), the classes short of ``per_class`` images (``humans_short_n`` of
    ``humans_n_classes``) and the images of every class (``humans_class_counts``)."""
    H, W = bench.keep.shape[2:]
    classes, found = data.CLASSES[bench.dataset], bench.counts("class")
    out = {"humans_n": len(bench), "humans_per_class": bench.per_class, "humans_threshold": bench.threshold,
           "humans_below": bench.below_threshold, "humans_hw": f"{H}×{W}", "humans_pixels": H * W,
           "humans_split": ", ".join(f"{n} {_name(a)}" for a, n in bench.counts().items()),
           "humans_levels": len(bench.fracs), "humans_engine": bench.engine,
           "humans_paper_split": ", ".join(f"{n} {_name(a)}" for a, n in PAPER_SPLIT.items()),
           "humans_short_n": len(bench.short), "humans_n_classes": len(classes),
           "humans_class_counts": ", ".join(f"{name} {found.get(c, 0)}" for c, name in enumerate(classes))}
    for lvl, f in enumerate(bench.fracs):
        out[f"humans_frac_{lvl}"] = f"{100 * f:g}%"
        out[f"humans_px_{lvl}"] = _pixels(bench, lvl)
        out[f"humans_model_{lvl}"] = f"{bench.model_accuracy[f]:.1f}%"
    return out
