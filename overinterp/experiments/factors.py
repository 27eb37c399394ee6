"""One factor at a time: which of our choices moves each claim (chapter "Why it holds or fails here";
paper 3.3, 4.1, 4.2, S1). Each sweep varies one choice away from the profile (``Profile.factors``) and
measures, on a seeded test sample, C1 (4.1: mean SIS size at tau, % of pixels, over confident images),
C2 (4.1, Table 1: accuracy on full images and own 5% BS subsets, and the drop), C3 (4.1: share of the
source's lift above random subsets recovered by the fixed other models, (others - random) / (own -
random)); C4 (4.2) is :mod:`.factors_controls`. Verdict columns "C1"-"C3" are
:mod:`overinterp.paper.verdicts`' outcomes; each sweep returns one row per setting, every step cached; the
chapter's glued values are :mod:`overinterp.pages.factors`'.

    sweeps = {"method": method_sweep(run), "mask": mask_sweep(run), "epochs": epochs_sweep(run),
              "width": width_sweep(run)}
    effects(run, sweeps)
"""
import inspect
import math
from dataclasses import replace

import pandas as pd
import torch
import torch.nn as nn

from overinterp.config.profiles import get_profile
from overinterp.engine.backselect import DEFAULT_M, BackSelectConfig, BackSelectResult
from overinterp.engine.sis import find_sis, pixel_subset, random_subset
from overinterp.experiments import runs
from overinterp.experiments.factors_controls import ACC, source_config, source_model
from overinterp.paper import verdicts
from overinterp.paper.numbers import SUBSET_FRAC
from overinterp.zoo import data
from overinterp.zoo.data import Selection
from overinterp.zoo.models import ARCHS

#: claim -> (the column that measures it, its name); lower favours every claim
MEASURES = {"C1": ("SIS size (% of pixels)", "mean SIS size"),
            "C2": ("drop (points)", "accuracy drop on the own BS subsets"),
            "C3": ("share transferred", "share of the lift that transfers")}
FACTOR_NAMES = {"method": "backward-selection method", "mask": "mask value", "epochs": "training length (epochs)",
                "width": "model width (initial filters)"}
#: how :func:`effects` chose the setting it compares ours with ("read as")
READ_AS = {"same": "ours is the paper's", "paper": "the paper's", "toward": "toward the paper's",
           "behind": "the step up to ours"}
EFFECT_COLUMNS = ["claim", "factor", "lowest", "lowest at", "highest", "highest at", "range", "ours at", "ours",
                  "compared with", "its value", "read as", "change toward the paper's", "direction"]
#: decimals of each claim's measure in the closing words: % of the pixels and points at one, a share at two
SPREAD_DIGITS = {"C1": 1, "C2": 1, "C3": 2}


# ----------------------------------------------------------------------------- what every sweep shares

def sample(run, n: int | None = None) -> Selection:
    """The first ``n`` (default ``factors.images``) images of the profile's test selection."""
    return runs.selection(run, "test").narrow(range(n or run.profile.factors.images))


def other_models(run) -> list[nn.Module]:
    """C3's fixed other models: every zoo replicate except replicate ``run.seed`` of ``factors.arch``."""
    return [m for a, ms in runs.zoo(run).items() for r, m in enumerate(ms)
            if not (a == run.profile.factors.arch and r == 0)]


def claim_measures(model: nn.Module, res: BackSelectResult, images: torch.Tensor, labels: torch.Tensor,
                   others: list[nn.Module], tau: float, device="cpu", frac: float = SUBSET_FRAC) -> dict:
    """C1-C3 of one model on one image sample, with each verdict."""
    sizes = runs.sis_fractions(find_sis(res, tau))
    x_bs, _ = pixel_subset(res, images, frac)
    x_rnd, _ = random_subset(images, frac, seed=runs.SUBSET_SEED,  # the test images' (runs.subset_seed)
                              block=res.block, mask_value=res.mask_value)
    full, own = runs.correct(model, images, labels, device), runs.correct(model, x_bs, labels, device)
    rnd = runs.correct(model, x_rnd, labels, device)
    oth = [runs.correct(m, x_bs, labels, device) for m in others]
    c1 = verdicts.sis_size({"": [sizes]}, tau) if sizes else None      # one model: an interval over images
    c2 = verdicts.subsets_accurate({"": [full]}, {"": [own]})
    c3 = verdicts.no_transfer({"": [own]}, {"": [oth]}, {"": [rnd]}) if oth else None   # one source, its others
    return {"images": len(images), "confident images": len(sizes),
            MEASURES["C1"][0]: c1.numbers["mean SIS size (%)"].iloc[0] if c1 else math.nan,
            "full images (%)": 100 * full.mean(), "own BS subsets (%)": 100 * own.mean(),
            MEASURES["C2"][0]: c2.numbers["drop (points)"].iloc[0],
            "C2 95% interval": f"[{c2.numbers['95% low'].iloc[0]:.1f}, {c2.numbers['95% high'].iloc[0]:.1f}]",
            "random subsets (%)": 100 * rnd.mean(),
            "other models (%)": 100 * sum(o.mean() for o in oth) / len(oth) if oth else math.nan,
            MEASURES["C3"][0]: c3.numbers["share of lift transferred"].iloc[0] if c3 else math.nan,
            "C1": c1.word if c1 else verdicts.UNTESTABLE, "C2": c2.word, "C3": c3.word if c3 else verdicts.UNTESTABLE}


