"""One factor at a time: which of our choices moves each claim of the paper (the chapter "Why it
holds or fails here"; paper sections 3.3, 4.1, 4.2, S1).

Chapters 3-5 test the paper's claims at one profile. Here each sweep varies ONE of our choices away
from the profile's setting (``Profile.factors``, a :class:`~overinterp.config.profiles.FactorConfig`), keeps
everything else, and measures the claims on a seeded sample of test images sized for a CPU:

* C1 (4.1): the mean SIS size at tau (``Profile.sis_threshold``), % of the pixels, over the sample's
  images the model classifies with confidence >= tau (FindSIS on the backward selection);
* C2 (4.1, Table 1): accuracy (%) on full images and on the model's own 5% BS subsets, and the drop;
* C3 (4.1): the share of the source's lift above random 5% subsets that the other models recover on
  its subsets, (others - random) / (own - random). The other models are fixed -- every zoo replicate
  except replicate ``run.seed`` of ``factors.arch`` -- so only the source varies;
* C4 (4.2): retraining controls that separate the kept positions from their values
  (:func:`retrain_controls`).

The criteria and the measures they read are :mod:`overinterp.paper.verdicts`' (one verdict per row;
columns "C1"-"C3" hold its outcome, one of :data:`overinterp.paper.verdicts.OUTCOMES`, from an
interval over this sample's images).
Sweeps: :func:`method_sweep` (gradient k, pruned, exact), :func:`mask_sweep` (mean pixel or black),
:func:`epochs_sweep` and :func:`width_sweep` (models trained for the sweep). Each returns a numeric
DataFrame with one row per setting (and image sample); :func:`effects` reads how each factor moves
each claim, and :func:`closing_values` gives the words and numbers the chapter's closing argument glues.
Every expensive step is an artifact (trained and retrained models, backward-selection runs), so a
second call recomputes nothing:

    sweeps = {"method": method_sweep(run), "mask": mask_sweep(run), "epochs": epochs_sweep(run),
              "width": width_sweep(run)}
    effects(run, sweeps), closing_values(run, sweeps, retrain_controls(run))
"""
from __future__ import annotations

import inspect
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.experiments import runs as A
from overinterp.experiments import subsets as S
from overinterp.zoo import data as D
from overinterp.paper.formatting import MISSING, number
from overinterp.paper import verdicts
from overinterp.paper.intervals import replicate_interval
from overinterp.engine.backselect import DEFAULT_M, BackSelectConfig, BackSelectResult, apply_keep
from overinterp.zoo.data import Selection
from overinterp.zoo.models import ARCHS
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.config.profiles import get_profile
from overinterp.engine.sis import find_sis, pixel_subset, random_subset
from overinterp.experiments.runs import model_config, trained_model
from overinterp.methods.imputation import noisy_linear_impute

__all__ = ["FRAC", "CONTROL_SEED", "MEASURES", "sample", "source_model", "other_models", "claim_measures",
           "position_values", "IMPUTED", "imputation_values", "imputed_correct",
           "method_settings", "black_value", "method_sweep", "mask_sweep", "epochs_sweep", "width_sweep",
           "keep_mask_images", "other_class_partner", "fill_from_other_class", "random_other_class",
           "random_target_subsets", "retrain_controls", "controls_table", "retrain_verdicts", "table", "method_tables",
           "READ_AS", "effects", "closing_values", "prose_values"]

FRAC = SUBSET_FRAC   # the paper's 5% subsets
CONTROL_SEED = 0     # the other-class pairing and the random target classes of the retraining controls
ACC = "test accuracy (%)"
#: the retraining controls whose removed pixels are filled by ROAD's noisy linear imputation (Rong et al. 2022)
IMPUTED = {"bs": "BS subsets, imputed (ROAD)", "random": "random subsets, imputed (ROAD)"}
ROAD_NOISE = 0.01   # ROAD's default noise, in normalised pixel units
#: claim -> (the column that measures it, its name); lower favours every claim
MEASURES = {"C1": ("SIS size (% of pixels)", "mean SIS size"),
            "C2": ("drop (points)", "accuracy drop on the own BS subsets"),
            "C3": ("share transferred", "share of the lift that transfers")}
FACTOR_NAMES = {"method": "backward-selection method", "mask": "mask value", "epochs": "training length (epochs)",
                "width": "model width (initial filters)"}


# ----------------------------------------------------------------------------- what every sweep shares

