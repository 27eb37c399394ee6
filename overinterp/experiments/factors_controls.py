"""Claim C4's retraining controls (paper 4.2; chapter "Why it holds or fails here"): models trained and
tested on images that separate kept positions from their values (keep-mask alone, another class's values,
subsets for a random other class, ROAD-imputed subsets), beside chapter 5's models; their table and glued
values are :mod:`overinterp.pages.factors`'.

    controls = retrain_controls(run)
    retrain_verdicts(run, controls), imputed_correct(run, controls)
    accuracy_interval(control_correct(controls, "BS subsets"), seed), lift_share(keep, bs, chance, seed)
"""
import math

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import apply_keep
from overinterp.engine.sis import pixel_subset
from overinterp.experiments import runs, subsets
from overinterp.methods.imputation import noisy_linear_impute
from overinterp.paper import verdicts
from overinterp.paper.intervals import Interval, replicate_interval
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo import data

CONTROL_SEED = 0     # the other-class pairing and the random target classes of the retraining controls
ACC = "test accuracy (%)"
#: the retraining controls whose removed pixels are filled by ROAD's noisy linear imputation (Rong et al. 2022)
IMPUTED = {"bs": "BS subsets, imputed (ROAD)", "random": "random subsets, imputed (ROAD)"}
ROAD_NOISE = 0.01   # ROAD's default noise, in normalised pixel units


def source_model(run) -> nn.Module:
    """Replicate ``run.seed`` of ``factors.arch`` from the zoo: the model of chapters 3-5."""
    return runs.trained_model(run.dataset, run.profile.factors.arch, run.profile.name, seed=run.seed,
                              device=run.device, progress=False)


def source_config(run, **changes) -> dict:
    """The artifact key of :func:`source_model`, or of its variant with ``changes`` to its training."""
    return runs.model_config(run.dataset, run.profile.factors.arch, run.profile.name, run.seed, **changes)


def _arch_name(run) -> str:
    return ARCH_NAMES.get(run.profile.factors.arch, run.profile.factors.arch)


def chance_accuracy(run) -> float:
    """Accuracy (%) of a uniform guess."""
    return 100 / len(data.CLASSES[run.dataset])


# ----------------------------------------------------------------------------- the controls' images

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
    """Kept positions (keep (N, H, W)) with the ``partner`` image's values, the rest ``mask_value``."""
    return apply_keep(images[partner], keep, mask_value)


def random_other_class(pred: torch.Tensor, num_classes: int, seed: int = CONTROL_SEED) -> torch.Tensor:
    """(N,) a uniformly drawn class other than ``pred`` for each image (seeded)."""
    shift = torch.randint(1, num_classes, pred.shape, generator=torch.Generator().manual_seed(seed))
    return (pred.cpu() + shift) % num_classes


def random_target_subsets(run, set_name: str, frac: float = SUBSET_FRAC) -> tuple:
    """(images, keep, target) of subsets backward-selected for a random non-predicted class."""
    arch, sel = run.profile.factors.arch, runs.selection(run, set_name)
    X, _ = sel.load()
    pred = runs.backselect_set(run, arch, sel, progress=False).pred
    target = random_other_class(pred, len(data.CLASSES[run.dataset]))
    res = runs.backselect_model(run, source_model(run), source_config(run), sel, run.profile.engine(set_name),
                                target=target, progress=False)
    return (*pixel_subset(res, X, frac), res.pred)


# ----------------------------------------------------------------------------- the retrained models

def retrain_controls(run, frac: float = SUBSET_FRAC) -> pd.DataFrame:
    """C4's controls: models trained and tested on each transformation (chapter 5's reused). Per
    (control, replicate): accuracy (%), "correct" (1/0 per image), share surviving of the BS lift above chance."""
    arch = run.profile.factors.arch
    subs = subsets.subsets(run, arch, frac, train=True)
    tr, te = subs["train"], subs["test"]
    (Xtr, ytr), (Xte, yte) = runs.selection(run, "train").load(), runs.selection(run, "test").load()
    mv = runs.backselect_set(run, arch, runs.selection(run, "train"), progress=False).mask_value
    C = Xtr.shape[1]
    made = {label: (subsets.retrain_on_subsets(run, arch, kind, False, frac, subs), te[kind][0])
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
        made[label] = (subsets.retrain(run, arch, x_train, ytr, name, augment=False, eval_data=(x_test, yte)),
                       x_test)
    rows = [{"control": label, "replicate": r, ACC: 100 * float(c.mean()), "correct": c}
            for label, (models, x_test) in made.items() for r, m in enumerate(models)
            for c in [runs.correct(m, x_test, yte, run.device)]]
    df = pd.DataFrame(rows)
    lift = df.loc[df.control == "BS subsets", ACC].mean() - chance_accuracy(run)
    df["share surviving"] = (df[ACC] - chance_accuracy(run)) / lift if lift > 0 else math.nan  # BS at chance: none to share
    return df


# ----------------------------------------------------------------------------- what the chapter reads from them

def control_correct(controls: pd.DataFrame, control: str) -> list:
    """Per replicate of ``control``, 1/0 per test image."""
    return controls.loc[controls.control == control, "correct"].tolist()


def retrain_verdicts(run, controls: pd.DataFrame) -> dict[str, verdicts.Verdict]:
    """Chapter 5's two verdicts (4.2) on the controls' BS, random and full-image rows."""
    name = _arch_name(run)
    bs, rnd, full = (control_correct(controls, c) for c in ("BS subsets", "random subsets", "full images"))
    return {"beats random": verdicts.retrain_beats_random({name: bs}, {name: rnd}),
            "near full": verdicts.retrain_near_full({name: bs}, {name: full}, chance=chance_accuracy(run))}


def imputed_correct(run, controls: pd.DataFrame) -> dict:
    """``imputed_verdict``'s arguments: "model" and 1/0 per test image of imputed "bs" and "random"."""
    return {"bs": control_correct(controls, IMPUTED["bs"]), "random": control_correct(controls, IMPUTED["random"]),
            "model": _arch_name(run)}


def accuracy_interval(correct: list, seed: int) -> Interval:
    """Mean test accuracy (%) and its 95% interval over replicates and images."""
    return replicate_interval({"": correct}, seed=seed).scaled(100)


def lift_share(part: list, whole: list, chance: float, seed: int) -> Interval:
    """The fraction of ``whole``'s accuracy above ``chance`` (in %) that ``part`` keeps, (part - chance) /
    (whole - chance) (1: all of it), and its 95% interval over replicates and images (paired: both are scored
    on the same images)."""
    def share(m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (100 * m["part"] - chance) / (100 * m["whole"] - chance)
    return replicate_interval({"part": part, "whole": whole}, share, seed=seed)
