"""The scale study (chapter "How the claims move with scale"): do Part I's measures move toward the
paper's as models grow, and how far apart are seed-only replicates? ``Profile.scale.arch`` is trained at
every point of two curves (training-set size at one width, width at one size); each replicate gives, on one
seeded test sample: SIS size (% of pixels, 4.1; ``pruned`` and the profile's gradient engine), accuracy
and confidence drop on own 5% BS subsets (Table 1, 4.1; mean-pixel and black masks), and retrained
``BS - random`` / ``full - BS`` (4.2). :func:`plan` lists the artifacts as ``prepare --study scale``
units; :func:`study` returns a row per point, setting and measure with a 95% interval over replicates.
"""
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from overinterp.config.context import Run
from overinterp.config.profiles import variant
from overinterp.experiments import runs, subsets
from overinterp.experiments.factors import black_value
from overinterp.experiments.prepare import Unit
from overinterp.engine.sis import find_sis, pixel_subset
from overinterp.paper import numbers as paper
from overinterp.paper.intervals import replicate_interval
from overinterp.paper.numbers import SUBSET_FRAC
from overinterp.zoo import data

#: the mask factor: masked pixels at the mean pixel (the paper's, 3.3) or black (Fashion-MNIST's background)
MASKS = ("mean pixel", "black")


@dataclass(frozen=True)
class Point:
    """One setting of the study: a curve's training images (None: all), epochs and initial filters."""
    curve: str
    train_size: int | None
    epochs: int
    width: int

    def label(self) -> str:
        n = "all" if self.train_size is None else f"{self.train_size}"
        return f"{n} images, width {self.width}, {self.epochs} epochs"


def points(run) -> list[Point]:
    """The points of ``run.profile.scale``: the size curve, then the width curve."""
    return [Point(*p) for p in run.profile.scale.points()]


def point_run(run, point: Point, mask: str = "mean pixel") -> Run:
    """The profile narrowed to ``point``: its architecture, width, images, epochs; masked pixels at ``mask``."""
    p, c = run.profile, run.profile.scale
    engine = p.backselect if mask == "mean pixel" else replace(p.backselect, mask_value=black_value(run.dataset))
    name = (f"{p.name}-scale-{c.arch}-n{point.train_size or 'all'}-w{point.width}-e{point.epochs}"
            f"{'' if mask == 'mean pixel' else '-black'}")
    prof = variant(p, name, archs=(c.arch,), widths=((c.arch, point.width),), replicates=c.replicates,
                   train_size=point.train_size, test_size=c.test_images, train=replace(p.train, epochs=point.epochs),
                   backselect=engine, backselect_train=None, sis_engine=c.sis_engine, sis_images=c.sis_images,
                   retrain_images=c.retrain_images or None, retrain=c.retrain, retrain_replicates=1)
    return Run(run.dataset, prof, run.device, run.seed)


def plan(run) -> list[Unit]:
    """The study's ``prepare`` units, cheapest first: models, backward selections, retraining."""
    c = run.profile.scale
    distinct = list({(p.train_size, p.epochs, p.width): p for p in points(run)}.values())  # the curves' shared point once
    steps = [("model", _model), ("backselect", _selections)] + ([("retrained", _retrained)] if c.retrain_images else [])
    return [Unit(kind, f"scale {pt.label()} seed {run.seed + r}", lambda f=f, pt=pt, r=r: f(run, pt, r))
            for kind, f in steps for pt in distinct for r in range(c.replicates)]


def _model(run, pt: Point, r: int):
    pr = point_run(run, pt)
    return runs.trained_model(pr.dataset, run.profile.scale.arch, pr.profile.name, seed=run.seed + r,
                              device=pr.device, progress=False)


def _selections(run, pt: Point, r: int) -> None:
    for mask in MASKS:
        pr = point_run(run, pt, mask)
        runs.backselect_set(pr, run.profile.scale.arch, runs.selection(pr, "test"), run.seed + r, progress=False)
    _pruned_sizes(point_run(run, pt), run.seed + r)


def _pruned_sizes(pr: Run, seed: int) -> np.ndarray:
    """SIS sizes (%) at tau by the study's engine of replicate ``seed``'s confident images."""
    arch, tau = pr.profile.archs[0], pr.profile.sis_threshold
    model = runs.trained_model(pr.dataset, arch, pr.profile.name, seed=seed, device=pr.device, progress=False)
    if not len(runs.confident(model, *runs.selection(pr, "test").load(), tau, pr.device)):
        return np.zeros(0)
    return 100 * np.asarray(runs.sis_fractions(find_sis(runs.sis_result(pr, arch, seed, tau), tau)), float)


def _retrained(run, pt: Point, r: int) -> dict[str, np.ndarray]:
    """Replicate ``r`` as 4.2's source: {kind (bs, random, full): 1/0 per test image of its retrained model}."""
    pr = point_run(run, pt)
    src = Run(pr.dataset, pr.profile, pr.device, run.seed + r)      # retrain() seeds from the run's seed
    subs = subsets.subsets(src, run.profile.scale.arch, SUBSET_FRAC, train=True, sets=("train", "test"))
    return {k: subsets.retrained_correct(src, subsets.retrain_on_subsets(src, run.profile.scale.arch, k, False, SUBSET_FRAC, subs),
                                   k, {"test": subs["test"]})["test"][0] for k in subsets.RETRAIN_KINDS}


