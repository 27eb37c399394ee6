"""How every claim is decided, as an equivalence test: the 95% interval of our measure
(:func:`~overinterp.paper.intervals.replicate_interval`) against the margin where the claim holds (from the
source's numbers): "holds" wholly inside, "does not hold" wholly outside, "inconclusive at this scale"
straddling an edge, "cannot be tested" without numbers. A claim about every model fails if it fails for
one and holds if it holds for each. :func:`interval_row` per model, then :func:`from_rows`.
"""
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from overinterp.paper.formatting import MISSING, and_list, finite, number
from overinterp.paper.intervals import Interval, replicate_interval, replicates_needed

HOLDS, FAILS, INCONCLUSIVE, UNTESTABLE = "holds", "does not hold", "inconclusive at this scale", "cannot be tested"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE, UNTESTABLE)
#: how a verdict box marks each row's outcome, and the admonition class of each outcome
MARKS = {HOLDS: "✔ ", FAILS: "✘ ", INCONCLUSIVE: "≈ ", UNTESTABLE: "– "}
BOX = {HOLDS: "tip", FAILS: "warning", INCONCLUSIVE: "note", UNTESTABLE: "note"}
#: the counts a verdict's scope names, in this order, and each in the singular
SCOPE = {"replicates": "replicate", "images": "image", "images with an SIS": "image with an SIS"}


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
        """Replicates that would decide a straddling interval: 'about 7', 'over 100', 'needs replicates
        (one model)'; '' when ``iv`` straddles no edge."""
        e = self.edge(iv)
        if e is None:
            return ""
        if not iv.replicates or iv.replicates < 2:
            return "needs replicates (one model)"
        n = replicates_needed(iv, e)
        return f"about {n}" if n else "over 100"

    def __str__(self) -> str:
        # four significant digits: a derived edge reads "71.88", not "71.875"
        if math.isinf(self.low):
            return f"≤ {self.high:.4g}"
        if math.isinf(self.high):
            return f"≥ {self.low:.4g}"
        return f"{self.low:.4g} to {self.high:.4g}"


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


def row_name(name) -> str:
    """A verdict table's row label: 'ResNet20', or 'ResNet20 / test / 0.9' for a tuple."""
    return " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)


@dataclass
class Verdict:
    """One claim tested on our numbers."""
    claim: str                 # the claim, with its section and numbers
    criterion: str             # the margin in words: what our interval must do for each outcome
    outcome: str               # one of OUTCOMES
    numbers: pd.DataFrame = field(repr=False)  # per model: estimate, 95% interval, margin, outcome
    note: str = ""             # what a reader must know beside the outcome (e.g. subsets beating the control)
    engine: str = ""           # the backward selection behind its subsets, in words
    blank_passes: dict | None = None  # per architecture name: whether its blank is uninformative (the paper's fill)
    condition: str = ""        # a controlled condition beside the paper's protocol: its box states claim and criterion

    def __post_init__(self):
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
            counts = [f"{int(row[k])} {k if int(row[k]) != 1 else one}" for k, one in SCOPE.items()
                      if k in row and pd.notna(row[k])]
            parts.append(row_name(name) + (f" ({', '.join(counts)})" if counts else ""))
        return "; ".join(parts)

    def per_model(self) -> str:
        """'✔ ResNet20: 2.00 [0.50, 3.10], margin ≤ 5, holds; ...' at one precision for the measure; "no
        estimate" / "no interval" where missing; empty where the table has no interval."""
        cols = list(self.numbers.columns)
        if "95% low" not in cols or "outcome" not in cols:
            return ""
        measure, out = cols[cols.index("95% low") - 1], []
        # one precision for the measure, from its largest value: 1 decimal from 10, 2 from 1, else 3
        top = max((abs(x) for c in (measure, "95% low", "95% high") for x in map(finite, self.numbers[c])
                   if x is not None), default=0.0)
        d = 1 if top >= 10 else 2 if top >= 1 else 3
        for name, row in self.numbers.iterrows():
            est, lo, hi = (number(row[k], d) for k in (measure, "95% low", "95% high"))
            value = ("no estimate" if est == MISSING else
                     f"{est} [{lo}, {hi}]" if MISSING not in (lo, hi) else f"{est} (no interval)")
            margin = f", margin {row['margin']}" if isinstance(row.get("margin"), str) and row["margin"] else ""
            outcome = row["outcome"] if isinstance(row["outcome"], str) else ""    # rows without a verdict of their own
            decide = row.get("replicates to decide")
            decide = f" ({decide} replicates would decide it)" if isinstance(decide, str) and decide[:1] in "ao" else ""
            out.append(f"{MARKS.get(outcome, '')}{row_name(name)}: {value}{margin}"
                       f"{', ' + outcome if outcome else ''}{decide}")
        return f"**{measure}, per model.** " + "; ".join(out)

    def blank_words(self) -> str:
        """The SIS reference's precondition on this verdict's models, in a sentence (empty without a check)."""
        if not self.blank_passes:
            return ""
        fail = [m for m, ok in self.blank_passes.items() if not ok]
        if not fail:
            return ("the fully masked input (the paper's mean-pixel mask) is uninformative for every architecture "
                    "(chapter 1, “The fully masked input”).")
        return (f"the fully masked input (the paper's mean-pixel mask) is classified above the bound of an "
                f"uninformative blank by {and_list(fail)} (chapter 1, “The fully masked input”): for "
                f"{'that architecture' if len(fail) == 1 else 'those architectures'} the measure reads the mask "
                "as well as the kept pixels.")

    def _repr_markdown_(self) -> str:
        """The chapter's verdict box: outcome, scope, rows, claim, criterion, engine, blank check, note."""
        lines = [f":::{{admonition}} Verdict: the claim's outcome here is “{self.word}”",
                 f":class: {BOX.get(self.outcome, 'note')}"]
        if len(self.numbers):
            lines.append(f"**Scope.** {self.scope()}\n")
        if self.per_model():
            lines.append(self.per_model() + "\n")
        if self.condition:      # the claim and criterion stand once, in the paper's protocol's box
            lines.append(f"**Controlled condition.** {self.condition}; the claim and criterion are those of the "
                         "paper's protocol, in the box above.")
        else:
            lines += [f"**Claim.** {self.claim}\n", f"**Criterion.** {self.criterion}"]
        for title, text in (("Engine", self.engine), ("Blank check", self.blank_words()), ("Note", self.note)):
            if text:
                lines.append(f"\n**{title}.** {text}")
        return "\n".join(lines) + "\n:::"


