"""Shared Interest presented (:mod:`overinterp.experiments.shared_interest`; chapter 14): the eight cases as a table
and the glued values of the prose.
"""
import pandas as pd
import torch

from overinterp.experiments.shared_interest import bs_name, sis_name, sis_tau
from overinterp.methods.shared_interest import CASES, EC, GTC, IOU
from overinterp.paper.formatting import extremes, number
from overinterp.paper.verdicts import Verdict


#: short glue prefix -> method name, for the prose (SIS and BS names depend on tau and frac)
SALIENCY_SHORT = {"sal": "Saliency", "ig": "Integrated Gradients"}


def cases_table() -> pd.DataFrame:
    """The eight cases (:data:`~overinterp.methods.shared_interest.CASES`) as a table."""
    return pd.DataFrame([{"case": c.name, "prediction": "correct" if c.correct else "incorrect",
                          "ground-truth coverage": "high" if c.gtc_high else "low",
                          "explanation coverage": "high" if c.ec_high else "low", "suggests": c.reading,
                          "gallery ranks by": f"{c.rank_by}, {'highest' if c.descending else 'lowest'} first"}
                         for c in CASES]).set_index("case")


def _short_names(run, cfg) -> dict:
    return {"sis": sis_name(sis_tau(run, cfg)), "bs": bs_name(cfg), **SALIENCY_SHORT}


def setup_values(run, cfg) -> dict:
    """The chapter's settings for the prose."""
    return {"tau": f"{sis_tau(run, cfg):g}", "frac": f"{100 * cfg.frac:g}", "rule": cfg.rule(), "ig_steps": cfg.ig_steps,
            "high": f"{cfg.high:g}", "high_iou": number(cfg.high / (2 - cfg.high), 2),
            "level": f"{cfg.silhouette_level:g}", "level255": number(255 * cfg.silhouette_level, 0),
            "method": run.profile.backselect.describe(), "replicates": run.profile.replicates}


def region_values(G: torch.Tensor) -> dict:
    """How many test images, and the mean share (%) of the pixels their silhouettes cover."""
    return {"n_images": len(G), "g_share": number(100 * G.float().mean().item(), 0)}


def score_values(run, cfg, table: pd.DataFrame, per_rep: pd.DataFrame) -> dict:
    """Mean IoU / GTC / EC per method (``<method>_<score>``) and share (%) of images with an SIS."""
    means = per_rep.groupby(level="method", sort=False).mean()
    out = {}
    for key, m in _short_names(run, cfg).items():
        if m in means.index:
            for short, col in {"iou": IOU, "gtc": GTC, "ec": EC}.items():
                out[f"{key}_{short}"] = number(means.loc[m, col], 2)
    with_sis = table[(table["method"] == sis_name(sis_tau(run, cfg)))].groupby(["model", "replicate"])["has"].mean()
    out["sis_share"] = number(100 * with_sis.mean(), 0)
    return out


def case_values(run, cfg, table: pd.DataFrame) -> dict:
    """Most frequent case per method with its share (%), and share (%) of empty SIS."""
    tot = table[table["has"]].groupby(["method", "case"]).size().unstack(fill_value=0)
    out = {}
    for key, m in _short_names(run, cfg).items():
        if m in tot.index:
            row = tot.loc[m]
            out[f"{key}_top"] = row.idxmax()
            out[f"{key}_top_share"] = number(100 * row.max() / row.sum(), 0)
    sis_rows = table[(table["method"] == sis_name(sis_tau(run, cfg))) & table["has"]]
    out["sis_empty"] = number(100 * (sis_rows["|E|"] == 0).mean(), 0)
    return out


def verdict_values(verdict: Verdict) -> dict:
    """The verdict's word and its range of mean explanation coverage beside random pixels."""
    nums = verdict.numbers
    return {"verdict": verdict.word, **extremes("v_ec", nums["mean EC of SIS"], 2, spread=True),
            "v_rand": number(nums["random pixels (|G| / HW)"].mean(), 2)}
