"""The registry of the claims the book tests (the paper's and the related methods'): per claim its part,
chapter, source section, the source's number as quoted, the column holding our measure and, where the claim
fixes it, the margin where it holds with the reason. The deciding functions (:mod:`.verdicts`,
:mod:`.further_verdicts`) state the claims and criteria in words; a run's data come from
:mod:`overinterp.experiments.claims`.

    CLAIMS["accurate"].paper      # 'drop at most 0.52 points'
    CLAIMS["accurate"].margin     # Margin(high=5.0): 'holds' for a drop of at most 5 points
    records(verdict, "accurate")  # JSON-ready rows: per model, estimate, 95% interval, margin, outcome
"""
import re
from dataclasses import dataclass

from overinterp.paper import numbers as paper
from overinterp.paper.decide import Margin, Verdict, row_name
from overinterp.paper.formatting import finite, minus
from overinterp.paper.numbers import paper_gap, paper_span, paper_tests, paper_transfer_share

#: "About as accurate" (Table 1), in points: the paper's drops (<= ~1 point) are finer than a few hundred
#: test images resolve
TOLERANCE_POINTS = 5.0
#: "About as confident" (4.1: mean drops -0.035 to -0.012): the largest mean drop of probability allowed
TOLERANCE_CONFIDENCE = 0.05
#: "Far more accurate" (4.2, Table 1: BS-retrained models beat random-retrained ones by 38.8 to 43.8
#: points): at least a quarter of the paper's smallest gap, in points.
FAR_MORE_POINTS = 10.0
#: "Significantly larger" (4.4), in percent: so that an increase indistinguishable from zero does not hold
SIS_ACCURACY_MIN_INCREASE = 10.0
#: SmoothGrad "concentrates" on the mask's edge from this multiple of the ring's area share, so that attribution
#: ignoring the edge decides "does not hold" rather than staying inconclusive
BOUNDARY_RATIO = 1.25
#: The blank is uninformative up to this multiple of the class prior: a model may lean toward a class, not decide it
BLANK_PRIOR_MULTIPLE = 2.0
#: 4.1's masked-input claims under controlled conditions (chapter 3): the blank's classes set aside, counterfactually
#: trained models, and those models with acceptance waived (a labelled sensitivity analysis)
BLANK_ASIDE, MASKED_TRAINED = "blank's class set aside", "masked-trained models"
MASKED_ALL = "masked-trained models, acceptance waived (sensitivity)"
#: each condition's tag where a figure's row labels have little room
CONDITION_TAGS = {BLANK_ASIDE: "class aside", MASKED_TRAINED: "masked-trained", MASKED_ALL: "masked, all"}


@dataclass(frozen=True)
class Claim:
    """One claim the book tests."""
    id: str          # key of glue records, JSON rows and --only
    part: str        # "I" (the paper's main claims), "II" (its further claims), "III" (related methods)
    chapter: str     # notebook stem of the chapter that shows it
    section: str     # where the source states it
    short: str       # the claim in a table row
    paper: str       # the source's number, quoted; "(derived)" where we compute it from the source's tables
    measure: str     # the column of the verdict's table that holds our estimate
    digits: int = 1  # decimals the tables print
    engine: str = ""  # the backward selection behind it: "test", "train" (Profile.engine), "sis" (Profile.sis_engine)
    blank: bool = False  # feeds the zoo's models inputs masked with the paper's fill: its rows carry the blank check
    revision: int = 1  # raised when the measure or margin changes: rows of an earlier revision no longer read right
    unit: str = ""   # the measure's unit where ``measure`` does not end with it in parentheses
    #: where the claim holds, the reason in its words or at its edge's constant above; None where the verdict's
    #: parameters set it (a bound, an area, a number of classes)
    margin: Margin | None = None

    @property
    def measured(self) -> tuple[str, str]:
        """(measure, unit): "mean SIS size (%)" -> ("mean SIS size", "%"), else (measure, :attr:`unit`)."""
        if not self.unit and self.measure.endswith(")") and " (" in self.measure:
            name, unit = self.measure[:-1].rsplit(" (", 1)
            return name, unit
        return self.measure, self.unit


