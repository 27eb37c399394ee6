"""Pixel subsets and retrained models presented (:mod:`overinterp.experiments.subsets`; chapters 4 and 5): Table 1's
rows beside the paper's, Figure 2's titles and the glued values of the prose.
"""
import re

import pandas as pd

from overinterp.experiments.runs import mean_std
from overinterp.experiments.subsets import as_accuracies
from overinterp.paper import claims as paper_claims, numbers as paper, verdicts
from overinterp.paper.claims import result_text
from overinterp.paper.formatting import MISSING, extremes, number, pct
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo.train import plateaued


def pixel_subsets_values(run, frac: float) -> dict:
    """Chapter 4's prose: percentage kept, engine, images, replicates."""
    return {"pct": pct(frac), "method": run.profile.backselect.describe(), "n_eval": run.profile.test_size or "all",
            "replicates": run.profile.replicates}


def _labels(frac: float, full: str = "full images") -> dict[str, str]:
    """Table 1's row label of each kind of input."""
    return {"full": full, "bs": f"{pct(frac)}% BS subsets", "random": f"{pct(frac)}% random"}


def table1_rows(acc: dict[str, dict[str, dict]], frac: float) -> tuple[pd.DataFrame, dict]:
    """Table 1's original-model rows: ours (set, 'mean' | 'std') and the paper's (if ``frac`` is its)."""
    labels = _labels(frac)
    table = pd.DataFrame({(ARCH_NAMES[a], labels[k]): mean_std(as_accuracies(c)) for a in acc
                          for k, c in acc[a].items()}).T
    paper_rows = {(ARCH_NAMES[a], labels[k]): paper.table1(a, "full", k) if frac == SUBSET_FRAC else {}
                  for a in acc for k in labels}
    return table, paper_rows


def accurate_values(verdict: verdicts.Verdict, acc: dict[str, dict[str, dict]]) -> dict:
    """Chapter 4's prose on ``subsets_accurate``: drops, intervals, images, best random accuracy."""
    n = verdict.numbers
    drop = n["drop (points)"]
    rnd = pd.Series({a: as_accuracies(acc[a]["random"])["test"].mean() for a in acc})
    return {"accurate": verdict.word, "gap_min": f"{drop.min():.1f}", "gap_max": f"{drop.max():.1f}",
            "gap_low_min": f"{n['95% low'].min():.1f}", "gap_high_max": f"{n['95% high'].max():.1f}",
            "gap_halfwidth_max": number(((n['95% high'] - n['95% low']) / 2).max()),
            "gap_images": int(n["images"].max()), "gap_replicates": int(n["replicates"].max()),
            "tolerance": f"{paper_claims.TOLERANCE_POINTS:g}", "rnd_max": number(rnd.max())}


def confidence_table(verdict: verdicts.Verdict, archs, frac: float) -> pd.DataFrame:
    """``confidence_kept``'s numbers (3 digits) after the paper's mean drop ('—' if none)."""
    conf = verdict.numbers.round(3)
    conf = conf.rename(columns={"mean drop": "mean drop (ours)"})
    conf.insert(0, "paper mean drop (CIFAR-10)", [paper.CONFIDENCE_DROP[a][0] if a in paper.CONFIDENCE_DROP
                                                 and frac == SUBSET_FRAC else "—" for a in archs])
    return conf


def kept_values(verdict: verdicts.Verdict) -> dict:
    """Chapter 4's prose on :func:`overinterp.paper.verdicts.confidence_kept`."""
    n = verdict.numbers
    drop = n["mean drop"]
    return {"kept": verdict.word, "drop_min": f"{drop.min():.3f}", "drop_max": f"{drop.max():.3f}",
            "drop_high_max": f"{n['95% high'].max():.3f}", "drop_tolerance": f"{paper_claims.TOLERANCE_CONFIDENCE:g}"}


