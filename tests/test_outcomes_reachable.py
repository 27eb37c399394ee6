"""Every claim of the registry can hold and can fail: its verdict's margin is reachable from both sides.

A margin that one side of the measure can never cross would decide a claim before any model is trained. For
every id of :data:`overinterp.paper.claims.CLAIMS` this file calls the claim's decision function of the paper
layer (:mod:`overinterp.paper.verdicts`, :mod:`overinterp.paper.further_verdicts`) on synthetic, seeded
measurements of the shape the experiments pass it (3 replicates, a few hundred images each): once with the
measure well inside its margin, where the verdict must be "holds", and once well outside it, where it must be
"does not hold". A claim added to the registry without a case here fails :func:`test_every_claim_has_a_case`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from overinterp.paper import further_verdicts, verdicts
from overinterp.paper import claims as paper_claims
from overinterp.paper.claims import CLAIMS
from overinterp.paper.intervals import replicate_interval
from overinterp.paper.verdicts import FAILS, HOLDS, UNTESTABLE
from overinterp.paper.numbers import SIS_MEAN_SIZE_BELOW

R, N, RESAMPLES, TAU = 3, 400, 200, 0.99
CHANCE = 10.0                     # accuracy (%) of guessing among ten classes
MODEL = "ResNet20"


def _rng(claim: str, holds: bool) -> np.random.Generator:
    return np.random.default_rng([sum(map(ord, claim)), int(holds)])


def _correct(rng, *rates, n: int = N, reps: int = R) -> list[list[np.ndarray]]:
    """Per rate, per replicate, 1/0 per image of a model of that accuracy on the same images: one uniform
    difficulty per image and replicate, so a model of a lower rate misses the images a higher one misses
    (paired measures with little noise of their own), each replicate off by up to a point."""
    out = [[] for _ in rates]
    for _ in range(reps):
        u, jitter = rng.random(n), rng.uniform(-0.01, 0.01)
        for k, p in enumerate(rates):
            out[k].append((u < p + jitter).astype(float))
    return out


def _sizes(rng, mean: float, n: int = N, reps: int = R) -> list[np.ndarray]:
    """Per replicate, per image a positive size (e.g. an SIS size) with the given mean."""
    return [rng.gamma(4.0, mean / 4.0, n) for _ in range(reps)]


def _increase_row(groups: dict, statistic, paired: bool, **extra) -> dict:
    """A row of an experiment's increase table: its counts, the estimate and its 95% interval (low, high)."""
    iv = replicate_interval(groups, statistic, paired_images=paired, n_resamples=RESAMPLES, seed=0)
    return {**extra, "estimate": iv.estimate, "low": iv.low, "high": iv.high}


# ----------------------------------------------------------------------------- Part I: 4.1, 4.2

def _sis(holds, rng):
    # SIS sizes as fractions of the pixels: 0.4 or 4 times the bound of 5%
    sizes = _sizes(rng, (0.4 if holds else 4.0) * SIS_MEAN_SIZE_BELOW)
    return verdicts.sis_size({MODEL: sizes}, TAU, resamples=RESAMPLES)


def _accurate(holds, rng):
    drop = paper_claims.TOLERANCE_POINTS / 5 if holds else 6 * paper_claims.TOLERANCE_POINTS
    full, bs = _correct(rng, 0.9, 0.9 - drop / 100)
    return verdicts.subsets_accurate({MODEL: full}, {MODEL: bs}, resamples=RESAMPLES)


def _kept(holds, rng):
    mean = -0.02 if holds else 4 * paper_claims.TOLERANCE_CONFIDENCE
    return verdicts.confidence_kept({MODEL: [np.clip(rng.normal(mean, 0.05, N), -1, 1) for _ in range(R)]},
                             resamples=RESAMPLES)


def _transfer(holds, rng):
    other = 0.15 if holds else 0.85          # share of the lift (0.9 - 0.1) recovered: 0.06 or 0.94
    own, random, *others = _correct(rng, 0.9, 0.1, other, other, other)
    per_source = [[o[r] for o in others] for r in range(R)]
    return verdicts.no_transfer({MODEL: own}, {MODEL: per_source}, {MODEL: random}, resamples=RESAMPLES)


def _beats(holds, rng):
    bs, random = _correct(rng, 0.75 if holds else 0.30, 0.32)
    return verdicts.retrain_beats_random({MODEL: bs}, {MODEL: random}, resamples=RESAMPLES)


