"""The paper's claims as verdicts: an interval of ours, a margin in words, and one of three outcomes.

One function per claim that a chapter tests (sections 4.1, 4.2, 4.4). Each takes our
measurements per image and per model replicate (1/0 for a correct image, a confidence drop, an
SIS size), computes the claim's measure with a 95% interval from
:func:`overinterp.paper.intervals.replicate_interval` (a t interval over the model replicates, plus
the image error they share where they see the same images) and compares the interval with a margin: the
region where the claim holds, derived from the paper's own numbers with a stated tolerance
where the paper's gap is finer than our sample resolves. In the form of an equivalence test:

* "holds" when the whole interval lies inside the margin,
* "does not hold" when the whole interval lies outside it,
* "inconclusive at this scale" otherwise (the interval straddles the margin's edge),
* "cannot be tested" when the numbers cannot test the claim (a control that learned nothing).

A claim about every architecture holds when it holds for each, does not hold when it fails for
one, and is inconclusive otherwise. The same functions and margins serve every profile.

    v = subsets_accurate(full={"ResNet20": [c1, c2]}, bs={"ResNet20": [b1, b2]})   # 1/0 per image
    v.word, v.numbers      # 'does not hold', estimate, interval, margin and outcome per model
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from overinterp.paper import numbers as paper
from overinterp.paper.formatting import MISSING, and_list, number
from overinterp.paper.intervals import Interval, replicate_interval, replicates_needed

#: the counts a verdict's scope names, in this order
SCOPE = ("replicates", "images", "images with an SIS")

__all__ = ["Verdict", "Margin", "MARKS", "HOLDS", "FAILS", "INCONCLUSIVE", "UNTESTABLE", "OUTCOMES", "combine", "spread",
           "sis_size", "subsets_accurate", "confidence_kept", "no_transfer", "retrain_beats_random",
           "retrain_near_full", "summary", "paper_gap", "paper_transfer_share", "sis_predicts_accuracy", "SIS_ACCURACY_TAUS",
           "SIS_ACCURACY_MIN_INCREASE",
           "TOLERANCE_POINTS", "TOLERANCE_CONFIDENCE", "FAR_MORE_POINTS", "interval_row", "from_rows", "paper_round", "minus", "MIN_INCREASE", "at_least"]

HOLDS, FAILS, INCONCLUSIVE, UNTESTABLE = "holds", "does not hold", "inconclusive at this scale", "cannot be tested"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE, UNTESTABLE)
#: legacy three-valued reading of an outcome (True / False / None)
WORDS = {True: HOLDS, False: FAILS, None: UNTESTABLE}
#: how a verdict box marks each row's outcome, and the admonition class of each outcome
MARKS = {HOLDS: "✔ ", FAILS: "✘ ", INCONCLUSIVE: "≈ ", UNTESTABLE: "– "}
BOX = {HOLDS: "tip", FAILS: "warning", INCONCLUSIVE: "note", UNTESTABLE: "note"}

#: "About as accurate" (Table 1): the paper's drops are at most about 1 point (``paper_gap``), finer than
#: an interval over a few hundred test images and a few replicates resolves (one image of 300 is 0.33
#: points), so a drop counts as "about as accurate" up to this many points of accuracy.
TOLERANCE_POINTS = 5.0
#: "About as confident" (4.1: mean drops -0.035 to -0.012, negative = more confident): a mean drop of
#: the predicted class's probability up to this much still counts as "about as confident".
TOLERANCE_CONFIDENCE = 0.05
#: "Far more accurate" (4.2, Table 1: BS-retrained models beat random-retrained ones by 38.8 to 43.8
#: points): at least a quarter of the paper's smallest gap, in points.
FAR_MORE_POINTS = 10.0


@dataclass(frozen=True)
class Margin:
    """The region ``[low, high]`` of a claim's measure where the claim holds, and what it means in words."""
    low: float = -math.inf
    high: float = math.inf
    words: str = ""

    def decide(self, iv: Interval) -> str:
        """The outcome for the interval ``iv``: inside, outside or straddling the margin."""
        if any(math.isnan(x) for x in (iv.low, iv.high)):
            return UNTESTABLE
        if self.low <= iv.low and iv.high <= self.high:
            return HOLDS
        if iv.high < self.low or iv.low > self.high:
            return FAILS
        return INCONCLUSIVE

    def edge(self, iv: Interval) -> float | None:
        """The edge of the margin that ``iv`` straddles (None when it straddles none)."""
        for e in (self.low, self.high):
            if math.isfinite(e) and iv.low <= e <= iv.high:
                return e
        return None

    def to_decide(self, iv: Interval) -> str:
        """How many replicates would decide a straddling interval, in words: 'about 7', 'over 100'
        ('needs replicates (one model)': no replicate spread to scale; '' when ``iv`` straddles no edge)."""
        e = self.edge(iv)
        if e is None:
            return ""
        if not iv.replicates or iv.replicates < 2:
            return "needs replicates (one model)"
        n = replicates_needed(iv, e)
        return f"about {n}" if n else "over 100"

    def __str__(self) -> str:
        if math.isinf(self.low):
            return f"≤ {self.high:g}"
        if math.isinf(self.high):
            return f"≥ {self.low:g}"
        return f"{self.low:g} to {self.high:g}"


