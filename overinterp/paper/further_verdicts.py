"""Verdicts of the paper's further claims (4.1.1, 4.2 imputed, 4.5, 4.6, input dropout), the related
methods' claims (Feng et al., Shared Interest, Bayes-TrEx) and the published critiques (07b), by the rule
of :mod:`overinterp.paper.decide`, against the margins of :data:`~overinterp.paper.claims.CLAIMS`.

    v = ensembles_increase_accuracy(gains)     # gains: overinterp.experiments.mitigation.ensemble_gains
    v = borders_verdict(shares, area, 0.9)     # shares: overinterp.experiments.imagenet_chapter.border_shares
"""
import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from overinterp.paper.claims import BLANK_PRIOR_MULTIPLE, BOUNDARY_RATIO, CLAIMS, FAR_MORE_POINTS, TOLERANCE_POINTS
from overinterp.paper.decide import (UNTESTABLE, Margin, Verdict, combine, difference_rows, from_rows, interval_row,
                                     replicates)
from overinterp.paper.intervals import Interval, replicate_interval
from overinterp.paper.numbers import FENG_TABLE2, SIS_MEAN_SIZE_BELOW, SIS_THRESHOLD, TABLE1, fmt
from overinterp.paper.verdicts import retrain_beats_random, retrain_near_full, sis_size


def _larger(rows: pd.DataFrame, claim: str, what: str, counted: str, min_images: int, key: str) -> Verdict:
    """Rows of an increase table ("increase (points)", its interval "low", "high") against the minimal increase
    of claim ``key``; untestable below ``min_images`` images."""
    margin = CLAIMS[key].margin
    numbers = rows.copy()
    numbers["images"] = numbers["images"].astype(int)
    if "members" in numbers and "replicates" not in numbers:      # an ensemble's interval is over its members
        numbers.insert(0, "replicates", numbers["members"].astype(int))
    numbers["margin"] = str(margin)
    numbers["outcome"] = [UNTESTABLE if n < min_images else margin.decide(Interval(e, lo, hi)) for n, e, lo, hi
                          in zip(numbers["images"], numbers[CLAIMS[key].measure], numbers["low"], numbers["high"])]
    return from_rows(claim, f"for every {what}, the 95% interval of the increase ({counted}) against a minimal "
                     f"increase of {margin.low:g} ({margin.words}): holds if the whole interval is at or above it, "
                     "does not hold if it lies wholly below it (an increase too small to matter, or none), "
                     f"inconclusive if it contains it; cannot be tested from fewer than {min_images} images.", numbers)


def ensembles_increase_sis(increase: pd.DataFrame, min_images: int = 10) -> Verdict:
    """4.6, Fig. 6, S2: an ensemble's SIS is larger than its members'. ``increase``: rows of
    ``experiments.mitigation.ensemble_increase``."""
    return _larger(increase, "Ensembling increases the SIS size: an ensemble needs more pixels than its members to "
                   "reach the same confidence (section 4.6, Fig. 6; Fig. S2: 'the ensemble SIS are larger').",
                   "ensemble", "the ensemble's mean SIS size minus its members', on the images where all have an "
                   "SIS; a t interval over the members, with the error of the images they share", min_images,
                   "ensemble_sis")


def ensembles_increase_accuracy(gains: pd.DataFrame, min_images: int = 100) -> Verdict:
    """4.6: 'ensembling uniformly increases the model accuracy'. ``gains``: rows of
    ``experiments.mitigation.accuracy_gain``, one per ensemble."""
    numbers = gains.rename(columns={"gain (points)": "increase (points)"})
    ens, one = TABLE1[("ensemble 5x resnet18", "full", "full")][0], TABLE1[("resnet18", "full", "full")][0]
    return _larger(numbers, "Ensembling increases the accuracy over that of the members (section 4.6: 'uniformly'; "
                   f"Table 1: {fmt(ens)}% for five ResNet18s against {fmt(one)}% for one, CIFAR-10).",
                   "ensemble", "test accuracy of the ensemble minus its members' mean, on the same test images; "
                   "a t interval over the members, with the error of the images they share", min_images,
                   "ensemble_accuracy")