def sample(run, n: int | None = None) -> Selection:
    """The first ``n`` (default ``factors.images``) images of the profile's test selection."""
    return A.selection(run, "test").narrow(range(n or run.profile.factors.images))


def source_model(run) -> nn.Module:
    """Replicate ``run.seed`` of ``factors.arch`` from the zoo: the model of chapters 3-5."""
    return trained_model(run.dataset, run.profile.factors.arch, run.profile.name, seed=run.seed,
                         device=run.device, progress=False)


def other_models(run) -> list[nn.Module]:
    """C3's fixed other models: every zoo replicate except replicate ``run.seed`` of ``factors.arch``."""
    return [m for a, ms in A.zoo(run).items() for r, m in enumerate(ms)
            if not (a == run.profile.factors.arch and r == 0)]


def claim_measures(model: nn.Module, res: BackSelectResult, images: torch.Tensor, labels: torch.Tensor,
                   others: list[nn.Module], tau: float, device="cpu", frac: float = FRAC) -> dict:
    """C1-C3 of one model on one image sample, with the verdict of each (module docstring)."""
    sizes = A.sis_fractions(find_sis(res, tau))
    x_bs, _ = pixel_subset(res, images, frac)
    x_rnd, _ = random_subset(images, frac, seed=S.SUBSET_SEED,  # the test images' (runs.subset_seed)
                              block=res.block, mask_value=res.mask_value)
    full, own = A.correct(model, images, labels, device), A.correct(model, x_bs, labels, device)
    rnd = A.correct(model, x_rnd, labels, device)
    oth = [A.correct(m, x_bs, labels, device) for m in others]
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


def _model_stats(model: nn.Module, run, tau: float) -> dict:
    """What makes a model overinterpret (:func:`overinterp.experiments.runs.model_stats` on the test
    selection), under this chapter's column names."""
    s = A.model_stats(model, {"test": A.selection(run, "test").load()}, run.device, tau)
    return {ACC: s["test accuracy"], "mean confidence": s["mean confidence"], A.CONFIDENT: s[A.CONFIDENT],
            "final training loss": s["final training loss"], "plateaued": bool(s["plateaued"])}


def prose_values(run) -> dict:
    """What the chapter's prose says of this execution: the source model, tau and engine, the
    samples of each method (``n_images`` gradient, ``n_pruned``, ``n_exact``: 0 where exact does not
    run; ``n_common``: the first images every method ran on), the selections, the other models and
    the settings of each sweep."""
    f, tau = run.profile.factors, run.profile.sis_threshold
    split = D.load(run.dataset, "test")
    n_exact = min(f.exact_images, f.images)
    black = black_value(run.dataset)
    n_pruned = min(f.pruned_images or f.images, f.images)
    return {"arch": ARCH_NAMES.get(f.arch, f.arch), "seed": run.seed, "tau": f"{tau:g}",
            "engine": run.profile.backselect.describe(), "n_images": f.images, "n_exact": n_exact,
            "n_common": min(n for n in (f.images, f.pruned_images or f.images, n_exact) if n),
            "n_pruned": n_pruned,
            "n_test": len(A.selection(run, "test").load()[1]), "n_train": len(A.selection(run, "train").load()[1]),
            "n_others": len(other_models(run)), "replicates": run.profile.replicates, "train_size": f.train_size,
            "epochs": ", ".join(map(str, f.epochs)), "widths": ", ".join(map(str, f.widths)),
            "width_epochs": f.width_epochs, "mean_pixel": ", ".join(number(m, 2) for m in split.mean),
            "black": ", ".join(number(b, 2) for b in black) if len(split.mean) > 1 else number(black, 2),
            "exact_images_text": ("on no image" if not n_exact else "on the first image" if n_exact == 1 else
                                  f"on the first {n_exact} images")}


# ----------------------------------------------------------------------------- backward selection

def method_settings(run) -> list[tuple[str, BackSelectConfig]]:
    """(label, engine) of the method sweep: gradient for each k of ``factors.ks`` and the profile's,
    pruned (m = :data:`~overinterp.engine.backselect.DEFAULT_M`), exact unless ``factors.exact_images`` is 0;
    block and mask value the profile's."""
    base = run.profile.backselect
    ks = sorted(set(run.profile.factors.ks) | ({base.k} if base.method == "gradient" else set()))
    out = [(f"gradient k={k}", replace(base, method="gradient", k=k)) for k in ks]
    ms = sorted({DEFAULT_M} | ({base.m} if base.method == "pruned" else set()))
    exact = [("exact", replace(base, method="exact"))] if run.profile.factors.exact_images else []
    return out + [(f"pruned m={m}", replace(base, method="pruned", m=m)) for m in ms] + exact


