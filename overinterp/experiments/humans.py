"""The human benchmark of sparse pixel subsets (paper 3.4, 4.3, Table 2, S4): 100 CIFAR-10 test images, 10
per class, classified correctly at >= 99% confidence, shown with 5%, 30%, 50% of pixels kept by backward
selection (subsets from 35 ResNet20, 35 ResNet18, 30 VGG16); humans reach 19.2, 40.0, 68.2 % (Table 2).

:func:`build_benchmark` assigns slot ``s`` to ``archs[s % A]`` (round-robin), which takes its next
confident correct image of the class in seeded order (else the next architecture's; with ``fill`` the most
confident correct one left; else the class is short). Levels nest: one removal order per image.

    bench = build_benchmark(run)                          # run = overinterp.config.context.make_run(...)
    bench.model_accuracy                                  # {0.05: 100.0, 0.3: ..., 0.5: ...}
    HTML(quiz_html(bench, test.classes, test.mean, test.std))
"""
from dataclasses import dataclass, field

import torch

from overinterp.engine.sis import pixel_subset
from overinterp.experiments.runs import backselect_set, selection, trained_model
from overinterp.paper.numbers import (HUMANS_PER_CLASS, SIS_THRESHOLD,
                                      TABLE2)  # Table 2: {frac: (mean, std)} human accuracy (%), CIFAR-10
from overinterp.zoo.train import predict


@dataclass
class Benchmark:
    """N images, each with one subset per level; item order = class, then slot."""
    images: torch.Tensor       # (N, C, H, W) normalised, unmasked
    labels: torch.Tensor       # (N,) true classes
    pool_index: torch.Tensor   # (N,) position in the profile's test sample (runs.selection(run, 'test'))
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
    """Pick ``per_class`` images per class and their architectures; probs {arch: (N, K) softmax}.
    Returns (indices (n,), archs (n,), true-class confidence (n,), short {class: images found}).
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
    """The paper's benchmark (3.4, S4); ``fill``: below-``threshold`` slots (default: ``tiny`` only)."""
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


# ----------------------------------------------------------------------------- the paper's Table 2

def paper_humans(fracs) -> dict:
    """Table 2 aligned with ``fracs`` as ``quiz_html`` keyword arguments (None: no row)."""
    rows = [TABLE2.get(round(f, 4)) for f in fracs]
    return {"paper": tuple(r and r[0] for r in rows), "paper_std": tuple(r and r[1] for r in rows)}