def result_words(verdict: verdicts.Verdict, claim: str) -> str:
    """:func:`overinterp.paper.claims.result_text` for a sentence: "no estimate" instead of "—"."""
    return "; ".join(re.sub(rf" {re.escape(MISSING)}$", " no estimate", part)
                     for part in result_text(verdict, claim).split("; "))


def transfer_values(verdict: verdicts.Verdict) -> dict:
    """Chapter 4's prose on :func:`~overinterp.experiments.subsets.no_transfer`."""
    share = verdict.numbers["share of lift transferred"]
    lo, hi = number(share.min(), 2), number(share.max(), 2)
    # the range with its object, in a clause that reads where no source has a lift above random subsets to share
    recover = ("nothing measurable, since no source model's subsets lift its accuracy above random subsets"
               if lo == MISSING else
               f"{lo if lo == hi else f'between {lo} and {hi}'} of a source model's lift above random subsets")
    return {"transfer": verdict.word, "share_min": lo, "share_max": hi, "share_text": recover,
            "transfer_ours_words": result_words(verdict, "transfer")}


def retraining_values(run, frac: float) -> dict:
    """Chapter 5's prose: percentage kept, training images, replicates, epochs."""
    return {"pct": pct(frac), "n_train": run.profile.retrain_images or "all",
            "replicates": run.profile.retrain_replicates or run.profile.replicates,
            "retrain_epochs": (run.profile.retrain or run.profile.train).epochs}


def retrain_label(key: tuple[str, str, bool], frac: float) -> tuple[str, str]:
    """The displayed row of a :func:`~overinterp.experiments.subsets.retraining_runs` key: ("ResNet20", "5% BS subsets
    (+)")."""
    a, kind, augment = key
    return ARCH_NAMES[a], _labels(frac, "full images (control)")[kind] + (" (+)" if augment else "")


def retraining_table(runs: dict, frac: float) -> tuple[pd.DataFrame, dict]:
    """Table 1's and S1's retraining rows: ours (set, 'mean' | 'std') and the paper's."""
    paper_rows = {retrain_label((a, kind, augment), frac):
                  paper.table1(a, kind, kind, paper.TABLE_S1 if augment else paper.TABLE1)
                  if frac == SUBSET_FRAC and kind != "full" else {} for a, kind, augment in runs}
    ours = pd.DataFrame({retrain_label(k, frac): mean_std(as_accuracies(v)) for k, v in runs.items()}).T
    return ours, paper_rows


def plateau_values(histories: list[list[dict]]) -> dict:
    """Chapter 5's prose on training: retrained models and how many plateaued."""
    return {"n_retrained": len(histories), "n_retrained_plateau": sum(map(plateaued, histories))}


def retraining_verdict_values(beats: verdicts.Verdict, near: verdicts.Verdict) -> dict:
    """Chapter 5's prose on :func:`~overinterp.experiments.subsets.retraining_verdicts`."""
    b, n = beats.numbers, near.numbers
    return {"beats": beats.word, "near": near.word, **extremes("bs", b["BS subsets"], spread=True),
            **extremes("rnd", b["random subsets"], spread=True), **extremes("full", n["full images"], spread=True),
            "diff_min": f"{b['difference (points)'].min():.1f}", "diff_low_min": f"{b['95% low'].min():.1f}",
            "diff_halfwidth_max": number(((b['95% high'] - b['95% low']) / 2).max()),
            "far_more": f"{paper_claims.FAR_MORE_POINTS:g}", "near_drop_min": f"{n['drop (points)'].min():.1f}",
            "near_drop_max": f"{n['drop (points)'].max():.1f}", "near_high_max": f"{n['95% high'].max():.1f}",
            "n_beating_control": int((n["95% high"] < 0).sum()), "n_archs": len(n),
            "retrain_images": int(b["images"].max()), "retrain_replicates": int(b["replicates"].max())}


def map_titles(conf: dict[str, float]) -> dict[str, str]:
    """Figure 2's panel titles: the architecture and the mean confidence on its subsets."""
    return {a: f"{a}\nmean confidence on subsets {number(c, 2)}" for a, c in conf.items()}