def method_sweep(run) -> pd.DataFrame:
    """C1-C3 per backward-selection method, for the source model. Gradient runs on the first
    ``factors.images`` test images, pruned on the first ``factors.pruned_images`` (default as many),
    exact on the first ``factors.exact_images`` (slow on a CPU); each method's rows cover every
    sample it ran on ("all N", "first N"), so every method appears on the smallest, the same
    images. ``baseline``: the profile's engine; ``paper``: exact."""
    f, tau = run.profile.factors, run.profile.sis_threshold
    X, Y = sample(run).load()
    model, others = source_model(run), other_models(run)
    cfg = model_config(run.dataset, f.arch, run.profile.name, run.seed)
    settings = method_settings(run)
    n = {"gradient": f.images, "pruned": f.pruned_images or f.images, "exact": f.exact_images}
    n = {m: min(v, f.images) for m, v in n.items() if any(e.method == m for _, e in settings)}
    samples = sorted(set(n.values()), reverse=True)
    rows = []
    for label, engine in settings:
        res = A.backselect_model(run, model, cfg, sample(run, n[engine.method]), engine, progress=False)
        for s in [s for s in samples if s <= n[engine.method]]:
            rows.append({"factor": "method", "setting": label, "value": _fineness(engine),
                         "sample": f"all {s}" if s == f.images else f"first {s}", "sample size": s,
                         "baseline": engine == run.profile.backselect, "paper": engine.method == "exact",
                         **claim_measures(model, res[:s], X[:s], Y[:s], others, tau, run.device)})
    return pd.DataFrame(rows)


def _fineness(engine: BackSelectConfig) -> int:
    """How close a method comes to exact backward selection: gradient -k (fewer pixels per step is
    finer) < pruned (0) < exact (1). The method sweep's ``value``, an order toward the paper's."""
    return {"exact": 1, "pruned": 0}.get(engine.method, -engine.k)


def black_value(dataset: str):
    """The normalised value of a black (0) pixel, -mean/std per channel (a float for one channel):
    Fashion-MNIST's background."""
    split = D.load(dataset, "test")
    v = tuple(-m / s for m, s in zip(split.mean, split.std))
    return v[0] if len(v) == 1 else v


def mask_sweep(run) -> pd.DataFrame:
    """C1-C3 with masked pixels set to the mean pixel (0, the paper's, 3.3) or to black, with the
    profile's engine on ``factors.images`` images; random subsets are masked the same way."""
    f, tau = run.profile.factors, run.profile.sis_threshold
    sel = sample(run)
    X, Y = sel.load()
    model, others = source_model(run), other_models(run)
    cfg = model_config(run.dataset, f.arch, run.profile.name, run.seed)
    rows = []
    for i, (label, value) in enumerate([("mean pixel", 0.0), ("black", black_value(run.dataset))]):
        engine = replace(run.profile.backselect, mask_value=value)
        res = A.backselect_model(run, model, cfg, sel, engine, progress=False)
        rows.append({"factor": "mask", "setting": label, "value": i, "sample": f"all {len(X)}",
                     "baseline": engine == run.profile.backselect, "paper": label == "mean pixel",
                     **claim_measures(model, res, X, Y, others, tau, run.device)})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the models

def _model_sweep(run, factor: str, settings: list[tuple[int, dict]], profile_value: int,
                 paper_value: int, ours: str = "ours") -> pd.DataFrame:
    """C1-C3 and model statistics for models of ``factors.arch`` trained on ``factors.train_size``
    images with ``trained_model`` overrides ``kw`` (one seed, ``run.seed``), profile's engine.
    ``ours``: what the baseline row is, where it is not the profile's own model."""
    f, p, tau = run.profile.factors, run.profile, run.profile.sis_threshold
    sel = sample(run)
    X, Y = sel.load()
    others = other_models(run)
    rows = []
    for value, kw in settings:
        model = trained_model(run.dataset, f.arch, p.name, seed=run.seed, device=run.device, progress=False,
                              train_size=f.train_size, **kw)
        cfg = model_config(run.dataset, f.arch, p.name, run.seed, train_size=f.train_size, **kw)
        res = A.backselect_model(run, model, cfg, sel, p.backselect, progress=False)
        rows.append({"factor": factor, "setting": str(value), "value": value, "sample": f"all {len(X)}",
                     "baseline": value == profile_value, "paper": value == paper_value, "ours": ours,
                     **claim_measures(model, res, X, Y, others, tau, run.device), **_model_stats(model, run, tau)})
    return pd.DataFrame(rows)