def _near(holds, rng):
    full, bs = _correct(rng, 0.80, 0.79 if holds else 0.40)
    return verdicts.retrain_near_full({MODEL: bs}, {MODEL: full}, CHANCE, resamples=RESAMPLES)


def _road(holds, rng):
    bs, random = _correct(rng, 0.75 if holds else 0.30, 0.32)
    return further_verdicts.imputed_verdict(bs, random, MODEL, resamples=RESAMPLES)


# ----------------------------------------------------------------------------- Part I: the critiques (07b)

def _dilated(holds, rng):
    dilated, undilated = _correct(rng, 0.82 if holds else 0.30, 0.80)
    return further_verdicts.dilation_keeps_prediction({MODEL: undilated}, {MODEL: dilated}, 3, "BS subsets",
                                                      resamples=RESAMPLES)


def _dilated_sis(holds, rng):
    # an undilated SIS keeps the prediction on every image; each replicate has its own confident images;
    # holds: dilation loses at most the replicate's point of jitter
    dilated = [_correct(rng, 1.0 if holds else 0.30, n=n, reps=1)[0][0] for n in (N, N - 40, N - 70)]
    undilated = [np.ones(len(d)) for d in dilated]
    return further_verdicts.dilation_keeps_prediction({MODEL: undilated}, {MODEL: dilated}, 3, "SIS",
                                                      paired_images=False, resamples=RESAMPLES)


def _dilated_retraining(rng, bs_rate: float):
    # the full-image control 85%, random subsets 32%: 53 points of headroom for the BS models to beat random by
    full, random, bs = _correct(rng, 0.85, 0.32, bs_rate)
    return further_verdicts.dilated_retraining_verdicts({MODEL: bs}, {MODEL: random}, {MODEL: full}, CHANCE, 3)


def _dilated_beats(holds, rng):
    return _dilated_retraining(rng, 0.75 if holds else 0.30)[0]


def _dilated_near(holds, rng):
    return _dilated_retraining(rng, 0.845 if holds else 0.30)[1]


def _boundary(holds, rng):
    ratio = 2 * paper_claims.BOUNDARY_RATIO if holds else 1.0
    area = [rng.uniform(0.1, 0.2, N) for _ in range(R)]
    attribution = [np.clip(a * ratio * rng.uniform(0.8, 1.2, N), 0, 1) for a in area]
    return further_verdicts.saliency_on_boundary({MODEL: attribution}, {MODEL: area}, resamples=RESAMPLES)


def _blank(holds, rng):
    classes = 10
    top = (1.2 if holds else 4.5 * paper_claims.BLANK_PRIOR_MULTIPLE) / classes
    confidence = {f"{MODEL}, mean pixel": list(top + rng.uniform(-0.01, 0.01, R))}
    return further_verdicts.blank_uninformative(confidence, classes)


def _mask_shape(holds, rng):
    # fails: a shape that adds nothing to what the blank already gives (a null effect, below the minimal one)
    same, blank = _correct(rng, 0.40 if holds else 0.15, 0.15)
    return further_verdicts.mask_shape_leaks({MODEL: same}, {MODEL: blank}, "uniform noise", resamples=RESAMPLES)


def _calibration(holds, rng):
    masked = rng.uniform(0.15, 0.17, R) if holds else rng.uniform(0.010, 0.015, R)
    full = rng.uniform(0.03, 0.04, R) if holds else rng.uniform(0.050, 0.055, R)
    row = f"{MODEL}, own BS subsets"
    return further_verdicts.masked_miscalibrated({row: masked}, {row: full}, N)


def _insertion(holds, rng):
    bs, saliency = _correct(rng, 0.70 if holds else 0.30, 0.32)
    return further_verdicts.search_beats_saliency({MODEL: bs}, {MODEL: saliency}, 0.05, resamples=RESAMPLES)


# ----------------------------------------------------------------------------- Part II: 4.1.1, 4.4-4.6

def _sis_accuracy(holds, rng):
    # the SIS sizes (%) of correct and misclassified images per replicate, as sis_accuracy.percentage_increase
    # turns them into an increase with its interval per model, set and tau
    correct_mean, incorrect_mean = (8.0, 4.0) if holds else (4.0, 8.0)
    rows = []
    for s in ("test", "ood"):
        for tau in (0.5, 0.9, 0.99):
            c, i = _sizes(rng, correct_mean, n=320), _sizes(rng, incorrect_mean, n=80)
            row = _increase_row({"c": c, "i": i}, lambda m: 100 * (m["c"] / m["i"] - 1), False,
                                model=MODEL, set=s, tau=tau, **{"correct images": 320 * R, "incorrect images": 80 * R})
            rows.append(row)
    return verdicts.sis_predicts_accuracy(pd.DataFrame(rows).rename(columns={"estimate": "increase (%)"}))


