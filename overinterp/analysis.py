"""The paper's experiments as library calls (sections 3.2, 4.1, 4.2, Table 1).

Every function takes the :class:`overinterp.book.Run` of a chapter (dataset,
profile, device, seed) and gets what it needs from the artifact store, computing
it when missing, so chapters share models and backward-selection runs:

    models = zoo(run)                              # arch -> replicates (trained or loaded)
    sets = eval_sets(run)                          # "test" and the OOD sets -> (images, labels)
    res = backselect_set(run, "resnet20", selection(run, "test"))   # cached backward selection
    x5, keep5 = pixel_subset(res, sets["test"][0], 0.05)

:func:`selection` and :func:`backselect_set` are also what ``python -m overinterp
backselect`` and ``prepare`` call, so a run made on the command line (on another
machine, in shards) is the very artifact a chapter loads.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import pandas as pd

from . import data as D
from .backselect import BackSelectConfig, BackSelectResult
from .data import Selection
from .models import Ensemble
from .paper import ARCH_NAMES
from .profiles import TrainConfig
from .runner import fingerprint, run_backselect
from .sis import pixel_subset, random_subset
from .train import accuracy, cached_fit, make_model, model_config, plateaued, predict, trained_model

__all__ = ["zoo", "selection", "eval_selections", "eval_sets", "ensembles", "accuracies", "accuracy_table", "mean_std", "model_stats", "zoo_table",
           "backselect_set", "confident", "confident_selection", "confidence_drop", "beside_paper",
           "transfer_table", "location_frequency", "subsets", "subset_accuracies", "retrain", "retrain_on_subsets", "retrained_accuracies",
           "RETRAIN_KINDS",
           "SUBSET_SEED"]

SUBSET_SEED = 0  # the random 5% subsets: the same for every model (paper 4.2)


def zoo(run, archs=None, replicates: int | None = None) -> dict[str, list[nn.Module]]:
    """The models of section 3.2: ``replicates`` seeds (run.seed, run.seed+1, ...) per architecture."""
    p = run.profile
    return {a: [trained_model(run.dataset, a, p.name, seed=run.seed + r, device=run.device)
                for r in range(replicates or p.replicates)] for a in (archs or p.archs)}


def selection(run, set_name: str, n: int | None = None) -> Selection:
    """The images of ``set_name`` a chapter uses: the profile's ``retrain_images`` training images
    (section 4.2) or ``test_size`` images of the test / an OOD set (section 3.1), seeded sample."""
    p = run.profile
    default = p.retrain_images if set_name == "train" else p.test_size
    return Selection(run.dataset, set_name, default if n is None else n)


def eval_selections(run, train: bool = False) -> dict[str, Selection]:
    """The test set and the OOD sets of section 3.1 (and the training sample of 4.2)."""
    names = (["train"] if train else []) + ["test"] + D.ood_sets(run.dataset)
    return {name: selection(run, name) for name in names}


def eval_sets(run, train: bool = False) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """:func:`eval_selections` loaded: name -> (images, labels)."""
    return {name: sel.load() for name, sel in eval_selections(run, train).items()}


def ensembles(models: dict[str, list[nn.Module]]) -> dict[str, Ensemble]:
    """Homogeneous ensembles per architecture and one heterogeneous ensemble of all (paper 3.2)."""
    out = {f"ensemble {len(ms)}× {ARCH_NAMES[a]}": Ensemble(ms) for a, ms in models.items() if len(ms) > 1}
    every = [m for ms in models.values() for m in ms]
    if len(models) > 1:
        out[f"ensemble of all {len(every)}"] = Ensemble(every)
    return out


def accuracies(models: nn.Module | list, sets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) of each replicate (rows) on each set (columns), as numbers."""
    models = models if isinstance(models, (list, tuple)) else [models]
    return pd.DataFrame([{s: 100 * accuracy(m, X, Y, device) for s, (X, Y) in sets.items()} for m in models])


def mean_std(runs: pd.DataFrame) -> pd.Series:
    """Columns (set, 'mean') and (set, 'std') of a replicates x sets table (sample std; NaN for one)."""
    stats = [(c, s, runs[c].mean() if s == "mean" else runs[c].std())  # std NaN for a single replicate
             for c in runs.columns for s in ("mean", "std")]
    return pd.Series([v for *_, v in stats], index=pd.MultiIndex.from_tuples([(c, s) for c, s, _ in stats]))