def summary(verdicts: Mapping[str, Verdict]) -> pd.DataFrame:
    """One row per verdict: claim, verdict, criterion (the closing table of a chapter)."""
    return pd.DataFrame([{"claim": name, "verdict": v.word, "criterion": v.criterion} for name, v in verdicts.items()])


def replicates(x, dtype=np.float64) -> list[np.ndarray]:
    """Per-replicate arrays; a flat sequence of numbers is one replicate (``dtype`` None: the values' own)."""
    if isinstance(x, np.ndarray) and x.ndim == 1:
        return [x.astype(dtype or x.dtype)]
    x = list(x)
    if x and np.ndim(x[0]) == 0:
        return [np.asarray(x, dtype=dtype)]
    return [np.asarray(r, dtype=dtype).ravel() for r in x]


def interval_row(iv: Interval | None, margin: Margin, name: str, scale: float = 1.0, **extra) -> dict:
    """A verdict table's row: estimate, interval, margin, outcome (and replicates to decide, if inconclusive);
    ``scale`` (e.g. 100 for percent) is the margin's unit; ``iv`` None: a row that cannot be tested."""
    if iv is None:
        return {**extra, name: math.nan, "95% low": math.nan, "95% high": math.nan, "margin": str(margin),
                "outcome": UNTESTABLE}
    s = iv.scaled(scale)
    outcome = margin.decide(s)
    row = {**extra, name: s.estimate, "95% low": s.low, "95% high": s.high, "margin": str(margin), "outcome": outcome}
    if outcome == INCONCLUSIVE:
        row["replicates to decide"] = margin.to_decide(s)
    return row


def from_rows(claim: str, criterion: str, rows: dict | pd.DataFrame) -> Verdict:
    """The :class:`Verdict` over ``rows`` ({model: :func:`interval_row`}, or their table); :func:`combine`
    decides."""
    numbers = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_dict(rows, orient="index")
    return Verdict(claim, criterion, combine(numbers["outcome"]) if len(numbers) else UNTESTABLE, numbers)


def difference_rows(a: Mapping, b: Mapping, measure: str, margin: Margin, labels: tuple[str, str], seed: int,
                    resamples: int, models=None, paired_images: bool = True, ratio: bool = False,
                    drop_empty: bool = False) -> dict:
    """Per model: the means (%) of ``a`` and ``b`` (per-image shares per replicate) as columns ``labels``, and
    the interval row of 100 (a - b) points (``ratio``: a / b). ``paired_images``: all replicates on the same
    images; ``drop_empty``: only replicates where both have values."""
    rows = {}
    for model in a if models is None else models:
        g = {"a": replicates(a[model]), "b": replicates(b[model])}
        if drop_empty:
            n = min(len(v) for v in g.values())
            ok = [r for r in range(n) if all(len(v[r]) for v in g.values())]
            g = {k: [v[r] for r in ok] for k, v in g.items()}
        if not g["a"]:
            rows[model] = interval_row(None, margin, measure, **dict.fromkeys(labels, math.nan))
            continue
        # shares (1/0 per image, or fractions): a difference stays within +-100 points, a ratio above 0
        iv = replicate_interval(g, (lambda m: m["a"] / m["b"]) if ratio else (lambda m: 100.0 * (m["a"] - m["b"])),
                                paired_images=paired_images, n_resamples=resamples, seed=seed,
                                bounds=(0.0, math.inf) if ratio else (-100.0, 100.0))
        means = {label: 100.0 * np.mean([x.mean() for x in g[k]]) for label, k in zip(labels, "ab")}
        rows[model] = interval_row(iv, margin, measure, replicates=len(g["b"]),
                                   images=len(g["b"][0]) if paired_images else sum(map(len, g["a"])), **means)
    return rows