def _robust(holds, rng):
    # SIS sizes in % of the pixels
    sizes = _sizes(rng, (40 if holds else 400) * SIS_MEAN_SIZE_BELOW)
    return further_verdicts.robust_sis_sparse({f"{MODEL} (robust)": sizes}, TAU)


def _ensemble_accuracy(holds, rng):
    # one set of test images: the ensemble beside each of its members (mitigation.accuracy_gain)
    u = rng.random(400)
    ens = (u < (0.96 if holds else 0.78)).astype(float)
    members = [(u < p).astype(float) for p in (0.86, 0.87, 0.88)]
    row = _increase_row({"ens": [ens], "mem": members}, lambda m: 100 * (m["ens"] - m["mem"]), True,
                        images=400, members=3)
    gains = pd.DataFrame({"5x " + MODEL: row}).T.rename(columns={"estimate": "gain (points)"})
    return further_verdicts.ensembles_increase_accuracy(gains)


def _paired_sizes(rng, treated: int, control: int, factor: float, n: int = N) -> dict:
    """SIS sizes (%) on the images where every model has one: the treated models' ``factor`` times the controls'."""
    base = rng.gamma(4.0, 1.0, n)
    return {"t": [base * factor * rng.uniform(0.9, 1.1, n) for _ in range(treated)],
            "c": [base * rng.uniform(0.9, 1.1, n) for _ in range(control)]}


def _ensemble_sis(holds, rng):
    g = _paired_sizes(rng, 1, 3, 1.5 if holds else 0.6)
    row = _increase_row(g, lambda m: m["t"] - m["c"], True, images=N)
    return further_verdicts.ensembles_increase_sis(pd.DataFrame({("5x " + MODEL, TAU): row}).T
                                     .rename(columns={"estimate": "increase (points)"}))


def _dropout(holds, rng):
    rows = {}
    for how in ("both through the fixed masks", "both without masks"):
        g = _paired_sizes(rng, R, R, 1.4 if holds else 0.7)
        rows[(f"{MODEL} input dropout vs standard, {how}", TAU)] = _increase_row(g, lambda m: m["t"] - m["c"], True,
                                                                                 images=N)
    increase = pd.DataFrame(rows).T.rename(columns={"estimate": "increase (points)"})
    return further_verdicts.dropout_increases_sis(increase)


def _borders(holds, rng):
    area = 0.3                                     # margin: at least (1 + 0.3) / 2 = 65% of the SIS pixels
    mean = 0.85 if holds else area                 # fails: SIS spread as the area is
    shares = rng.beta(20 * mean, 20 * (1 - mean), N)
    return further_verdicts.borders_verdict(list(shares), area, TAU, resamples=RESAMPLES)


# ----------------------------------------------------------------------------- Part III: related methods

def _background(holds, rng):
    rows = []
    for r in range(R):
        random = rng.uniform(0.3, 0.5, N)
        ec = np.clip(random + (-0.2 if holds else 0.2) + rng.normal(0, 0.1, N), 0, 1)
        rows.append(pd.DataFrame({"model": MODEL, "replicate": r, "explanation coverage": ec,
                                  "random pixels (|G| / HW)": random}))
    return further_verdicts.sis_on_background(pd.concat(rows, ignore_index=True), TAU, resamples=RESAMPLES)


def _fine_tuning(rng, measure: str, delta: float) -> pd.DataFrame:
    """Per replicate and image, ``measure`` under the original and the fine-tuned model (input_reduction's rows)."""
    rows = []
    for r in range(R):
        original = rng.integers(3, 12, N).astype(float)
        tuned = np.maximum(original + delta + rng.normal(0, 1, N), 0)
        for model, values in (("original", original), ("fine-tuned", tuned)):
            rows.append(pd.DataFrame({"replicate": r, "image": np.arange(N), "model": model, measure: values}))
    return pd.concat(rows, ignore_index=True)


def _reduction_size(holds, rng):
    return further_verdicts.size_verdict(_fine_tuning(rng, "reduced size", 2.0 if holds else -2.0), min_images=10)


def _reduction_sis(holds, rng):
    return further_verdicts.sis_verdict(_fine_tuning(rng, "SIS size", 2.0 if holds else -2.0), min_images=10)