def _nearest(values, target) -> int:
    return min(values, key=lambda v: (abs(v - target), v))


def _paper_width(arch: str) -> int:
    """The paper's initial filters of ``arch`` (S1): the models' default width."""
    return inspect.signature(ARCHS[arch]).parameters["width"].default


def epochs_sweep(run) -> pd.DataFrame:
    """C1-C3, accuracy and confidence of models trained ``factors.epochs`` epochs (the profile's
    recipe otherwise; learning-rate milestones scale with the epochs). ``baseline``: the epochs
    nearest the profile's; the paper's 200 lies beyond the sweep."""
    f = run.profile.factors
    return _model_sweep(run, "epochs", [(e, {"epochs": e}) for e in f.epochs],
                        _nearest(f.epochs, run.profile.train.epochs), get_profile("paper").train.epochs)


def width_sweep(run) -> pd.DataFrame:
    """C1-C3, accuracy and confidence of models of ``factors.widths`` initial filters trained
    ``factors.width_epochs`` epochs (the epoch sweep's model where the settings coincide)."""
    f = run.profile.factors
    profile_width = run.profile.width(f.arch) or _paper_width(f.arch)
    zoo = run.profile.train.epochs
    ours = "ours" if f.width_epochs == zoo else f"the profile's width, trained {f.width_epochs} epochs (the zoo: {zoo})"
    return _model_sweep(run, "width", [(w, {"width": w, "epochs": f.width_epochs}) for w in f.widths],
                        profile_width, _paper_width(f.arch), ours)


# ----------------------------------------------------------------------------- retraining controls (C4)

def keep_mask_images(keep: torch.Tensor, channels: int, dtype=torch.float32) -> torch.Tensor:
    """keep (N, H, W) bool -> (N, C, H, W) images that are the mask itself: 1 where kept, else 0."""
    return keep[:, None].expand(-1, channels, -1, -1).to(dtype)


def other_class_partner(labels: torch.Tensor, seed: int = CONTROL_SEED) -> torch.Tensor:
    """(N,) for each image, the index of an image of another class, drawn uniformly (seeded)."""
    g = torch.Generator().manual_seed(seed)
    partner = torch.empty_like(labels)
    for c in labels.unique().tolist():
        members, pool = (labels == c).nonzero().flatten(), (labels != c).nonzero().flatten()
        if not len(pool):
            raise ValueError("every image has the same label: no image of another class to pair with")
        partner[members] = pool[torch.randint(len(pool), (len(members),), generator=g)]
    return partner


def fill_from_other_class(images: torch.Tensor, keep: torch.Tensor, partner: torch.Tensor,
                          mask_value=0.0) -> torch.Tensor:
    """The kept positions (keep (N, H, W)) of each image filled with the pixel values of its
    ``partner`` image, the other positions with ``mask_value``: position without its own values."""
    return apply_keep(images[partner], keep, mask_value)


def random_other_class(pred: torch.Tensor, num_classes: int, seed: int = CONTROL_SEED) -> torch.Tensor:
    """(N,) a uniformly drawn class other than ``pred`` for each image (seeded)."""
    shift = torch.randint(1, num_classes, pred.shape, generator=torch.Generator().manual_seed(seed))
    return (pred.cpu() + shift) % num_classes


def random_target_subsets(run, set_name: str, frac: float = FRAC) -> tuple:
    """``frac`` subsets of the ``set_name`` selection selected by backward selection for a random
    class other than the predicted one (:func:`random_other_class` of the stored predicted-class
    run), with the profile's engine for that set. Returns (images, keep, target)."""
    arch, sel = run.profile.factors.arch, A.selection(run, set_name)
    X, _ = sel.load()
    pred = A.backselect_set(run, arch, sel, progress=False).pred
    target = random_other_class(pred, len(D.CLASSES[run.dataset]))
    res = A.backselect_model(run, source_model(run), model_config(run.dataset, arch, run.profile.name, run.seed), sel,
                             run.profile.engine(set_name), target=target, progress=False)
    return (*pixel_subset(res, X, frac), res.pred)