def accuracy_table(models: dict[str, nn.Module | list], sets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) of each model, mean and std over its replicates, per set: numeric columns
    (set, 'mean' | 'std'); :func:`overinterp.plots.mean_std` formats it for display."""
    return pd.DataFrame({name: mean_std(accuracies(ms, sets, device)) for name, ms in models.items()}).T


def model_stats(model: nn.Module, sets: dict[str, tuple], device="cpu", threshold: float = 0.99) -> dict:
    """What chapter 2 reports of one trained model (paper 3.2): accuracy (%) per set, mean test
    confidence, the share (%) of test images at confidence >= ``threshold``, final training loss,
    epochs and whether training plateaued (:func:`overinterp.train.plateaued`)."""
    out = {f"{s} accuracy": 100 * accuracy(model, X, Y, device) for s, (X, Y) in sets.items()}
    conf = predict(model, sets["test"][0], device=device).max(1).values
    h = model.info["history"]
    return {**out, "mean confidence": conf.mean().item(), f"test at ≥ {threshold:g} (%)":
            100 * (conf >= threshold).float().mean().item(), "final training loss": h[-1]["loss"],
            "epochs": len(h), "plateaued": float(plateaued(h))}


def zoo_table(models: dict[str, list], sets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """:func:`model_stats` of every replicate, mean and std per model (numeric columns
    (measure, 'mean' | 'std'); "plateaued" is the share of replicates)."""
    return pd.DataFrame({name: mean_std(pd.DataFrame([model_stats(m, sets, device) for m in ms]))
                         for name, ms in models.items()}).T


def beside_paper(ours: pd.DataFrame, paper: dict[str, dict], ours_label: str) -> pd.DataFrame:
    """The paper's CIFAR-10 columns and ours (formatted) side by side, rows aligned; '—' where the paper has none."""
    p = pd.DataFrame.from_dict(paper, orient="index").reindex(ours.index)
    p = p.reindex(columns=list(dict.fromkeys(c for row in paper.values() for c in row))).fillna("—")
    return pd.concat({"paper (CIFAR-10)": p, ours_label: ours}, axis=1)


def backselect_set(run, arch: str, sel: Selection, seed: int | None = None, config: BackSelectConfig | None = None,
                   shards: range | None = None, progress: bool = True, chunk_size: int | None = None,
                   after_shard=None) -> BackSelectResult | None:
    """Backward selection of the images of ``sel`` by replicate ``seed`` (default run.seed) of
    ``arch``, with the profile's engine for that set (:meth:`Profile.engine`, or ``config``), cached in the artifact store and
    resumable by shard (:func:`overinterp.runner.run_backselect`; None while shards are missing)."""
    p, seed = run.profile, run.seed if seed is None else seed
    model = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
    return run_backselect(model, sel.load()[0], model_config=model_config(run.dataset, arch, p.name, seed),
                          data_config=sel.key(), config=config or p.engine(sel.set), shard_size=p.shard_size,
                          shards=shards, device=run.device, chunk_size=chunk_size, progress=progress,
                          after_shard=after_shard)


def confident(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, threshold: float = 0.99,
              device="cpu") -> torch.Tensor:
    """Indices of images classified correctly with confidence >= ``threshold`` (paper 3.4, S2)."""
    conf, pred = predict(model, images, device=device).max(1)
    return torch.nonzero((pred == labels) & (conf >= threshold)).flatten()


def confident_selection(run, threshold: float, models=None, n: int | None = None) -> Selection:
    """The SIS chapter's images (paper 4.1): the first ``n`` (default ``sis_images``) images of the test
    selection that every model of ``models`` (default: replicate ``run.seed`` of every architecture)
    classifies correctly with confidence >= threshold."""
    sel = selection(run, "test")
    X, Y = sel.load()
    if models is None:
        models = [trained_model(run.dataset, a, run.profile.name, seed=run.seed, device=run.device)
                  for a in run.profile.archs]
    ok = torch.ones(len(X), dtype=torch.bool)
    for model in models:
        ok &= torch.isin(torch.arange(len(X)), confident(model, X, Y, threshold, device=run.device))
    idx = ok.nonzero().flatten()[:n or run.profile.sis_images]
    if not len(idx):
        raise ValueError(f"no test image is classified correctly with confidence >= {threshold} by every model; "
                         "lower the threshold")
    return sel.narrow(idx.tolist())


def confidence_drop(model: nn.Module, images: torch.Tensor, subset_images: torch.Tensor, device="cpu") -> torch.Tensor:
    """Per image: f(full) - f(subset) for the class predicted on the full image (paper 4.1;
    negative = more confident on the subset)."""
    full = predict(model, images, device=device)
    pred = full.argmax(1, keepdim=True)
    sub = predict(model, subset_images, device=device)
    return (full.gather(1, pred) - sub.gather(1, pred)).flatten()