def replicate_values(run, pt: Point) -> dict[tuple[str, str], dict[str, list[np.ndarray]]]:
    """Per (measure, setting): the point's ``replicate_interval`` groups, {condition: array per
    replicate}."""
    c, tau = run.profile.scale, run.profile.sis_threshold
    out: dict = {}

    def add(measure: str, setting: str, condition: str, values: np.ndarray) -> None:
        out.setdefault((measure, setting), {}).setdefault(condition, []).append(values)

    for mask in MASKS:
        pr = point_run(run, pt, mask)
        X, Y = runs.selection(pr, "test").load()
        for r in range(c.replicates):
            seed = run.seed + r
            model = runs.trained_model(pr.dataset, c.arch, pr.profile.name, seed=seed, device=pr.device, progress=False)
            res = runs.backselect_set(pr, c.arch, runs.selection(pr, "test"), seed, progress=False)
            x_bs = pixel_subset(res, X, SUBSET_FRAC)[0]
            full, own = runs.correct(model, X, Y, pr.device), runs.correct(model, x_bs, Y, pr.device)
            add("accuracy drop (points)", mask, "full", full)
            add("accuracy drop (points)", mask, "bs", own)
            add("confidence drop", mask, "drop", subsets.confidence_drop(model, X, x_bs, pr.device).double().numpy())
            idx = runs.confident(model, X, Y, tau, pr.device)[:c.sis_images]
            engine = f"{pr.profile.backselect.describe()}, {mask}"
            add("SIS size (%)", engine, "size",
                100 * np.asarray(runs.sis_fractions(find_sis(res[idx], tau)), float) if len(idx) else np.zeros(0))
            if mask == "mean pixel":
                add("test accuracy (%)", mask, "full", full)
                add("SIS size (%)", f"{c.sis_engine.describe()}, {mask}", "size", _pruned_sizes(pr, seed))
                if c.retrain_images:
                    for k, v in _retrained(run, pt, r).items():
                        add("retrained", mask, k, v)
    return out


#: the range of each bounded measure, which its interval keeps to (None: unbounded)
BOUNDS = {"SIS size (%)": (0.0, 100.0), "accuracy drop (points)": (-100.0, 100.0), "test accuracy (%)": (0.0, 100.0),
          "BS - random (points)": (-100.0, 100.0), "full - BS (points)": (-100.0, 100.0), "confidence drop": (-1.0, 1.0)}
_STATISTICS = {"accuracy drop (points)": lambda m: 100 * (m["full"] - m["bs"]),
               "test accuracy (%)": lambda m: 100 * m["full"],
               "BS - random (points)": lambda m: 100 * (m["bs"] - m["random"]),
               "full - BS (points)": lambda m: 100 * (m["full"] - m["bs"])}


def paper_values(arch: str) -> dict[str, float]:
    """The paper's CIFAR-10 value per measure (Table 1, 4.1)."""
    t = {k: v[0][0] for k, v in paper.TABLE1.items() if k[0] == arch}
    if not t:
        return {"SIS size (%)": 100 * paper.SIS_MEAN_SIZE_BELOW}
    full, bs = t[(arch, "full", "full")], t[(arch, "full", "bs")]
    return {"SIS size (%)": 100 * paper.SIS_MEAN_SIZE_BELOW, "accuracy drop (points)": full - bs,
            "confidence drop": paper.CONFIDENCE_DROP[arch][0], "test accuracy (%)": full,
            "BS - random (points)": t[(arch, "bs", "bs")] - t[(arch, "random", "random")],
            "full - BS (points)": full - t[(arch, "bs", "bs")]}


def study(run, progress: bool = True) -> pd.DataFrame:
    """One row per point, measure and setting: estimate, 95% interval, replicate sd and values (cached)."""
    from tqdm import tqdm
    c, rows = run.profile.scale, []
    theirs, all_images = paper_values(c.arch), len(data.load(run.dataset, "train"))
    for pt in tqdm(points(run), desc="scale study", unit="point", disable=not progress):
        for (measure, setting), groups in replicate_values(run, pt).items():
            for name in (["BS - random (points)", "full - BS (points)"] if measure == "retrained" else [measure]):
                if not any(len(v) for vs in groups.values() for v in vs):
                    continue                      # e.g. no confident image in any replicate: no SIS sizes
                stat = _STATISTICS.get(name, lambda m: m[next(iter(m))])
                # SIS sizes: each replicate its own confident images; the rest: one test sample for all
                iv = replicate_interval(groups, stat, paired_images=name != "SIS size (%)", seed=run.seed,
                                        bounds=BOUNDS.get(name))
                means = {k: np.array([np.nanmean(v) for v in vs]) for k, vs in groups.items()}
                per_rep = np.atleast_1d(stat(means)).astype(float)
                rows.append({"curve": pt.curve, "training images": pt.train_size or all_images,
                             "width": pt.width, "epochs": pt.epochs, "measure": name, "setting": setting,
                             "estimate": iv.estimate, "95% low": iv.low, "95% high": iv.high,
                             "replicate sd": float(np.std(per_rep, ddof=1)) if len(per_rep) > 1 else np.nan,
                             "replicates": len(per_rep),
                             "images per replicate": int(np.median([len(v) for v in next(iter(groups.values()))])),
                             "values": [round(float(v), 4) for v in per_rep], "paper": theirs.get(name, np.nan)})
    return pd.DataFrame(rows)
