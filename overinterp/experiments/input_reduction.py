"""Chapter 15: input reduction (Feng et al. 2018, "Pathologies of neural models make interpretations
difficult", sections 2 and 4; method in :mod:`overinterp.methods.input_reduction`): cached reductions by
the zoo's models and their entropy-fine-tuned versions, their Table 2 on our data, and the verdicts on
"fine-tuning makes reduced inputs (and SIS) larger".

    ex = experiment(run)                          # per-image rows, accuracies, reductions, histories
    v = further_verdicts.size_verdict(ex["images"], min_images=8)  # Feng et al.'s claim (overinterp.paper)
"""
import time
from dataclasses import asdict

import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import apply_keep
from overinterp.engine.runner import fingerprint
from overinterp.engine.sis import find_sis
from overinterp.experiments import runs
from overinterp.experiments.runs import model_config, trained_model
from overinterp.methods.input_reduction import Reduction, finetune, reduce_inputs
from overinterp.paper.numbers import ARCH_NAMES, FENG_MEAN_LENGTH
from overinterp.store import Store
from overinterp.zoo import data
from overinterp.zoo.data import Selection
from overinterp.zoo.train import accuracy, cached_training, make_model

MODELS = ("original", "fine-tuned")


def reduction_selection(run) -> Selection:
    """The first ``input_reduction.images`` of the profile's test selection."""
    sel = runs.selection(run, "test")
    n = min(run.profile.input_reduction.images, sel.n or 10 ** 9)
    return sel.narrow(range(n))


def reduction(run, model: nn.Module, model_cfg: dict, sel, beam: int, progress: bool = True) -> Reduction:
    """Cached ``reduce_inputs`` of ``sel``'s images by ``model`` (keyed by its config and weights)."""
    cfg_ir = run.profile.input_reduction
    X = sel.load()[0]
    key = {"model": {**model_cfg, "weights": fingerprint(model)}, "data": {**sel.key(), "images": fingerprint(X)},
           "beam": beam, "fraction": cfg_ir.fraction, "mask_value": run.profile.backselect.mask_value}
    store = Store()
    saved = store.load("input_reduction", key)
    if saved is None:
        t0 = time.perf_counter()
        res = reduce_inputs(model.to(run.device).eval(), X.to(run.device), beam, cfg_ir.fraction,
                            run.profile.backselect.mask_value, progress=progress)
        saved = {**res.to_payload(), "seconds": time.perf_counter() - t0}
        store.save("input_reduction", key, saved)
    return Reduction(**{k: saved[k] for k in Reduction.__dataclass_fields__})


def negatives(run, arch: str, seed: int, progress: bool = True) -> torch.Tensor:
    """Feng et al.'s negatives X~ for replicate ``seed``: the last beam's inputs of ``train_images`` training
    images, masked, (n, C, H, W)."""
    p, c = run.profile, run.profile.input_reduction
    model = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
    sel = Selection(run.dataset, "train", p.train_size).narrow(range(c.train_images))
    red = reduction(run, model, model_config(run.dataset, arch, p.name, seed), sel, c.train_beam, progress)
    X = sel.load()[0]
    b, keep = red.variants()
    H, W = X.shape[2:]
    return apply_keep(X[b], keep.view(-1, H, W), p.backselect.mask_value)


def finetune_config(run, arch: str, seed: int) -> dict:
    """The fine-tuned model's artifact key: the zoo model's config plus the fine-tuning's."""
    c = run.profile.input_reduction
    return {**model_config(run.dataset, arch, run.profile.name, seed),
            "finetune": {"objective": "Feng et al. 2018 Eq. 2: log-likelihood + lambda * entropy on reduced inputs",
                         **{k: v for k, v in asdict(c).items() if k not in ("images", "beam")},
                         "mask_value": run.profile.backselect.mask_value}}