_CONF = [m for m, _ in paper.CONFIDENCE_DROP.values()]
_GAIN = paper.table1_test("ensemble 5x resnet18", "full", "full")[0] - paper.table1_test("resnet18", "full", "full")[0]
_DROP, _FAR_MORE = Margin(high=TOLERANCE_POINTS), Margin(low=FAR_MORE_POINTS)
#: a "larger" claim that gives no size gets a minimal effect (why: the margin's words), so that a null result
#: decides "does not hold" instead of staying inconclusive
_SIS_TENTH = Margin(low=0.5, words="a tenth of the 5% the paper bounds SIS below")

#: The parts of the book, for tables grouped by part.
PARTS = {"I": "Part I: the paper's main claims (4.1, 4.2)",
         "II": "Part II: the paper's further claims (4.1.1, 4.4-4.6)", "III": "Part III: related methods"}

CLAIMS = {c.id: c for c in [
    Claim("sis", "I", "03_sis", "4.1", "mean SIS size below 5%", f"mean below {100 * paper.SIS_MEAN_SIZE_BELOW:g}%",
          "mean SIS size (%)", engine="sis", blank=True),
    Claim("accurate", "I", "04_pixel_subsets", "4.1, Table 1", "as accurate on own 5% BS subsets",
          f"drop at most {paper_gap('full', 'bs'):.2f} points (derived from Table 1)", "drop (points)",
          engine="test", blank=True, margin=_DROP),
    Claim("kept", "I", "04_pixel_subsets", "4.1", "as confident on own 5% BS subsets",
          f"mean drop {minus(min(_CONF))} to {minus(max(_CONF))}", "mean drop", 3, engine="test", blank=True,
          unit="probability of the predicted class", margin=Margin(high=TOLERANCE_CONFIDENCE)),
    Claim("transfer", "I", "04_pixel_subsets", "4.1", "5% BS subsets do not transfer to other models",
          f"share {paper_transfer_share():.2f} (derived from 4.1's accuracies)", "share of lift transferred", 2,
          engine="test", blank=True, unit="fraction", margin=Margin(high=0.5, words="others recover under half")),
    Claim("beats", "I", "05_retraining", "4.2, Table 1", "retrained on BS subsets far above random subsets",
          f"{paper_span([b - r for b, r in zip(paper_tests('bs', 'bs'), paper_tests('random', 'random'))])} points "
          "(derived from Table 1)", "difference (points)", engine="train", margin=_FAR_MORE),
    Claim("near", "I", "05_retraining", "4.2, Table 1", "retrained on BS subsets near full images",
          f"drop at most {paper_gap('bs', 'bs'):.2f} points (derived from Table 1)", "drop (points)", engine="train",
          margin=_DROP),
    Claim("road", "I", "06_why", "our control (Rong et al. 2022)",
          "retrained on imputed BS subsets far above imputed random ones", "not in the paper",
          "difference (points)", engine="train", margin=_FAR_MORE),
    # chapter 07b: each claim tests one published critique of the method (section = the critique)
    Claim("dilated", "I", "07b_critiques", "Springer 2022", "3×3-dilated 5% BS subsets keep the prediction",
          "no number here (ImageNet ResNet-50: confidence near zero)", "change (points)", engine="test", blank=True,
          margin=Margin(low=-TOLERANCE_POINTS)),
    Claim("dilated_sis", "I", "07b_critiques", "Springer 2022", "3×3-dilated SIS keep the prediction",
          "no number here (ImageNet ResNet-50: confidence near zero)", "change (points)", engine="sis", blank=True,
          margin=Margin(low=-TOLERANCE_POINTS)),
    Claim("dilated_beats", "I", "07b_critiques", "Springer 2022 (proposed test of 4.2)",
          "retrained on dilated BS subsets far above matched random ones", "proposed, no number",
          "difference (points)", engine="train", revision=2, margin=_FAR_MORE),
    Claim("dilated_near", "I", "07b_critiques", "Springer 2022 (proposed test of 4.2)",
          "retrained on dilated BS subsets near full images", "proposed, no number", "drop (points)", engine="train",
          margin=_DROP),
    Claim("boundary", "I", "07b_critiques", "Springer 2022",
          "SmoothGrad of subset images concentrates on the mask's edge", "no number (saliency maps)",
          "ring ÷ area", engine="test", blank=True, revision=2, unit="ratio", margin=Margin(low=BOUNDARY_RATIO)),
    Claim("blank", "I", "07b_critiques", "SIS reference code (sis.py)", "the fully masked input is uninformative",
          "no number (\"tends to the mean or prior\")", "top-class probability", 3, unit="probability"),
    Claim("mask_shape", "I", "07b_critiques", "Jain et al. 2022 (missingness bias)",
          "the 5% BS mask's shape alone gives the subset's class beyond the blank", "no number for pixel masks",
          "excess over the blank (points)", engine="test", blank=True, revision=2, margin=Margin(low=TOLERANCE_POINTS)),
    Claim("calibration", "I", "07b_critiques", "Decker et al. 2025 (ReCalX)", "worse calibrated on masked inputs",
          "no number quoted", "ECE increase (points)", engine="test", blank=True, revision=2,
          margin=Margin(low=1.0, words="one point of ECE; ReCalX gives no size")),
    Claim("insertion", "I", "07b_critiques", "our question", "BS order far above a saliency order at 5%",
          "not in the paper", "difference (points)", engine="test", blank=True, margin=_FAR_MORE),
    Claim("sis_accuracy", "II", "08_sis_accuracy", "4.4, Figure 5",
          "SIS of correct images larger than of misclassified ones", "drawn in Figure 5, no number",
          "increase (%)", engine="test", blank=True, revision=2, margin=Margin(low=SIS_ACCURACY_MIN_INCREASE)),
    Claim("robust", "II", "09_robust", "4.5", "robust models' mean SIS size below 5%",
          f"mean below {100 * paper.SIS_MEAN_SIZE_BELOW:g}% (no number for robust models)", "mean SIS size (%)"),
    Claim("ensemble_accuracy", "II", "10_ensembles", "4.6, Table 1", "ensembles more accurate than their members",
          f"+{_GAIN:.2f} points for five ResNet18 (derived from Table 1)", "increase (points)", 2, revision=2,
          margin=Margin(low=0.43, words="half the paper's +0.87-point gain of five ResNet18, Table 1")),
    Claim("ensemble_sis", "II", "10_ensembles", "4.6, Figure 6", "ensembles' SIS larger than their members'",
          "drawn in Figure 6, no number", "increase (points)", 2, engine="test", blank=True, revision=2,
          margin=_SIS_TENTH),
    Claim("dropout", "II", "11_input_dropout", "code README's abstract", "input dropout enlarges the SIS",
          "no number", "increase (points)", 2, revision=2, margin=_SIS_TENTH),
    Claim("borders", "II", "12_imagenet", "4.1.1, Figure 4", "ImageNet SIS concentrate along the borders",
          "drawn in Figure 4, no number", "mean share of SIS pixels in the band (%)"),
    Claim("background", "III", "14_shared_interest", "4.1.1 in Shared Interest's terms",
          "SIS lie on the background more than random pixels", "no number", "EC − random", 3,
          engine="test", blank=True, unit="fraction of the pixels",
          margin=Margin(high=0.0, words="SIS on the garment less often than random pixels")),
    Claim("reduction_size", "III", "15_input_reduction", "Feng et al. 2018, Table 2",
          "entropy fine-tuning enlarges reduced inputs", "larger on all three tasks", "mean increase", unit="pixels",
          revision=2, margin=Margin(low=1.0, words="one pixel, the smallest change of a reduced input's size")),
    Claim("reduction_sis", "III", "15_input_reduction", "our question", "entropy fine-tuning enlarges the SIS",
          "not in the paper", "mean increase", unit="pixels", revision=2,
          margin=Margin(low=1.0, words="one pixel, the smallest change of an SIS's size")),
    Claim("sparse_pixels", "III", "16_bayes_trex", "4.1 on Bayes-TrEx samples",
          "generated in-distribution images classified from sparse pixels",
          f"mean below {100 * paper.SIS_MEAN_SIZE_BELOW:g}% (4.1's bound)", "mean SIS size (%)"),
]}