def transfer_table(models: dict[str, nn.Module], subsets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) of every model (columns) on each model's subsets (rows) (paper 4.1)."""
    return pd.DataFrame({m: {s: 100 * accuracy(model, X, Y, device) for s, (X, Y) in subsets.items()}
                         for m, model in models.items()})


def location_frequency(keep: torch.Tensor) -> torch.Tensor:
    """(H, W): fraction of the subsets (N, H, W) that contain each pixel (paper Fig. 2)."""
    return keep.float().mean(0)


def subsets(run, arch: str, frac: float = 0.05, train: bool = False, seed: int | None = None) -> dict[str, dict]:
    """Per set of :func:`eval_selections`: the ``frac`` backward-selection subsets of ``arch``
    (replicate ``seed``, default run.seed) and the random ``frac`` subsets:
    {"bs": (images, keep), "random": (images, keep), "full": (images, all-True keep), "labels": labels}."""
    out = {}
    for name, sel in eval_selections(run, train).items():
        X, Y = sel.load()
        res = backselect_set(run, arch, sel, seed)
        out[name] = {"bs": pixel_subset(res, X, frac), "labels": Y,
                     "full": (X, torch.ones_like(X[:, 0], dtype=torch.bool)),
                     "random": random_subset(X, frac, seed=SUBSET_SEED, block=res.block,
                                             mask_value=res.mask_value)}
    return out


def subset_accuracies(run, arch: str, models: list[nn.Module], frac: float = 0.05) -> dict[str, pd.DataFrame]:
    """Table 1's rows for the original models (paper 4.1): per kind "full", "bs" (each replicate on
    its own BS subsets) and "random" (the shared random subsets), the accuracy (%) of each
    replicate (rows) on each evaluation set (columns). Replicate r has seed run.seed + r."""
    out = {k: [] for k in ("full", "bs", "random")}
    for r, model in enumerate(models):
        subs = subsets(run, arch, frac, seed=run.seed + r)
        for k, rows in out.items():
            rows.append({s: 100 * accuracy(model, d[k][0], d["labels"], run.device) for s, d in subs.items()})
    return {k: pd.DataFrame(rows) for k, rows in out.items()}


def retrain(run, arch: str, images: torch.Tensor, labels: torch.Tensor, name: str, augment: bool,
            replicates: int | None = None, eval_data: tuple | None = None) -> list[nn.Module]:
    """New models of ``arch`` trained on (images, labels), e.g. 5% pixel subsets (paper 4.2, S3).

    The profile's retraining recipe (``Profile.retrain``, default its ``train``) with augmentation
    on or off; one model per replicate seed; ``model.info`` holds the training curve."""
    p = run.profile
    base = model_config(run.dataset, arch, p.name, run.seed)
    train_cfg = TrainConfig(**{**(p.retrain or p.train).__dict__, "augment": augment})
    out = []
    for r in range(replicates or p.replicates):
        cfg = {**base, "seed": run.seed + r, "train": train_cfg, "train_on": name, "images": fingerprint(images),
               "n": len(images)}
        torch.manual_seed(run.seed + r)
        model = make_model(cfg, images.shape[1], len(D.CLASSES[run.dataset]))
        out.append(cached_fit("retrained", cfg, model, images, labels, train_cfg, run.seed + r, run.device,
                              desc=f"{arch} on {name} seed {run.seed + r}", eval_data=eval_data))
    return out


RETRAIN_KINDS = ("bs", "random", "full")


def retrain_on_subsets(run, arch: str, kind: str, augment: bool, frac: float = 0.05,
                       subs: dict | None = None) -> list[nn.Module]:
    """Section 4.2: new ``arch`` models trained on the ``kind`` ``frac`` subsets of the training
    selection ("bs" or "random"), or on its full images ("full": the control with the same images
    and budget), one per replicate, evaluated on the same kind of test images;
    ``subs`` = :func:`subsets` (train=True) if at hand."""
    if kind not in RETRAIN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(RETRAIN_KINDS)}, got {kind!r}")
    subs = subs or subsets(run, arch, frac, train=True)
    name = "full" if kind == "full" else f"{kind}{frac:g}"
    return retrain(run, arch, subs["train"][kind][0], subs["train"]["labels"], name, augment,
                   eval_data=(subs["test"][kind][0], subs["test"]["labels"]))


def retrained_accuracies(run, models: list[nn.Module], kind: str, subs: dict) -> pd.DataFrame:
    """Accuracy (%) of each retrained model (rows) on the ``kind`` images of each evaluation set of
    ``subs`` (columns; paper 4.2: trained and evaluated on BS, random or full images)."""
    return accuracies(models, {s: (d[kind][0], d["labels"]) for s, d in subs.items() if s != "train"}, run.device)
