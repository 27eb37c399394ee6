"""Mitigating overinterpretation: ensembles (paper 3.2, 4.6, Fig. 6, S2; mean of members' logits, one per
architecture and one of all), which the paper finds raise accuracy and SIS size, and input dropout (the paper
code's: each pixel kept with probability ``keep_prob``; at evaluation logits averaged over fixed masks, where
the paper code draws fresh ones, so the model is deterministic). SIS sizes (% of pixels) come from cached
backward selections of the SIS chapter's images; increases get ``replicate_interval``'s intervals.

    table = sis_table(run, taus, dropout=True)         # one row per (model, image, tau with an SIS)
    means = mean_sizes(table)                           # Fig. 6: mean and 95% interval per (model, tau)
    inc = ensemble_increase(table, members(run), tau)   # ensemble minus its members, same images
"""
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.sis import find_sis, random_subset, sis_size_pct
from overinterp.experiments import runs as runs_module
from overinterp.experiments.runs import model_config, trained_model
from overinterp.experiments.sis_accuracy import SIZE, sis_rows
from overinterp.paper.intervals import Interval, bootstrap, replicate_interval
from overinterp.paper.numbers import ARCH_NAMES, TABLE1
from overinterp.zoo import data
from overinterp.zoo.models import Ensemble
from overinterp.zoo.train import InputDropout, logits

#: Table 1's ensemble rows (5 ResNet18s, CIFAR-10): (train on, evaluate on) -> (test, CIFAR-10.1, CIFAR-10-C).
PAPER_ENSEMBLE = {k[1:]: v for k, v in TABLE1.items() if k[0] == "ensemble 5x resnet18"}


def model_name(arch: str, seed: int) -> str:
    """How a zoo model is named in the tables: 'ResNet20 (seed 0)'."""
    return f"{ARCH_NAMES.get(arch, arch)} (seed {seed})"


def members(run) -> dict[str, list[tuple[str, int]]]:
    """The ensembles (3.2): name -> (arch, seed) members; one per architecture, and one of all models."""
    p = run.profile
    seeds = [run.seed + r for r in range(p.replicates)]
    out = {f"ensemble {len(seeds)}× {ARCH_NAMES.get(a, a)}": [(a, s) for s in seeds]
           for a in p.archs if len(seeds) > 1}
    if len(p.archs) > 1:
        out[f"ensemble of all {len(p.archs) * len(seeds)}"] = [(a, s) for a in p.archs for s in seeds]
    return out


def ensemble_config(run, spec: Sequence[tuple[str, int]]) -> dict:
    """The artifact key of an ensemble: its members' model configs, in order."""
    return {"ensemble": [model_config(run.dataset, a, run.profile.name, s) for a, s in spec]}


def ensemble(run, spec: Sequence[tuple[str, int]]) -> Ensemble:
    """The ensemble of the zoo models ``spec`` (arch, seed), trained or loaded, in eval mode."""
    return Ensemble([trained_model(run.dataset, a, run.profile.name, seed=s, device=run.device, progress=False)
                     for a, s in spec]).eval()


def dropout_config(run, seed: int) -> dict:
    """The artifact key of the input-dropout model of seed ``seed``."""
    c = run.profile.mitigation
    return {**model_config(run.dataset, c.dropout_arch, run.profile.name, seed, keep_prob=c.keep_prob,
                           dropout_samples=c.dropout_samples), "eval_average": "logits over fixed masks"}


def dropout_count(run) -> int:
    """How many input-dropout models the profile trains (``dropout_replicates``, else replicates)."""
    return run.profile.mitigation.dropout_replicates or run.profile.replicates


def dropout_model(run, seed: int, progress: bool = True) -> nn.Module:
    """The input-dropout model of seed ``seed`` (trained, or loaded from the store)."""
    c = run.profile.mitigation
    return trained_model(run.dataset, c.dropout_arch, run.profile.name, seed=seed, device=run.device,
                         progress=progress, keep_prob=c.keep_prob, dropout_samples=c.dropout_samples)


def dropout_models(run, progress: bool = True) -> dict[str, nn.Module]:
    """Name -> input-dropout model, seeds run.seed, run.seed + 1, ..."""
    arch = run.profile.mitigation.dropout_arch
    return {f"{model_name(arch, run.seed + r)} input dropout": dropout_model(run, run.seed + r, progress)
            for r in range(dropout_count(run))}


