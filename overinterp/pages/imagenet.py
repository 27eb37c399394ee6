"""Overinterpretation on ImageNet presented (:mod:`overinterp.experiments.imagenet_chapter`; paper 4.1.1): the
photographs' table, S5's cost table and the glued values of the prose.
"""
import pandas as pd

from overinterp.experiments import imagenet
from overinterp.experiments.imagenet_chapter import Cost, Sample
from overinterp.paper.formatting import MISSING, count, number
from overinterp.paper.numbers import IMAGENET_FIG4, PAPER_S5

MINUTES = f"minutes for {PAPER_S5['images']} images"   # the projection's column (imagenet.s5_projection)


def setup_values(run, p, taus) -> dict:
    """The setting for the prose (model, size, thresholds, engine, limits, ``who``, exact forwards)."""
    cfg, spec = run.profile.imagenet, imagenet.MODELS[p.model]
    size = spec["size"]
    return {"model_name": spec["name"], "size": f"{size}×{size}", "tau": f"{float(p.tau):g}",
            "taus": ", ".join(f"{t:g}" for t in taus), "method": cfg.backselect.describe(),
            "min_conf": f"{cfg.min_confidence:g}", "n_max": cfg.images,
            "who": f"{spec['name']}, ours ({run.profile.name} profile, {run.device.type})",
            "exact_forwards": f"{size * size * (size * size + 1) // 2:,}"}


def sample_values(s: Sample) -> dict:
    """Where the images come from (``source_which``, ``source_what``, ``source_how``), how many, and the check
    photographs' classes and confidences (``chelsea_*``, ``coffee_*``; "—" for an ImageNet folder)."""
    values = {"source": s.source, "n_source": s.n_source, "n_sel": len(s.names),
              "n_sel_text": count(len(s.names), "image"),
              "resize": MISSING if s.resize is None else s.resize, "folder": MISSING if s.folder is None else s.folder}
    if s.photos is None:
        values.update(dict.fromkeys(("chelsea_class", "chelsea_conf", "coffee_class", "coffee_conf", "n_photos",
                                     "n_090"), MISSING))
        return {**values, "source_which": "a seeded random sample of the",
                "source_what": f"images of the folder `{s.folder}`",
                "source_how": f"resized (shorter side {s.resize}) and centre-cropped"}
    known = s.photos.set_index("photo")
    for name in ("chelsea", "coffee"):
        values[f"{name}_class"] = known.loc[name, "class"].split(",")[0]
        values[f"{name}_conf"] = number(known.loc[name, "confidence"], 2)
    return {**values, "n_photos": len(s.photos),
            "n_090": int((s.photos["confidence"] >= IMAGENET_FIG4["min_confidence"]).sum()),
            "source_which": "the", "source_how": "each resized whole",
            "source_what": "photographs that scikit-image (skimage.data) and scikit-learn (sample images) ship"}


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


def cost_table(c: Cost) -> pd.DataFrame:
    """S5's cost as shown: our rows ("ours: ", seconds to 3 decimals, minutes to 1) above the paper's."""
    p = PAPER_S5
    paper_row = {"model": f"paper (S5): Inception-v3 (pre-trained), {p['size']}×{p['size']}, k = {p['k']}",
                 "features": p["pixels"], "k": p["k"], "steps": -(-p["pixels"] // p["k"]),
                 MINUTES: f"{p['minutes'][0]}–{p['minutes'][1]}"}
    t = c.table
    ours = t.assign(**{"model": "ours: " + t["model"], "s per image-step": t["s per image-step"].round(3),
                       MINUTES: t[MINUTES].round(1)})
    return pd.concat([ours, pd.DataFrame([paper_row])], ignore_index=True).set_index("model")


def cost_values(c: Cost) -> dict:
    """The cost's prose: the paper's minutes, ours for Inception-v3 and the chapter's model, what was timed."""
    t = c.table
    return {"paper_lo": PAPER_S5["minutes"][0], "paper_hi": PAPER_S5["minutes"][1],
            "inc_min": number(t.loc[t["model"].str.startswith("Inception"), MINUTES].iloc[0], 0),
            "eff_min": number(t[MINUTES].iloc[0], 0), "timing_steps": c.timing_steps, "timing_images": c.timing_images}
