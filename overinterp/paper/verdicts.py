"""The paper's main claims as verdicts (4.1, 4.2, 4.4), by the rule of :mod:`overinterp.paper.decide`: one
function per claim turns per-image values per model replicate into its measure's 95% interval against the
claim's margin (:data:`~overinterp.paper.claims.CLAIMS`) and states the claim, with the paper's numbers, and
the criterion in words; the same for every profile.

    v = subsets_accurate(full={"ResNet20": [c1, c2]}, bs={"ResNet20": [b1, b2]})   # 1/0 per image
    v.word, v.numbers      # 'does not hold', estimate, interval, margin and outcome per model
"""
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from overinterp.paper import numbers as paper
from overinterp.paper.claims import (CLAIMS, FAR_MORE_POINTS, SIS_ACCURACY_MIN_INCREASE, TOLERANCE_CONFIDENCE,
                                     TOLERANCE_POINTS)
from overinterp.paper.decide import (FAILS, HOLDS, INCONCLUSIVE, MARKS, OUTCOMES, UNTESTABLE, Margin, Verdict, combine,
                                     difference_rows, from_rows, interval_row, replicates, summary)
from overinterp.paper.formatting import minus
from overinterp.paper.intervals import Interval, replicate_interval
from overinterp.paper.numbers import paper_gap, paper_span, paper_tests, paper_transfer_share

#: 4.4's thresholds of the verdict: the SIS chapter's 0.99 and two at which most test images are confident
SIS_ACCURACY_TAUS = (0.7, 0.9, 0.99)

_FRAC = f"{100 * paper.SUBSET_FRAC:g}"     # the subsets' share of the pixels, as the claims print it
#: 4.1: the accuracies (%) of other models on one ResNet18's 5% BS subsets
_OTHERS = [v for name, v in paper.TRANSFER_RESNET18.items() if name != "itself"]


def sis_size(sizes: Mapping[str, Sequence], tau: float, bound: float = paper.SIS_MEAN_SIZE_BELOW,
             min_images: int = 1, claim: str | None = None, seed: int = 0, resamples: int = 2000,
             ids: Mapping[str, Sequence] | None = None) -> Verdict:
    """4.1: at tau = 0.99 the mean SIS is below 5% of the image. ``sizes``: model -> per replicate, SIS size
    per image as a fraction (NaN: no SIS); fewer than ``min_images`` SIS: untestable. ``claim``: default
    4.1's. ``ids``: per-replicate image ids for overlapping images (their shared error enters the interval;
    "images" counts distinct ones); without, each replicate has its own images."""
    margin = Margin(high=100 * bound, words=f"below {100 * bound:g}%")
    rows = {}
    for name, s in sizes.items():
        values = replicates(s)
        keys = None if ids is None else replicates(ids[name], dtype=None)
        if keys is not None and [len(k) for k in keys] != [len(v) for v in values]:
            raise ValueError(f"sis_size: the ids of {name!r} must parallel its sizes, got lengths "
                             f"{[len(k) for k in keys]} for {[len(v) for v in values]}")
        has = [~np.isnan(v) for v in values]
        reps = [v[h] for v, h in zip(values, has) if h.any()]
        extra = {"replicates": len(reps), "images": sum(map(len, reps))}
        image_ids = None if keys is None else {"size": [k[h] for k, h in zip(keys, has) if h.any()]}
        if image_ids:           # an image that several replicates measure counts once
            distinct = len(np.unique(np.concatenate(image_ids["size"]))) if reps else 0
            extra = {"replicates": len(reps), "images": distinct, "SIS sizes": extra["images"]}
        iv = None if extra["images"] < max(min_images, 1) else replicate_interval(
            {"size": reps}, paired_images=False, n_resamples=resamples, seed=seed, image_ids=image_ids,
            bounds=(0.0, 1.0))
        rows[name] = interval_row(iv, margin, CLAIMS["sis"].measure, 100, **extra)
    more = f" A model with fewer than {min_images} images that have an SIS cannot test it." if min_images > 1 else ""
    return from_rows(
        claim or f"The mean size of a sufficient input subset at τ = {paper.SIS_THRESHOLD:g} is below "
                 f"{100 * bound:g}% of the image (section 4.1, CIFAR-10).",
        f"for every model, the 95% interval of the mean SIS size at τ = {tau:g} (a t interval over the replicates) "
        f"lies below {100 * bound:g}% of the pixels: holds if the whole interval is below, does not hold if the "
        f"whole interval is at or above, inconclusive if it straddles {100 * bound:g}%.{more}", rows)