def finetuned_model(run, arch: str, seed: int, progress: bool = True) -> nn.Module:
    """Cached entropy-fine-tuned replicate ``seed``; ``model.info``: history, seconds, negatives."""
    p, c = run.profile, run.profile.input_reduction
    cfg = finetune_config(run, arch, seed)
    train = data.load(run.dataset, "train")
    torch.manual_seed(seed)
    model = make_model(cfg, train.images.shape[1], len(train.classes))

    def tune(model: nn.Module) -> dict:
        base = trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
        neg = negatives(run, arch, seed, progress)
        model.load_state_dict(base.state_dict())
        model.to(run.device)
        X, Y = data.take(train, p.train_size, seed=0)
        history = finetune(model, X, Y, neg, c.steps, c.lam, c.lr, c.batch_size, seed, progress,
                           desc=f"{arch} seed {seed} entropy fine-tuning")
        return {"history": history, "negatives": len(neg)}
    return cached_training("model", cfg, model, tune).to(run.device).eval()


def experiment(run, progress: bool = True) -> dict:
    """Per replicate: {"images": per (replicate, model, image) reduced size, confidences, SIS size (pixels,
    -1: none); "accuracy" (%); "reductions"; "history"}; model "original" | "fine-tuned"."""
    p, c = run.profile, run.profile.input_reduction
    sel = reduction_selection(run)
    X, Y = sel.load()
    Xt, Yt = runs.selection(run, "test").load()
    rows, acc, reds, hist = [], [], {}, {}
    for r in range(p.replicates):
        seed = run.seed + r
        orig = trained_model(run.dataset, c.arch, p.name, seed=seed, device=run.device, progress=progress)
        tuned = finetuned_model(run, c.arch, seed, progress)
        hist[r] = tuned.info["history"]
        bs_orig = runs.backselect_set(run, c.arch, runs.selection(run, "test"), seed, progress=progress)[list(sel.index)]
        bs_tuned = runs.backselect_model(run, tuned, finetune_config(run, c.arch, seed), (X, sel.key()), p.engine("test"),
                                      progress=progress)
        for name, model, cfg, bs in (("original", orig, model_config(run.dataset, c.arch, p.name, seed), bs_orig),
                                     ("fine-tuned", tuned, finetune_config(run, c.arch, seed), bs_tuned)):
            red = reduction(run, model, cfg, sel, c.beam, progress)
            reds[(r, name)] = red
            full, reduced = red.confidence
            sis = find_sis(bs, p.sis_threshold)
            sis_px = torch.where(sis.size >= 0, sis.mask.flatten(1).sum(1), -1)      # pixels (features may be blocks)
            rows.append(pd.DataFrame({"replicate": r, "model": name, "image": range(len(X)),
                                      "correct": (red.pred.cpu() == Y).numpy(), "reduced size": red.size.cpu().numpy(),
                                      "confidence (original)": full.cpu().numpy(),
                                      "confidence (reduced)": reduced.cpu().numpy(),
                                      "SIS size": sis_px.cpu().numpy()}))
            acc.append({"replicate": r, "model": name, "test accuracy (%)": 100 * accuracy(model, Xt, Yt, run.device)})
    return {"images": pd.concat(rows, ignore_index=True), "accuracy": pd.DataFrame(acc), "reductions": reds,
            "history": hist}


# ----------------------------------------------------------------------------- their Table 2 and the verdicts

def table2(images: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """Their Table 2 on our data: per replicate, accuracy (%) and mean reduced size (pixels), before and after."""
    size = images.pivot_table(index="replicate", columns="model", values="reduced size", aggfunc="mean")
    a = acc.pivot(index="replicate", columns="model", values="test accuracy (%)")
    return pd.DataFrame({"accuracy before": a["original"], "accuracy after": a["fine-tuned"],
                         "reduced size before": size["original"], "reduced size after": size["fine-tuned"]})


def table2_summary(images: pd.DataFrame, acc: pd.DataFrame, arch: str) -> pd.DataFrame:
    """:func:`table2`'s mean and std over replicates: one row ``arch``, columns (column, 'mean' | 'std')."""
    return runs.mean_std(table2(images, acc)).to_frame().T.set_axis([ARCH_NAMES.get(arch, arch)])


def feng_lengths() -> pd.DataFrame:
    """Their Figure 3's mean lengths (words) of the original and the reduced inputs, per task."""
    return pd.DataFrame({"original length (words)": {k: v[0] for k, v in FENG_MEAN_LENGTH.items()},
                         "reduced length (words)": {k: v[1] for k, v in FENG_MEAN_LENGTH.items()}}).rename_axis(
        "Feng et al. (NLP)")
