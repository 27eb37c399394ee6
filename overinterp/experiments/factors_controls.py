"""Claim C4's retraining controls (paper 4.2; chapter "Why it holds or fails here"): models trained and
tested on images that separate kept positions from their values (keep-mask alone, another class's values,
subsets for a random other class, ROAD-imputed subsets), beside chapter 5's models.
:mod:`overinterp.experiments.factors` re-exports every public name.

    controls = retrain_controls(run)
    controls_table(controls), retrain_verdicts(run, controls), position_values(run, controls)
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
from overinterp.paper.formatting import MISSING, number
from overinterp.paper.intervals import replicate_interval
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


def _chance(run) -> float:
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
    lift = df.loc[df.control == "BS subsets", ACC].mean() - _chance(run)
    df["share surviving"] = (df[ACC] - _chance(run)) / lift if lift > 0 else math.nan  # BS at chance: none to share
    return df


def controls_table(controls: pd.DataFrame) -> pd.DataFrame:
    """Per control: each replicate's test accuracy (%), mean, std, share surviving."""
    g = controls.groupby("control", sort=False)
    reps = controls.pivot(index="control", columns="replicate", values=ACC).loc[list(dict.fromkeys(controls.control))]
    reps.columns = [f"replicate {r} (%)" for r in reps.columns]
    return reps.assign(**{"mean (%)": g[ACC].mean(), "std": g[ACC].std().fillna(0.0),
                          "share surviving": g["share surviving"].mean()})


# ----------------------------------------------------------------------------- what the chapter reads from them

def _correct(controls: pd.DataFrame, control: str) -> list:
    """Per replicate of ``control``, 1/0 per test image."""
    return controls.loc[controls.control == control, "correct"].tolist()


def retrain_verdicts(run, controls: pd.DataFrame) -> dict[str, verdicts.Verdict]:
    """Chapter 5's two verdicts (4.2) on the controls' BS, random and full-image rows."""
    name = _arch_name(run)
    bs, rnd, full = (_correct(controls, c) for c in ("BS subsets", "random subsets", "full images"))
    return {"beats random": verdicts.retrain_beats_random({name: bs}, {name: rnd}),
            "near full": verdicts.retrain_near_full({name: bs}, {name: full}, chance=_chance(run))}


def _accuracy(correct: list, seed: int) -> str:
    """Mean test accuracy (%) and its 95% interval over replicates and images."""
    return replicate_interval({"": correct}, seed=seed).scaled(100).format(1)


def _lift_share(part: list, whole: list, chance: float, seed: int) -> tuple[str, str]:
    """(part - chance) / (whole - chance) in accuracy, and its 95% interval (images paired), in %."""
    def share(m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (100 * m["part"] - chance) / (100 * m["whole"] - chance)
    s = replicate_interval({"part": part, "whole": whole}, share, seed=seed)
    low, estimate, high = (number(100 * x, 0, suffix="%") for x in (s.low, s.estimate, s.high))
    return estimate, f"[{low}, {high}]"


def position_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """Keep-mask and BS models' accuracy (%) and the BS lift share the keep-mask keeps, 95% intervals."""
    keep, bs = _correct(controls, "keep-mask alone"), _correct(controls, "BS subsets")
    seed = run.seed if seed is None else seed
    share, interval = _lift_share(keep, bs, _chance(run), seed)
    return {"pos_keep_acc": _accuracy(keep, seed), "pos_bs_acc": _accuracy(bs, seed), "pos_chance": f"{_chance(run):g}",
            "pos_share": share, "pos_share_interval": interval, "pos_replicates": len(bs), "pos_images": len(bs[0])}


def imputation_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """Imputed BS and random models' accuracy (%) and the BS lift share imputed BS keeps, 95% intervals."""
    seed = run.seed if seed is None else seed
    bs, imp, rnd = (_correct(controls, c) for c in ("BS subsets", IMPUTED["bs"], IMPUTED["random"]))
    share, interval = _lift_share(imp, bs, _chance(run), seed)
    return {"road_bs_acc": _accuracy(imp, seed), "road_random_acc": _accuracy(rnd, seed), "road_share": share,
            "road_share_interval": interval, "road_noise": f"{ROAD_NOISE:g}"}


def imputed_correct(run, controls: pd.DataFrame) -> dict:
    """``imputed_verdict``'s arguments: "model" and 1/0 per test image of imputed "bs" and "random"."""
    return {"bs": _correct(controls, IMPUTED["bs"]), "random": _correct(controls, IMPUTED["random"]),
            "model": _arch_name(run)}


def c4_values(run, controls: pd.DataFrame) -> dict:
    """C4's closing glue (``close_C4_...``): chapter 5's verdicts, the control keeping least of the BS lift
    (imputed random is a baseline), ``keep``, ``rests`` ("positions" if keep >= half), ``reading``."""
    v = retrain_verdicts(run, controls)
    share = controls_table(controls)["share surviving"].drop(
        index=["BS subsets", "random subsets", "full images", IMPUTED["random"]], errors="ignore").dropna()
    keep = share.get("keep-mask alone", math.nan)
    least = share.idxmin() if len(share) else MISSING
    least_share = number(100 * share.min() if len(share) else math.nan, 0, suffix="%")
    rests = MISSING if math.isnan(keep) else "positions" if keep >= 0.5 else "values"
    if least == MISSING:
        reading = "The BS models are no better than chance here, so no control can say what their accuracy rests on."
    else:
        reading = (f"Of the controls, the models trained on the {least} keep the least of the BS models' accuracy "
                   f"above chance ({least_share}).")
        half = "at least half" if rests == "positions" else "less than half"
        rest = f"so here retraining on BS subsets rests mostly on the kept pixels' {rests}."
        reading += (" The keep-mask alone was not trained here." if rests == MISSING else
                    f" With no pixel value, that is {half} of it, {rest}" if least == "keep-mask alone" else
                    f" The keep-mask alone, with no pixel value, keeps {number(100 * keep, 0, suffix='%')} of it "
                    f"({half}), {rest}")
    return {"close_C4_beats": v["beats random"].word, "close_C4_near": v["near full"].word,
            "close_C4_least": least, "close_C4_least_share": least_share,
            "close_C4_keep": number(100 * keep, 0, suffix="%"), "close_C4_rests": rests, "close_C4_reading": reading}