def subsets_accurate(full: Mapping[str, Sequence], bs: Mapping[str, Sequence], seed: int = 0,
                     resamples: int = 2000) -> Verdict:
    """4.1, Table 1: own 5% BS subsets about as accurate as full images. ``full`` / ``bs``: model -> per
    replicate, 1/0 per test image (same images); the measure is the drop in points."""
    c, allowed = CLAIMS["accurate"], paper_gap("full", "bs")
    return from_rows(
        f"Models classify their own {_FRAC}% backward-selection subsets about as accurately "
        f"as full images (section 4.1, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        f"for every architecture, the 95% interval of the accuracy drop from full images to each replicate's own "
        f"{_FRAC}% BS subsets (same images, same models) lies at or below {TOLERANCE_POINTS:g} "
        f"points, a flat margin: the paper's largest drop, {allowed:.2f} points, is finer than what a few hundred "
        f"test images resolve (one image of 300 is 0.33 points), so any drop up to {TOLERANCE_POINTS:g} points "
        "counts as \"about as accurate\". Does not hold if the whole interval lies above; inconclusive if it "
        "straddles.",
        difference_rows(full, bs, c.measure, c.margin, ("full images", "own BS subsets"), seed, resamples, models=bs))


def confidence_kept(drops: Mapping[str, Sequence], seed: int = 0, resamples: int = 2000) -> Verdict:
    """4.1: the mean confidence drop from full image to 5% BS subset is about zero or negative. ``drops``:
    model -> per replicate, per-image drop of the predicted class's probability (same test images)."""
    c, means, rows = CLAIMS["kept"], [m for m, _ in paper.CONFIDENCE_DROP.values()], {}
    for name, d in drops.items():
        reps = replicates(d)
        iv = replicate_interval({"drop": reps}, paired_images=True, n_resamples=resamples, seed=seed,
                                bounds=(-1.0, 1.0))
        rows[name] = interval_row(iv, c.margin, c.measure, replicates=len(reps), images=len(reps[0]))
    return from_rows(
        f"Models are about as confident on their {_FRAC}% BS subsets as on full images "
        f"(section 4.1: mean drop of confidence {minus(min(means))} to {minus(max(means))} on CIFAR-10).",
        f"for every model, the 95% interval of the mean drop of the predicted class's probability lies at or below "
        f"{TOLERANCE_CONFIDENCE:g}: no change, or a gain as the paper's, holds; a model that loses more than "
        f"{TOLERANCE_CONFIDENCE:g} of probability on average does not. Inconclusive if the interval straddles.", rows)


def _transfer_share(m: dict) -> np.ndarray:
    """(others - random) / (own - random), infinite where the source has no lift."""
    lift = m["own"] - m["random"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lift > 0, (m["others"] - m["random"]) / lift, np.inf)


