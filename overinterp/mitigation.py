"""Mitigating overinterpretation: ensembles (paper 4.6, Fig. 6, S2) and input dropout (the paper code's).

Ensembles (paper 3.2) average their members' logits: one *homogeneous* ensemble per
architecture of the zoo (its replicates) and one *heterogeneous* ensemble of every zoo model.
The paper finds that ensembling raises accuracy and also the size of the sufficient input
subsets (SIS; Fig. 6: mean SIS size against the threshold tau), and that an ensemble's SIS is
larger than its members' SIS of the same image (Fig. S2). *Input dropout* trains a model on
images whose pixels are each kept with probability ``keep_prob`` (the rest set to the mean
pixel); at evaluation :class:`overinterp.train.InputDropout` averages the probabilities over a
fixed set of masks, so the model is a deterministic function of the image.

SIS sizes come from one backward selection per model of the SIS chapter's confident test
images (:func:`overinterp.analysis.confident_selection`), with FindSIS at every tau: the zoo
models' runs are those of the SIS chapter (replicate ``run.seed``) or made the same way; an
ensemble's run is keyed by its members' configs, a dropout model's by its training config,
both cached through :func:`overinterp.runner.run_backselect`. Sizes are % of the pixels.

    table = sis_table(run, taus, dropout=True)         # one row per (model, image, tau with an SIS)
    means = mean_sizes(table)                           # Fig. 6: mean and 95% interval per (model, tau)
    inc = ensemble_increase(table, members(run), tau)   # ensemble minus its members, same images
    ensembles_increase_sis(inc)                         # the verdict

Intervals are seeded percentile bootstraps over images (numpy).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
import torch.nn as nn

from .models import Ensemble
from .paper import ARCH_NAMES, TABLE1, fmt
from .sis_accuracy import SIZE, sis_rows
from .verdicts import Verdict

__all__ = ["PAPER_ENSEMBLE", "model_name", "members", "ensemble_config", "ensemble", "dropout_config", "dropout_models",
           "backselect_model", "sis_table", "bootstrap_mean", "mean_sizes", "paired_increase", "ensemble_increase",
           "dropout_increase", "table1_rows", "logits", "accuracy_gain", "sis_figure", "ensembles_increase_sis",
           "ensembles_increase_accuracy", "dropout_increases_sis"]

#: Table 1's ensemble rows (5 ResNet18s, CIFAR-10): (train on, evaluate on) -> (test, CIFAR-10.1, CIFAR-10-C).
PAPER_ENSEMBLE = {k[1:]: v for k, v in TABLE1.items() if k[0] == "ensemble 5x resnet18"}


def model_name(arch: str, seed: int) -> str:
    """How a zoo model is named in the tables: 'ResNet20 (seed 0)'."""
    return f"{ARCH_NAMES.get(arch, arch)} (seed {seed})"


def members(run) -> dict[str, list[tuple[str, int]]]:
    """The ensembles of paper 3.2 over ``run``'s zoo: name -> member (arch, seed) pairs; one
    homogeneous ensemble per architecture (its replicates) and, with more than one architecture,
    one heterogeneous ensemble of every model (as :func:`overinterp.analysis.ensembles`)."""
    p = run.profile
    seeds = [run.seed + r for r in range(p.replicates)]
    out = {f"ensemble {len(seeds)}× {ARCH_NAMES.get(a, a)}": [(a, s) for s in seeds]
           for a in p.archs if len(seeds) > 1}
    if len(p.archs) > 1:
        out[f"ensemble of all {len(p.archs) * len(seeds)}"] = [(a, s) for a in p.archs for s in seeds]
    return out


def ensemble_config(run, spec: Sequence[tuple[str, int]]) -> dict:
    """The artifact key of an ensemble: its members' model configs, in order."""
    from .train import model_config
    return {"ensemble": [model_config(run.dataset, a, run.profile.name, s) for a, s in spec]}


