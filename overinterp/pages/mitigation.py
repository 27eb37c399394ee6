"""Ensembles and input dropout presented (:mod:`overinterp.experiments.mitigation`; paper 4.6): display tables,
Figure S2's row labels and the glued values of the prose.
"""
from typing import Mapping, Sequence

import pandas as pd
import torch.nn as nn

from overinterp.experiments.mitigation import PAPER_ENSEMBLE, dropout_count
from overinterp.paper.claims import CLAIMS
from overinterp.paper.formatting import MISSING, count, counted, extremes, finite, number
from overinterp.paper.numbers import ARCH_NAMES, TABLE1, fmt
from overinterp.paper.verdicts import Verdict
from overinterp.zoo.train import plateaued


def _setup_values(run, tau: float, taus: Sequence[float], min_images: int) -> dict:
    """What both chapters' setups glue: thresholds, engine, smallest sample."""
    return {"tau": f"{tau:g}", "taus": ", ".join(f"{t:g}" for t in taus), "method": run.profile.backselect.describe(),
            "min_images": min_images}


def ensembles_values(run, tau: float, taus: Sequence[float], specs: Mapping, n_resamples: int,
                     min_images: int) -> dict:
    """Glue name -> value of the ensembles chapter's setup."""
    return {**_setup_values(run, tau, taus, min_images), "replicates": run.profile.replicates,
            "n_ensembles": len(specs), "ensemble_names": "; ".join(specs), "n_resamples": n_resamples}


def accuracy_values(gains: pd.DataFrame, verdict: Verdict, n_images: int) -> dict:
    """Glue name -> value of the ensembles' accuracy: images, verdict, range of the gains, Table 1's."""
    gain = gains["gain (points)"]
    return {"n_acc": n_images, "acc_verdict": verdict.word, "acc_counted": counted(verdict.numbers),
            "gain_min": f"{gain.min():+.2f}", "gain_max": f"{gain.max():+.2f}",
            "paper_ens": fmt(PAPER_ENSEMBLE[("full", "full")][0]),
            "paper_r18": fmt(TABLE1[("resnet18", "full", "full")][0])}


def means_table(means: pd.DataFrame) -> pd.DataFrame:
    """:func:`~overinterp.experiments.mitigation.mean_sizes` for display: rows model, one column per tau, 'mean [low,
    high] (images)'."""
    def cell(r):
        ci = "" if pd.isna(r["low"]) else f" [{number(r['low'])}, {number(r['high'])}]"
        return f"{number(r['mean'])}{ci} ({int(r['images'])})"

    shown = means.assign(shown=means.apply(cell, axis=1))
    return shown.pivot(index="model", columns="tau", values="shown").reindex(means["model"].unique()).rename(
        columns=lambda t: f"τ = {t:g}").rename_axis(columns=None).fillna(MISSING)


def increase_table(inc: pd.DataFrame, specs: Mapping) -> pd.DataFrame:
    """:func:`~overinterp.experiments.mitigation.ensemble_increase` for display: 'increase [low, high] (images)' per
    tau, '—' if undefined."""
    def cell(r):
        if pd.isna(r["increase (points)"]):
            return MISSING
        ci = "" if pd.isna(r["low"]) else f" [{r['low']:+.1f}, {r['high']:+.1f}]"
        return f"{r['increase (points)']:+.1f}{ci} ({int(r['images'])})"

    return inc.apply(cell, axis=1).unstack("tau").reindex(list(specs)).rename(
        columns=lambda t: f"τ = {t:g}").rename_axis(index=None, columns=None)


def increase_values(verdict: Verdict) -> dict:
    """Glue name -> value of the ensembles' SIS verdict."""
    nums, effect = verdict.numbers, CLAIMS["ensemble_sis"].margin.low
    return {"sis_verdict": verdict.word, **extremes("inc", nums["increase (points)"], sign=True),
            "inc_effect": f"{effect:g}", "inc_above": int((nums["low"] >= effect).sum()), "inc_n": len(nums),
            "inc_counted": counted(nums)}


def dropout_values(run, tau: float, taus: Sequence[float], min_images: int) -> dict:
    """Glue name -> value of the input-dropout chapter's setup."""
    c = run.profile.mitigation
    return {**_setup_values(run, tau, taus, min_images), "arch": ARCH_NAMES.get(c.dropout_arch, c.dropout_arch),
            "keep_prob": f"{c.keep_prob:g}", "drop_pct": number(100 * (1 - c.keep_prob), 0),
            "samples": c.dropout_samples, "n_dropout": dropout_count(run)}


def dropout_accuracy_values(table: pd.DataFrame, dropout: Mapping[str, nn.Module], n_images: int) -> dict:
    """Glue name -> value: test images, plateaued input-dropout models, mean accuracies."""
    return {"n_acc": n_images, "n_dropout_plateau": sum(plateaued(m.info["history"]) for m in dropout.values()),
            **{name: number(table.iloc[k, 0], 2) for k, name in enumerate(("acc_std", "acc_drop", "acc_ens"))}}


def dropout_verdict_values(verdict: Verdict) -> dict:
    """Glue name -> value of the input-dropout verdict per comparison (``masks``, ``plain``)."""
    out = {"verdict": verdict.word, "counted": counted(verdict.numbers)}
    for key, row in zip(("masks", "plain"), (r for _, r in verdict.numbers.iterrows())):
        out.update({f"inc_{key}": number(row["increase (points)"], sign=True),
                    f"inc_{key}_low": number(row["low"], sign=True), f"inc_{key}_high": number(row["high"], sign=True),
                    f"inc_{key}_images": int(row["images"]), f"outcome_{key}": row["outcome"]})
        images = count(int(row["images"]), "image")
        out[f"said_{key}"] = (
            f"by {out[f'inc_{key}']} points of the image on {images} (95% interval "
            f"{out[f'inc_{key}_low']} to {out[f'inc_{key}_high']}: {row['outcome']})" if finite(row["low"]) is not None
            else f"by an amount this execution cannot measure ({images} with an SIS under both: {row['outcome']})")
    return out


def gallery_rows(rows: Mapping[str, tuple]) -> dict:
    """Figure S2's rows: each model's name over its SIS sizes (%), to its keep masks."""
    return {name + "\n" + " ".join(number(p, 0, suffix="%") for p in pct): m for name, (pct, m) in rows.items()}