# ----------------------------------------------------------------------------- backward selection

def method_settings(run) -> list[tuple[str, BackSelectConfig]]:
    """(label, engine) of the method sweep: gradient per k, pruned (``DEFAULT_M``), exact unless skipped."""
    base = run.profile.backselect
    ks = sorted(set(run.profile.factors.ks) | ({base.k} if base.method == "gradient" else set()))
    out = [(f"gradient k={k}", replace(base, method="gradient", k=k)) for k in ks]
    ms = sorted({DEFAULT_M} | ({base.m} if base.method == "pruned" else set()))
    exact = [("exact", replace(base, method="exact"))] if run.profile.factors.exact_images else []
    return out + [(f"pruned m={m}", replace(base, method="pruned", m=m)) for m in ms] + exact


def method_sweep(run) -> pd.DataFrame:
    """C1-C3 per backward-selection method on each method's samples (all meet on the smallest). ``value``:
    gradient -k < pruned 0 < exact 1; ``baseline``: profile's; ``paper``: exact."""
    f, tau = run.profile.factors, run.profile.sis_threshold
    X, Y = sample(run).load()
    model, others = source_model(run), other_models(run)
    cfg = source_config(run)
    settings = method_settings(run)
    n = {"gradient": f.images, "pruned": f.pruned_images or f.images, "exact": f.exact_images}
    n = {m: min(v, f.images) for m, v in n.items() if any(e.method == m for _, e in settings)}
    samples = sorted(set(n.values()), reverse=True)
    rows = []
    for label, engine in settings:
        res = runs.backselect_model(run, model, cfg, sample(run, n[engine.method]), engine, progress=False)
        fineness = {"exact": 1, "pruned": 0}.get(engine.method, -engine.k)
        for s in [s for s in samples if s <= n[engine.method]]:
            rows.append({"factor": "method", "setting": label, "value": fineness,
                         "sample": f"all {s}" if s == f.images else f"first {s}", "sample size": s,
                         "baseline": engine == run.profile.backselect, "paper": engine.method == "exact",
                         **claim_measures(model, res[:s], X[:s], Y[:s], others, tau, run.device)})
    return pd.DataFrame(rows)


def black_value(dataset: str):
    """The normalised black (0) pixel, -mean/std per channel (float for one channel)."""
    split = data.load(dataset, "test")
    v = tuple(-m / s for m, s in zip(split.mean, split.std))
    return v[0] if len(v) == 1 else v


def mask_sweep(run) -> pd.DataFrame:
    """C1-C3 with masked pixels at the mean pixel (0, the paper's, 3.3) or black."""
    sel = sample(run)
    X, Y = sel.load()
    model, others = source_model(run), other_models(run)
    cfg = source_config(run)
    rows = []
    for i, (label, value) in enumerate([("mean pixel", 0.0), ("black", black_value(run.dataset))]):
        engine = replace(run.profile.backselect, mask_value=value)
        res = runs.backselect_model(run, model, cfg, sel, engine, progress=False)
        rows.append({"factor": "mask", "setting": label, "value": i, "sample": f"all {len(X)}",
                     "baseline": engine == run.profile.backselect, "paper": label == "mean pixel",
                     **claim_measures(model, res, X, Y, others, run.profile.sis_threshold, run.device)})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the models

def _model_sweep(run, factor: str, settings: list[tuple[int, dict]], profile_value: int,
                 paper_value: int, ours: str = "ours") -> pd.DataFrame:
    """C1-C3 and model statistics of models trained with each setting's overrides; ``ours``: baseline label."""
    f, p, tau = run.profile.factors, run.profile, run.profile.sis_threshold
    sel = sample(run)
    X, Y = sel.load()
    others = other_models(run)
    rows = []
    for value, kw in settings:
        model = runs.trained_model(run.dataset, f.arch, p.name, seed=run.seed, device=run.device, progress=False,
                                   train_size=f.train_size, **kw)
        res = runs.backselect_model(run, model, source_config(run, train_size=f.train_size, **kw), sel,
                                    p.backselect, progress=False)
        measures = claim_measures(model, res, X, Y, others, tau, run.device)
        s = runs.model_stats(model, {"test": runs.selection(run, "test").load()}, run.device, tau)
        rows.append({"factor": factor, "setting": str(value), "value": value, "sample": f"all {len(X)}",
                     "baseline": value == profile_value, "paper": value == paper_value, "ours": ours,
                     **measures, ACC: s["test accuracy"], "mean confidence": s["mean confidence"],
                     runs.CONFIDENT: s[runs.CONFIDENT], "final training loss": s["final training loss"],
                     "plateaued": bool(s["plateaued"])})
    return pd.DataFrame(rows)