def dropout_increases_sis(increase: pd.DataFrame, min_images: int = 10) -> Verdict:
    """Input dropout mitigates overinterpretation: its models' SIS are larger. ``increase``: rows of
    ``experiments.mitigation.dropout_increase`` (one per tau)."""
    return _larger(increase, "Input dropout mitigates overinterpretation: models trained with it have larger SIS "
                   "(the abstract that the paper code's README reproduces: 'We find ensembling and input dropout can "
                   "each help mitigate overinterpretation').",
                   "comparison (both evaluated through the input-dropout models' fixed masks; both without masks)",
                   "the input-dropout models' mean SIS size minus the standard models' of the same architecture, "
                   "evaluated the same way, on the images where all have an SIS; the interval over the replicates of "
                   "each kind, images shared", min_images, "dropout")


def increases(images: pd.DataFrame, measure: str, claim: str, key: str, min_images: int = 10, seed: int = 0) -> Verdict:
    """Whether entropy fine-tuning increases ``measure`` ("reduced size" or "SIS size"): per-image fine-tuned -
    original over images with both (size -1: none), mean over replicates against the minimal increase of claim
    ``key``; untestable when a replicate has fewer than ``min_images``."""
    margin = CLAIMS[key].margin
    w = images.pivot_table(index=["replicate", "image"], columns="model", values=measure)
    w = w[(w >= 0).all(axis=1)]
    rows, diffs = {}, []
    for r in sorted(images["replicate"].unique()):
        g = w.loc[r] if r in w.index.get_level_values(0) else w.iloc[:0]
        d = (g["fine-tuned"] - g["original"]).to_numpy(float)
        diffs.append(d)
        # the measure last: Verdict.per_model reads it right before the interval's columns
        rows[f"replicate {r}"] = {"replicates": 1, "images": len(d), "original": g["original"].mean(),
                                  "fine-tuned": g["fine-tuned"].mean(), "images larger": int((d > 0).sum()),
                                  "images smaller": int((d < 0).sum()), "mean increase": d.mean() if len(d) else None}
    if diffs and all(len(d) >= min_images for d in diffs):
        iv = replicate_interval({"d": diffs}, paired_images=False, seed=seed)
        rows["all replicates"] = interval_row(iv, margin, "mean increase", replicates=len(diffs),
                                              images=sum(map(len, diffs)))
    criterion = (f"the 95% interval, over the replicates, of the mean per-image increase of the {measure} from the "
                 "original to the fine-tuned model (over the images that have one under both models) against a "
                 f"minimal increase of {margin.low:g} ({margin.words}): holds if the whole interval is at or above "
                 "it, does not hold if it lies wholly below it, inconclusive if it contains it; cannot be tested when "
                 f"a replicate has fewer than {min_images} such images.")
    # the pooled row decides; the replicates' rows only show their part
    return Verdict(claim, criterion, rows["all replicates"]["outcome"] if "all replicates" in rows else UNTESTABLE,
                   pd.DataFrame.from_dict(rows, orient="index").rename_axis("replicate"))


def size_verdict(images: pd.DataFrame, min_images: int) -> Verdict:
    """Feng et al.'s claim (their Table 2): fine-tuning makes the reduced inputs larger (:func:`increases`)."""
    squad = FENG_TABLE2["SQuAD"]
    claim = ("Fine-tuning that maximises the entropy on reduced inputs (Feng et al. 2018, Eq. 2) makes the inputs "
             "that input reduction leaves larger (their Table 2: on all three tasks, e.g. SQuAD "
             f"{squad[2]:.2f} to {squad[3]:.2f} words).")
    return increases(images, "reduced size", claim, "reduction_size", min_images=int(min_images))


def sis_verdict(images: pd.DataFrame, min_images: int) -> Verdict:
    """Our question: the same fine-tuning makes the SIS larger (:func:`increases` of the SIS size)."""
    claim = ("Our question, not Feng et al.'s: the same fine-tuning makes the model's sufficient input subsets at "
             "the profile's threshold larger, i.e. it mitigates overinterpretation (as ensembling does in the "
             "paper, section 4.6).")
    return increases(images, "SIS size", claim, "reduction_sis", min_images=int(min_images))


