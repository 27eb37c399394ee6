"""Adversarially robust models (paper 4.5, Figure 1 "Adv. Robust"): the paper finds Madry et al.'s (2018)
adversarially trained CIFAR-10 model (l-inf PGD, 8/255, 7 steps of 2/255) also has sparse SIS at >= 99%
confidence; we train our own likewise (every batch replaced by PGD examples), cached like the zoo. PGD is
Captum's on [0, 1] pixels (:class:`PixelModel`), with cross-entropy of the logits (Captum's default takes a
log of outputs) and gradients below its ``zero_thresh`` (1e-6) still moving the image (freezing them would
overstate robustness).

    models = robust_models(run)                                 # replicates, trained or loaded
    acc = attack_accuracies({"robust": models}, X, Y, run)      # clean and PGD accuracy (%)
"""
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from overinterp.engine.backselect import BackSelectResult
from overinterp.engine.sis import find_sis, sis_size_pct
from overinterp.experiments import runs
from overinterp.experiments.runs import confident_selection, model_config
from overinterp.methods import optional
from overinterp.paper.numbers import ARCH_NAMES, MADRY_TRAINING
from overinterp.paper.intervals import replicate_interval
from overinterp.zoo import data as datasets
from overinterp.zoo.train import cached_fit, make_model

#: l-inf radius in [0, 1] pixel units: CIFAR-10 Madry et al.'s 8/255 (the paper's); Fashion-MNIST 0.1 (Wong &
#: Kolter, ICML 2018, and later work)
EPSILON = {"cifar10": MADRY_TRAINING["epsilon"], "fashion-mnist": 0.1}


def _margin(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(B,) largest other logit minus the label's (Carlini & Wagner): > 0 means misclassified."""
    other = logits.masked_fill(F.one_hot(y, logits.shape[1]).bool(), float("-inf")).amax(1)
    return other - logits.gather(1, y[:, None]).squeeze(1)


#: per-image losses the attack ascends: cross-entropy of the logits (Madry's) or the logit margin.
LOSSES = {"ce": lambda logits, y: F.cross_entropy(logits, y, reduction="none"), "margin": _margin}


class PixelModel(nn.Module):
    """``model`` on [0, 1] pixels (B, C, H, W): standardised with per-channel ``mean`` / ``std`` first."""

    def __init__(self, model: nn.Module, mean, std):
        super().__init__()
        self.model = model
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, p):  # (B, C, H, W) pixels -> (B, K) logits
        return self.model((p - self.mean.to(p)) / self.std.to(p))