def retrain_controls(run, frac: float = FRAC) -> pd.DataFrame:
    """C4's controls for ``factors.arch`` on chapter 5's training selection: new models (profile's
    retraining recipe, no augmentation, every replicate) trained on a transformation of the
    training images and tested on the same transformation of the test selection. One row per
    (control, replicate) with the test accuracy (%) and the share surviving,
    (accuracy - chance) / (mean BS accuracy - chance). Chapter 5's BS, random and full-image
    models are reused (same names and images). The last two controls retrain on the BS and the random
    subsets with the removed pixels filled by ROAD's noisy linear imputation instead of the mask value
    (:mod:`overinterp.methods.imputation`), which closes the positional leak of a constant fill."""
    arch = run.profile.factors.arch
    subs = S.subsets(run, arch, frac, train=True)
    tr, te = subs["train"], subs["test"]
    (Xtr, ytr), (Xte, yte) = A.selection(run, "train").load(), A.selection(run, "test").load()
    mv = A.backselect_set(run, arch, A.selection(run, "train"), progress=False).mask_value
    C = Xtr.shape[1]
    made = {label: (S.retrain_on_subsets(run, arch, kind, False, frac, subs), te[kind][0])
            for kind, label in [("bs", "BS subsets"), ("random", "random subsets"), ("full", "full images")]}
    controls = {
        "keep-mask alone": (keep_mask_images(tr["bs"][1], C), keep_mask_images(te["bs"][1], C)),
        "values of another class": (fill_from_other_class(Xtr, tr["bs"][1], other_class_partner(ytr), mv),
                                    fill_from_other_class(Xte, te["bs"][1], other_class_partner(yte), mv)),
        "random target class": (random_target_subsets(run, "train", frac)[0],
                                random_target_subsets(run, "test", frac)[0]),
        **{label: (noisy_linear_impute(Xtr, tr[kind][1], ROAD_NOISE, seed=CONTROL_SEED),
                   noisy_linear_impute(Xte, te[kind][1], ROAD_NOISE, seed=CONTROL_SEED + 1))
           for kind, label in IMPUTED.items()}}
    for label, (x_train, x_test) in controls.items():
        name = f"{label.replace(' ', '-')}{frac:g}"
        made[label] = (S.retrain(run, arch, x_train, ytr, name, augment=False, eval_data=(x_test, yte)), x_test)
    rows = [{"control": label, "replicate": r, ACC: 100 * float(c.mean()), "correct": c}
            for label, (models, x_test) in made.items() for r, m in enumerate(models)
            for c in [A.correct(m, x_test, yte, run.device)]]
    df = pd.DataFrame(rows)
    chance = 100 / len(D.CLASSES[run.dataset])
    lift = df.loc[df.control == "BS subsets", ACC].mean() - chance
    df["share surviving"] = (df[ACC] - chance) / lift if lift > 0 else math.nan  # BS at chance: nothing to share
    return df


def controls_table(controls: pd.DataFrame) -> pd.DataFrame:
    """Per control: the test accuracy (%) of each replicate, their mean and std, and the share
    surviving of the mean."""
    g = controls.groupby("control", sort=False)
    reps = controls.pivot(index="control", columns="replicate", values=ACC).loc[list(dict.fromkeys(controls.control))]
    reps.columns = [f"replicate {r} (%)" for r in reps.columns]
    return reps.assign(**{"mean (%)": g[ACC].mean(), "std": g[ACC].std().fillna(0.0),
                          "share surviving": g["share surviving"].mean()})


def retrain_verdicts(run, controls: pd.DataFrame) -> dict[str, verdicts.Verdict]:
    """Chapter 5's two verdicts (4.2) on the controls' BS, random and full-image rows."""
    name = ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch)
    acc = {c: _correct(controls, c) for c in ("BS subsets", "random subsets", "full images")}
    return {"beats random": verdicts.retrain_beats_random({name: acc["BS subsets"]}, {name: acc["random subsets"]}),
            "near full": verdicts.retrain_near_full({name: acc["BS subsets"]}, {name: acc["full images"]},
                                                    chance=100 / len(D.CLASSES[run.dataset]))}