#: Where "larger" holds, for the claims that give no size of the increase (4.6, input dropout, input
#: reduction's fine-tuning, ReCalX): an increase of at least a minimal effect, so that a null result (an
#: interval around 0 that excludes the minimal effect) decides "does not hold" instead of staying
#: inconclusive. Each is in the measure's unit, with its reason:
#: - ensembles' accuracy: half the paper's gain of five ResNet18 over one (Table 1: +0.87 points);
#: - SIS sizes (ensembles, input dropout): half a point of the image, a tenth of the 5% the paper bounds
#:   SIS below (4.1), about 4 pixels of a 28 x 28 image;
#: - input reduction: one pixel, the smallest change a reduced input's size can show;
#: - calibration: one point of ECE (ReCalX gives no size).
MIN_INCREASE = {"ensemble_accuracy": (0.43, "half the paper's +0.87-point gain of five ResNet18, Table 1"),
                "ensemble_sis": (0.5, "a tenth of the 5% the paper bounds SIS below"),
                "dropout": (0.5, "a tenth of the 5% the paper bounds SIS below"),
                "reduction_size": (1.0, "one pixel, the smallest change of a reduced input's size"),
                "reduction_sis": (1.0, "one pixel, the smallest change of an SIS's size"),
                "calibration": (1.0, "one point of ECE; ReCalX gives no size")}


def at_least(claim: str) -> Margin:
    """The margin of a "larger" claim: an increase of at least :data:`MIN_INCREASE` of ``claim``."""
    effect, why = MIN_INCREASE[claim]
    return Margin(low=effect, words=f"increase of at least {effect:g} ({why})")


def combine(outcomes: Sequence[str]) -> str:
    """A claim about every model: does not hold if it fails for one, holds if it holds for each,
    cannot be tested if no model tests it, else inconclusive."""
    outcomes = list(outcomes)
    if FAILS in outcomes:
        return FAILS
    if outcomes and all(o == HOLDS for o in outcomes):
        return HOLDS
    if not outcomes or all(o == UNTESTABLE for o in outcomes):
        return UNTESTABLE
    return INCONCLUSIVE


