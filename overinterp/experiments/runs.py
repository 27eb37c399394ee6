"""The zoo's models, images and backward selections (paper 3.1, 3.2, 4.1, Table 1's full-image rows) as
cached library calls taking a chapter's :class:`overinterp.config.context.Run`, so chapters share them.
:func:`backselect_model` is the experiments' one backward-selection entry (engine, shards, device from the
run); :func:`backselect_set` is it for a zoo model, also behind ``python -m overinterp backselect`` and
``prepare``. Pixel subsets (4.1) and retraining (4.2): :mod:`overinterp.experiments.subsets`.

    models = zoo(run)                              # arch -> replicates (trained or loaded)
    sets = eval_sets(run)                          # "test" and the OOD sets -> (images, labels)
    res = backselect_set(run, "resnet20", selection(run, "test"))   # cached backward selection
"""
import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.zoo import data
from overinterp.engine.backselect import BackSelectConfig, BackSelectResult
from overinterp.zoo.data import Selection
from overinterp.zoo.models import Ensemble
from overinterp.paper import numbers as paper
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.engine.runner import run_backselect
from overinterp.engine.sis import SIS, find_sis, is_sufficient
from overinterp.config.profiles import get_profile
from overinterp.store import Store, config_key
from overinterp.zoo.train import TrainConfig, accuracy, cached_fit, make_model, plateaued, predict

SUBSET_SEED = 0  # the random 5% subsets: the same for every model (paper 4.2), one seed per set (subset_seed)
#: retrained replicate r has seed run.seed + RETRAIN_SEED_OFFSET + r, never that of the zoo model that chose its subsets
RETRAIN_SEED_OFFSET = 100


def subset_seed(dataset: str, set_name: str) -> int:
    """Per-set random-subset seed (test 0, train 1, OOD after), as the paper's code: retrained models never
    meet their training masks."""
    return SUBSET_SEED + ["test", "train", *data.ood_sets(dataset)].index(set_name)


CONFIDENT = "confident test images (%)"  # model_stats: share of test images at confidence >= the threshold


def model_config(dataset: str, arch: str, profile: str = "quick", seed: int = 0, width: int | None = None,
                 train_size: int | None = None, **train_changes) -> dict:
    """:func:`trained_model`'s artifact key; ``width``, ``train_size``, ``train_changes`` override."""
    p = get_profile(profile)
    cfg = p.train if not train_changes else TrainConfig(**{**p.train.__dict__, **train_changes})
    return {"dataset": dataset, "arch": arch, "width": width or p.width(arch), "train_size": train_size or p.train_size,
            "seed": seed, "train": cfg}


def model_key(dataset: str, arch: str, profile: str = "quick", seed: int = 0, **changes) -> str:
    """The artifact key string of :func:`model_config`'s model: equal keys, the same model."""
    return config_key(Store.versioned("model", model_config(dataset, arch, profile, seed, **changes)))


def trained_model(dataset: str, arch: str, profile: str = "quick", seed: int = 0, device="auto",
                  store: Store | None = None, progress: bool = True, width: int | None = None,
                  train_size: int | None = None, **train_changes) -> nn.Module:
    """The cached zoo model trained on full images (3.2); ``model.info['test_acc']`` is None."""
    cfg = model_config(dataset, arch, profile, seed, width, train_size, **train_changes)
    torch.manual_seed(seed)  # the replicate seed fixes the initialisation too
    model = make_model(cfg, *data.shape(dataset))
    return cached_fit("model", cfg, model, lambda: data.take(data.load(dataset, "train"), cfg["train_size"], seed=0), None,
                      cfg["train"], seed, device, store, progress, desc=f"{arch} seed {seed}")


def zoo(run, archs=None, replicates: int | None = None) -> dict[str, list[nn.Module]]:
    """The models of 3.2: ``replicates`` seeds (run.seed, run.seed+1, ...) per architecture."""
    p = run.profile
    return {a: [trained_model(run.dataset, a, p.name, seed=run.seed + r, device=run.device)
                for r in range(replicates or p.replicates)] for a in (archs or p.archs)}