def no_transfer(own: Mapping[str, Sequence], others: Mapping[str, Sequence], random: Mapping[str, Sequence],
                min_lift: float = 10.0, seed: int = 0, resamples: int = 2000) -> Verdict:
    """4.1: one model's 5% BS subsets are not classified correctly by other models. Per architecture and
    source replicate r, 1/0 per test image: ``own[arch][r]`` on its own subsets, ``others[arch][r]`` one
    array per other model, ``random[arch][r]`` on random subsets. Measure: the share of the source's lift
    above random that others recover."""
    c, rows = CLAIMS["transfer"], {}
    for name in own:
        o, r = replicates(own[name]), replicates(random[name])
        oth = [np.mean([np.asarray(x, dtype=np.float64) for x in xs], axis=0) for xs in others[name]]
        lift = 100 * np.mean([a.mean() - b.mean() for a, b in zip(o, r)])
        extra = {"replicates": len(o), "other models": len(others[name][0]), "images": len(o[0]),
                 "own accuracy": 100 * np.mean([x.mean() for x in o]),
                 "others' accuracy": 100 * np.mean([x.mean() for x in oth]),
                 "random subsets": 100 * np.mean([x.mean() for x in r])}
        iv = None if lift < min_lift else replicate_interval(
            {"own": o, "random": r, "others": oth}, _transfer_share, paired_images=True, n_resamples=resamples,
            seed=seed)
        rows[name] = interval_row(iv, c.margin, c.measure, **extra)
    return from_rows(
        f"The {_FRAC}% BS subsets of one model are not classified correctly by other models "
        f"(section 4.1: ResNet18's, {paper.TRANSFER_RESNET18['itself']:g}% by itself, get "
        f"{min(_OTHERS):g}–{max(_OTHERS):g}% from a ResNet18 replicate, a ResNet20 and a VGG16).",
        "for every architecture, every replicate is a source: the 95% interval over the source replicates (test "
        "images shared) of the share of the source's own lift above random "
        f"{_FRAC}% subsets that the other models recover, (others − random) / (own − random), "
        f"lies below one half (the paper: {paper_transfer_share():.2f}, one source); does not hold if it lies wholly "
        f"above. Cannot be tested where the mean lift is under {min_lift:g} points.", rows)


def retrain_beats_random(bs: Mapping[str, Sequence], random: Mapping[str, Sequence], seed: int = 0,
                         resamples: int = 2000) -> Verdict:
    """4.2: models retrained on 5% BS subsets are far more accurate than on random ones. Inputs: model ->
    per retrained replicate, 1/0 per test image (same images)."""
    c = CLAIMS["beats"]
    return from_rows(
        f"Models trained on {_FRAC}% BS subsets are far more accurate than models trained "
        f"on random {_FRAC}% subsets (section 4.2, Table 1: {paper_span(paper_tests('bs', 'bs'))}% "
        f"against {paper_span(paper_tests('random', 'random'))}% on CIFAR-10).",
        "for every architecture, the 95% interval (a t interval over pairs of retrained replicates, on the same test "
        "images) of the accuracy of the models retrained on BS subsets minus that of the models retrained on random "
        f"subsets lies at or above {FAR_MORE_POINTS:g} points (\"far more\": a quarter of the paper's smallest gap); "
        "does not hold if it lies wholly below; inconclusive if it straddles.",
        difference_rows(bs, random, c.measure, c.margin, ("BS subsets", "random subsets"), seed, resamples,
                        models=random))