@dataclass
class Verdict:
    """One claim of the paper tested on our numbers."""
    claim: str                 # the paper's claim, with its section and numbers
    criterion: str             # the margin in words: what our interval must do for each outcome
    outcome: str               # one of OUTCOMES
    numbers: pd.DataFrame = field(repr=False)  # per model: estimate, 95% interval, margin, outcome
    note: str = ""             # what a reader must know beside the outcome (e.g. subsets beating the control)
    engine: str = ""           # the backward selection behind its subsets, in words
    blank_passes: dict | None = None  # per architecture name: whether its blank is uninformative (the paper's fill)

    def __post_init__(self):
        if isinstance(self.outcome, bool) or self.outcome is None:   # a legacy True / False / None
            self.outcome = WORDS[self.outcome]
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, got {self.outcome!r}")

    @property
    def word(self) -> str:
        """'holds', 'does not hold', 'inconclusive at this scale' or 'cannot be tested'."""
        return self.outcome

    @property
    def holds(self) -> bool | None:
        """True (holds), False (does not hold) or None (inconclusive or cannot be tested)."""
        return {HOLDS: True, FAILS: False}.get(self.outcome)

    def scope(self) -> str:
        """What the verdict covers, from its table: 'ResNet20 (3 replicates, 300 images); ...'."""
        parts = []
        for name, row in self.numbers.iterrows():
            name = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
            counts = [f"{int(row[k])} {k if int(row[k]) != 1 else k.replace('images', 'image').replace('replicates', 'replicate')}"
                      for k in SCOPE if k in row and pd.notna(row[k])]
            parts.append(name + (f" ({', '.join(counts)})" if counts else ""))
        return "; ".join(parts)

    def per_model(self) -> str:
        """Each row's estimate and interval against the margin, and its outcome: '✔ ResNet20: 2.0 [0.5, 3.1],
        margin ≤ 5, holds'; "no estimate" or "no interval" where they do not exist (the book's one number
        rule, :func:`overinterp.paper.formatting.number`); empty where the table has no interval."""
        cols = list(self.numbers.columns)
        if "95% low" not in cols or "outcome" not in cols:
            return ""
        measure, out = cols[cols.index("95% low") - 1], []
        for name, row in self.numbers.iterrows():
            name = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
            ends = [row[measure], row["95% low"], row["95% high"]]
            finite = [abs(float(x)) for x in ends if number(x) != MISSING]
            d = 1 if finite and max(finite) >= 1 else 3
            est, lo, hi = (number(x, d) for x in ends)
            value = ("no estimate" if est == MISSING else
                     f"{est} [{lo}, {hi}]" if MISSING not in (lo, hi) else f"{est} (no interval)")
            margin = f", margin {row['margin']}" if isinstance(row.get("margin"), str) and row["margin"] else ""
            outcome = row["outcome"] if isinstance(row["outcome"], str) else ""    # rows without a verdict of their own
            decide = row.get("replicates to decide")
            decide = f" ({decide} replicates would decide it)" if isinstance(decide, str) and decide[:1] in "ao" else ""
            out.append(f"{MARKS.get(outcome, '')}{name}: {value}{margin}{', ' + outcome if outcome else ''}{decide}")
        return f"**{measure}, per model.** " + "; ".join(out)

    def blank_words(self) -> str:
        """The SIS reference's precondition on this verdict's models, in a sentence (empty without a check)."""
        if not self.blank_passes:
            return ""
        fail = [m for m, ok in self.blank_passes.items() if not ok]
        if not fail:
            return ("the fully masked input (the paper's mean-pixel mask) is uninformative for every architecture "
                    "(chapter 1, “The fully masked input”).")
        names = and_list(fail)
        return (f"the fully masked input (the paper's mean-pixel mask) is classified above the bound of an "
                f"uninformative blank by {names} (chapter 1, “The fully masked input”): for "
                f"{'that architecture' if len(fail) == 1 else 'those architectures'} the measure reads the mask "
                "as well as the kept pixels.")

    def _repr_markdown_(self) -> str:
        """The box a chapter shows: its outcome in a title that reads with each of the four outcomes, the
        scope, each row against the margin, the claim, the criterion and the note."""
        lines = [f":::{{admonition}} Verdict: the claim's outcome here is “{self.word}”",
                 f":class: {BOX.get(self.outcome, 'note')}"]
        if len(self.numbers):
            lines.append(f"**Scope.** {self.scope()}\n")
        if self.per_model():
            lines.append(self.per_model() + "\n")
        lines += [f"**Claim.** {self.claim}\n", f"**Criterion.** {self.criterion}"]
        if self.engine:
            lines.append(f"\n**Engine.** {self.engine}")
        if self.blank_passes:
            lines.append(f"\n**Blank check.** {self.blank_words()}")
        if self.note:
            lines.append(f"\n**Note.** {self.note}")
        return "\n".join(lines) + "\n:::"