def ensemble(run, spec: Sequence[tuple[str, int]]) -> Ensemble:
    """The ensemble of the zoo models ``spec`` (arch, seed), trained or loaded, in eval mode."""
    from .train import trained_model
    return Ensemble([trained_model(run.dataset, a, run.profile.name, seed=s, device=run.device, progress=False)
                     for a, s in spec]).eval()


def dropout_config(run, seed: int) -> dict:
    """The artifact key of the input-dropout model of seed ``seed`` (the profile's recipe with
    ``keep_prob`` and ``dropout_samples`` of :class:`overinterp.profiles.MitigationConfig`)."""
    from .train import model_config
    c = run.profile.mitigation
    return model_config(run.dataset, c.dropout_arch, run.profile.name, seed, keep_prob=c.keep_prob,
                        dropout_samples=c.dropout_samples)


def dropout_models(run, progress: bool = True) -> dict[str, nn.Module]:
    """The models trained with input dropout: name -> model, seeds run.seed, run.seed + 1, ..."""
    from .train import trained_model
    c = run.profile.mitigation
    out = {}
    for r in range(c.dropout_replicates or run.profile.replicates):
        out[f"{model_name(c.dropout_arch, run.seed + r)} input dropout"] = trained_model(
            run.dataset, c.dropout_arch, run.profile.name, seed=run.seed + r, device=run.device, progress=progress,
            keep_prob=c.keep_prob, dropout_samples=c.dropout_samples)
    return out


def backselect_model(run, model: nn.Module, config: dict, sel, progress: bool = True):
    """Backward selection of the images of ``sel`` by ``model`` (artifact key ``config``) with the
    profile's engine, cached in the artifact store (:func:`overinterp.runner.run_backselect`)."""
    from .runner import run_backselect
    p = run.profile
    return run_backselect(model, sel.load()[0], model_config=config, data_config=sel.key(),
                          config=p.engine(sel.set), shard_size=p.shard_size, device=run.device, progress=progress)


def sis_table(run, taus: Sequence[float], sel=None, dropout: bool = False, progress: bool = True) -> pd.DataFrame:
    """One row per (model, image, tau) where the model's confidence on the image reaches tau
    (:func:`overinterp.sis_accuracy.sis_rows`): every zoo model, every ensemble of :func:`members`
    and, with ``dropout``, every input-dropout model, on the images of ``sel`` (default: the SIS
    chapter's, :func:`overinterp.analysis.confident_selection` at the profile's threshold).
    Columns model, kind ("single" | "ensemble" | "input dropout"), arch (an ensemble's: its
    members' architecture or "all"), then image, tau, correct, confidence and :data:`SIZE`."""
    from . import analysis as A
    p = run.profile
    sel = sel or A.confident_selection(run, p.sis_threshold)
    labels = sel.load()[1]
    runs = []  # (model, kind, arch, result)
    for a in p.archs:
        for r in range(p.replicates):
            res = A.backselect_set(run, a, sel, run.seed + r, progress=progress)
            runs.append((model_name(a, run.seed + r), "single", ARCH_NAMES.get(a, a), res))
    for name, spec in members(run).items():
        archs = {a for a, _ in spec}
        arch = ARCH_NAMES.get(spec[0][0], spec[0][0]) if len(archs) == 1 else "all"
        runs.append((name, "ensemble", arch, backselect_model(run, ensemble(run, spec), ensemble_config(run, spec),
                                                              sel, progress)))
    if dropout:
        c = p.mitigation
        for r, (name, m) in enumerate(dropout_models(run, progress).items()):
            res = backselect_model(run, m, dropout_config(run, run.seed + r), sel, progress)
            runs.append((name, "input dropout", ARCH_NAMES.get(c.dropout_arch, c.dropout_arch), res))
    frames = [sis_rows(res, labels, taus).assign(model=name, kind=kind, arch=arch) for name, kind, arch, res in runs]
    out = pd.concat(frames, ignore_index=True)
    first = ["model", "kind", "arch"]
    return out[first + [c for c in out.columns if c not in first]]


