"""Pixel subsets and models retrained on them (paper 4.1, 4.2, Table 1, Table S1, Figure 2), for chapters
4 and 5: 5% backward-selection and random subsets of every evaluation image, the original models' accuracy
and confidence on them, transfer to other models (4.1), and models retrained on the training selection's
subsets and full images (4.2). Selections and models are cached via :mod:`overinterp.experiments.runs`.

    subs = subsets(run, "resnet20", 0.05)          # set -> {"bs", "random", "full": (images, keep), "labels"}
    acc = subset_correct(run, "resnet20", zoo(run)["resnet20"])   # kind -> set -> 1/0 per image and replicate
    models = retrain_on_subsets(run, "resnet20", "bs", augment=False)
"""

import pandas as pd
import torch
import torch.nn as nn

from overinterp.zoo import data
from overinterp.paper import verdicts
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.engine.runner import fingerprint
from overinterp.engine.sis import pixel_subset, random_subset
from overinterp.zoo.train import TrainConfig, cached_fit, make_model, predict
from overinterp.experiments import runs as runs_module
from overinterp.experiments.runs import backselect_set, eval_selections, model_config

RETRAIN_KINDS = ("bs", "random", "full")


def confidence_drop(model: nn.Module, images: torch.Tensor, subset_images: torch.Tensor, device="cpu") -> torch.Tensor:
    """(N,) f(full) - f(subset) for the full image's class (4.1; negative: more confident on it)."""
    full = predict(model, images, device=device)
    pred = full.argmax(1, keepdim=True)
    sub = predict(model, subset_images, device=device)
    return (full.gather(1, pred) - sub.gather(1, pred)).flatten()


def subsets(run, arch: str, frac: float = SUBSET_FRAC, train: bool = False, seed: int | None = None,
            sets: tuple | None = None) -> dict[str, dict]:
    """Per set (of ``sets``): {"bs", "random", "full": (images, keep), "labels"}, BS by replicate ``seed``."""
    out = {}
    for name, sel in eval_selections(run, train).items():
        if sets is not None and name not in sets:
            continue
        X, Y = sel.load()
        res = backselect_set(run, arch, sel, seed)
        out[name] = {"bs": pixel_subset(res, X, frac), "labels": Y,
                     "full": (X, torch.ones_like(X[:, 0], dtype=torch.bool)),
                     "random": random_subset(X, frac, seed=runs_module.subset_seed(run.dataset, name), block=res.block,
                                             mask_value=res.mask_value)}
    return out


def subset_correct(run, arch: str, models: list[nn.Module], frac: float = SUBSET_FRAC) -> dict[str, dict]:
    """Table 1's rows per image (4.1): {"full" | "bs" | "random": {set: 1/0 array per replicate}}."""
    out = {k: {} for k in ("full", "bs", "random")}
    for r, model in enumerate(models):
        subs = subsets(run, arch, frac, seed=run.seed + r)
        for k, sets in out.items():
            for s, d in subs.items():
                sets.setdefault(s, []).append(runs_module.correct(model, d[k][0], d["labels"], run.device))
    return out


def as_accuracies(correct: dict[str, list]) -> pd.DataFrame:
    """{set: 1/0 arrays per replicate} -> accuracy (%) of each replicate (rows) on each set (columns)."""
    return pd.DataFrame({s: [100 * float(c.mean()) for c in reps] for s, reps in correct.items()})


def retrain(run, arch: str, images: torch.Tensor, labels: torch.Tensor, name: str, augment: bool,
            replicates: int | None = None, eval_data: tuple | None = None) -> list[nn.Module]:
    """New ``arch`` models trained on (images, labels) (4.2, S3), seeds run.seed + RETRAIN_SEED_OFFSET + r."""
    p = run.profile
    base = model_config(run.dataset, arch, p.name, run.seed)
    train_cfg = TrainConfig(**{**(p.retrain or p.train).__dict__, "augment": augment})
    out = []
    for r in range(replicates or p.retrain_replicates or p.replicates):
        seed = run.seed + runs_module.RETRAIN_SEED_OFFSET + r
        cfg = {**base, "seed": seed, "train": train_cfg, "train_on": name, "images": fingerprint(images),
               "n": len(images)}
        torch.manual_seed(seed)
        model = make_model(cfg, images.shape[1], len(data.CLASSES[run.dataset]))
        out.append(cached_fit("retrained", cfg, model, images, labels, train_cfg, seed, run.device,
                              desc=f"{arch} on {name} seed {seed}", eval_data=eval_data))
    return out


def retrain_on_subsets(run, arch: str, kind: str, augment: bool, frac: float = SUBSET_FRAC,
                       subs: dict | None = None) -> list[nn.Module]:
    """4.2: models trained on the training selection's ``kind`` subsets or full images (control)."""
    if kind not in RETRAIN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(RETRAIN_KINDS)}, got {kind!r}")
    subs = subs or subsets(run, arch, frac, train=True)
    name = "full" if kind == "full" else f"{kind}{frac:g}"
    return retrain(run, arch, subs["train"][kind][0], subs["train"]["labels"], name, augment,
                   eval_data=(subs["test"][kind][0], subs["test"]["labels"]))


def retrained_correct(run, models: list[nn.Module], kind: str, subs: dict) -> dict[str, list]:
    """{evaluation set: 1/0 array per retrained model on its ``kind`` images} (4.2)."""
    return {s: [runs_module.correct(m, d[kind][0], d["labels"], run.device) for m in models]
            for s, d in subs.items() if s != "train"}


# ----------------------------------------------------------------------------- chapter 4: 5% subsets (4.1)