def named(by_arch: dict) -> dict:
    """{arch: x} keyed by the architectures' names instead ({"ResNet20": x, ...})."""
    return {ARCH_NAMES[a]: x for a, x in by_arch.items()}


def selection(run, set_name: str, n: int | None = None) -> Selection:
    """Seeded images of ``set_name``: ``retrain_images`` (train, 4.2) or ``test_size`` (test / OOD, 3.1)."""
    p = run.profile
    default = p.retrain_images if set_name == "train" else p.test_size
    return Selection(run.dataset, set_name, default if n is None else n)


def eval_selections(run, train: bool = False) -> dict[str, Selection]:
    """The test set and the OOD sets of section 3.1 (and the training sample of 4.2)."""
    names = (["train"] if train else []) + ["test"] + data.ood_sets(run.dataset)
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


def correct(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, device="cpu") -> np.ndarray:
    """(N,) float64, 1.0 where ``model`` classifies the image correctly: what verdicts resample."""
    return (predict(model, images, device=device).argmax(1) == labels).double().numpy()


def mean_std(runs: pd.DataFrame) -> pd.Series:
    """Columns (set, 'mean') and (set, 'std') of a replicates x sets table (sample std; NaN for one)."""
    stats = [(c, s, runs[c].mean() if s == "mean" else runs[c].std())  # std NaN for a single replicate
             for c in runs.columns for s in ("mean", "std")]
    return pd.Series([v for *_, v in stats], index=pd.MultiIndex.from_tuples([(c, s) for c, s, _ in stats]))


def accuracy_table(models: dict[str, nn.Module | list], sets: dict[str, tuple], device="cpu") -> pd.DataFrame:
    """Accuracy (%) per model, mean and std over replicates per set: columns (set, 'mean' | 'std')."""
    return pd.DataFrame({name: mean_std(accuracies(ms, sets, device)) for name, ms in models.items()}).T


def model_stats(model: nn.Module, sets: dict[str, tuple], device="cpu", threshold: float = paper.SIS_THRESHOLD) -> dict:
    """Chapter 2's numbers of a model (3.2): accuracies (%), mean confidence, :data:`CONFIDENT`, final
    loss, epochs, plateaued."""
    out = {f"{s} accuracy": 100 * accuracy(model, X, Y, device) for s, (X, Y) in sets.items()}
    conf = predict(model, sets["test"][0], device=device).max(1).values
    h = model.info["history"]
    return {**out, "mean confidence": conf.mean().item(), CONFIDENT: 100 * (conf >= threshold).float().mean().item(),
            "final training loss": h[-1]["loss"], "epochs": len(h), "plateaued": float(plateaued(h))}


def zoo_table(models: dict[str, list], sets: dict[str, tuple], device="cpu",
              threshold: float = paper.SIS_THRESHOLD) -> pd.DataFrame:
    """:func:`model_stats` mean and std per model; "plateaued": share of replicates."""
    return pd.DataFrame({name: mean_std(pd.DataFrame([model_stats(m, sets, device, threshold) for m in ms]))
                         for name, ms in models.items()}).T


# ----------------------------------------------------------------------------- chapter 2: the zoo (3.2)

def zoo_histories(models: dict[str, list[nn.Module]]) -> dict[str, list[dict]]:
    """The training curve of every replicate: {"ResNet20 #0": history, ...}."""
    return {f"{ARCH_NAMES[a]} #{r}": m.info["history"] for a, ms in models.items() for r, m in enumerate(ms)}


