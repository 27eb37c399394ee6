"""The paper's claims as verdicts: our numbers, a criterion in words, and whether it holds.

One function per claim that a chapter tests (sections 4.1 and 4.2). Each takes our
measurements as plain numbers (accuracies in percent, one per model replicate;
SIS sizes and confidence drops one per image) and returns a :class:`Verdict`. The
criteria are the same at every profile and can hold or fail on any data: they
compare with the paper's own gaps and spreads (from :mod:`overinterp.paper.numbers`), with
the spread of our replicates, with the random-subset baseline and, for transfer,
with the source model's own accuracy. A claim that the numbers cannot test (say,
a model no better on its own subsets than on random ones, or a full-image control
that learned nothing) "cannot be tested", never "holds" or "does not hold".

    v = subsets_accurate(full={"ResNet20": [89.1, 88.7]}, bs={"ResNet20": [31.0, 28.4]})
    v.word, v.numbers      # 'does not hold', the table the criterion read
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Mapping, Sequence

import pandas as pd

from overinterp.paper import numbers as paper

__all__ = ["Verdict", "spread", "sis_size", "subsets_accurate", "confidence_kept", "no_transfer",
           "retrain_beats_random", "retrain_near_full", "summary", "paper_gap", "paper_transfer_share",
           "sis_predicts_accuracy"]

WORDS = {True: "holds", False: "does not hold", None: "cannot be tested"}


@dataclass
class Verdict:
    """One claim of the paper tested on our numbers."""
    claim: str                 # the paper's claim, with its section and numbers
    criterion: str             # what must be true of our numbers for the claim to hold here
    holds: bool | None         # None: the numbers cannot test the claim (``criterion`` says when)
    numbers: pd.DataFrame = field(repr=False)  # what the criterion read, numeric, one row per model

    @property
    def word(self) -> str:
        """'holds', 'does not hold' or 'cannot be tested'."""
        return WORDS[self.holds]

    def _repr_markdown_(self) -> str:
        return (f":::{{admonition}} Verdict: the claim {self.word} here\n**Claim.** {self.claim}\n\n"
                f"**Criterion.** {self.criterion}\n:::")


def spread(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, sample std, n) of ``values``; the std of a single value is 0."""
    v = [float(x) for x in values]
    if not v:
        raise ValueError("spread of no values")
    mean = sum(v) / len(v)
    std = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return mean, std, len(v)


def _all(flags: list) -> bool | None:
    """None when any row cannot be tested, else whether every row holds."""
    return None if any(f is None for f in flags) else all(flags)


def paper_gap(train_on: str, evaluate_on: str) -> float:
    """The paper's largest drop of CIFAR-10 test accuracy (points) from full-image models to
    (train_on, evaluate_on) over its three architectures (Table 1), at least 0."""
    gaps = [paper.table1_test(a, "full", "full")[0] - paper.table1_test(a, train_on, evaluate_on)[0]
            for a in ("resnet20", "resnet18", "vgg16")]
    return max(0.0, max(gaps))


def paper_transfer_share() -> float:
    """Section 4.1's transfer in the terms of :func:`no_transfer`: the share of ResNet18's lift above
    random 5% subsets (Table 1) that the other models recover on its subsets (about 0.21)."""
    t = paper.TRANSFER_RESNET18
    others = [v for name, v in t.items() if name != "itself"]
    random = paper.table1_test("resnet18", "full", "random")[0]
    return (sum(others) / len(others) - random) / (t["itself"] - random)


def _decimal(value: float, places: int = 1) -> str:
    """A number of the paper rounded as the paper rounds, half up on its decimal digits (50.05 -> '50.1')."""
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def _minus(value: float) -> str:
    """'−0.035' for -0.035: the typographic minus of the claims' text."""
    return f"{value:g}".replace("-", "−")


def _test_range(train_on: str, evaluate_on: str) -> str:
    """'92.5–95.0': the range of the paper's CIFAR-10 test accuracies over its three architectures."""
    acc = [paper.table1_test(a, train_on, evaluate_on)[0] for a in ("resnet20", "resnet18", "vgg16")]
    return f"{_decimal(min(acc))}–{_decimal(max(acc))}"


def _drops(full: Mapping[str, Sequence[float]], bs: Mapping[str, Sequence[float]], allowed: float) -> dict:
    """Per model: mean and std of ``full`` and ``bs`` accuracies, the drop between the means and the
    allowed drop, ``allowed`` plus two standard deviations of the difference over replicates."""
    rows = {}
    for name in bs:
        (f, fsd, n), (b, bsd, _) = spread(full[name]), spread(bs[name])
        rows[name] = {"replicates": n, "full images": f, "full std": fsd, "BS subsets": b, "BS std": bsd,
                      "drop (points)": f - b, "allowed drop": allowed + 2 * math.hypot(fsd, bsd)}
    return rows