def spread(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, sample std, n) of ``values``; the std of a single value is 0 (descriptive only: no
    verdict uses it as an allowance)."""
    v = [float(x) for x in values]
    if not v:
        raise ValueError("spread of no values")
    mean = sum(v) / len(v)
    std = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return mean, std, len(v)


def _all(flags: list) -> bool | None:
    """None when any row cannot be tested, else whether every row holds."""
    return None if any(f is None for f in flags) else all(flags)


def _replicates(x) -> list[np.ndarray]:
    """Per-replicate arrays: a list of arrays stays one, a flat sequence of numbers is one replicate."""
    if isinstance(x, np.ndarray) and x.ndim == 1:
        return [x.astype(np.float64)]
    x = list(x)
    if x and np.ndim(x[0]) == 0:
        return [np.asarray(x, dtype=np.float64)]
    return [np.asarray(r, dtype=np.float64).ravel() for r in x]


def interval_row(iv: Interval, margin: Margin, name: str, scale: float = 1.0, **extra) -> dict:
    """A verdict table's row: estimate, interval, margin and outcome (``scale``: e.g. 100 for percent;
    the margin is in the scaled unit); an inconclusive row says how many replicates would decide it."""
    s = iv.scaled(scale)
    outcome = margin.decide(s)
    row = {**extra, name: s.estimate, "95% low": s.low, "95% high": s.high, "margin": str(margin), "outcome": outcome}
    if outcome == INCONCLUSIVE:
        row["replicates to decide"] = margin.to_decide(s)
    return row


def from_rows(claim: str, criterion: str, rows: dict) -> Verdict:
    """The :class:`Verdict` of a claim about every row (model) of ``rows`` ({name: :func:`interval_row`}),
    its outcome combined from theirs (:func:`combine`)."""
    numbers = pd.DataFrame.from_dict(rows, orient="index")
    return Verdict(claim, criterion, combine(list(numbers["outcome"])) if len(numbers) else UNTESTABLE, numbers)


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


def paper_round(value: float, places: int = 1) -> str:
    """A number of the paper rounded as the paper rounds, half up on its decimal digits (50.05 -> '50.1')."""
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def minus(value: float) -> str:
    """'−0.035' for -0.035: the typographic minus of the claims' text."""
    return f"{value:g}".replace("-", "−")


def _test_range(train_on: str, evaluate_on: str) -> str:
    """'92.5–95.0': the range of the paper's CIFAR-10 test accuracies over its three architectures."""
    acc = [paper.table1_test(a, train_on, evaluate_on)[0] for a in ("resnet20", "resnet18", "vgg16")]
    return f"{paper_round(min(acc))}–{paper_round(max(acc))}"


def _accuracy_pair(a: Mapping, b: Mapping, name: str, margin: Margin, seed: int, resamples: int) -> dict:
    """Per model: the mean accuracy (%) of ``a`` and ``b`` and the interval of their difference a - b
    (points): per replicate r the difference of a's replicate r and b's (the same model, or two models
    trained alike, on the same images), then :func:`replicate_interval` over the replicates."""
    rows = {}
    for model in b:
        ra, rb = _replicates(a[model]), _replicates(b[model])
        iv = replicate_interval({"a": ra, "b": rb}, lambda m: 100 * (m["a"] - m["b"]), paired_images=True,
                                n_resamples=resamples, seed=seed, bounds=(-100.0, 100.0))
        rows[model] = interval_row(iv, margin, name, replicates=len(rb), images=len(rb[0]),
                                   **{"A": 100 * np.mean([r.mean() for r in ra]),
                                      "B": 100 * np.mean([r.mean() for r in rb])})
    return rows


def _rename(rows: dict, a: str, b: str) -> dict:
    return {m: {{"A": a, "B": b}.get(k, k): v for k, v in r.items()} for m, r in rows.items()}