def sis_table(run, taus: Sequence[float], sel=None, dropout: bool = False, progress: bool = True) -> pd.DataFrame:
    """One row per (model, image, tau) where confidence reaches tau, for every zoo model, ensemble and (with
    ``dropout``) input-dropout variant on ``sel`` (default: SIS chapter's images); columns model, kind, arch,
    image, tau, correct, confidence, :data:`SIZE`."""
    p = run.profile
    sel = sel or runs_module.confident_selection(run, p.sis_threshold)
    labels, frames = sel.load()[1], []

    def add(name: str, kind: str, arch: str, model=None, cfg=None, res=None):
        if res is None:
            res = runs_module.backselect_model(run, model, cfg, sel, progress=progress)
        frames.append(sis_rows(res, labels, taus).assign(model=name, kind=kind, arch=arch))
    for a in p.archs:
        for r in range(p.replicates):
            add(model_name(a, run.seed + r), "single", ARCH_NAMES.get(a, a),
                res=runs_module.backselect_set(run, a, sel, run.seed + r, progress=progress))
    for name, spec in members(run).items():
        arch = ARCH_NAMES.get(spec[0][0], spec[0][0]) if len({a for a, _ in spec}) == 1 else "all"
        add(name, "ensemble", arch, ensemble(run, spec), ensemble_config(run, spec))
    if dropout:
        c = p.mitigation
        arch = ARCH_NAMES.get(c.dropout_arch, c.dropout_arch)
        for r, (name, m) in enumerate(dropout_models(run, progress).items()):
            cfg = dropout_config(run, run.seed + r)
            add(name, "input dropout", arch, m, cfg)
            add(f"{name}, no masks", "input dropout, no masks", arch, m.model,
                {**cfg, "eval_average": "none: the network without masks"})
        for r in range(dropout_count(run)):     # the standard replicates of the same seeds, through the same masks
            seed = run.seed + r
            std = trained_model(run.dataset, c.dropout_arch, p.name, seed=seed, device=run.device, progress=False)
            add(f"{model_name(c.dropout_arch, seed)} through masks", "standard through masks", arch,
                InputDropout(std, c.keep_prob, c.dropout_samples).eval(),
                {**model_config(run.dataset, c.dropout_arch, p.name, seed), "eval_average":
                 f"logits over the input-dropout models' {c.dropout_samples} fixed masks, keep {c.keep_prob:g}"})
    out = pd.concat(frames, ignore_index=True)
    first = ["model", "kind", "arch"]
    return out[first + [c for c in out.columns if c not in first]]


def _mean_interval(x, n_resamples: int, confidence_level: float, seed: int) -> tuple[float, float]:
    """Bootstrap interval of the mean of ``x``; (NaN, NaN) for fewer than 2 values."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    return bootstrap((x,), np.mean, n_resamples, confidence_level, seed)


def mean_sizes(table: pd.DataFrame, n_resamples: int = 2000, confidence_level: float = 0.95,
               seed: int = 0) -> pd.DataFrame:
    """Fig. 6: per (model, tau) images, mean SIS size (%) and bootstrap interval (low, high)."""
    rows = []
    for (model, kind, arch, tau), g in table.groupby(["model", "kind", "arch", "tau"], sort=False):
        low, high = _mean_interval(g[SIZE].to_numpy(), n_resamples, confidence_level, seed)
        rows.append({"model": model, "kind": kind, "arch": arch, "tau": tau, "images": len(g),
                     "mean": g[SIZE].mean(), "low": low, "high": high})
    return pd.DataFrame(rows)


def paired_increase(table: pd.DataFrame, treated: Sequence[str], control: Sequence[str], tau: float,
                    n_resamples: int = 2000, confidence_level: float = 0.95, seed: int = 0) -> dict:
    """Treated minus control mean SIS size (%) on images where all have an SIS at ``tau``, with a 95%
    interval (models paired by index, images shared); "increase (points)" NaN without images."""
    t = table[np.isclose(table["tau"], tau)].pivot_table(index="image", columns="model", values=SIZE)
    names = list(treated) + list(control)
    t = t.reindex(columns=names).dropna()
    nan = float("nan")
    out = {"tau": float(tau), "images": len(t), "treated models": len(treated), "control models": len(control)}
    if not len(t):
        return {**out, "treated mean SIS (%)": nan, "control mean SIS (%)": nan, "increase (points)": nan,
                "low": nan, "high": nan}
    groups = {"t": [t[m].to_numpy() for m in treated], "c": [t[m].to_numpy() for m in control]}
    iv = replicate_interval(groups, lambda m: m["t"] - m["c"], paired_images=True, n_resamples=n_resamples,
                          confidence_level=confidence_level, seed=seed)
    if len(t) < 2:
        iv = Interval(iv.estimate, nan, nan)
    return {**out, "treated mean SIS (%)": float(np.mean([g.mean() for g in groups["t"]])),
            "control mean SIS (%)": float(np.mean([g.mean() for g in groups["c"]])),
            "increase (points)": iv.estimate, "low": iv.low, "high": iv.high}


def ensemble_increase(table: pd.DataFrame, specs: Mapping[str, Sequence[tuple[str, int]]], taus: Sequence[float],
                      **kw) -> pd.DataFrame:
    """:func:`paired_increase` of each ensemble over its members (Fig. S2), rows (ensemble, tau)."""
    rows = [{"ensemble": name, **paired_increase(table, [name], [model_name(a, s) for a, s in spec], tau, **kw)}
            for name, spec in specs.items() for tau in taus]
    return pd.DataFrame(rows).set_index(["ensemble", "tau"])


#: input dropout's like-for-like comparisons (treated kind, control kind): averaged over fixed masks it is in
#: effect an ensemble (which 4.6 shows enlarges SIS), so compare through the same masks, or both without
DROPOUT_COMPARISONS = {"both through the fixed masks": ("input dropout", "standard through masks"),
                       "both without masks": ("input dropout, no masks", "single")}
#: the name of the standard model of a treated model's seed (:func:`sis_table`'s names)
CONTROL_OF = {"input dropout": lambda n: n.replace(" input dropout", " through masks"),
              "input dropout, no masks": lambda n: n.replace(" input dropout, no masks", "")}


def dropout_increase(table: pd.DataFrame, taus: Sequence[float], **kw) -> pd.DataFrame:
    """:func:`paired_increase` of input-dropout over same-seed standard models per
    :data:`DROPOUT_COMPARISONS` and tau."""
    drop = table.loc[table["kind"] == "input dropout"]
    if drop.empty:
        raise ValueError("dropout_increase needs the input-dropout models' rows: sis_table(..., dropout=True)")
    arch, rows = drop["arch"].iloc[0], []
    names = set(table["model"])
    for how, (treated, control) in DROPOUT_COMPARISONS.items():
        pairs = [(t, CONTROL_OF[treated](t)) for t in table.loc[table["kind"] == treated, "model"].unique()]
        pairs = [(t, c) for t, c in pairs if c in names]                 # the standard model of the same seed
        t, c = [t for t, _ in pairs], [c for _, c in pairs]
        rows += [{"models": f"{arch} input dropout vs standard, {how}", **paired_increase(table, t, c, tau, **kw)}
                 for tau in taus]
    return pd.DataFrame(rows).set_index(["models", "tau"])


def accuracy_pct(z: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy (%) of the outputs ``z`` (N, K) against ``labels`` (N,)."""
    return 100 * (z.argmax(1) == labels).double().mean().item()