def whole_test(run, models: dict[str, list[nn.Module]]) -> dict[str, list[tuple[float, float]]]:
    """(accuracy %, share % at confidence >= tau) per replicate on the whole test set."""
    test = data.load(run.dataset, "test")

    def measured(m: nn.Module) -> tuple[float, float]:
        conf, pred = predict(m, test.images, device=run.device).max(1)
        return (100 * (pred == test.labels).float().mean().item(),
                100 * (conf >= run.profile.sis_threshold).float().mean().item())
    return {a: [measured(m) for m in ms] for a, ms in models.items()}


def zoo_accuracy(models: dict[str, list[nn.Module]], ens: dict[str, Ensemble], sets: dict[str, tuple],
                 device="cpu") -> pd.DataFrame:
    """Table 1's full-image rows: :func:`accuracy_table` of each architecture, then of each ensemble."""
    return pd.concat([accuracy_table(named(models), sets, device), accuracy_table(ens, sets, device)])


# ----------------------------------------------------------------------------- backward selection

def backselect_model(run, model: nn.Module, model_cfg: dict, sel: Selection | tuple[torch.Tensor, dict],
                     config: BackSelectConfig | None = None, *, target: torch.Tensor | None = None,
                     shard_size: int | None = None, store: Store | None = None, shards: range | None = None,
                     chunk_size: int | None = None, progress: bool = True,
                     after_shard=None) -> BackSelectResult | None:
    """Cached backward selection of ``sel`` by ``model`` (key ``model_cfg``), resumable by shard; None
    while shards are missing. ``sel``: Selection or (images, data config); ``target``: class to select for."""
    images, data_cfg = (sel.load()[0], sel.key()) if isinstance(sel, Selection) else sel
    config = run.profile.engine(data_cfg.get("set")) if config is None else config
    return run_backselect(model, images, model_config=model_cfg, data_config=data_cfg, config=config,
                          shard_size=run.profile.shard_size if shard_size is None else shard_size, shards=shards,
                          store=store, device=run.device, chunk_size=chunk_size, progress=progress,
                          after_shard=after_shard, target=target)


def backselect_set(run, arch: str, sel: Selection, seed: int | None = None, config: BackSelectConfig | None = None,
                   shards: range | None = None, progress: bool = True, chunk_size: int | None = None,
                   after_shard=None) -> BackSelectResult | None:
    """:func:`backselect_model` by zoo replicate ``seed`` (default run.seed) of ``arch``."""
    p, seed = run.profile, run.seed if seed is None else seed
    model = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
    return backselect_model(run, model, model_config(run.dataset, arch, p.name, seed), sel, config, shards=shards,
                            chunk_size=chunk_size, progress=progress, after_shard=after_shard)


def confident(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, threshold: float = paper.SIS_THRESHOLD,
              device="cpu") -> torch.Tensor:
    """Indices of images classified correctly with confidence >= ``threshold`` (paper 3.4, S2)."""
    conf, pred = predict(model, images, device=device).max(1)
    return torch.nonzero((pred == labels) & (conf >= threshold)).flatten()