def bootstrap_mean(x: np.ndarray, n_resamples: int = 2000, confidence_level: float = 0.95,
                   seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (``n_resamples`` resamples with
    replacement from a generator seeded with ``seed``; quantiles without interpolation);
    (NaN, NaN) for fewer than 2 values."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    stat = x[rng.integers(0, len(x), (n_resamples, len(x)))].mean(1)
    a = (1 - confidence_level) / 2
    low, high = np.quantile(stat, [a, 1 - a], method="inverted_cdf")
    return float(low), float(high)


def mean_sizes(table: pd.DataFrame, n_resamples: int = 2000, confidence_level: float = 0.95,
               seed: int = 0) -> pd.DataFrame:
    """Fig. 6: per (model, tau), the images with an SIS, their mean SIS size (%) and its
    bootstrap interval (low, high); columns model, kind, arch, tau, images, mean, low, high."""
    rows = []
    for (model, kind, arch, tau), g in table.groupby(["model", "kind", "arch", "tau"], sort=False):
        low, high = bootstrap_mean(g[SIZE].to_numpy(), n_resamples, confidence_level, seed)
        rows.append({"model": model, "kind": kind, "arch": arch, "tau": tau, "images": len(g),
                     "mean": g[SIZE].mean(), "low": low, "high": high})
    return pd.DataFrame(rows)


def paired_increase(table: pd.DataFrame, treated: Sequence[str], control: Sequence[str], tau: float,
                    n_resamples: int = 2000, confidence_level: float = 0.95, seed: int = 0) -> dict:
    """On the images where every model of ``treated`` and of ``control`` has an SIS at ``tau``:
    per image, the mean SIS size (%) of the treated models minus that of the controls; returns
    images, the two means, their difference (the increase, points of % of the image) and its
    bootstrap interval (low, high). The difference is NaN without images."""
    t = table[np.isclose(table["tau"], tau)].pivot_table(index="image", columns="model", values=SIZE)
    names = list(treated) + list(control)
    t = t.reindex(columns=names).dropna()
    a, b = t[list(treated)].mean(axis=1).to_numpy(), t[list(control)].mean(axis=1).to_numpy()
    low, high = bootstrap_mean(a - b, n_resamples, confidence_level, seed)
    nan = float("nan")
    return {"tau": float(tau), "images": len(t), "treated mean SIS (%)": a.mean() if len(t) else nan,
            "control mean SIS (%)": b.mean() if len(t) else nan,
            "increase (points)": (a - b).mean() if len(t) else nan, "low": low, "high": high}


def ensemble_increase(table: pd.DataFrame, specs: Mapping[str, Sequence[tuple[str, int]]], taus: Sequence[float],
                      **kw) -> pd.DataFrame:
    """:func:`paired_increase` of each ensemble over its own members (Fig. S2), per tau: rows
    (ensemble, tau)."""
    rows = []
    for name, spec in specs.items():
        for tau in taus:
            rows.append({"ensemble": name, **paired_increase(table, [name], [model_name(a, s) for a, s in spec], tau, **kw)})
    return pd.DataFrame(rows).set_index(["ensemble", "tau"])


def dropout_increase(table: pd.DataFrame, taus: Sequence[float], **kw) -> pd.DataFrame:
    """:func:`paired_increase` of the input-dropout models (pooled) over the zoo's models of the
    same architecture (pooled), per tau."""
    drop = table.loc[table["kind"] == "input dropout"]
    arch = drop["arch"].iloc[0]
    treated = list(drop["model"].unique())
    control = list(table.loc[(table["kind"] == "single") & (table["arch"] == arch), "model"].unique())
    rows = [{"models": f"{arch} input dropout vs standard", **paired_increase(table, treated, control, t, **kw)}
            for t in taus]
    return pd.DataFrame(rows).set_index(["models", "tau"])


def table1_rows(run, specs: Mapping[str, Sequence[tuple[str, int]]], frac: float = 0.05) -> pd.DataFrame:
    """Table 1's ensemble rows: accuracy (%) of each ensemble on the full images and on random
    ``frac`` pixel subsets (the seeded subsets of :func:`overinterp.analysis.subsets`) of each
    evaluation set (:func:`overinterp.analysis.eval_sets`); rows (ensemble, "full" | "random")."""
    from . import analysis as A
    from .sis import random_subset
    from .train import trained_model
    p, rows = run.profile, {}
    for set_name, (X, Y) in A.eval_sets(run).items():
        Xr = random_subset(X, frac, seed=A.SUBSET_SEED, block=p.backselect.block, mask_value=p.backselect.mask_value)[0]
        out = {}  # (arch, seed) -> (logits on X, logits on Xr)
        for a, s in dict.fromkeys(m for spec in specs.values() for m in spec):
            model = trained_model(run.dataset, a, p.name, seed=s, device=run.device, progress=False)
            out[a, s] = logits(model, X, run.device), logits(model, Xr, run.device)
        for name, spec in specs.items():
            for k, kind in enumerate(("full", "random")):
                z = torch.stack([out[m][k] for m in spec]).mean(0)   # the Ensemble's output
                rows.setdefault((name, kind), {})[set_name] = 100 * (z.argmax(1) == Y).double().mean().item()
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["ensemble", "evaluated on"])