def _sparse_pixels(holds, rng):
    generated = rng.gamma(4.0, (0.4 if holds else 4.0) * SIS_MEAN_SIZE_BELOW / 4.0, N)
    real = rng.gamma(4.0, 0.4 * SIS_MEAN_SIZE_BELOW / 4.0, N)
    return further_verdicts.sparse_pixels(generated, real, TAU)


#: claim id -> builder(holds, rng): the claim's verdict on measurements inside its margin (holds=True) or
#: outside it (holds=False)
CASES = {
    "sis": _sis, "accurate": _accurate, "kept": _kept, "transfer": _transfer, "beats": _beats, "near": _near,
    "road": _road, "dilated": _dilated, "dilated_sis": _dilated_sis, "dilated_beats": _dilated_beats,
    "dilated_near": _dilated_near, "boundary": _boundary, "blank": _blank, "mask_shape": _mask_shape,
    "calibration": _calibration, "insertion": _insertion, "sis_accuracy": _sis_accuracy, "robust": _robust,
    "ensemble_accuracy": _ensemble_accuracy, "ensemble_sis": _ensemble_sis, "dropout": _dropout,
    "borders": _borders, "background": _background, "reduction_size": _reduction_size,
    "reduction_sis": _reduction_sis, "sparse_pixels": _sparse_pixels,
}


def test_every_claim_has_a_case():
    assert set(CASES) == set(CLAIMS)


@pytest.mark.parametrize("claim", list(CLAIMS))
def test_both_outcomes_are_reachable(claim):
    assert claim in CASES, f"no case for claim {claim!r}: add a builder to CASES"
    inside = CASES[claim](True, _rng(claim, True))
    outside = CASES[claim](False, _rng(claim, False))
    assert inside.outcome == HOLDS, inside.numbers.to_string()
    assert outside.outcome == FAILS, outside.numbers.to_string()


def test_dilated_beats_needs_headroom_above_random():
    rng = np.random.default_rng(0)
    holding = _dilated_beats(True, rng).numbers
    assert (holding["headroom (points)"] >= paper_claims.FAR_MORE_POINTS).all()
    # a full-image control only 5 points above the random subsets leaves the BS models nothing to beat them by
    full, random, bs = _correct(rng, 0.35, 0.30, 0.33)
    beats, _ = further_verdicts.dilated_retraining_verdicts({MODEL: bs}, {MODEL: random}, {MODEL: full}, CHANCE, 3)
    assert beats.numbers.loc[MODEL, "headroom (points)"] < paper_claims.FAR_MORE_POINTS
    assert beats.outcome == UNTESTABLE


def test_near_cannot_be_tested_against_a_control_near_chance():
    full, bs = _correct(np.random.default_rng(0), (CHANCE + 5) / 100, (CHANCE + 4) / 100)
    v = verdicts.retrain_near_full({MODEL: bs}, {MODEL: full}, CHANCE, resamples=RESAMPLES)
    assert v.outcome == UNTESTABLE
    # the same drop against a control far above chance is decided
    full, bs = _correct(np.random.default_rng(0), 0.80, 0.79)
    assert verdicts.retrain_near_full({MODEL: bs}, {MODEL: full}, CHANCE, resamples=RESAMPLES).outcome == HOLDS


def test_a_null_effect_decides_the_equivalence_margins_as_not_holding():
    """The shape's excess over the blank, the ring's share of the attribution and section 4.4's increase each
    have a minimal effect: a measure at zero effect, well resolved, does not hold (it is not left open)."""
    rng = np.random.default_rng(7)
    same, blank = _correct(rng, 0.30, 0.30)
    shape = further_verdicts.mask_shape_leaks({MODEL: same}, {MODEL: blank}, "uniform noise", resamples=RESAMPLES)
    assert shape.word == FAILS
    area = [rng.uniform(0.1, 0.2, N) for _ in range(R)]
    attribution = [a * rng.uniform(0.95, 1.05, N) for a in area]
    assert further_verdicts.saliency_on_boundary({MODEL: attribution}, {MODEL: area}, resamples=RESAMPLES).word == FAILS
    row = {"model": MODEL, "set": "test", "tau": 0.9, "correct images": 400, "incorrect images": 100,
           "increase (%)": 0.0, "low": -3.0, "high": 3.0}
    assert verdicts.sis_predicts_accuracy(pd.DataFrame([row]), taus=(0.9,)).word == FAILS