def pgd(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, epsilon: float, steps: int, step_size: float,
        mean=(0.0,), std=(1.0,), random_start: bool = True, loss: str = "ce") -> torch.Tensor:
    """Untargeted l-inf PGD (Madry et al. 2018; Captum) on standardised ``images`` (B, C, H, W), ``epsilon`` and
    ``step_size`` in [0, 1] pixel units. Returns standardised adversarial images; the model's mode is restored."""
    if epsilon < 0 or steps < 0 or step_size < 0:
        raise ValueError(f"epsilon, steps and step_size must be >= 0, got {epsilon}, {steps}, {step_size}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
    if epsilon == 0 or (steps == 0 and not random_start):
        return images
    pm = PixelModel(model, mean, std).to(images.device)
    was_training = model.training
    model.eval()
    try:
        attack = optional("captum.robust", "captum", "PGD (chapter 9)").PGD(pm, LOSSES[loss], lower_bound=0.0, upper_bound=1.0)
        attack.fgsm.zero_thresh = 0.0   # a confident model's gradients are < 1e-6: they must still move
        with torch.enable_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Input Tensor 0 did not already require gradients")
            p = attack.perturb((images * pm.std + pm.mean).clamp(0, 1).detach(), radius=epsilon,
                               step_size=step_size, step_num=steps, target=labels, random_start=random_start,
                               norm="Linf")
    finally:
        model.train(was_training)
    return ((p - pm.mean) / pm.std).detach()


@dataclass(frozen=True)
class PGDTraining:
    """``perturb`` hook of ``fit``: PGD examples against the current model replace each batch."""
    epsilon: float
    steps: int
    step_size: float
    mean: tuple
    std: tuple
    loss: str = "ce"

    def __call__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return pgd(model, x, y, self.epsilon, self.steps, self.step_size, self.mean, self.std, loss=self.loss)


def epsilon(dataset: str, cfg) -> float:
    """``cfg.epsilon`` (a :class:`~overinterp.config.profiles.RobustConfig`), or the data set's :data:`EPSILON`."""
    if cfg.epsilon is not None:
        return float(cfg.epsilon)
    if dataset not in EPSILON:
        raise ValueError(f"no default epsilon for dataset {dataset!r}; set RobustConfig.epsilon")
    return EPSILON[dataset]


def training_attack(run) -> PGDTraining:
    """The adversarial training's PGD for ``run``'s data set and profile."""
    cfg, split = run.profile.robust, datasets.load(run.dataset, "train")
    eps = epsilon(run.dataset, cfg)
    return PGDTraining(eps, cfg.steps, cfg.step_size * eps, tuple(split.mean), tuple(split.std))


def robust_config(run, seed: int) -> dict:
    """Artifact key of robust replicate ``seed``: the zoo model config plus the adversary."""
    cfg, p = run.profile.robust, run.profile
    changes = {"epochs": cfg.epochs} if cfg.epochs else {}
    base = model_config(run.dataset, cfg.arch, p.name, seed, train_size=cfg.train_size, **changes)
    a = training_attack(run)
    return {**base, "adversarial": {"attack": "captum.robust.PGD", "norm": "Linf", "random_start": True,
                                    "epsilon": a.epsilon, "steps": a.steps, "step_size": a.step_size,
                                    "loss": a.loss, "pixels": "[0, 1]"}}


def robust_models(run, replicates: int | None = None, progress: bool = True) -> list[nn.Module]:
    """Cached adversarially trained replicates (seeds run.seed, ...) of the robust architecture."""
    cfg = run.profile.robust
    out = []
    for r in range(replicates or cfg.replicates or run.profile.replicates):
        seed = run.seed + r
        mcfg = robust_config(run, seed)
        torch.manual_seed(seed)
        model = make_model(mcfg, *datasets.shape(run.dataset))
        data = (lambda n=mcfg["train_size"]: datasets.take(datasets.load(run.dataset, "train"), n, seed=0))
        out.append(cached_fit("model", mcfg, model, data, None, mcfg["train"], seed, run.device, progress=progress,
                              desc=f"robust {cfg.arch} seed {seed}",
                              perturb=training_attack(run)))
    return out


def attack_correct(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, epsilon: float, steps: int,
                   step_size: float, restarts: int = 1, mean=(0.0,), std=(1.0,), batch_size: int = 500,
                   device="cpu", seed: int = 0, progress: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(clean, robust), (N,) bool: correct clean; and after each of ``restarts`` seeded PGD attacks."""
    model.to(device).eval()
    torch.manual_seed(seed)
    clean, robust = [], []
    for i in tqdm(range(0, len(images), batch_size), desc="PGD", disable=not progress):
        x, y = images[i:i + batch_size].to(device), labels[i:i + batch_size].to(device)
        with torch.inference_mode():
            ok = model(x).argmax(1) == y
        clean.append(ok.cpu().clone())
        for _ in range(restarts):
            xa = pgd(model, x, y, epsilon, steps, step_size, mean, std, random_start=True)
            with torch.inference_mode():
                ok &= model(xa).argmax(1) == y
        robust.append(ok.cpu())
    return torch.cat(clean), torch.cat(robust)


def attack_accuracies(models: Mapping[str, Sequence[nn.Module]], images: torch.Tensor, labels: torch.Tensor,
                      run, progress: bool = False) -> pd.DataFrame:
    """Per model and replicate: clean and evaluation-PGD accuracy (%)."""
    cfg, split = run.profile.robust, datasets.load(run.dataset, "test")
    eps = epsilon(run.dataset, cfg)
    rows = []
    for name, ms in models.items():
        for r, m in enumerate(ms):
            clean, rob = attack_correct(m, images, labels, eps, cfg.eval_steps, cfg.step_size * eps,
                                        cfg.eval_restarts, split.mean, split.std, device=run.device,
                                        seed=run.seed + r, progress=progress)
            rows.append({"model": name, "replicate": r, "clean accuracy (%)": 100 * clean.float().mean().item(),
                         "PGD accuracy (%)": 100 * rob.float().mean().item()})
    return pd.DataFrame(rows)


def robust_selection(run, models: Sequence[nn.Module], tau: float, n: int | None = None) -> datasets.Selection:
    """Figure 1's images: the first ``n`` test images all ``models`` classify correctly with confidence
    >= tau, classes taking turns (a robust model is confident on few)."""
    return confident_selection(run, tau, models, n or run.profile.robust.sis_images, balanced=True)


def robust_backselect(run, model: nn.Module, sel: datasets.Selection, seed: int | None = None,
                      progress: bool = True) -> BackSelectResult:
    """Cached backward selection of ``sel`` by robust replicate ``seed`` (default run.seed)."""
    seed = run.seed if seed is None else seed
    return runs.backselect_model(run, model, robust_config(run, seed), sel, progress=progress)


def sis_table(results: Mapping[tuple, BackSelectResult], tau: float) -> pd.DataFrame:
    """One row per (model, replicate, image): SIS size (%) at ``tau`` (NaN: none), full-image confidence."""
    frames = [pd.DataFrame({"model": m, "replicate": r, "image": np.arange(len(res.pred)),
                            "confidence": res.confidence.cpu().numpy(), "SIS size (%)": sis_size_pct(res, tau)})
              for (m, r), res in results.items()]
    return pd.concat(frames, ignore_index=True)


def paired_sizes(table: pd.DataFrame, robust: str, standard: str) -> pd.DataFrame:
    """Robust and standard SIS sizes (%) of the same image and replicate index where both have one."""
    a = table[table.model == robust].set_index(["replicate", "image"])["SIS size (%)"]
    b = table[table.model == standard].set_index(["replicate", "image"])["SIS size (%)"]
    both = pd.concat({"robust": a, "standard": b}, axis=1, join="inner").dropna()
    return both.reset_index()


def per_replicate(table: pd.DataFrame, model: str, column: str = "SIS size (%)") -> list[np.ndarray]:
    """``column`` of ``model``'s rows, one array per replicate in order."""
    rows = table[table.model == model] if "model" in table else table
    return [g[column].to_numpy(float) for _, g in rows.groupby("replicate", sort=True)]


def size_difference(pairs: Mapping[str, pd.DataFrame], n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Ours, descriptive (4.5 compares no sizes): robust minus standard mean SIS size (points) on
    shared images, with a 95% interval over replicate pairs."""
    rows = {}
    for name, p in pairs.items():
        d = per_replicate(p.assign(d=p["robust"] - p["standard"]), "", "d")
        d = [r for r in d if len(r)]
        row = {"replicates": len(d), "images per replicate": " + ".join(str(len(r)) for r in d),
               "robust mean (%)": p["robust"].mean() if len(p) else np.nan,
               "standard mean (%)": p["standard"].mean() if len(p) else np.nan}
        if sum(len(r) for r in d) < 2:
            rows[name] = {**row, "difference (points)": np.nan, "95% low": np.nan, "95% high": np.nan}
            continue
        iv = replicate_interval({"d": d}, paired_images=False, n_resamples=n_resamples, seed=seed,
                                bounds=(-100.0, 100.0))
        rows[name] = {**row, "difference (points)": iv.estimate, "95% low": iv.low, "95% high": iv.high}
    return pd.DataFrame.from_dict(rows, orient="index")


def model_name(arch: str, robust: bool) -> str:
    """'ResNet20' or 'robust ResNet20' (paper names)."""
    return ("robust " if robust else "") + ARCH_NAMES.get(arch, arch)


# ----------------------------------------------------------------------------- the chapter's verdict inputs

def histories(run, robust: Sequence[nn.Module], standard: Sequence[nn.Module]) -> dict:
    """{'robust ResNet20 seed 0': training history, ...} of the robust then the standard replicates."""
    arch = run.profile.robust.arch
    return ({f"{model_name(arch, True)} seed {run.seed + r}": m.info["history"] for r, m in enumerate(robust)} |
            {f"{model_name(arch, False)} seed {run.seed + r}": m.info["history"] for r, m in enumerate(standard)})


def comparison_selection(run, standard: nn.Module, robust: nn.Module, tau: float) -> datasets.Selection:
    """:func:`robust_selection`, else (robust never confident) the SIS chapter's images."""
    try:
        return robust_selection(run, [standard, robust], tau)
    except ValueError:
        return confident_selection(run, tau)


def sis_results(run, robust: Sequence[nn.Module], sel: datasets.Selection) -> dict:
    """{(model name, replicate): backward selection of ``sel``}, standard then robust per replicate."""
    arch, results = run.profile.robust.arch, {}
    for r in range(len(robust)):
        results[(model_name(arch, False), r)] = runs.backselect_set(run, arch, sel, run.seed + r, progress=False)
        results[(model_name(arch, True), r)] = robust_backselect(run, robust[r], sel, run.seed + r, progress=False)
    return results


def sis_gallery(results: Mapping[tuple, BackSelectResult], tau: float, n_show: int, arch: str) -> tuple:
    """(indices, {row label: keep mask}) of the first ``n_show`` images with a robust SIS at ``tau``."""
    first = sis_size_pct(results[(model_name(arch, True), 0)], tau)
    show = np.flatnonzero(~np.isnan(first))[:n_show]
    return show, {f"SIS {name}": find_sis(results[(name, 0)], tau).mask[show]
                  for name in (model_name(arch, False), model_name(arch, True))}