def paper_number(claim: str) -> str:
    """The source's number for ``claim`` (a key of :data:`CLAIMS`), as the tables print it."""
    return CLAIMS[claim].paper


def quoted(claim: str) -> tuple[str, str]:
    """(what the source says, how we derived it) for ``claim``, e.g. ("share 0.21", "derived from 4.1's
    accuracies"); (the number as quoted, "") for one the source states."""
    m = re.search(r"\s*\((derived[^()]*)\)\s*$", CLAIMS[claim].paper)
    return (CLAIMS[claim].paper[:m.start()], m.group(1)) if m else (CLAIMS[claim].paper, "")


def of_the_paper(claim: str) -> bool:
    """Whether the paper (or its code) makes ``claim``: Parts I and II, less our own controls and questions
    and the critiques' tests (07b)."""
    c = CLAIMS[claim]
    return c.part in ("I", "II") and c.chapter != "07b_critiques" and not c.section.startswith("our ")


def _text(x) -> str | None:
    return x if isinstance(x, str) and x else None


def blank_of(model: str, passes: dict[str, bool]) -> bool | None:
    """Whether the blank check passes for the architecture a row names ('ResNet20, own BS subsets' ->
    ResNet20's); None where the row names none of ``passes``' architectures (an ensemble of all)."""
    hits = [ok for arch, ok in passes.items() if arch in model]
    return hits[0] if len(hits) == 1 else None