def sis_size(sizes: Mapping[str, Sequence], tau: float, bound: float = paper.SIS_MEAN_SIZE_BELOW,
             min_images: int = 1, claim: str | None = None, seed: int = 0, resamples: int = 2000,
             ids: Mapping[str, Sequence] | None = None) -> Verdict:
    """Section 4.1: at tau = 0.99 the mean SIS is below 5% of the image. ``sizes``: model -> SIS
    size of each image as a fraction of the pixels, one array per replicate (or one flat array);
    NaN: the image has no SIS, not counted. A model with fewer than ``min_images`` SIS cannot be
    tested. ``claim``: the claim tested with this bound (default: section 4.1's).

    ``ids``: model -> per replicate, the id of each image of ``sizes`` (its position in the test
    sample), for replicates whose images overlap (each the first confident images of one sample):
    the image error they share then enters the interval (:func:`replicate_interval`'s
    ``image_ids``), and "images" counts the distinct images, "SIS sizes" the sizes over all
    replicates. Without ids the replicates are taken to have their own images: "images" is the
    sizes' count and the shared part is left out. The interval stays within 0 to 100%.

    Can hold: a model whose SIS are small has an interval below the bound; can fail: one whose
    SIS are large has an interval above it (a t interval over the replicates)."""
    margin = Margin(high=100 * bound, words=f"below {100 * bound:g}%")
    rows = {}
    for name, s in sizes.items():
        values = _replicates(s)
        keys = None
        if ids is not None:
            keys = ids[name]
            flat = (isinstance(keys, np.ndarray) and keys.ndim == 1) or (len(keys) and np.ndim(keys[0]) == 0)
            keys = [np.asarray(k).ravel() for k in ([keys] if flat else keys)]
            if [len(k) for k in keys] != [len(v) for v in values]:
                raise ValueError(f"sis_size: the ids of {name!r} must parallel its sizes, got lengths "
                                 f"{[len(k) for k in keys]} for {[len(v) for v in values]}")
        has = [~np.isnan(v) for v in values]
        kept = [i for i, h in enumerate(has) if h.any()]
        reps = [values[i][has[i]] for i in kept]
        n = sum(len(r) for r in reps)
        extra = {"replicates": len(reps), "images": n}
        image_ids = None
        if keys is not None:
            image_ids = {"size": [keys[i][has[i]] for i in kept]}
            extra = {"replicates": len(reps),
                     "images": len(np.unique(np.concatenate(image_ids["size"]))) if kept else 0, "SIS sizes": n}
        if extra["images"] < max(min_images, 1):
            rows[name] = {**extra, "mean SIS size (%)": math.nan, "95% low": math.nan, "95% high": math.nan,
                          "margin": str(margin), "outcome": UNTESTABLE}
            continue
        iv = replicate_interval({"size": reps}, paired_images=False, n_resamples=resamples, seed=seed,
                                image_ids=image_ids, bounds=(0.0, 1.0))
        rows[name] = interval_row(iv, margin, "mean SIS size (%)", 100, **extra)
    more = f" A model with fewer than {min_images} images that have an SIS cannot test it." if min_images > 1 else ""
    return from_rows(
        claim or f"The mean size of a sufficient input subset at τ = {paper.SIS_THRESHOLD:g} is below "
                 f"{100 * bound:g}% of the image (section 4.1, CIFAR-10).",
        f"for every model, the 95% interval of the mean SIS size at τ = {tau:g} (a t interval over the replicates) "
        f"lies below {100 * bound:g}% of the pixels: holds if the whole interval is below, does not hold if the "
        f"whole interval is at or above, inconclusive if it straddles {100 * bound:g}%.{more}", rows)


def subsets_accurate(full: Mapping[str, Sequence], bs: Mapping[str, Sequence], seed: int = 0,
                     resamples: int = 2000) -> Verdict:
    """Section 4.1, Table 1: models classify their own 5% BS subsets about as accurately as full
    images. ``full`` and ``bs``: model -> per replicate, 1/0 per test image (the same images), on
    the full image and on that replicate's own BS subset of it.

    The measure is the drop full - subset in points, paired by image and replicate. Can hold: a
    drop like the paper's (at most ~1 point) gives an interval inside the tolerance once images
    and replicates agree; can fail: a drop of tens of points lies wholly above it."""
    allowed = paper_gap("full", "bs")
    margin = Margin(high=TOLERANCE_POINTS, words=f"drop at most {TOLERANCE_POINTS:g} points")
    rows = _rename(_accuracy_pair(full, bs, "drop (points)", margin, seed, resamples),
                   "full images", "own BS subsets")
    return from_rows(
        f"Models classify their own {100 * paper.SUBSET_FRAC:g}% backward-selection subsets about as accurately "
        f"as full images (section 4.1, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        f"for every architecture, the 95% interval of the accuracy drop from full images to each replicate's own "
        f"{100 * paper.SUBSET_FRAC:g}% BS subsets (same images, same models) lies at or below {TOLERANCE_POINTS:g} "
        f"points, a flat margin: the paper's largest drop, {allowed:.2f} points, is finer than what a few hundred "
        f"test images resolve (one image of 300 is 0.33 points), so any drop up to {TOLERANCE_POINTS:g} points "
        "counts as \"about as accurate\". Does not hold if the whole interval lies above; inconclusive if it "
        "straddles.", rows)