def example_masks(subs: dict[str, dict], n: int) -> dict[str, torch.Tensor]:
    """Figure 2's rows: first ``n`` BS keep-masks per architecture, then random ones."""
    rows = {f"{ARCH_NAMES[a]} BS": s["test"]["bs"][1][:n] for a, s in subs.items()}
    rows["random"] = subs[next(iter(subs))]["test"]["random"][1][:n]
    return rows


def by_model(acc: dict[str, dict[str, dict]], kind: str, set_name: str = "test") -> dict[str, list]:
    """{architecture name: each replicate's 1/0 array on ``kind`` images of ``set_name``}: verdict input."""
    return {ARCH_NAMES[a]: acc[a][kind][set_name] for a in acc}


def confidence_drops(run, models: dict[str, list[nn.Module]], images: torch.Tensor,
                     frac: float) -> dict[str, list]:
    """{arch name: per replicate :func:`confidence_drop` on its own BS subsets}: verdict input."""
    return {ARCH_NAMES[a]: [confidence_drop(m, images, subsets(run, a, frac, seed=run.seed + r)["test"]["bs"][0],
                                            run.device).double().numpy() for r, m in enumerate(ms)]
            for a, ms in models.items()}


def subset_maps(run, models: dict[str, list[nn.Module]], subs: dict[str, dict]) -> tuple[dict, dict]:
    """Figure 2's heatmaps per architecture (share of the subsets that hold each pixel) and the mean
    confidence of replicate run.seed on its subsets."""
    freqs, conf = {}, {}
    for a, ms in models.items():
        images, keep = subs[a]["test"]["bs"]
        freqs[ARCH_NAMES[a]] = keep.float().mean(0)
        conf[ARCH_NAMES[a]] = float(predict(ms[0], images, device=run.device).max(1).values.mean())
    return freqs, conf


def own_subsets(run, models: dict[str, list[nn.Module]], frac: float, set_name: str = "test") -> dict[str, list]:
    """{arch: per replicate r, the ``frac`` BS subset images of ``set_name`` that replicate r chose}."""
    return {a: [subsets(run, a, frac, seed=run.seed + r)[set_name]["bs"][0] for r in range(len(ms))]
            for a, ms in models.items()}


def transfer(run, models: dict[str, list[nn.Module]], bs_images: dict[str, list],
             labels: torch.Tensor) -> tuple[pd.DataFrame, dict[str, list[dict]]]:
    """4.1's transfer: every zoo model on every replicate's BS test subsets. Returns (accuracy (%) sources x
    models, {arch: per source {model name: 1/0 per image}})."""
    every = {f"{ARCH_NAMES[a]} #{r}": m for a, ms in models.items() for r, m in enumerate(ms)}
    per_image = {a: [{name: runs_module.correct(m, x, labels, run.device) for name, m in every.items()} for x in xs]
                 for a, xs in bs_images.items()}
    table = pd.DataFrame({name: {f"{ARCH_NAMES[a]} #{r}": 100 * float(c[name].mean())
                                 for a, reps in per_image.items() for r, c in enumerate(reps)} for name in every})
    return table, per_image


def no_transfer(per_image: dict[str, list[dict]], acc: dict[str, dict[str, dict]], seed: int = 0) -> verdicts.Verdict:
    """The ``no_transfer`` verdict on :func:`transfer`'s results and sources' random-subset results."""
    own, others, random = {}, {}, {}
    for a, reps in per_image.items():
        me = [f"{ARCH_NAMES[a]} #{r}" for r in range(len(reps))]
        own[ARCH_NAMES[a]] = [c[me[r]] for r, c in enumerate(reps)]
        others[ARCH_NAMES[a]] = [[x for name, x in c.items() if name != me[r]] for r, c in enumerate(reps)]
        random[ARCH_NAMES[a]] = acc[a]["random"]["test"][:len(reps)]
    return verdicts.no_transfer(own=own, others=others, random=random, seed=seed)


# ----------------------------------------------------------------------------- chapter 5: retraining (4.2)

def retraining_runs(run, frac: float) -> tuple[dict, dict, list]:
    """Chapter 5's retrainings (4.2; Table S1 if ``retrain_augment_rows``). Returns ({(arch, kind,
    augment): :func:`retrained_correct`}, {"ResNet20, bs": curve}, every history)."""
    augments = (False, True) if run.profile.retrain_augment_rows else (False,)
    runs, curves, histories = {}, {}, []
    for a in run.profile.archs:
        subs = subsets(run, a, frac, train=True)
        for augment in augments:
            for kind in RETRAIN_KINDS if not augment else ("bs", "random"):
                ms = retrain_on_subsets(run, a, kind, augment, frac, subs)
                runs[(a, kind, augment)] = retrained_correct(run, ms, kind, subs)
                histories += [m.info["history"] for m in ms]
                if not augment:
                    curves[f"{ARCH_NAMES[a]}, {kind}"] = ms[0].info["history"]
    return runs, curves, histories


def retraining_verdicts(run, runs: dict) -> tuple[verdicts.Verdict, verdicts.Verdict]:
    """4.2's two verdicts on unaugmented test accuracies."""
    def pick(kind):
        return {ARCH_NAMES[a]: r["test"] for (a, k, augment), r in runs.items() if k == kind and not augment}
    beats = verdicts.retrain_beats_random(bs=pick("bs"), random=pick("random"), seed=run.seed)
    near = verdicts.retrain_near_full(bs=pick("bs"), full=pick("full"), chance=100 / len(data.CLASSES[run.dataset]),
                               seed=run.seed)
    return beats, near