def by_class_turns(index: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``index`` reordered so classes take turns (first of each class, then second, ...)."""
    y = labels[index]
    rank = torch.zeros_like(index)
    for c in y.unique():
        at = (y == c).nonzero().flatten()
        rank[at] = torch.arange(len(at))
    return index[torch.argsort(rank * (int(labels.max()) + 1) + y, stable=True)]


def confident_selection(run, threshold: float, models=None, n: int | None = None, balanced: bool = False) -> Selection:
    """The SIS chapter's images (4.1): the first ``n`` test images all ``models`` classify correctly
    with confidence >= threshold; ``balanced``: classes take turns."""
    sel = selection(run, "test")
    X, Y = sel.load()
    if models is None:
        models = [trained_model(run.dataset, a, run.profile.name, seed=run.seed, device=run.device)
                  for a in run.profile.archs]
    ok = torch.ones(len(X), dtype=torch.bool)
    for model in models:
        ok &= torch.isin(torch.arange(len(X)), confident(model, X, Y, threshold, device=run.device))
    idx = ok.nonzero().flatten()
    idx = (by_class_turns(idx, Y) if balanced else idx)[:n or run.profile.sis_images]
    if not len(idx):
        raise ValueError(f"no test image is classified correctly with confidence >= {threshold} by every model; "
                         "lower the threshold")
    return sel.narrow(idx.tolist())


# ----------------------------------------------------------------------------- chapter 3: SIS (3.3, 4.1)

def confident_sis(run, tau: float) -> tuple[Selection, dict[str, BackSelectResult], dict[str, SIS]]:
    """Figure 1: (:func:`confident_selection`, {arch: selection}, {arch: SIS at ``tau``}), checked."""
    models = {a: ms[0] for a, ms in zoo(run, replicates=1).items()}
    sel = confident_selection(run, tau)
    X, _ = sel.load()
    results, sis = {}, {}
    for a, m in models.items():
        results[a] = backselect_set(run, a, sel)
        sis[a] = find_sis(results[a], tau)
        if not is_sufficient(m, X.to(run.device), results[a], sis[a], tau).all():
            raise AssertionError("an SIS failed its forward-pass check")
    return sel, results, sis


def sis_fractions(sis: SIS) -> list[float]:
    """Found SIS sizes as float64 pixel fractions (``sis_size_pct`` is float32)."""
    pixels = sis.mask.shape[-2] * sis.mask.shape[-1]
    return (sis.mask.sum((1, 2)).double() / pixels)[sis.found].tolist()


def _sis_images(run, arch: str, seed: int, tau: float, progress: bool = False) -> torch.Tensor:
    """Test-selection positions of replicate ``seed``'s confident images that its SIS sizes cover (4.1)."""
    model = trained_model(run.dataset, arch, run.profile.name, seed=seed, device=run.device, progress=progress)
    idx = confident(model, *selection(run, "test").load(), tau, device=run.device)
    return idx if run.profile.sis_engine is None else idx[:run.profile.sis_images]


def sis_result(run, arch: str, seed: int, tau: float, progress: bool = False) -> BackSelectResult:
    """Backward selection behind replicate ``seed``'s SIS sizes (4.1): its confident images, by
    ``Profile.sis_engine`` if set, else chapter 4's."""
    p, sel, idx = run.profile, selection(run, "test"), _sis_images(run, arch, seed, tau, progress)
    if p.sis_engine is None:
        return backselect_set(run, arch, sel, seed=seed, progress=progress)[idx]
    return backselect_set(run, arch, sel.narrow(idx.tolist()), seed=seed, config=p.sis_engine, progress=progress)


def sis_sizes_by_replicate(run, tau: float) -> dict[str, list[np.ndarray]]:
    """4.1's verdict input: per architecture, an array of SIS pixel fractions per replicate."""
    return {ARCH_NAMES.get(a, a): [np.asarray(sis_fractions(find_sis(sis_result(run, a, run.seed + r, tau), tau)),
                                              dtype=np.float64) for r in range(run.profile.replicates)]
            for a in run.profile.archs}


def sis_ids_by_replicate(run, tau: float) -> dict[str, list[np.ndarray]]:
    """Test-selection positions of :func:`sis_sizes_by_replicate`'s images, parallel to it."""
    def found(a: str, seed: int) -> np.ndarray:
        return _sis_images(run, a, seed, tau)[find_sis(sis_result(run, a, seed, tau), tau).found.cpu()].numpy()
    return {ARCH_NAMES.get(a, a): [found(a, run.seed + r) for r in range(run.profile.replicates)]
            for a in run.profile.archs}


def pooled(by_replicate: dict[str, list]) -> dict[str, np.ndarray]:
    """{model: one array per replicate} -> {model: the replicates' values in one array} (for plots)."""
    return {m: np.concatenate([np.asarray(r, dtype=np.float64) for r in reps]) for m, reps in by_replicate.items()}