def confidence_kept(drops: Mapping[str, Sequence], seed: int = 0, resamples: int = 2000) -> Verdict:
    """Section 4.1: the mean drop of confidence from full image to 5% BS subset is about zero or
    negative. ``drops``: model -> per replicate, the per-image drop of the predicted class's
    probability (full - subset; negative = more confident on the subset), every replicate on the same
    test images (their shared image error is part of the interval). A drop of a probability lies in
    [-1, 1], and so does the interval.

    Can hold: no change (drop 0) or a gain lies inside the margin; can fail: a model much less
    confident on its subsets has an interval above it."""
    means = [m for m, _ in paper.CONFIDENCE_DROP.values()]
    margin = Margin(high=TOLERANCE_CONFIDENCE, words=f"mean drop at most {TOLERANCE_CONFIDENCE:g}")
    rows = {}
    for name, d in drops.items():
        reps = _replicates(d)
        iv = replicate_interval({"drop": reps}, paired_images=True, n_resamples=resamples, seed=seed,
                                bounds=(-1.0, 1.0))
        rows[name] = interval_row(iv, margin, "mean drop", replicates=len(reps), images=len(reps[0]))
    return from_rows(
        f"Models are about as confident on their {100 * paper.SUBSET_FRAC:g}% BS subsets as on full images "
        f"(section 4.1: mean drop of confidence {minus(min(means))} to {minus(max(means))} on CIFAR-10).",
        f"for every model, the 95% interval of the mean drop of the predicted class's probability lies at or below "
        f"{TOLERANCE_CONFIDENCE:g}: no change, or a gain as the paper's, holds; a model that loses more than "
        f"{TOLERANCE_CONFIDENCE:g} of probability on average does not. Inconclusive if the interval straddles.", rows)


