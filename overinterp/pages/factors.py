"""One factor at a time presented (:mod:`overinterp.experiments.factors`,
:mod:`overinterp.experiments.factors_controls`): the retraining controls' table and the closing argument's glued
values.
"""
import math

import numpy as np
import pandas as pd

from overinterp.experiments import runs
from overinterp.experiments.factors import (MEASURES, READ_AS, SPREAD_DIGITS, black_value, effects, other_models,
                                            smallest_sample)
from overinterp.experiments.factors_controls import (ACC, IMPUTED, ROAD_NOISE, accuracy_interval, chance_accuracy,
                                                     control_correct, lift_share, retrain_verdicts)
from overinterp.paper.formatting import MISSING, number
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.zoo import data


def prose_values(run) -> dict:
    """The execution for the prose: source model, tau, engine, samples (``n_exact`` 0: exact did not run)."""
    f, tau = run.profile.factors, run.profile.sis_threshold
    split = data.load(run.dataset, "test")
    n_exact = min(f.exact_images, f.images)
    black = black_value(run.dataset)
    return {"arch": ARCH_NAMES.get(f.arch, f.arch), "seed": run.seed, "tau": f"{tau:g}",
            "engine": run.profile.backselect.describe(), "n_images": f.images, "n_exact": n_exact,
            "n_common": min(n for n in (f.images, f.pruned_images or f.images, n_exact) if n),
            "n_pruned": min(f.pruned_images or f.images, f.images),
            "n_test": len(runs.selection(run, "test").load()[1]),
            "n_train": len(runs.selection(run, "train").load()[1]),
            "n_others": len(other_models(run)), "replicates": run.profile.replicates, "train_size": f.train_size,
            "epochs": ", ".join(map(str, f.epochs)), "widths": ", ".join(map(str, f.widths)),
            "width_epochs": f.width_epochs, "mean_pixel": ", ".join(number(m, 2) for m in split.mean),
            "black": ", ".join(number(b, 2) for b in black) if len(split.mean) > 1 else number(black, 2),
            "exact_images_text": ("on no image" if not n_exact else "on the first image" if n_exact == 1 else
                                  f"on the first {n_exact} images")}


def closing_values(run, sweeps: dict[str, pd.DataFrame], controls: pd.DataFrame) -> dict:
    """The closing argument's glue per claim (``close_<claim>_...``): verdict, widest-range factor and
    spread, factors' directions toward paper scale and the ``prediction``; C4 from ``c4_values``."""
    base = sweeps["method"]
    base = base[base.baseline].iloc[0]
    eff = effects(run, sweeps)
    out = {}
    for claim in MEASURES:
        rows = eff[eff.claim == claim]
        top = rows.iloc[0] if len(rows) else pd.Series(dtype=object)      # effects: the widest range first
        differ = rows[rows["read as"] != READ_AS["same"]]
        moving = set(differ.direction) - {"unchanged"}
        expect = (MISSING if differ.empty else "unchanged" if not moving else
                  moving.pop() if len(moving) == 1 else "split")
        digits = SPREAD_DIGITS[claim]
        out.update({f"close_{claim}_{k}": v for k, v in {
            "verdict": base[claim], "factor": top.get("factor", "none"),
            "lo": number(top.get("lowest"), 2), "lo_at": top.get("lowest at", MISSING),
            "hi": number(top.get("highest"), 2), "hi_at": top.get("highest at", MISSING),
            "differ": len(differ), "lower": int((differ.direction == "lower").sum()),
            "higher": int((differ.direction == "higher").sum()), "expect": expect,
            "spread": ("none, since no factor's sweep can be read" if top.empty else
                       f"{top['factor']}, from {number(top['lowest'], digits)} ({top['lowest at']}) to "
                       f"{number(top['highest'], digits)} ({top['highest at']})"),
            "prediction": "none, since no factor can be read" if expect == MISSING else expect}.items()})
    return {**out, **c4_values(run, controls)}


def controls_table(controls: pd.DataFrame) -> pd.DataFrame:
    """Per control: each replicate's test accuracy (%), mean, std, share surviving."""
    g = controls.groupby("control", sort=False)
    reps = controls.pivot(index="control", columns="replicate", values=ACC).loc[list(dict.fromkeys(controls.control))]
    reps.columns = [f"replicate {r} (%)" for r in reps.columns]
    return reps.assign(**{"mean (%)": g[ACC].mean(), "std": g[ACC].std().fillna(0.0),
                          "share surviving": g["share surviving"].mean()})


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


def _share(s) -> tuple[str, str]:
    """A lift share as the prose writes it: estimate and "[low, high]" in whole percent."""
    low, estimate, high = (number(100 * x, 0, suffix="%") for x in (s.low, s.estimate, s.high))
    return estimate, f"[{low}, {high}]"


def position_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """Keep-mask and BS models' accuracy (%) and the BS lift share the keep-mask keeps, 95% intervals."""
    keep, bs = control_correct(controls, "keep-mask alone"), control_correct(controls, "BS subsets")
    seed = run.seed if seed is None else seed
    chance = chance_accuracy(run)
    share, interval = _share(lift_share(keep, bs, chance, seed))
    return {"pos_keep_acc": accuracy_interval(keep, seed).format(1),
            "pos_bs_acc": accuracy_interval(bs, seed).format(1),
            "pos_chance": f"{chance:g}", "pos_share": share, "pos_share_interval": interval,
            "pos_replicates": len(bs), "pos_images": len(bs[0])}


def imputation_values(run, controls: pd.DataFrame, seed: int | None = None) -> dict:
    """Imputed BS and random models' accuracy (%) and the BS lift share imputed BS keeps, 95% intervals."""
    seed = run.seed if seed is None else seed
    bs, imp, rnd = (control_correct(controls, c) for c in ("BS subsets", IMPUTED["bs"], IMPUTED["random"]))
    share, interval = _share(lift_share(imp, bs, chance_accuracy(run), seed))
    return {"road_bs_acc": accuracy_interval(imp, seed).format(1),
            "road_random_acc": accuracy_interval(rnd, seed).format(1), "road_share": share,
            "road_share_interval": interval, "road_noise": f"{ROAD_NOISE:g}"}


def table(sweep: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """A sweep for display: a column per (setting, sample), a row per measure, "—" where undefined."""
    out = sweep.drop(columns=["factor", "value", "paper", "sample size"], errors="ignore").reset_index(drop=True)
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
        return number(v, digits) if isinstance(v, (float, np.floating)) else v
    return out.map(show).T


def method_tables(sweep: pd.DataFrame, digits: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`~overinterp.experiments.factors.method_sweep` as two :func:`table` s: the smallest sample, and larger ones
    (empty if none)."""
    same = smallest_sample(sweep)
    return table(sweep[same], digits), table(sweep[~same], digits) if (~same).any() else pd.DataFrame()