def sis_size(sizes: Mapping[str, Sequence[float]], tau: float, bound: float = paper.SIS_MEAN_SIZE_BELOW,
             min_images: int = 1, claim: str | None = None) -> Verdict:
    """Section 4.1: at tau = 0.99 the mean SIS is below 5% of the image. ``sizes``: model ->
    SIS size of each image as a fraction of the pixels (NaN: the image has no SIS, not counted);
    a model with fewer than ``min_images`` SIS cannot be tested. ``claim``: the claim tested with
    this bound (default: section 4.1's)."""
    rows, flags = {}, []
    for name, s in sizes.items():
        s = [float(x) for x in s if not math.isnan(float(x))]
        mean, std, n = spread(s) if s else (math.nan, math.nan, 0)
        rows[name] = {"images": n, "mean SIS size (%)": 100 * mean, "std (%)": 100 * std}
        flags.append(None if n < max(min_images, 1) else mean < bound)
    more = f", over at least {min_images} images that have an SIS" if min_images > 1 else ""
    return Verdict(
        claim=claim or f"The mean size of a sufficient input subset at τ = {paper.SIS_THRESHOLD:g} is below "
                       f"{100 * bound:g}% of the image (section 4.1, CIFAR-10).",
        criterion=f"for every model, the mean SIS size at τ = {tau:g} over the images is below {100 * bound:g}% "
                  f"of the pixels{more}.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def subsets_accurate(full: Mapping[str, Sequence[float]], bs: Mapping[str, Sequence[float]]) -> Verdict:
    """Section 4.1, Table 1: models classify their own 5% BS subsets about as accurately as full
    images. ``full`` and ``bs``: model -> test accuracy (%) of each replicate, on full images and
    on that replicate's own BS subsets."""
    allowed = paper_gap("full", "bs")
    rows = _drops(full, bs, allowed)
    flags = [r["drop (points)"] <= r["allowed drop"] for r in rows.values()]
    return Verdict(
        claim=f"Models classify their own {100 * paper.SUBSET_FRAC:g}% backward-selection subsets about as accurately "
              f"as full images (section 4.1, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        criterion=f"for every architecture, mean test accuracy on the replicates' own {100 * paper.SUBSET_FRAC:g}% BS "
                  "subsets is at most "
                  f"{allowed:.2f} points (the paper's largest drop) plus two standard deviations of our replicates "
                  "below the mean full-image accuracy.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def confidence_kept(drops: Mapping[str, Sequence[float]]) -> Verdict:
    """Section 4.1: the mean drop of confidence from full image to 5% BS subset is about zero or
    negative. ``drops``: model -> per-image drop of the predicted class's probability."""
    means = [m for m, _ in paper.CONFIDENCE_DROP.values()]
    worst = max(means)
    rows, flags = {}, []
    for name, d in drops.items():
        mean, std, n = spread(d)
        allowed = worst + 2 * std / math.sqrt(n)
        rows[name] = {"images": n, "mean drop": mean, "std": std, "allowed mean drop": allowed}
        flags.append(mean <= allowed)
    return Verdict(
        claim=f"Models are about as confident on their {100 * paper.SUBSET_FRAC:g}% BS subsets as on full images "
              f"(section 4.1: mean drop of confidence {_minus(min(means))} to {_minus(max(means))} on CIFAR-10).",
        criterion=f"for every model, the mean drop of confidence is at most {worst:g} (the paper's largest mean "
                  "drop) plus two standard errors of ours.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def no_transfer(own: Mapping[str, float], others: Mapping[str, Sequence[float]], random: Mapping[str, float],
                min_lift: float = 10.0) -> Verdict:
    """Section 4.1: one model's 5% BS subsets are not classified correctly by other models.

    Per source model: ``own`` its accuracy (%) on its own subsets, ``others`` the accuracies of
    the other models on them, ``random`` its accuracy on random 5% subsets. The subsets do not
    transfer when the other models recover less than half of the source's lift above random."""
    t = paper.TRANSFER_RESNET18
    others_paper = [v for name, v in t.items() if name != "itself"]
    rows, flags = {}, []
    for name in own:
        o, r = float(own[name]), float(random[name])
        m, s, n = spread(others[name])
        lift = o - r
        share = (m - r) / lift if lift > 0 else float("nan")
        rows[name] = {"own accuracy": o, "others' accuracy": m, "others std": s, "other models": n,
                      "random subsets": r, "share of lift transferred": share}
        flags.append(None if lift < min_lift else share < 0.5)
    return Verdict(
        claim=f"The {100 * paper.SUBSET_FRAC:g}% BS subsets of one model are not classified correctly by other models "
              f"(section 4.1: ResNet18's, {t['itself']:g}% by itself, get {min(others_paper):g}–{max(others_paper):g}% "
              "from a ResNet18 replicate, a ResNet20 and a VGG16).",
        criterion="for every source model, the other models' mean accuracy on its subsets recovers less than "
                  f"half of the source's own lift above random {100 * paper.SUBSET_FRAC:g}% subsets ((others − random) "
                  f"< ½ (own − random); the paper: {paper_transfer_share():.2f}). Cannot be tested where the lift is "
                  f"under {min_lift:g} points.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def retrain_beats_random(bs: Mapping[str, Sequence[float]], random: Mapping[str, Sequence[float]]) -> Verdict:
    """Section 4.2: new models trained and evaluated on 5% BS subsets are far more accurate than
    ones on random 5% subsets. Inputs: model -> test accuracy (%) per retrained replicate."""
    rows, flags = {}, []
    for name in bs:
        (b, bsd, n), (r, rsd, _) = spread(bs[name]), spread(random[name])
        margin = 2 * math.hypot(bsd, rsd)
        rows[name] = {"replicates": n, "BS subsets": b, "BS std": bsd, "random subsets": r, "random std": rsd,
                      "difference": b - r, "required": margin}
        flags.append(b - r > margin)
    return Verdict(
        claim=f"Models trained on {100 * paper.SUBSET_FRAC:g}% BS subsets are far more accurate than models trained "
              f"on random {100 * paper.SUBSET_FRAC:g}% subsets (section 4.2, Table 1: {_test_range('bs', 'bs')}% "
              f"against {_test_range('random', 'random')}% on CIFAR-10).",
        criterion="for every architecture, mean test accuracy of the models retrained on BS subsets exceeds that "
                  "of the models retrained on random subsets by more than two standard deviations of the "
                  "difference over our replicates.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def retrain_near_full(bs: Mapping[str, Sequence[float]], full: Mapping[str, Sequence[float]], chance: float,
                      min_lift: float = 10.0) -> Verdict:
    """Section 4.2: models trained on 5% BS subsets are nearly as accurate as models trained on full
    images. ``full``: the full-image control, same architecture, images and training budget;
    ``chance``: accuracy (%) of guessing (100 / classes)."""
    allowed = paper_gap("bs", "bs")
    rows = _drops(full, bs, allowed)
    flags = [None if r["full images"] - chance < min_lift else r["drop (points)"] <= r["allowed drop"]
             for r in rows.values()]
    return Verdict(
        claim=f"Models trained on {100 * paper.SUBSET_FRAC:g}% BS subsets are nearly as accurate as models trained "
              f"on full images (section 4.2, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        criterion=f"for every architecture, mean test accuracy of the models retrained on BS subsets is at most "
                  f"{allowed:.2f} points (the paper's largest drop) plus two standard deviations of our replicates "
                  "below a control of the same architecture trained on the same images, full, with the same budget. "
                  f"Cannot be tested where the control is less than {min_lift:g} points above chance.",
        holds=_all(flags), numbers=pd.DataFrame.from_dict(rows, orient="index"))


def summary(verdicts: Mapping[str, Verdict]) -> pd.DataFrame:
    """One row per verdict: claim, criterion, verdict (the closing table of a chapter)."""
    return pd.DataFrame([{"claim": name, "verdict": v.word, "criterion": v.criterion} for name, v in verdicts.items()])


def sis_predicts_accuracy(increase: pd.DataFrame, min_images: int = 20) -> Verdict:
    """Section 4.4, Figure 5: at every SIS threshold, the SIS of correctly classified images are
    significantly larger than those of misclassified images, on the test and OOD sets.

    ``increase``: one row per (model, set, tau), the columns of
    :func:`overinterp.experiments.sis_accuracy.percentage_increase`: "model", "set", "tau", "correct images",
    "incorrect images" (images with an SIS at tau in each group), "increase (%)" and "low", "high"
    (its 95% interval). A threshold tests the claim only where both groups have at least
    ``min_images`` images; a model and set without such a threshold cannot test it."""
    rows, flags = {}, []
    for (name, s), g in increase.groupby(["model", "set"], sort=False):
        tested = g[(g["correct images"] >= min_images) & (g["incorrect images"] >= min_images)]
        above, below = int((tested["low"] > 0).sum()), int((tested["high"] < 0).sum())
        rows[(name, s)] = {"thresholds": len(g), "tested": len(tested), "interval above 0": above,
                           "interval below 0": below, "smallest increase (%)": tested["increase (%)"].min(),
                           "largest increase (%)": tested["increase (%)"].max(),
                           "lowest interval end (%)": tested["low"].min()}
        flags.append(None if tested.empty else above == len(tested))
    numbers = pd.DataFrame.from_dict(rows, orient="index")
    numbers.index = pd.MultiIndex.from_tuples(numbers.index, names=["model", "set"])
    return Verdict(
        claim="For varying SIS thresholds, the SIS of correctly classified images are consistently significantly "
              "larger than those of misclassified images, for each of the three architectures, on the CIFAR-10 "
              "test set and on CIFAR-10-C (section 4.4, Figure 5, drawn without numbers in the text), although the "
              "misclassified images are classified with lower confidence (Figure S3).",
        criterion="for every model and set (test and out-of-distribution), at every threshold τ where both the "
                  f"correct and the incorrect images with an SIS number at least {min_images}, the bootstrap 95% "
                  "interval of the percentage increase of the mean SIS size of the correct images over the "
                  "incorrect ones lies above 0. Cannot be tested where a model and set have no such threshold.",
        holds=_all(flags) if flags else None, numbers=numbers)
