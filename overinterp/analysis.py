"""The paper's experiments as library calls (sections 3.2, 4.1, 4.2, Table 1).

Every function takes the :class:`overinterp.book.Run` of a chapter (dataset,
profile, device, seed) and gets what it needs from the artifact store, computing
it when missing, so chapters share models and backward-selection runs:

    models = zoo(run)                              # arch -> replicates (trained or loaded)
    sets = eval_sets(run)                          # "test" and the OOD sets -> (images, labels)
    res = backselect_set(run, "resnet20", "test", *sets["test"])   # cached backward selection
    x5, keep5 = pixel_subset(res, sets["test"][0], 0.05)
"""
from __future__ import annotations

import torch
import torch.nn as nn
import pandas as pd

from . import data as D
from .artifacts import Store
from .backselect import BackSelectResult
from .models import Ensemble
from .paper import ARCH_NAMES
from .profiles import TrainConfig
from .runner import fingerprint, run_backselect
from .sis import pixel_subset, random_subset
from .train import cached_fit, make_model, model_config, predict, take, trained_model

__all__ = ["zoo", "eval_sets", "ensembles", "accuracy_table", "mean_std", "mean_of", "backselect_set", "confident",
           "confidence_drop", "beside_paper", "transfer_table", "location_frequency", "subsets", "retrain", "SUBSET_SEED"]

SUBSET_SEED = 0  # the random 5% subsets: the same for every model (paper 4.2)


def zoo(run, archs=None, replicates: int | None = None) -> dict[str, list[nn.Module]]:
    """The models of section 3.2: ``replicates`` seeds (run.seed, run.seed+1, ...) per architecture."""
    p = run.profile
    return {a: [trained_model(run.dataset, a, p.name, seed=run.seed + r, device=run.device)
                for r in range(replicates or p.replicates)] for a in (archs or p.archs)}


def eval_sets(run, train: bool = False) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The test set and the OOD sets of section 3.1, each cut to the profile's ``test_size``."""
    names = (["train"] if train else []) + ["test"] + D.ood_sets(run.dataset)
    out = {}
    for name in names:
        split = D.load(run.dataset, name) if name in ("train", "test") else D.load(name, "test")
        out[name] = take(split, run.profile.retrain_images if name == "train" else run.profile.test_size)
    return out


def ensembles(models: dict[str, list[nn.Module]]) -> dict[str, Ensemble]:
    """Homogeneous ensembles per architecture and one heterogeneous ensemble of all (paper 3.2)."""
    out = {f"ensemble {len(ms)}× {ARCH_NAMES[a]}": Ensemble(ms) for a, ms in models.items() if len(ms) > 1}
    every = [m for ms in models.values() for m in ms]
    if len(models) > 1:
        out[f"ensemble of all {len(every)}"] = Ensemble(every)
    return out


def mean_std(values, scale: float = 100.0, digits: int = 2) -> str:
    """'mean ± std' (sample std) of accuracies, in percent by default; one value: just it."""
    t = torch.as_tensor(values, dtype=torch.float64) * scale
    if len(t) == 1:
        return f"{t.item():.{digits}f}"
    return f"{t.mean().item():.{digits}f} ± {t.std().item():.{digits}f}"


def beside_paper(ours: pd.DataFrame, paper: dict[str, dict], ours_label: str) -> pd.DataFrame:
    """The paper's CIFAR-10 columns and ours side by side, rows aligned; '—' where the paper has none."""
    p = pd.DataFrame.from_dict(paper, orient="index").reindex(ours.index)
    p = p.reindex(columns=list(dict.fromkeys(c for row in paper.values() for c in row))).fillna("—")
    return pd.concat({"paper (CIFAR-10)": p, ours_label: ours}, axis=1)


def mean_of(cell) -> float:
    """The mean of a :func:`mean_std` cell ('89.60 ± 0.57' -> 89.6; '91.00' -> 91.0)."""
    return float(str(cell).split(" ")[0])


def _acc(model, images, labels, device) -> float:
    return (predict(model, images, device=device).argmax(1) == labels).float().mean().item()