def table1_rows(run, specs: Mapping[str, Sequence[tuple[str, int]]], frac: float = 0.05) -> pd.DataFrame:
    """Table 1's ensemble rows: accuracy (%) on full images and random ``frac`` subsets of each set."""
    p, rows = run.profile, {}
    for set_name, (X, Y) in runs_module.eval_sets(run).items():
        Xr = random_subset(X, frac, seed=runs_module.subset_seed(run.dataset, set_name), block=p.backselect.block,
                           mask_value=p.backselect.mask_value)[0]
        out = {}  # (arch, seed) -> (logits on X, logits on Xr)
        for a, s in dict.fromkeys(m for spec in specs.values() for m in spec):
            model = trained_model(run.dataset, a, p.name, seed=s, device=run.device, progress=False)
            out[a, s] = logits(model, X, device=run.device), logits(model, Xr, device=run.device)
        for name, spec in specs.items():
            for k, kind in enumerate(("full", "random")):
                z = torch.stack([out[m][k] for m in spec]).mean(0)   # the Ensemble's output
                rows.setdefault((name, kind), {})[set_name] = accuracy_pct(z, Y)
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["ensemble", "evaluated on"])


def accuracy_gain(ensemble_logits: torch.Tensor, member_logits: Sequence[torch.Tensor], labels: torch.Tensor,
                  n_resamples: int = 2000, confidence_level: float = 0.95, seed: int = 0) -> dict:
    """Ensemble accuracy (%), members' mean, gain (points) and 95% interval over the members."""
    ens = (ensemble_logits.argmax(1) == labels).double().numpy()
    mem = [(m.argmax(1) == labels).double().numpy() for m in member_logits]
    iv = replicate_interval({"ens": [ens], "mem": mem}, lambda m: 100 * (m["ens"] - m["mem"]), paired_images=True,
                          n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
                          bounds=(-100.0, 100.0))
    return {"images": len(labels), "members": len(mem), "ensemble accuracy (%)": 100 * ens.mean(),
            "members' mean accuracy (%)": 100 * np.mean([m.mean() for m in mem]), "gain (points)": iv.estimate,
            "low": iv.low, "high": iv.high}


# ----------------------------------------------------------------------------- the chapters' samples, figures' inputs and verdicts