def records(verdict: Verdict, claim: str) -> list[dict]:
    """JSON-ready rows of the verdict's table (None where a value does not exist): estimate, 95% interval,
    margin, outcome, replicates, images, replicates to decide, engine and, for :attr:`Claim.blank`
    claims, whether the row's architecture passes the blank check."""
    col = CLAIMS[claim].measure
    out = []
    for m, r in verdict.numbers.iterrows():
        ends = ("95% low", "95% high") if "95% low" in r else ("low", "high")   # the latter: an increase table's
        model = row_name(m)
        row = {"claim": claim, "model": model, "estimate": finite(r.get(col)), "low": finite(r.get(ends[0])),
               "high": finite(r.get(ends[1])), "margin": _text(r.get("margin")) or "",
               "outcome": _text(r.get("outcome")),
               "replicates": finite(r.get("replicates")), "images": finite(r.get("images")),
               "to decide": _text(r.get("replicates to decide")), "revision": CLAIMS[claim].revision}
        if verdict.engine:
            row["engine"] = verdict.engine
        if verdict.blank_passes is not None and CLAIMS[claim].blank:
            row["blank passes"] = blank_of(model, verdict.blank_passes)
        out.append(row)
    return out


def record_text(r: dict, claim: str) -> str:
    """'37.6 [20.7, 59.0]': one :func:`records` row's estimate and interval, as tables print them."""
    f = f"{{:.{CLAIMS[claim].digits}f}}"
    if r["estimate"] is None:
        return "no estimate"
    ends = "" if r["low"] is None or r["high"] is None else f" [{f.format(r['low'])}, {f.format(r['high'])}]"
    return f.format(r["estimate"]) + ends


def result_text(verdict: Verdict, claim: str) -> str:
    """'ResNet20 37.6 [20.7, 59.0]; ResNet18 ...': each row's estimate and interval, as tables print them."""
    return "; ".join(f"{r['model']} {record_text(r, claim)}" for r in records(verdict, claim))