def borders_verdict(shares: Sequence[float], area: float, tau: float, min_images: int = 10, seed: int = 0,
                    resamples: int = 2000) -> Verdict:
    """Figure 4: SIS "strongly concentrated along the image borders". ``shares``: per image, its SIS pixels'
    share in the border band (NaN: empty SIS), the band being ``area`` of the image. "Strongly": a mean share
    at least ``(1 + area) / 2``, halfway from no concentration to all pixels."""
    s = np.asarray([x for x in shares if not math.isnan(x)], float)
    margin = Margin(low=100 * (1 + area) / 2, words="at least halfway from the band's area share to all SIS pixels")
    iv = None if len(s) < max(min_images, 1) else replicate_interval(
        {"share": [s]}, paired_images=False, n_resamples=resamples, seed=seed, bounds=(0.0, 1.0))
    rows = {"SIS": interval_row(iv, margin, CLAIMS["borders"].measure, 100,
                                **{"images with an SIS": len(s), "band's share of the area (%)": 100 * area,
                                   "images above the area share": int((s > area).sum())})}
    return from_rows(
        f"at τ = {tau:g} the SIS of confidently classified ImageNet images are strongly concentrated along "
        "the image borders rather than near the center (paper 4.1.1, Figure 4: 1000 validation images, "
        "Inception-v3)",
        f"over at least {min_images} images with a non-empty SIS at τ = {tau:g}, the 95% interval (images "
        "resampled) of the mean share of an SIS's pixels that lie in the border band (the outer "
        f"{100 * area:.2f}% of the image's area) lies at or above {margin.low:.2f}%, halfway from the band's "
        "area share (no concentration) to 100% (every SIS pixel on the border): holds if the whole interval "
        "is there, does not hold if the whole interval is below, inconclusive if it straddles", rows)


def imputed_verdict(bs: Sequence, random: Sequence, model: str, seed: int = 0, resamples: int = 2000) -> Verdict:
    """4.2's :func:`~overinterp.paper.verdicts.retrain_beats_random` on ROAD-imputed subsets: per retrained
    replicate, 1/0 per test image; row "<model>, imputed (ROAD)"."""
    name = f"{model}, imputed (ROAD)"
    return retrain_beats_random({name: bs}, {name: random}, seed=seed, resamples=resamples)


def robust_sis_sparse(sizes: Mapping[str, Sequence], tau: float, bound: float = SIS_MEAN_SIZE_BELOW,
                      min_images: int = 5, seed: int = 0) -> Verdict:
    """4.5: robust models' SIS are sparse too, tested as 4.1's :func:`~overinterp.paper.verdicts.sis_size`.
    ``sizes``: robust model -> per replicate, SIS size (%) per image (NaN: no SIS)."""
    v = sis_size({name: [r / 100 for r in replicates(s)] for name, s in sizes.items()}, tau, bound,
                 min_images, seed=seed,
                 claim="Adversarially robust models classify highly sparse sufficient input subsets as confidently as "
                       "standard models (section 4.5: \"models trained to be robust to adversarial attacks classify "
                       "the highly sparse sufficient input subsets as confidently as the models in Section 4.1\"; "
                       f"Figure 1 'Adv. Robust', each SIS classified with ≥ {100 * SIS_THRESHOLD:g}% confidence).")
    v.numbers = v.numbers.rename(columns={"images": "images with an SIS"})
    v.numbers["per replicate"] = [" + ".join(str(int(np.sum(~np.isnan(r)))) for r in replicates(s))
                                  for s in sizes.values()]
    return v


def sis_on_background(coverage: pd.DataFrame, tau: float, seed: int = 0, resamples: int = 2000) -> Verdict:
    """4.1.1 in Shared Interest's terms: SIS lie on the background. ``coverage``: rows of
    ``experiments.shared_interest.background_coverage``; measure: mean of EC minus the garment's area share."""
    c, rows = CLAIMS["background"], {}
    for model, g in coverage.groupby("model", sort=False):
        reps = [r["explanation coverage"].to_numpy(float) - r["random pixels (|G| / HW)"].to_numpy(float)
                for _, r in g.groupby("replicate")]
        iv = replicate_interval({"d": reps}, paired_images=False, n_resamples=resamples, seed=seed)
        rows[model] = interval_row(iv, c.margin, c.measure, replicates=len(reps), images=len(g),
                                   **{"mean EC of SIS": g["explanation coverage"].mean(),
                                      "random pixels (|G| / HW)": g["random pixels (|G| / HW)"].mean()})
    return from_rows(
        ("The SIS of confidently classified images lie on the background rather than on the object: "
         "\"the SIS tend to be strongly concentrated along the image borders … the model relies too "
         "heavily on image backgrounds\" (paper 4.1.1, ImageNet)."),
        (f"With the garment's silhouette as the object, for every model, the 95% interval (replicates and images "
         f"resampled) of the mean difference between the share of an SIS's pixels on the garment (explanation "
         f"coverage; τ = {tau:g}, correctly classified images) and the share of the image the garment covers (what "
         "uniformly random pixels would give) lies below 0: holds if the whole interval is below, does not hold if "
         "it is wholly above, inconclusive if it straddles 0. Images with an empty SIS are left out."), rows)


