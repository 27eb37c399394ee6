"""Overinterpretation on ImageNet presented (:mod:`overinterp.experiments.imagenet_chapter`; paper 4.1.1): the
photographs' table and the glued values of the prose.
"""
import pandas as pd

from overinterp.experiments import imagenet
from overinterp.paper.formatting import MISSING, number


def setup_values(run, p, taus) -> dict:
    """The setting for the prose (model, size, thresholds, engine, limits, ``who``, exact forwards)."""
    cfg, spec = run.profile.imagenet, imagenet.MODELS[p.model]
    size = spec["size"]
    return {"model_name": spec["name"], "size": f"{size}×{size}", "tau": f"{float(p.tau):g}",
            "taus": ", ".join(f"{t:g}" for t in taus), "method": cfg.backselect.describe(),
            "min_conf": f"{cfg.min_confidence:g}", "n_max": cfg.images,
            "who": f"{spec['name']}, ours ({run.profile.name} profile, {run.device.type})",
            "exact_forwards": f"{size * size * (size * size + 1) // 2:,}"}


def photo_table(photos: pd.DataFrame) -> pd.DataFrame:
    """Every photograph as shown: first class name, confidence (3 decimals), selected."""
    return photos.assign(**{"class": photos["class"].str.split(",").str[0],
                            "confidence": photos["confidence"].round(3)}).set_index("photo")


def table_values(table: pd.DataFrame, tau: float, border: float, area: float) -> dict[str, str]:
    """The SIS table's prose: border band, images with an SIS at ``tau``, median size, size range."""
    at_tau = table[table["tau"] == tau]
    return {"band_pct": f"{100 * border:g}%", "band_area": number(100 * area, suffix="%"), "n_tau": len(at_tau),
            "size_tau": number(at_tau["SIS size (%)"].median(), suffix="%") if len(at_tau) else "not measured (no SIS)",
            "size_all": (f"{table['SIS size (%)'].min():.1f}–{table['SIS size (%)'].max():.1f}%"
                         if len(table) else MISSING)}