def _paper_width(arch: str) -> int:
    """The paper's initial filters of ``arch`` (S1): the models' default width."""
    return inspect.signature(ARCHS[arch]).parameters["width"].default


def epochs_sweep(run) -> pd.DataFrame:
    """C1-C3, accuracy, confidence over ``factors.epochs``; baseline nearest the profile's (paper: 200)."""
    f, zoo = run.profile.factors, run.profile.train.epochs
    nearest = min(f.epochs, key=lambda v: (abs(v - zoo), v))
    return _model_sweep(run, "epochs", [(e, {"epochs": e}) for e in f.epochs], nearest,
                        get_profile("paper").train.epochs)


def width_sweep(run) -> pd.DataFrame:
    """C1-C3, accuracy, confidence over ``factors.widths`` initial filters."""
    f = run.profile.factors
    profile_width = run.profile.width(f.arch) or _paper_width(f.arch)
    zoo = run.profile.train.epochs
    ours = "ours" if f.width_epochs == zoo else f"the profile's width, trained {f.width_epochs} epochs (the zoo: {zoo})"
    return _model_sweep(run, "width", [(w, {"width": w, "epochs": f.width_epochs}) for w in f.widths],
                        profile_width, _paper_width(f.arch), ours)


# ----------------------------------------------------------------------------- what moves each claim

def smallest_sample(sweep: pd.DataFrame) -> pd.Series:
    return sweep["sample size"] == sweep["sample size"].min()


def _effect(factor: str, sweep: pd.DataFrame, claim: str, run) -> dict | None:
    """How ``claim``'s measure moves with ``factor``: lowest, highest, change from ours toward the paper's setting
    (to it if swept, else the sweep's end, else the step up to ours); None if unreadable."""
    col = MEASURES[claim][0]
    rows = (sweep[smallest_sample(sweep)] if factor == "method" else sweep).dropna(subset=[col])
    rows = rows[rows[claim] != verdicts.UNTESTABLE]
    base = rows[rows.baseline]
    if len(rows) < 2 or base.empty:
        return None
    lo, hi, base = rows.loc[rows[col].idxmin()], rows.loc[rows[col].idxmax()], base.iloc[0]
    paper_value = {"epochs": get_profile("paper").train.epochs, "width": _paper_width(run.profile.factors.arch),
                   "method": 1}.get(factor)                    # the mask is categorical: no trend
    if rows.paper.any():                             # the paper's setting is in the sweep
        ref = rows[rows.paper].iloc[0]
        read, delta = "same" if base.paper else "paper", ref[col] - base[col]
    elif paper_value is None:
        return None
    else:                                            # not in the sweep: the trend toward it
        up = paper_value > base.value
        ahead, behind = rows[(rows.value > base.value) == up], rows[(rows.value < base.value) == up]
        ahead, behind = ahead[ahead.value != base.value], behind[behind.value != base.value]
        if not ahead.empty:                          # from ours to the sweep's end toward the paper's
            ref = ahead.loc[(ahead.value - base.value).abs().idxmax()]
            read, delta = "toward", ref[col] - base[col]
        elif not behind.empty:                       # ours is the sweep's end: the last step up to ours
            ref = behind.loc[(behind.value - base.value).abs().idxmin()]
            read, delta = "behind", base[col] - ref[col]
        else:
            return None
    direction = "higher" if delta > 0 else "lower" if delta < 0 else "unchanged"
    values = [claim, FACTOR_NAMES[factor], lo[col], _show(factor, lo.setting), hi[col], _show(factor, hi.setting),
              hi[col] - lo[col], _show(factor, base.setting), base[col], _show(factor, ref.setting), ref[col],
              READ_AS[read], delta, direction]
    return dict(zip(EFFECT_COLUMNS, values))


def _show(factor: str, setting: str) -> str:
    """A sweep's setting as a label: "3 epochs", "width 8", else as it is."""
    epochs = f"{setting} epoch{'' if setting == '1' else 's'}"
    return {"epochs": epochs, "width": f"width {setting}"}.get(factor, setting)


def effects(run, sweeps: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per readable (claim, factor), widest range first: range, ours, compared setting, change toward
    the paper's and direction (lower favours every claim)."""
    rows = [e for claim in MEASURES for factor, sw in sweeps.items() if (e := _effect(factor, sw, claim, run))]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS).sort_values(["claim", "range"], ascending=[True, False],
                                                                  ignore_index=True)