def retrain_near_full(bs: Mapping[str, Sequence], full: Mapping[str, Sequence], chance: float,
                      min_lift: float = 10.0, seed: int = 0, resamples: int = 2000) -> Verdict:
    """4.2: models retrained on 5% BS subsets are nearly as accurate as a full-image control (same
    architecture, images, budget); ``chance``: guessing accuracy (%); untestable for a control near chance."""
    c, allowed = CLAIMS["near"], paper_gap("bs", "bs")
    rows = difference_rows(full, bs, c.measure, c.margin, ("full images", "BS subsets"), seed, resamples, models=bs)
    for r in rows.values():
        if r["full images"] - chance < min_lift:
            r["outcome"] = UNTESTABLE
            r.pop("replicates to decide", None)
    v = from_rows(
        f"Models trained on {_FRAC}% BS subsets are nearly as accurate as models trained "
        f"on full images (section 4.2, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        f"for every architecture, the 95% interval of the accuracy drop from a control of the same architecture "
        f"trained on the same images, full, with the same budget, to the models retrained on BS subsets lies at or "
        f"below {TOLERANCE_POINTS:g} points, the flat margin of chapter 3 (the paper's largest drop, {allowed:.2f} "
        f"points, is finer than our test images resolve); a negative drop (subsets beating the control) counts as "
        f"holding and is shown as such. Does not hold if "
        f"the whole interval lies above; cannot be tested where the control is less than {min_lift:g} points above "
        "chance.", rows)
    beat = [m for m, r in rows.items() if r["outcome"] != UNTESTABLE and r["95% high"] < 0]
    if beat:
        v.note = (f"For {', '.join(map(str, beat))} the models retrained on BS subsets are *more* accurate than the "
                  "full-image control (the whole interval of the drop lies below 0): the margin counts that as "
                  "holding, but it is more than the paper's \"nearly as accurate\"; the chapter \"Why it holds or "
                  "fails here\" traces it to the positions of the kept pixels.")
    return v


def sis_predicts_accuracy(increase: pd.DataFrame, taus: Sequence[float] = SIS_ACCURACY_TAUS,
                          min_images: int = 20) -> Verdict:
    """4.4, Figure 5: correct images' SIS are significantly larger than misclassified ones', at every
    threshold, test and OOD. ``increase``: rows of ``experiments.sis_accuracy.percentage_increase``; a
    row of ``taus`` is tested where both groups have ``min_images`` images with a non-empty SIS."""
    c, rows = CLAIMS["sis_accuracy"], {}
    for _, r in increase[increase["tau"].round(6).isin([round(float(t), 6) for t in taus])].iterrows():
        tested = r["correct images"] >= min_images and r["incorrect images"] >= min_images
        iv = Interval(float(r[c.measure]), float(r["low"]), float(r["high"]))
        rows[(r["model"], r["set"], float(r["tau"]))] = {
            "correct images": int(r["correct images"]), "incorrect images": int(r["incorrect images"]),
            "replicates": int(r["replicates"]) if "replicates" in r else None,
            c.measure: iv.estimate, "95% low": iv.low, "95% high": iv.high, "margin": str(c.margin),
            "outcome": c.margin.decide(iv) if tested else UNTESTABLE}
    numbers = pd.DataFrame.from_dict(rows, orient="index")
    if len(numbers):
        numbers.index = pd.MultiIndex.from_tuples(numbers.index, names=["model", "set", "tau"])
    return Verdict(
        claim="For varying SIS thresholds, the SIS of correctly classified images are consistently significantly "
              "larger than those of misclassified images, for each of the three architectures, on the CIFAR-10 "
              "test set and on CIFAR-10-C (section 4.4, Figure 5, drawn without numbers in the text), although the "
              "misclassified images are classified with lower confidence (Figure S3).",
        criterion=f"for every model and set (test and out-of-distribution), at each threshold τ the library states "
                  f"({', '.join(f'{t:g}' for t in taus)}) where the correct and the incorrect images with a non-empty "
                  f"SIS number at least {min_images} each, the 95% interval (a t interval over the replicates) of the "
                  "percentage increase of the correct images' mean SIS size over the incorrect ones' lies at or above "
                  f"{SIS_ACCURACY_MIN_INCREASE:g}% (\"significantly larger\"; an increase indistinguishable from "
                  "zero does not hold). Empty SIS, which the blank image decides rather than the image, are left out "
                  "and counted in the chapter. The claim holds where every tested threshold holds, does not hold "
                  "where one does not, and is inconclusive otherwise; a threshold with too few images cannot test it.",
        outcome=combine([o for o in numbers.get("outcome", ()) if o != UNTESTABLE]),    # the tested thresholds'
        numbers=numbers)