def no_transfer(own: Mapping[str, Sequence], others: Mapping[str, Sequence], random: Mapping[str, Sequence],
                min_lift: float = 10.0, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Section 4.1: one model's 5% BS subsets are not classified correctly by other models.

    Per architecture, one entry per source replicate r (1/0 per test image, the same images):
    ``own[arch][r]`` the source on its own subsets, ``others[arch][r]`` a list of arrays, one per other
    model on them, ``random[arch][r]`` the source on random 5% subsets. The measure is the share of
    the source's lift above random that the other models recover, (others - random) / (own - random),
    averaged over the source replicates; the subsets do not transfer when it is below one half.
    Can hold: the paper's share, 0.21, is far below; can fail: subsets that every model reads
    give a share near 1."""
    t = paper.TRANSFER_RESNET18
    others_paper = [v for name, v in t.items() if name != "itself"]
    margin = Margin(high=0.5, words="share below one half")
    rows = {}
    for name in own:
        o, r = _replicates(own[name]), _replicates(random[name])
        oth = [np.mean([np.asarray(x, dtype=np.float64) for x in xs], axis=0) for xs in others[name]]
        lift = 100 * np.mean([a.mean() - b.mean() for a, b in zip(o, r)])
        extra = {"replicates": len(o), "other models": len(others[name][0]), "images": len(o[0]),
                 "own accuracy": 100 * np.mean([x.mean() for x in o]),
                 "others' accuracy": 100 * np.mean([x.mean() for x in oth]),
                 "random subsets": 100 * np.mean([x.mean() for x in r])}
        if lift < min_lift:
            rows[name] = {**extra, "share of lift transferred": math.nan, "95% low": math.nan, "95% high": math.nan,
                          "margin": str(margin), "outcome": UNTESTABLE}
            continue

        def share(m):
            lift_b = m["own"] - m["random"]
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(lift_b > 0, (m["others"] - m["random"]) / lift_b, np.inf)

        iv = replicate_interval({"own": o, "random": r, "others": oth}, share, paired_images=True,
                                n_resamples=resamples, seed=seed)
        rows[name] = interval_row(iv, margin, "share of lift transferred", **extra)
    return from_rows(
        f"The {100 * paper.SUBSET_FRAC:g}% BS subsets of one model are not classified correctly by other models "
        f"(section 4.1: ResNet18's, {t['itself']:g}% by itself, get {min(others_paper):g}–{max(others_paper):g}% "
        "from a ResNet18 replicate, a ResNet20 and a VGG16).",
        "for every architecture, every replicate is a source: the 95% interval over the source replicates (test "
        "images shared) of the share of the source's own lift above random "
        f"{100 * paper.SUBSET_FRAC:g}% subsets that the other models recover, (others − random) / (own − random), "
        f"lies below one half (the paper: {paper_transfer_share():.2f}, one source); does not hold if it lies wholly "
        f"above. Cannot be tested where the mean lift is under {min_lift:g} points.", rows)


def retrain_beats_random(bs: Mapping[str, Sequence], random: Mapping[str, Sequence], seed: int = 0,
                         resamples: int = 2000) -> Verdict:
    """Section 4.2: new models trained and evaluated on 5% BS subsets are far more accurate than
    ones on random 5% subsets. Inputs: model -> per retrained replicate, 1/0 per test image (the
    same test images, each model on its kind of subset).

    Can hold: a gap like the paper's (39-44 points) lies far above the margin; can fail: BS
    models no better than random ones give an interval around 0."""
    margin = Margin(low=FAR_MORE_POINTS, words=f"difference at least {FAR_MORE_POINTS:g} points")
    rows = _rename(_accuracy_pair(bs, random, "difference (points)", margin, seed, resamples),
                   "BS subsets", "random subsets")
    return from_rows(
        f"Models trained on {100 * paper.SUBSET_FRAC:g}% BS subsets are far more accurate than models trained "
        f"on random {100 * paper.SUBSET_FRAC:g}% subsets (section 4.2, Table 1: {_test_range('bs', 'bs')}% "
        f"against {_test_range('random', 'random')}% on CIFAR-10).",
        f"for every architecture, the 95% interval (a t interval over pairs of retrained replicates, on the same test images) "
        f"of the accuracy of the models retrained on BS subsets minus that of the models retrained on random subsets "
        f"lies at or above {FAR_MORE_POINTS:g} points (\"far more\": a quarter of the paper's smallest gap); does not "
        f"hold if it lies wholly below; inconclusive if it straddles.", rows)


def retrain_near_full(bs: Mapping[str, Sequence], full: Mapping[str, Sequence], chance: float,
                      min_lift: float = 10.0, seed: int = 0, resamples: int = 2000) -> Verdict:
    """Section 4.2: models trained on 5% BS subsets are nearly as accurate as models trained on full
    images. ``full``: the full-image control (same architecture, images and training budget), 1/0
    per test image per replicate like ``bs``; ``chance``: accuracy (%) of guessing (100 / classes).

    Can hold: a drop within the tolerance (or subsets beating the control, which the table shows);
    can fail: BS models far below the control. Cannot be tested against a control near chance."""
    allowed = paper_gap("bs", "bs")
    margin = Margin(high=TOLERANCE_POINTS, words=f"drop at most {TOLERANCE_POINTS:g} points")
    rows = _rename(_accuracy_pair(full, bs, "drop (points)", margin, seed, resamples),
                   "full images", "BS subsets")
    for r in rows.values():
        if r["full images"] - chance < min_lift:
            r["outcome"] = UNTESTABLE
            r.pop("replicates to decide", None)
    beat = [m for m, r in rows.items() if r["outcome"] != UNTESTABLE and r["95% high"] < 0]
    v = from_rows(
        f"Models trained on {100 * paper.SUBSET_FRAC:g}% BS subsets are nearly as accurate as models trained "
        f"on full images (section 4.2, Table 1: at most {allowed:.2f} points lower on CIFAR-10).",
        f"for every architecture, the 95% interval of the accuracy drop from a control of the same architecture "
        f"trained on the same images, full, with the same budget, to the models retrained on BS subsets lies at or "
        f"below {TOLERANCE_POINTS:g} points, the flat margin of chapter 4 (the paper's largest drop, {allowed:.2f} "
        f"points, is finer than our test images resolve); a negative drop (subsets beating the control) counts as "
        f"holding and is shown as such. Does not hold if "
        f"the whole interval lies above; cannot be tested where the control is less than {min_lift:g} points above "
        "chance.", rows)
    if beat:
        v.note = (f"For {', '.join(map(str, beat))} the models retrained on BS subsets are *more* accurate than the "
                  "full-image control (the whole interval of the drop lies below 0): the margin counts that as "
                  "holding, but it is more than the paper's \"nearly as accurate\"; the chapter \"Why it holds or "
                  "fails here\" traces it to the positions of the kept pixels.")
    return v


def summary(verdicts: Mapping[str, Verdict]) -> pd.DataFrame:
    """One row per verdict: claim, verdict, criterion (the closing table of a chapter)."""
    return pd.DataFrame([{"claim": name, "verdict": v.word, "criterion": v.criterion} for name, v in verdicts.items()])


#: Section 4.4's thresholds at which the verdict is decided, the same for every execution: the SIS chapter's 0.99
#: and two lower ones at which most test images are confident (the chapter draws every threshold of its figure).
SIS_ACCURACY_TAUS = (0.7, 0.9, 0.99)
#: "Significantly larger" (4.4): the correct images' mean SIS at least this many percent above the misclassified
#: ones', so that an increase indistinguishable from zero decides the claim as not holding instead of leaving it
#: open.
SIS_ACCURACY_MIN_INCREASE = 10.0


def sis_predicts_accuracy(increase: pd.DataFrame, taus: Sequence[float] = SIS_ACCURACY_TAUS,
                          min_images: int = 20) -> Verdict:
    """Section 4.4, Figure 5: at every SIS threshold, the SIS of correctly classified images are
    significantly larger than those of misclassified images, on the test and OOD sets.

    ``increase``: one row per (model, set, tau), the columns of
    :func:`overinterp.experiments.sis_accuracy.percentage_increase`: "model", "set", "tau", "correct images",
    "incorrect images" (images with a non-empty SIS at tau in each group: an empty SIS is the blank's class,
    not the image's evidence, and is left out), "increase (%)" and "low", "high" (its 95% interval). One
    verdict row per (model, set, tau) of ``taus``, its estimate and interval together; a row tests the claim
    where both groups have at least ``min_images`` images, else cannot be tested. A row holds when its
    interval lies at or above SIS_ACCURACY_MIN_INCREASE, does not hold when it lies wholly below (an increase
    indistinguishable from zero, or misclassified images with larger SIS), and is inconclusive otherwise."""
    margin = Margin(low=SIS_ACCURACY_MIN_INCREASE, words=f"increase at least {SIS_ACCURACY_MIN_INCREASE:g}%")
    rows = {}
    at = increase[increase["tau"].round(6).isin([round(float(t), 6) for t in taus])]
    for _, r in at.iterrows():
        key = (r["model"], r["set"], float(r["tau"]))
        tested = r["correct images"] >= min_images and r["incorrect images"] >= min_images
        iv = Interval(float(r["increase (%)"]), float(r["low"]), float(r["high"]))
        rows[key] = {"correct images": int(r["correct images"]), "incorrect images": int(r["incorrect images"]),
                     "replicates": int(r["replicates"]) if "replicates" in r else None,
                     "increase (%)": iv.estimate, "95% low": iv.low, "95% high": iv.high, "margin": str(margin),
                     "outcome": margin.decide(iv) if tested else UNTESTABLE}
    numbers = pd.DataFrame.from_dict(rows, orient="index")
    if len(numbers):
        numbers.index = pd.MultiIndex.from_tuples(numbers.index, names=["model", "set", "tau"])
    shown = ", ".join(f"{t:g}" for t in taus)
    return Verdict(
        claim="For varying SIS thresholds, the SIS of correctly classified images are consistently significantly "
              "larger than those of misclassified images, for each of the three architectures, on the CIFAR-10 "
              "test set and on CIFAR-10-C (section 4.4, Figure 5, drawn without numbers in the text), although the "
              "misclassified images are classified with lower confidence (Figure S3).",
        criterion=f"for every model and set (test and out-of-distribution), at each threshold τ the library states "
                  f"({shown}) where the correct and the incorrect images with a non-empty SIS number at least "
                  f"{min_images} each, the 95% interval (a t interval over the replicates) of the percentage "
                  f"increase of the correct images' mean SIS size over the incorrect ones' lies at or above "
                  f"{SIS_ACCURACY_MIN_INCREASE:g}% (\"significantly larger\"; an increase indistinguishable from "
                  "zero does not hold). Empty SIS, which the blank image decides rather than the image, are left out "
                  "and counted in the chapter. The claim holds where every tested threshold holds, does not hold "
                  "where one does not, and is inconclusive otherwise; a threshold with too few images cannot test it.",
        outcome=combine([o for o in numbers["outcome"] if o != UNTESTABLE]) if len(numbers) else UNTESTABLE,
        numbers=numbers)