def sparse_pixels(generated: Sequence[float], real: Sequence[float], tau: float,
                  bound: float = SIS_MEAN_SIZE_BELOW, min_images: int = 3, seed: int = 0) -> Verdict:
    """4.1 on Bayes-TrEx samples: :func:`~overinterp.paper.verdicts.sis_size` of the ``generated`` images' SIS
    sizes (fractions), with the ``real`` confident test images' row beside, untested."""
    claim = (f"Images a generative model makes in-distribution, sampled where the classifier is confident, are "
             f"classified from sparse pixels as real test images are: at tau = {tau:g} the mean SIS is below "
             f"{100 * bound:g}% of the image (the paper's 4.1 finding for real CIFAR-10 test images).")
    sets = {"sampled by Bayes-TrEx": np.asarray(generated, float), "confident test images": np.asarray(real, float)}
    (tested, x), (reference, y) = sets.items()
    v = sis_size({tested: [x]}, tau, bound, min_images, claim=claim, seed=seed)
    ref = sis_size({reference: [y]}, tau, bound, seed=seed).numbers
    ref["outcome"], ref["margin"] = "(reference, not tested)", ""
    v.numbers = pd.concat([v.numbers, ref]).rename_axis("images of")
    for name, x in sets.items():
        v.numbers.loc[name, "median SIS size (%)"] = 100 * np.median(x) if len(x) else np.nan
        v.numbers.loc[name, "empty SIS (%)"] = 100 * (x == 0).mean() if len(x) else np.nan
    return v


# ----------------------------------------------------------------------------- the paper against its critiques (07b)