def accuracy_table(models: dict[str, nn.Module | list], sets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) of each model (or 'mean ± std' over a list of replicates) on each set."""
    rows = {}
    for name, ms in models.items():
        ms = ms if isinstance(ms, (list, tuple)) else [ms]
        rows[name] = {s: mean_std([_acc(m, X, Y, device) for m in ms]) for s, (X, Y) in sets.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def backselect_set(run, arch: str, set_name: str, images: torch.Tensor, seed: int | None = None,
                   progress: bool = True) -> BackSelectResult:
    """Backward selection of ``images`` with replicate ``seed`` of ``arch`` (profile's engine), cached."""
    p, seed = run.profile, run.seed if seed is None else seed
    model = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device)
    return run_backselect(model, images, model_config=model_config(run.dataset, arch, p.name, seed),
                          data_config={"dataset": run.dataset, "set": set_name}, method=p.bs_method,
                          block=p.bs_block, k=p.bs_k, m=p.bs_m or None, device=run.device, progress=progress)


def confident(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, threshold: float = 0.99,
              device="cpu") -> torch.Tensor:
    """Indices of images classified correctly with confidence >= ``threshold`` (paper 3.4, S2)."""
    conf, pred = predict(model, images, device=device).max(1)
    return torch.nonzero((pred == labels) & (conf >= threshold)).flatten()


def confidence_drop(model: nn.Module, images: torch.Tensor, subset_images: torch.Tensor, device="cpu") -> torch.Tensor:
    """Per image: f(full) - f(subset) for the class predicted on the full image (paper 4.1;
    negative = more confident on the subset)."""
    full = predict(model, images, device=device)
    pred = full.argmax(1, keepdim=True)
    sub = predict(model, subset_images, device=device)
    return (full.gather(1, pred) - sub.gather(1, pred)).flatten()


def transfer_table(models: dict[str, nn.Module], subsets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) of every model (columns) on each model's subsets (rows) (paper 4.1)."""
    return pd.DataFrame({m: {s: 100 * _acc(model, X, Y, device) for s, (X, Y) in subsets.items()}
                         for m, model in models.items()})


def location_frequency(keep: torch.Tensor) -> torch.Tensor:
    """(H, W): fraction of the subsets (N, H, W) that contain each pixel (paper Fig. 2)."""
    return keep.float().mean(0)


def subsets(run, arch: str, sets: dict[str, tuple], frac: float = 0.05) -> dict[str, dict]:
    """Per set: the 5% backward-selection subsets of ``arch`` (replicate run.seed) and the
    random 5% subsets: {"bs": (images, keep), "random": (images, keep), "labels": labels}."""
    out = {}
    for name, (X, Y) in sets.items():
        res = backselect_set(run, arch, name, X)
        out[name] = {"bs": pixel_subset(res, X, frac), "labels": Y,
                     "random": random_subset(X, frac, seed=SUBSET_SEED, block=run.profile.bs_block)}
    return out


def retrain(run, arch: str, images: torch.Tensor, labels: torch.Tensor, name: str, augment: bool,
            replicates: int | None = None, eval_data: tuple | None = None) -> list[nn.Module]:
    """New models of ``arch`` trained on (images, labels), e.g. 5% pixel subsets (paper 4.2, S3).

    Same recipe as the original models (augmentation on or off); one model per replicate seed."""
    p = run.profile
    base = model_config(run.dataset, arch, p.name, run.seed)
    train_cfg = TrainConfig(**{**p.train.__dict__, "augment": augment})
    out = []
    for r in range(replicates or p.replicates):
        cfg = {**base, "seed": run.seed + r, "train": train_cfg, "train_on": name, "images": fingerprint(images),
               "n": len(images)}
        torch.manual_seed(run.seed + r)
        model = make_model(cfg, images.shape[1], len(D.CLASSES[run.dataset]))
        out.append(cached_fit("retrained", cfg, model, images, labels, train_cfg, run.seed + r, run.device,
                              desc=f"{arch} on {name} seed {run.seed + r}", eval_data=eval_data))
    return out