@torch.inference_mode()
def logits(model: nn.Module, images: torch.Tensor, device="cpu", batch_size: int = 1000) -> torch.Tensor:
    """(N, K) float32 outputs of ``model`` in eval mode, on the CPU."""
    model.to(device).eval()
    return torch.cat([model(images[i:i + batch_size].to(device)).float().cpu()
                      for i in range(0, len(images), batch_size)])


def accuracy_gain(ensemble_logits: torch.Tensor, member_logits: Sequence[torch.Tensor], labels: torch.Tensor,
                  n_resamples: int = 2000, confidence_level: float = 0.95, seed: int = 0) -> dict:
    """Accuracy (%) of an ensemble and the mean accuracy of its members on the same images, the
    gain (points) and its paired bootstrap interval over images (per image: the ensemble's
    correctness minus the share of members correct)."""
    ens = (ensemble_logits.argmax(1) == labels).double().numpy()
    mem = torch.stack([(m.argmax(1) == labels).double() for m in member_logits]).mean(0).numpy()
    low, high = bootstrap_mean(100 * (ens - mem), n_resamples, confidence_level, seed)
    return {"images": len(labels), "ensemble accuracy (%)": 100 * ens.mean(), "members' mean accuracy (%)":
            100 * mem.mean(), "gain (points)": 100 * (ens - mem).mean(), "low": low, "high": high}


_STYLE = {"single": dict(ls="--", lw=1.0, marker="o", ms=2), "ensemble": dict(ls="-", lw=2.2, marker="s", ms=3),
          "input dropout": dict(ls=":", lw=1.8, marker="^", ms=3)}