def _lift_share(part: list, whole: list, chance: float, seed: int):
    """95% interval of (part - chance) / (whole - chance) in accuracy (replicates and images
    resampled, images paired): the share of ``whole``'s lift above chance that ``part`` keeps."""
    def share(m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (100 * m["part"] - chance) / (100 * m["whole"] - chance)
    return replicate_interval({"part": part, "whole": whole}, share, seed=seed)


def _correct(controls: pd.DataFrame, control: str) -> list:
    return controls.loc[controls.control == control, "correct"].tolist()


def position_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """The position-versus-value finding for the prose and the introduction: the test accuracy (%)
    of the models retrained on the keep-mask alone and on the BS subsets, and the share of the BS
    models' lift above chance that the keep-mask alone keeps, each with a 95% interval (replicates
    and test images resampled, images paired)."""
    chance = 100 / len(D.CLASSES[run.dataset])
    keep, bs = _correct(controls, "keep-mask alone"), _correct(controls, "BS subsets")
    seed = run.seed if seed is None else seed
    s = _lift_share(keep, bs, chance, seed)
    return {"pos_keep_acc": replicate_interval({"k": keep}, seed=seed).scaled(100).format(1),
            "pos_bs_acc": replicate_interval({"b": bs}, seed=seed).scaled(100).format(1), "pos_chance": f"{chance:g}",
            "pos_share": number(100 * s.estimate, 0, suffix="%"),
            "pos_share_interval": f"[{number(100 * s.low, 0, suffix='%')}, {number(100 * s.high, 0, suffix='%')}]",
            "pos_replicates": len(bs), "pos_images": len(bs[0])}


def imputation_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """Retraining with ROAD's imputation instead of a constant fill (:data:`IMPUTED`): the test
    accuracy (%) of the models retrained on imputed BS and imputed random subsets, and the share of
    the constant-fill BS models' lift above chance that the imputed BS models keep, with 95% intervals."""
    chance = 100 / len(D.CLASSES[run.dataset])
    seed = run.seed if seed is None else seed
    bs, imp, rnd = (_correct(controls, c) for c in ("BS subsets", IMPUTED["bs"], IMPUTED["random"]))
    s = _lift_share(imp, bs, chance, seed)
    return {"road_bs_acc": replicate_interval({"i": imp}, seed=seed).scaled(100).format(1),
            "road_random_acc": replicate_interval({"r": rnd}, seed=seed).scaled(100).format(1),
            "road_share": number(100 * s.estimate, 0, suffix="%"),
            "road_share_interval": f"[{number(100 * s.low, 0, suffix='%')}, {number(100 * s.high, 0, suffix='%')}]",
            "road_noise": f"{ROAD_NOISE:g}"}


def imputed_correct(run, controls: pd.DataFrame) -> dict:
    """What :func:`overinterp.paper.further_verdicts.imputed_verdict` decides from (its keyword arguments):
    the source architecture's name ("model") and, per retrained replicate, 1/0 per test image of the
    models retrained on imputed BS subsets ("bs") and on imputed random subsets ("random") among
    ``controls`` (:func:`retrain_controls`, :data:`IMPUTED`).

        further_verdicts.imputed_verdict(**imputed_correct(run, controls))"""
    return {"bs": _correct(controls, IMPUTED["bs"]), "random": _correct(controls, IMPUTED["random"]),
            "model": ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch)}


# ----------------------------------------------------------------------------- display and what moves each claim

def table(sweep: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """A sweep for display, one column per (setting, sample) and one row per measure, so that it
    fits the page: numbers rounded, outcomes in words, "—" where a measure is undefined (no
    confident image, or subsets no better than random); the column of the profile's setting is
    marked "← profile" (or says what it is, where it is not the profile's own model)."""
    drop = ["factor", "value", "paper", "sample size"]
    out = sweep.drop(columns=drop, errors="ignore").reset_index(drop=True)
    ours = out.pop("ours") if "ours" in out else pd.Series("ours", index=out.index)
    one_sample = "sample" not in out or out["sample"].nunique() == 1
    names = []
    for (_, r), o in zip(out.iterrows(), ours):
        name = str(r["setting"]) + ("" if one_sample else f" ({r['sample']})")
        names.append(name + (("  ← profile" if o == "ours" else f"  ← {o}") if r["baseline"] else ""))
    out = out.drop(columns=["setting", "sample", "baseline"], errors="ignore")
    out.index = names

    def show(v):
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (float, np.floating)):
            return number(v, digits)
        return v

    return out.map(show).T


