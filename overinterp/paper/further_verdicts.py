"""The verdicts of the paper's further claims (4.6: ensembles; the input dropout of its code's README)
and of a related method's (Feng et al. 2018's fine-tuning), from tables the experiments compute.

The same rule as :mod:`overinterp.paper.verdicts` (three outcomes against a margin), with the margin
:data:`~overinterp.paper.verdicts.ABOVE_ZERO`: these claims say "larger" without a size. Each function
takes the experiment's rows (an increase with its 95% interval per ensemble, comparison or replicate)
and says what it claims, how it is decided and what it counts.

    v = ensembles_increase_accuracy(gains)     # gains: overinterp.experiments.mitigation.ensemble_gains
"""
from __future__ import annotations

import pandas as pd

from overinterp.paper.intervals import Interval, replicate_interval
from overinterp.paper.numbers import FENG_TABLE2, TABLE1, fmt
from overinterp.paper.verdicts import ABOVE_ZERO, UNTESTABLE, Verdict, combine, interval_row

__all__ = ["ensembles_increase_sis", "ensembles_increase_accuracy", "dropout_increases_sis", "increases",
           "size_verdict", "sis_verdict"]


def _larger(rows: pd.DataFrame, claim: str, what: str, counted: str, min_images: int, column: str) -> Verdict:
    """Per row: holds when the interval (low, high) of ``column`` lies above 0, does not hold when
    it lies wholly below 0, inconclusive when it straddles 0; cannot be tested with fewer than
    ``min_images`` images. The claim holds when it holds for every row (:func:`combine`)."""
    numbers = rows.copy()
    numbers["images"] = numbers["images"].astype(int)
    numbers["margin"] = str(ABOVE_ZERO)
    numbers["outcome"] = [UNTESTABLE if n < min_images else ABOVE_ZERO.decide(Interval(e, lo, hi))
                          for n, e, lo, hi in zip(numbers["images"], numbers[column], numbers["low"], numbers["high"])]
    criterion = (f"for every {what}, the 95% interval of the increase ({counted}) lies above 0: holds if the whole "
                 "interval is above 0, does not hold if it is wholly below 0, inconclusive if it contains 0; "
                 f"cannot be tested from fewer than {min_images} images.")
    return Verdict(claim, criterion, combine(list(numbers["outcome"])) if len(numbers) else UNTESTABLE, numbers)


def ensembles_increase_sis(increase: pd.DataFrame, min_images: int = 10) -> Verdict:
    """Section 4.6, Fig. 6, S2: an ensemble's SIS is larger than its members'. ``increase``: rows
    of :func:`overinterp.experiments.mitigation.ensemble_increase` (one per ensemble and tau), each paired on the same images.

    Counts: the images where the ensemble and each member have an SIS, times the members
    (the interval's replicates). Can hold if the claim is true at our scale: an ensemble more
    confident-demanding than its members needs more pixels on most images, and the paired
    interval over a few dozen images then lies above 0; can fail if false: an ensemble whose SIS
    are smaller gives an interval below 0."""
    return _larger(increase, "Ensembling increases the SIS size: an ensemble needs more pixels than its members to "
                   "reach the same confidence (section 4.6, Fig. 6; Fig. S2: 'the ensemble SIS are larger').",
                   "ensemble", "the ensemble's mean SIS size minus its members', on the images where all have an "
                   "SIS; a t interval over the members, with the error of the images they share", min_images,
                   "increase (points)")


def ensembles_increase_accuracy(gains: pd.DataFrame, min_images: int = 100) -> Verdict:
    """Section 4.6: 'ensembling uniformly increases the model accuracy'. ``gains``: rows of
    :func:`overinterp.experiments.mitigation.accuracy_gain`, one per ensemble.

    Counts: the test images, times the members (the interval's replicates). Can hold if the claim
    is true at our scale: a gain like the paper's (about a point) is resolved by a paired
    interval over a few thousand images; can fail if false: an ensemble less accurate than its
    members gives an interval below 0. With few images a small gain is inconclusive."""
    numbers = gains.rename(columns={"gain (points)": "increase (points)"})
    ens, one = TABLE1[("ensemble 5x resnet18", "full", "full")][0], TABLE1[("resnet18", "full", "full")][0]
    return _larger(numbers, "Ensembling increases the accuracy over that of the members (section 4.6: 'uniformly'; "
                   f"Table 1: {fmt(ens)}% for five ResNet18s against {fmt(one)}% for one, CIFAR-10).",
                   "ensemble", "test accuracy of the ensemble minus its members' mean, on the same test images; "
                   "a t interval over the members, with the error of the images they share", min_images,
                   "increase (points)")