def sis_figure(means: pd.DataFrame, accuracy: Mapping[str, float] | None = None, ax=None):
    """Fig. 6: mean SIS size (% of the pixels) against tau, one line per model with its 95%
    interval shaded; colour by architecture (black: the ensemble of all), dashed single models,
    thick ensembles, dotted input dropout; ``accuracy`` (model -> test accuracy, %) goes in the
    legend. Thresholds at equal spacing (0.95 and 0.99 would crowd)."""
    ax = ax or plt.subplots(figsize=(7.5, 4.2), layout="constrained")[1]
    taus = sorted(means["tau"].unique())
    pos = {t: k for k, t in enumerate(taus)}
    archs = [a for a in means["arch"].unique() if a != "all"]
    colors = {**dict(zip(archs, sns.color_palette())), "all": (0, 0, 0)}
    for model, g in means.groupby("model", sort=False):
        kind, arch = g["kind"].iloc[0], g["arch"].iloc[0]
        x = g["tau"].map(pos)
        label = model if accuracy is None or model not in accuracy else f"{model}: {accuracy[model]:.1f}%"
        ax.plot(x, g["mean"], color=colors[arch], label=label, **_STYLE[kind])
        ax.fill_between(x, g["low"], g["high"], color=colors[arch], alpha=0.12 if kind == "single" else 0.2, lw=0)
    ax.set_xticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel("SIS threshold τ")
    ax.set_ylabel("mean SIS size (% of pixels)")
    ax.legend(title="model: test accuracy" if accuracy else None, fontsize=7, title_fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax.figure


def _larger(rows: pd.DataFrame, claim: str, what: str, min_images: int, level: float) -> Verdict:
    """Holds when every row's interval of the increase lies above 0; cannot be tested when a row
    has fewer than ``min_images`` images."""
    numbers = rows.copy()
    numbers["images"] = numbers["images"].astype(int)
    numbers["interval above 0"] = numbers["low"] > 0
    enough = numbers["images"] >= min_images
    holds = None if not enough.all() else bool(numbers["interval above 0"].all())
    return Verdict(claim=claim,
                   criterion=f"for every {what}: the {100 * level:g}% bootstrap interval (over images) of the "
                             f"increase lies above 0, from at least {min_images} images each.",
                   holds=holds, numbers=numbers)


def ensembles_increase_sis(increase: pd.DataFrame, min_images: int = 10, confidence_level: float = 0.95) -> Verdict:
    """Section 4.6, Fig. 6, S2: an ensemble's SIS is larger than its members'. ``increase``: rows
    of :func:`ensemble_increase` (one per ensemble and tau), each paired on the same images."""
    return _larger(increase, "Ensembling increases the SIS size: an ensemble needs more pixels than its members to "
                   "reach the same confidence (section 4.6, Fig. 6; Fig. S2: 'the ensemble SIS are larger').",
                   "ensemble and threshold, the increase of the ensemble's SIS size over the mean of its members' "
                   "on the images where all have an SIS", min_images, confidence_level)


def ensembles_increase_accuracy(gains: pd.DataFrame, min_images: int = 100, confidence_level: float = 0.95) -> Verdict:
    """Section 4.6: 'ensembling uniformly increases the model accuracy'. ``gains``: rows of
    :func:`accuracy_gain`, one per ensemble."""
    numbers = gains.rename(columns={"gain (points)": "increase (points)"})
    ens, one = PAPER_ENSEMBLE[("full", "full")][0], TABLE1[("resnet18", "full", "full")][0]
    return _larger(numbers, "Ensembling increases the accuracy over that of the members (section 4.6: 'uniformly'; "
                   f"Table 1: {fmt(ens)}% for five ResNet18s against {fmt(one)}% for one, CIFAR-10).",
                   "ensemble, the increase of test accuracy over its members' mean accuracy (paired on the same "
                   "test images)", min_images, confidence_level)


def dropout_increases_sis(increase: pd.DataFrame, min_images: int = 10, confidence_level: float = 0.95) -> Verdict:
    """The paper code's claim that input dropout mitigates overinterpretation: its models' SIS are
    larger. ``increase``: rows of :func:`dropout_increase` (one per tau)."""
    return _larger(increase, "Input dropout mitigates overinterpretation: models trained with it have larger SIS "
                   "(the paper's code: 'ensembling and input dropout can each help mitigate overinterpretation').",
                   "threshold, the increase of the input-dropout models' SIS size over the standard models' (same "
                   "architecture, replicates averaged per image, on the images where all have an SIS)",
                   min_images, confidence_level)