def _accuracy_images(run) -> tuple:
    """(test split, images, labels): the first ``mitigation.accuracy_images`` of the seeded test set."""
    split = data.load(run.dataset, "test")
    return split, *data.take(split, run.profile.mitigation.accuracy_images, seed=0)


def zoo_logits(run) -> tuple:
    """(test split, labels, {model name: logits}) of every zoo model on ``accuracy_images`` test images."""
    split, Xa, Ya = _accuracy_images(run)
    return split, Ya, {model_name(a, run.seed + r): logits(m, Xa, device=run.device)
                       for a, ms in runs_module.zoo(run).items() for r, m in enumerate(ms)}


def ensemble_gains(out: Mapping[str, torch.Tensor], specs: Mapping[str, Sequence[tuple[str, int]]],
                   labels: torch.Tensor, n_resamples: int, seed: int) -> pd.DataFrame:
    """:func:`accuracy_gain` of every ensemble (mean of its members' logits), one row each."""
    return pd.DataFrame({name: accuracy_gain(torch.stack([out[model_name(*m)] for m in spec]).mean(0),
                                             [out[model_name(*m)] for m in spec], labels, n_resamples, seed=seed)
                         for name, spec in specs.items()}).T


def s2_gallery(run, specs: Mapping[str, Sequence[tuple[str, int]]], tau: float, n_show: int, split) -> tuple:
    """Figure S2: (name, images, rows, titles) of the ResNet18 ensemble (else the first) and its members on
    the first ``n_show`` SIS-chapter images where all have an SIS at ``tau``; ``rows``: per model ("ensemble"
    for the ensemble) the SIS sizes (% of the pixels) and keep masks."""
    shown_name = next((n for n in specs if "ResNet18" in n), next(iter(specs)))
    sel = runs_module.confident_selection(run, run.profile.sis_threshold)
    X, Y = sel.load()
    names = [shown_name] + [model_name(*m) for m in specs[shown_name]]
    results = {shown_name: runs_module.backselect_model(run, ensemble(run, specs[shown_name]),
                                            ensemble_config(run, specs[shown_name]), sel, progress=False)}
    results.update({model_name(a, s): runs_module.backselect_set(run, a, sel, s, progress=False) for a, s in specs[shown_name]})
    masks = {n: find_sis(r, tau) for n, r in results.items()}
    both = torch.stack([m.size >= 0 for m in masks.values()]).all(0).nonzero().flatten()[:n_show]
    rows = {("ensemble" if n == shown_name else n): (sis_size_pct(results[n], tau, masks[n])[both.numpy()],
                                                     masks[n].mask[both]) for n in names}
    return shown_name, X[both], rows, [split.classes[int(y)] for y in Y[both]]


def dropout_logits(run) -> tuple:
    """(labels, standard logits, {name: input-dropout logits}, input-dropout models) on test images."""
    arch, (_, Xa, Ya) = run.profile.mitigation.dropout_arch, _accuracy_images(run)
    z_std = [logits(m, Xa, device=run.device) for m in runs_module.zoo(run, archs=[arch])[arch]]
    dropout = dropout_models(run, progress=False)
    return Ya, z_std, {n: logits(m, Xa, device=run.device) for n, m in dropout.items()}, dropout


def dropout_accuracy(z_std: Sequence[torch.Tensor], z_drop: Mapping[str, torch.Tensor], labels: torch.Tensor,
                     arch: str) -> pd.DataFrame:
    """Test accuracy (%) mean and std: standard, input-dropout, standard ensemble."""
    groups = {f"{arch}, standard training ({len(z_std)} models)": [accuracy_pct(z, labels) for z in z_std],
              f"{arch}, input dropout ({len(z_drop)} models)": [accuracy_pct(z, labels) for z in z_drop.values()],
              f"ensemble of the {len(z_std)} standard {arch}s": [accuracy_pct(torch.stack(z_std).mean(0), labels)]}
    return pd.DataFrame({g: runs_module.mean_std(pd.DataFrame({"test accuracy (%)": v})) for g, v in groups.items()}).T


def dropout_legend(run, z_std: Sequence[torch.Tensor], z_drop: Mapping[str, torch.Tensor], labels: torch.Tensor,
                   table: pd.DataFrame) -> dict:
    """Model -> test accuracy (%) for the SIS figure's legend."""
    arch = run.profile.mitigation.dropout_arch
    acc = {**{model_name(arch, run.seed + r): accuracy_pct(z, labels) for r, z in enumerate(z_std)},
           **{n: accuracy_pct(z, labels) for n, z in z_drop.items()}}
    acc.update({n: accuracy_pct(torch.stack(z_std).mean(0), labels)
                for n in table.loc[table["kind"] == "ensemble", "model"].unique()})
    return acc