def method_tables(sweep: pd.DataFrame, digits: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`method_sweep` as two :func:`table` s that fit the page: every method on the smallest sample
    (the same images, exact among them), and the methods that ran on more images on their larger samples
    (no columns where every method ran on one sample)."""
    same = sweep["sample size"] == sweep["sample size"].min()
    return table(sweep[same], digits), table(sweep[~same], digits) if (~same).any() else pd.DataFrame()


def _main_rows(factor: str, sweep: pd.DataFrame) -> pd.DataFrame:
    """The rows a factor's effect is read from: for the method, every method on the same (the
    smallest sample's) images."""
    if factor == "method":
        return sweep[sweep["sample size"] == sweep["sample size"].min()]
    return sweep


#: how :func:`effects` chose the setting it compares ours with ("read as")
READ_AS = {"same": "ours is the paper's", "paper": "the paper's", "toward": "toward the paper's",
           "behind": "the step up to ours"}
EFFECT_COLUMNS = ["claim", "factor", "lowest", "lowest at", "highest", "highest at", "range", "ours at", "ours",
                  "compared with", "its value", "read as", "change toward the paper's", "direction"]


def _effect(factor: str, sweep: pd.DataFrame, claim: str, run) -> dict | None:
    """How the claim's measure moves with one factor, over the settings where the claim can be
    tested (a share of a lift under the verdict's minimum is noise): its lowest and highest value,
    and its change from the profile's setting toward the paper's -- the paper's setting where the
    sweep has it, else from ours to the sweep's end toward the paper's, else the step from the
    setting next to ours up to ours. None where fewer than two settings, or not ours, can be read."""
    col = MEASURES[claim][0]
    rows = _main_rows(factor, sweep).dropna(subset=[col])
    rows = rows[rows[claim] != verdicts.UNTESTABLE]
    base = rows[rows.baseline]
    if len(rows) < 2 or base.empty:
        return None
    lo, hi, base = rows.loc[rows[col].idxmin()], rows.loc[rows[col].idxmax()], base.iloc[0]
    paper_value = {"epochs": get_profile("paper").train.epochs, "width": _paper_width(run.profile.factors.arch),
                   "method": 1}.get(factor)                    # the mask is categorical: the paper's or not
    if rows.paper.any():                             # the paper's setting is in the sweep
        ref = rows[rows.paper].iloc[0]
        read, delta = "same" if base.paper else "paper", ref[col] - base[col]
    elif paper_value is not None:                    # not in the sweep: the trend toward it
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
    else:
        return None
    values = [claim, FACTOR_NAMES[factor], lo[col], _show(factor, lo.setting), hi[col], _show(factor, hi.setting),
              hi[col] - lo[col], _show(factor, base.setting), base[col], _show(factor, ref.setting), ref[col],
              READ_AS[read], delta, _direction(delta)]
    return dict(zip(EFFECT_COLUMNS, values))


def _show(factor: str, setting: str) -> str:
    """A sweep's setting as a label: "3 epochs", "width 8", else as it is."""
    epochs = f"{setting} epoch{'' if setting == '1' else 's'}"
    return {"epochs": epochs, "width": f"width {setting}"}.get(factor, setting)


def _direction(delta: float) -> str:
    return "higher" if delta > 0 else "lower" if delta < 0 else "unchanged"


def effects(run, sweeps: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """How each factor moves each claim's measure (C1-C3; lower favours every claim), one row per
    (claim, factor) that can be read (:func:`_effect`), the widest range first within a claim:
    the measure's lowest and highest value over the factor's settings and where; its value at ours
    and at the setting it is compared with ("read as" :data:`READ_AS`); the change toward the
    paper's setting and its direction ("lower", "higher" or "unchanged")."""
    rows = [e for claim in MEASURES for factor, sw in sweeps.items() if (e := _effect(factor, sw, claim, run))]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS).sort_values(["claim", "range"], ascending=[True, False],
                                                                  ignore_index=True)


def _prediction(rows: pd.DataFrame) -> str:
    """What a claim's factors that differ from the paper's predict for its measure at paper scale:
    "lower", "higher", "unchanged" (none moves it), "split" (they disagree), "—" (none to read)."""
    differ = rows[rows["read as"] != READ_AS["same"]]
    moving = set(differ.direction) - {"unchanged"}
    return MISSING if differ.empty else "unchanged" if not moving else moving.pop() if len(moving) == 1 else "split"


def closing_values(run, sweeps: dict[str, pd.DataFrame], controls: pd.DataFrame) -> dict:
    """The closing argument's words and numbers, for glue. Per claim C1-C3 (``close_<claim>_...``):
    ``verdict`` at the profile's settings (the method sweep's baseline); the ``factor`` whose settings
    span the widest range of the measure ("none" where none can be read) with its ``lo``/``hi`` and
    where (``lo_at``/``hi_at``); among the factors whose setting differs from the paper's, how many
    (``differ``), how many point ``lower``/``higher`` at paper scale, and the prediction
    (``expect``, :func:`_prediction`). C4: :func:`_c4_values`."""
    base = sweeps["method"]
    base = base[base.baseline].iloc[0]
    eff = effects(run, sweeps)
    out = {}
    for claim in MEASURES:
        rows = eff[eff.claim == claim]
        top = rows.iloc[0] if len(rows) else pd.Series(dtype=object)      # effects: the widest range first
        differ = rows[rows["read as"] != READ_AS["same"]]
        out.update({f"close_{claim}_{k}": v for k, v in {
            "verdict": base[claim], "factor": top.get("factor", "none"),
            "lo": number(top.get("lowest"), 2), "lo_at": top.get("lowest at", MISSING),
            "hi": number(top.get("highest"), 2), "hi_at": top.get("highest at", MISSING),
            "differ": len(differ), "lower": int((differ.direction == "lower").sum()),
            "higher": int((differ.direction == "higher").sum()), "expect": _prediction(rows)}.items()})
        # the same in words that read where no factor can be read, at the measure's own precision
        digits = SPREAD_DIGITS[claim]
        out[f"close_{claim}_spread"] = (
            "none, since no factor's sweep can be read" if top.empty else
            f"{top['factor']}, from {number(top['lowest'], digits)} ({top['lowest at']}) to "
            f"{number(top['highest'], digits)} ({top['highest at']})")
        expect = out[f"close_{claim}_expect"]
        out[f"close_{claim}_prediction"] = "none, since no factor can be read" if expect == MISSING else expect
    c4 = _c4_values(run, controls)
    return {**out, **c4, "close_C4_reading": _c4_reading(c4)}


#: decimals of each claim's measure in the closing words: % of the pixels and points at one, a share at two
SPREAD_DIGITS = {"C1": 1, "C2": 1, "C3": 2}


def _c4_reading(v: dict) -> str:
    """:func:`_c4_values`' (``v``) control with the least share, the keep-mask's share and what retraining
    rests on, in sentences that read where the BS models are no better than chance (no share exists)."""
    if v["close_C4_least"] == MISSING:
        return ("The BS models are no better than chance here, so no control can say what their accuracy "
                "rests on.")
    least = (f"Of the controls, the one that keeps the least of the BS models' accuracy above chance is the "
             f"{v['close_C4_least']} ({v['close_C4_least_share']})")
    if v["close_C4_rests"] == MISSING:
        return f"{least}; the keep-mask alone was not trained here."
    return (f"{least}; the keep-mask alone keeps {v['close_C4_keep']}, so here retraining on BS subsets rests "
            f"mostly on the kept pixels' {v['close_C4_rests']} (positions where the keep-mask alone keeps at least "
            "half, else values).")


def _c4_values(run, controls: pd.DataFrame) -> dict:
    """C4's words and numbers (``close_C4_...``): chapter 5's two verdicts on these models (``beats``
    random, ``near`` full), the control that keeps the least of the BS models' accuracy above chance
    (``least``, ``least_share``; the imputed random subsets are a baseline, not a control of the BS
    subsets), the share the keep-mask alone keeps (``keep``) and what the BS models' retraining
    accuracy rests on mostly (``rests``): "positions" where the keep-mask alone keeps at least half,
    else "values"; "—" where the BS models are no better than chance."""
    v = retrain_verdicts(run, controls)
    share = controls_table(controls)["share surviving"].drop(
        index=["BS subsets", "random subsets", "full images", IMPUTED["random"]], errors="ignore").dropna()
    keep = share.get("keep-mask alone", math.nan)
    return {"close_C4_beats": v["beats random"].word, "close_C4_near": v["near full"].word,
            "close_C4_least": share.idxmin() if len(share) else MISSING,
            "close_C4_least_share": number(100 * share.min() if len(share) else math.nan, 0, suffix="%"),
            "close_C4_keep": number(100 * keep, 0, suffix="%"),
            "close_C4_rests": MISSING if math.isnan(keep) else "positions" if keep >= 0.5 else "values"}