def dropout_increases_sis(increase: pd.DataFrame, min_images: int = 10) -> Verdict:
    """The claim that input dropout mitigates overinterpretation: its models' SIS are larger.
    ``increase``: rows of :func:`overinterp.experiments.mitigation.dropout_increase` (one per tau).

    Counts: the images where every standard and every input-dropout model has an SIS, times the
    replicates of each kind, paired by seed. Can hold if the claim is true at our scale: models that
    cannot rely on any one pixel need more pixels to reach tau on most images, an interval above
    0; can fail if false: input-dropout models with smaller SIS give an interval below 0."""
    return _larger(increase, "Input dropout mitigates overinterpretation: models trained with it have larger SIS "
                   "(the abstract that the paper code's README reproduces: 'We find ensembling and input dropout can "
                   "each help mitigate overinterpretation').",
                   "comparison (both evaluated through the input-dropout models' fixed masks; both without masks)",
                   "the input-dropout models' mean SIS size minus the standard models' of the same architecture, "
                   "evaluated the same way, on the images where all have an SIS; the interval over the replicates of "
                   "each kind, images shared", min_images, "increase (points)")


def increases(images: pd.DataFrame, measure: str, claim: str, min_images: int = 10, seed: int = 0) -> Verdict:
    """Verdict on "entropy fine-tuning increases ``measure``" ("reduced size" or "SIS size").

    Per replicate, the paired differences (fine-tuned - original) of ``measure`` over the images that
    have it under both models (an SIS size of -1, no SIS at the threshold, leaves the image out); the
    measure is their mean over the replicates, with the 95% interval of
    :func:`overinterp.paper.intervals.replicate_interval` (replicates, each on its own images). Three
    outcomes against :data:`overinterp.paper.verdicts.ABOVE_ZERO`: holds when the interval lies above 0,
    does not hold when it lies wholly below, inconclusive when it contains 0; cannot be tested when a
    replicate has fewer than ``min_images`` such images."""
    w = images.pivot_table(index=["replicate", "image"], columns="model", values=measure)
    w = w[(w >= 0).all(axis=1)]
    rows, diffs = {}, []
    for r in sorted(images["replicate"].unique()):
        g = w.loc[r] if r in w.index.get_level_values(0) else w.iloc[:0]
        d = (g["fine-tuned"] - g["original"]).to_numpy(float)
        diffs.append(d)
        rows[f"replicate {r}"] = {"replicates": 1, "images": len(d), "original": g["original"].mean(),
                                  "fine-tuned": g["fine-tuned"].mean(), "mean increase": d.mean() if len(d) else None,
                                  "images larger": int((d > 0).sum()), "images smaller": int((d < 0).sum())}
    if diffs and all(len(d) >= min_images for d in diffs):
        iv = replicate_interval({"d": diffs}, paired_images=False, seed=seed)
        rows["all replicates"] = interval_row(iv, ABOVE_ZERO, "mean increase", replicates=len(diffs),
                                              images=sum(map(len, diffs)))
    numbers = pd.DataFrame.from_dict(rows, orient="index").rename_axis("replicate")
    outcome = rows["all replicates"]["outcome"] if "all replicates" in rows else UNTESTABLE
    criterion = (f"the 95% interval, over the replicates, of the mean per-image increase of the {measure} from the "
                 "original to the fine-tuned model (over the images that have one under both models) lies above 0: "
                 "holds if the whole interval is above 0, does not hold if it lies wholly below 0, inconclusive if "
                 f"it contains 0; cannot be tested when a replicate has fewer than {min_images} such images.")
    return Verdict(claim, criterion, outcome, numbers)


def size_verdict(images: pd.DataFrame, min_images: int) -> Verdict:
    """Feng et al.'s claim (their Table 2): fine-tuning makes the reduced inputs larger (:func:`increases`)."""
    squad = FENG_TABLE2["SQuAD"]
    claim = ("Fine-tuning that maximises the entropy on reduced inputs (Feng et al. 2018, Eq. 2) makes the inputs "
             "that input reduction leaves larger (their Table 2: on all three tasks, e.g. SQuAD "
             f"{squad[2]:.2f} to {squad[3]:.2f} words).")
    return increases(images, "reduced size", claim, min_images=int(min_images))


def sis_verdict(images: pd.DataFrame, min_images: int) -> Verdict:
    """Our question: the same fine-tuning makes the SIS larger (:func:`increases` of the SIS size)."""
    claim = ("Our question, not Feng et al.'s: the same fine-tuning makes the model's sufficient input subsets at "
             "the profile's threshold larger, i.e. it mitigates overinterpretation (as ensembling does in the "
             "paper, section 4.3).")
    return increases(images, "SIS size", claim, min_images=int(min_images))