def dilation_keeps_prediction(undilated: Mapping, dilated: Mapping, kernel: int, subsets: str,
                              paired_images: bool = True, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Springer (2022): dilating the keep-mask by ``kernel`` x ``kernel`` should not take the prediction away.
    ``undilated`` / ``dilated``: model -> per replicate, 1/0 per image (full image's class kept) on the
    ``subsets`` ("BS subsets": shared images; "SIS": own images, ``paired_images=False``); measure in points."""
    c = CLAIMS["dilated"]
    images = "the same test images" if paired_images else "each replicate's own confident test images"
    ceiling = (" An undilated SIS keeps the prediction by construction (every image 100%), so the change cannot "
               "be positive: its ceiling is 0 points, and the claim holds only where dilation costs at most "
               f"{TOLERANCE_POINTS:g} points." if subsets == "SIS" else "")
    return from_rows(
        f"The kept pixels of the {subsets} are sufficient evidence for the model's prediction: dilating each "
        f"keep-mask by {kernel}×{kernel} (every kept pixel stays, its neighbours come back with their true values) "
        "does not take the prediction away (the paper's reading of 4.1; Springer 2022 finds that dilating each SIS "
        "drops an ImageNet ResNet-50's confidence to near zero and reads SIS images as adversarial examples).",
        f"for every architecture, the 95% interval (a t interval over the replicates, {images}) of the change in "
        f"the share of images still classified as on the full image, from the undilated to the {kernel}×{kernel}-"
        f"dilated {subsets}, lies at or above −{TOLERANCE_POINTS:g} points (chapter 3's flat margin for \"about as "
        "accurate\": a few hundred images do not resolve a finer drop; a gain holds); does not hold if it lies "
        "wholly below; inconclusive if it straddles. Cannot be tested without a replicate that has such images."
        + ceiling,
        difference_rows(dilated, undilated, c.measure, c.margin, ("dilated (%)", "undilated (%)"), seed, resamples,
                        paired_images=paired_images, drop_empty=True))


def dilated_retraining_verdicts(bs: Mapping, random: Mapping, full: Mapping, chance: float, kernel: int,
                                seed: int = 0) -> tuple[Verdict, Verdict]:
    """Springer's proposed test: 4.2's two claims on models retrained on dilated BS subsets (``bs``), random
    masks of as many pixels (``random``) and full images (``full``): model -> per replicate, 1/0 per image."""
    beats = retrain_beats_random(bs, random, seed=seed)
    near = retrain_near_full(bs, full, chance, seed=seed)
    for model, row in beats.numbers.iterrows():       # the most a BS model can beat random by: full - random
        room = 100 * (np.mean([np.mean(x) for x in replicates(full[model])]) -
                      np.mean([np.mean(x) for x in replicates(random[model])]))
        beats.numbers.loc[model, "headroom (points)"] = room
        if room < FAR_MORE_POINTS:
            beats.numbers.loc[model, "outcome"] = UNTESTABLE
            if "replicates to decide" in beats.numbers:
                beats.numbers.loc[model, "replicates to decide"] = np.nan
    beats.outcome = combine(beats.numbers["outcome"])
    what = (f"({kernel}×{kernel}-dilated 5% BS subsets; the random subsets keep as many pixels as the dilated BS "
            "subsets of the same image)")
    beats.claim = (f"Models trained and tested on {kernel}×{kernel}-dilated 5% BS subsets are far more accurate than "
                   "models trained and tested on random subsets with as many pixels (Springer 2022's proposed test "
                   "of section 4.2: retraining on dilated subsets).")
    near.claim = (f"Models trained and tested on {kernel}×{kernel}-dilated 5% BS subsets are nearly as accurate as "
                  "models trained on full images (section 4.2's second claim under Springer 2022's dilation).")
    beats.criterion += (f" {what}. Cannot be tested where the headroom, the full-image control's accuracy "
                        f"minus the random subsets' (the most the BS models could gain over random if they "
                        f"learned as much as from full images), is below {FAR_MORE_POINTS:g} points.")
    near.criterion += f" {what}"
    return beats, near


def saliency_on_boundary(attribution: Mapping, area: Mapping, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Springer (2022): SmoothGrad concentrates on the mask's boundary. ``attribution`` / ``area``: model -> per
    replicate, per image the ring's share of the attribution and of the area; measure: their ratio."""
    c = CLAIMS["boundary"]
    return from_rows(
        "SmoothGrad saliency of a masked subset image concentrates on the boundary between the kept and the masked "
        "pixels (Springer 2022, on SIS images of an ImageNet ResNet-50; here on the 5% BS subsets).",
        "for every architecture, the 95% interval (a t interval over the replicates, the test images shared) of "
        "the share of the SmoothGrad attribution on the one-pixel ring of masked pixels that touch a kept pixel, "
        f"divided by the ring's share of the image's area (1: attribution spread as the area is), lies at or above "
        f"{BOUNDARY_RATIO:g}: \"concentrates\" means at least a quarter more than the ring's share of the area "
        f"(Springer gives no size). Does not hold if the whole interval lies below {BOUNDARY_RATIO:g}, a ring no "
        "more than a quarter above its area, which an attribution that ignores the edge gives; inconclusive if it "
        "straddles.",
        difference_rows(attribution, area, c.measure, c.margin,
                        ("ring's share of the attribution (%)", "ring's share of the area (%)"), seed, resamples,
                        ratio=True, drop_empty=True))


def blank_uninformative(confidence: Mapping, classes: int, predicted: Mapping | None = None,
                        seed: int = 0) -> Verdict:
    """The SIS reference's check that the fully masked input is uninformative. ``confidence``: row -> each
    replicate's top-class probability on the blank; ``classes``: their number; ``predicted``: for the table."""
    high, rows = BLANK_PRIOR_MULTIPLE / classes, {}
    margin = Margin(high=high, words=f"top-class probability at most {high:g}")
    for name, values in confidence.items():
        v = [np.asarray([x], float) for x in values]
        iv = replicate_interval({"p": v}, paired_images=False, seed=seed, bounds=(0.0, 1.0))
        rows[name] = interval_row(iv, margin, CLAIMS["blank"].measure, replicates=len(v),
                                  **({"predicted class": predicted[name]} if predicted else {}))
    return from_rows(
        "The model's prediction on the fully masked input is uninformative (the SIS reference code, google-research "
        "sis.py: \"one should check that the function's prediction on the fully-masked input is uninformative\"; "
        "its README: \"tends to the mean or prior over the training data\").",
        f"for every architecture and mask value (the mean pixel, the paper's; black), the 95% interval (a t "
        f"interval over the replicates) of the probability of the class predicted on the image whose every pixel "
        f"is masked lies at or below {high:g}, {BLANK_PRIOR_MULTIPLE:g} times the prior of a class ({classes} "
        "balanced classes): a model may lean toward a class but not decide for it. Does not hold if the whole "
        "interval lies above; inconclusive if it straddles.", rows)


def mask_shape_leaks(same: Mapping, blank: Mapping, fill: str, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Missingness bias (Jain et al. 2022): the mask's shape alone pushes toward the subset's class. ``same`` /
    ``blank``: model -> per replicate, 1/0 per shared image: the shape input (kept pixels = ``fill``) gets the
    subset's class; the blank does (the baseline, as a blank of one class matches all its subsets)."""
    c = CLAIMS["mask_shape"]
    return from_rows(
        "The shape of a 5% BS mask alone, without the kept pixels' values, moves the original model toward the "
        "class its BS subset was given (missingness bias, Jain et al. 2022: the masking pattern itself biases a "
        "CNN's prediction).",
        f"for every architecture, the 95% interval (a t interval over the replicates, the test images shared) of "
        f"the share of mask-shape inputs (the kept pixels set to {fill}, the rest to the mask value) given the BS "
        "subset's class, minus the share of images whose fully masked input (no shape) is given that class, lies "
        f"at or above {TOLERANCE_POINTS:g} points, chapter 3's flat margin (a few hundred images do not resolve a "
        f"finer effect): holds if the whole interval is at or above {TOLERANCE_POINTS:g}, does not hold if it lies "
        "wholly below (a shape that adds nothing the blank does not decides it), inconclusive if it straddles. "
        "The blank is the baseline because a blank called one class matches every subset called that class with "
        "no shape at all.",
        difference_rows(same, blank, c.measure, c.margin,
                        ("same class as the subset (%)", "blank's class the subset's (%)"), seed, resamples,
                        drop_empty=True))


def masked_miscalibrated(masked: Mapping, full: Mapping, images: int, bins: int = 15, seed: int = 0) -> Verdict:
    """ReCalX (Decker et al. 2025): worse calibration on masked inputs. ``masked`` / ``full``: row -> each
    replicate's ECE (a fraction) on the same ``images``; measure: masked - full in points, over replicates."""
    c, rows = CLAIMS["calibration"], {}
    for name in masked:
        m, f = np.asarray(masked[name], float), np.asarray(full[name], float)
        iv = replicate_interval({"d": [np.asarray([x]) for x in m - f]}, paired_images=False, seed=seed)
        rows[name] = interval_row(iv, c.margin, c.measure, 100, replicates=len(m), images=images,
                                  **{"ECE on full images (%)": 100 * f.mean(), "ECE masked (%)": 100 * m.mean()})
    return from_rows(
        "Models are worse calibrated on masked inputs than on full images (ReCalX, Decker et al. 2025: models "
        "produce unreliable probabilities under the perturbations explanations use, which moves a confidence "
        "threshold such as the SIS's τ).",
        f"for every architecture and masked input (each replicate's own 5% BS subsets; random 5% subsets), the 95% "
        f"interval (a t interval over the replicates) of the expected calibration error ({bins} equal-width bins) on "
        f"the masked inputs minus that on the full images, in points, against a minimal increase of "
        f"{c.margin.low:g} point: holds if the whole interval is at or above it, does not hold if it "
        "lies wholly below it, inconclusive if it contains it. The replicates share the "
        "test images, whose error an ECE difference cannot split off: the interval holds it only through the "
        "replicates' scatter.", rows)


def search_beats_saliency(bs: Mapping, saliency: Mapping, frac: float, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Our question: do BS subsets beat as many most-salient pixels (input gradient)? ``bs`` / ``saliency``:
    model -> per replicate, 1/0 per shared test image with ``frac`` kept; measure in points."""
    c = CLAIMS["insertion"]
    return from_rows(
        f"Backward selection's {100 * frac:g}% subsets are classified far more accurately than the same number of the "
        "most salient pixels by the input gradient on the full image (our question: whether the subsets' "
        "sufficiency needs a search over masked inputs).",
        f"for every architecture, the 95% interval (a t interval over the replicates, the test images shared) of "
        f"the accuracy with the last {100 * frac:g}% of the backward-selection order kept minus the accuracy with as "
        f"many of the most salient pixels kept lies at or above {FAR_MORE_POINTS:g} points (\"far more\", chapter "
        "5's margin); does not hold if it lies wholly below; inconclusive if it straddles.",
        difference_rows(bs, saliency, c.measure, c.margin, ("backward-selection order (%)", "saliency order (%)"),
                        seed, resamples, drop_empty=True))
