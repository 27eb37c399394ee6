"""Masked inputs made in distribution: counterfactual training (Hase, Xie and Bansal, NeurIPS 2021).

The paper's 5% subsets are 95% mean pixel, an input no zoo model saw in training; a model then reads the
mask itself, and its blank leans to a class (:mod:`overinterp.experiments.blank`). Hase et al.'s remedy
fine-tunes the model on batches doubled with a masked copy at the same labels, the removed share drawn per
batch from {0.5, 0.8, 0.9, 0.95} and its positions at random, so that masked inputs are in distribution.
Fine-tuned this way from each zoo replicate (:class:`overinterp.config.profiles.MaskedTrainingConfig`), a
model is **accepted** where its clean test accuracy stays within ``max_drop`` points of the original and
its blank is uninformative; section 4.1's two claims are then decided on its own 5% BS subsets beside the
zoo's, the question no reproduction or the paper answers: overinterpretation, or missingness?

    models = masked_zoo(run)                     # {arch: [fine-tuned replicate, ...]}
    result = masked_claims(run)                  # accuracies, blank check, the claims' verdicts
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import apply_keep
from overinterp.engine.sis import random_subset
from overinterp.experiments import blank as blank_module
from overinterp.experiments import runs
from overinterp.paper import verdicts as verdicts_module
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo import data
from overinterp.zoo.train import TrainConfig, cached_fit, logits

__all__ = ["masked_copy", "FrozenNorm", "masked_config", "masked_model", "masked_zoo", "MaskedClaims", "masked_claims"]


def masked_copy(removed: tuple, seed: int):
    """``perturb`` for :func:`overinterp.zoo.train.fit`: each batch and a copy of it with a share of its
    pixels (one of ``removed``, drawn per batch) set to 0, the mean pixel, at positions drawn per image,
    at the same labels. Seeded: the same fine-tuning draws the same masks."""
    gen = torch.Generator().manual_seed(seed)
    shares = torch.tensor(removed, dtype=torch.float32)

    def perturb(model, x, y):
        share = shares[torch.randint(len(shares), (1,), generator=gen)]
        keep = (torch.rand((len(x), *x.shape[2:]), generator=gen) >= share).to(x.device)
        return torch.cat([x, apply_keep(x, keep, 0.0)]), torch.cat([y, y])
    return perturb


class FrozenNorm(nn.Module):
    """``model`` whose batch norms stay in eval mode while it trains: they normalise the clean half and the
    masked half of a batch with the zoo model's running statistics, so that the fine-tuning neither mixes
    masked images into the statistics clean images are evaluated with nor trains under statistics that
    evaluation does not use (Hase et al. fine-tune a Transformer, whose layer norm has no such state)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)

    def train(self, mode: bool = True):
        super().train(mode)
        for m in self.model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.eval()
        return self


def masked_config(run, arch: str, seed: int) -> dict:
    """The artifact key of replicate ``seed``'s fine-tuned model: its zoo model's and the fine-tuning's."""
    c = run.profile.masked
    return {**runs.model_config(run.dataset, arch, run.profile.name, seed),
            "masked": {"removed": list(c.removed), "epochs": c.epochs, "lr": c.lr, "train_size": c.train_size,
                       "norm": "frozen"}}


def masked_model(run, arch: str, seed: int, progress: bool = True) -> nn.Module:
    """Replicate ``seed`` of ``arch`` from the zoo fine-tuned by counterfactual training (from the store, or
    trained now and stored): ``epochs`` at the constant rate ``lr``, the zoo recipe otherwise, its batch norms
    frozen (:class:`FrozenNorm`)."""
    c, p = run.profile.masked, run.profile
    base = runs.trained_model(run.dataset, arch, p.name, seed=seed, device=run.device, progress=progress)
    model = FrozenNorm(copy.deepcopy(base))
    recipe = TrainConfig(**{**asdict(p.train), "epochs": c.epochs, "lr": c.lr, "milestones": ()})
    cfg = masked_config(run, arch, seed)
    return cached_fit("model", cfg, model, lambda: data.take(data.load(run.dataset, "train"), c.train_size or p.train_size,
                                                           seed=0),
                      None, recipe, seed, run.device, progress=progress, desc=f"{arch} seed {seed} masked",
                      perturb=masked_copy(c.removed, seed))


def masked_zoo(run, progress: bool = True) -> dict[str, list[nn.Module]]:
    """The fine-tuned replicates: {arch: [model of seed run.seed + r, ...]} for the config's architectures."""
    c, p = run.profile.masked, run.profile
    return {a: [masked_model(run, a, run.seed + r, progress) for r in range(c.replicates or p.replicates)]
            for a in (c.archs or p.archs)}


@dataclass
class MaskedClaims:
    """What the fine-tuned models show beside the zoo's: ``models`` one row per fine-tuned replicate (clean
    test accuracy of it and of its zoo model, the drop, its accuracy on its own 5% BS subsets and on random
    ones, whether its blank is uninformative, accepted); ``blank`` their blank check; section 4.1's claims on
    the accepted replicates' own 5% BS subsets (``accurate``, ``kept``)."""
    models: pd.DataFrame
    blank: blank_module.BlankCheck
    accurate: verdicts_module.Verdict
    kept: verdicts_module.Verdict


def masked_claims(run, frac: float = SUBSET_FRAC, progress: bool = True) -> MaskedClaims:
    """Fine-tune (or load) every replicate of the config's architectures, measure its clean accuracy on the
    whole test set against its zoo model's, its blank under the paper's mask, and decide
    :func:`~overinterp.paper.verdicts.subsets_accurate` and :func:`~overinterp.paper.verdicts.confidence_kept`
    on its own backward selections of the test selection (the profile's engine, stored like the zoo's), from
    the accepted replicates only; the table gives every replicate, with its accuracy on its own BS subsets and
    on chapter 3's random ones (the fine-tuning trains on random masks, so both are in its distribution)."""
    c = run.profile.masked
    tuned = masked_zoo(run, progress)
    whole = data.load(run.dataset, "test")
    sel = runs.selection(run, "test")
    X, Y = sel.load()
    paper_fill = {blank_module.PAPER_FILL: blank_module.fills(run.dataset)[blank_module.PAPER_FILL]}
    check = blank_module.blank_check(run, frac, which=paper_fill, models=tuned)
    passes = {(r["model"], r["replicate"]): r["passes"] for _, r in check.rows.iterrows()}
    rows, full, bs, drops, accepted = [], {}, {}, {}, {}
    for arch, models in tuned.items():
        name = ARCH_NAMES[arch]
        full[name], bs[name], drops[name], accepted[name] = [], [], [], []
        for r, m in enumerate(models):
            seed = run.seed + r
            zoo = runs.trained_model(run.dataset, arch, run.profile.name, seed=seed, device=run.device, progress=False)
            acc = [100 * float((logits(x, whole.images, device=run.device).argmax(1) == whole.labels).double().mean())
                   for x in (m, zoo)]
            diverged = not all(bool(torch.isfinite(w).all()) for w in m.state_dict().values())
            row = {"model": name, "replicate": r, "clean accuracy (%)": math.nan if diverged else acc[0],
                   "zoo accuracy (%)": acc[1], "drop (points)": math.nan if diverged else acc[1] - acc[0],
                   "own BS subsets (%)": math.nan, "random subsets (%)": math.nan,
                   "blank uninformative": bool(passes[(name, r)]) and not diverged, "accepted": False}
            if not diverged:       # a fine-tuning that diverged is reported, not backselected
                res = runs.backselect_model(run, m, masked_config(run, arch, seed), sel, progress=progress)
                own = blank_module.own_subsets(m, res, X, Y, frac, run.device)
                rnd = random_subset(X, frac, seed=runs.subset_seed(run.dataset, "test"), block=res.block,
                                    mask_value=res.mask_value)[0]
                row.update({"own BS subsets (%)": 100 * float(own["bs"].mean()),
                            "random subsets (%)": 100 * float(runs.correct(m, rnd, Y, run.device).mean()),
                            "accepted": bool(passes[(name, r)] and acc[1] - acc[0] <= c.max_drop)})
                for out, k in ((full, "full"), (bs, "bs"), (drops, "drop")):
                    out[name].append(own[k].numpy())
            else:
                for out in (full, bs, drops):
                    out[name].append(None)
            rows.append(row)
            accepted[name].append(row["accepted"])
    pick = {n: [i for i, ok in enumerate(a) if ok] for n, a in accepted.items()}

    def only(d):                     # the accepted replicates of the architectures that have one
        return {n: [d[n][i] for i in pick[n]] for n in d if pick[n]}
    verdicts = (verdicts_module.subsets_accurate(only(full), only(bs), seed=run.seed), verdicts_module.confidence_kept(only(drops), seed=run.seed))
    for v in verdicts:               # an architecture without an accepted replicate cannot test the claim
        for n in (n for n in pick if not pick[n]):
            v.numbers.loc[n, ["replicates", "outcome"]] = [0, verdicts_module.UNTESTABLE]
        v.outcome = verdicts_module.combine(list(v.numbers["outcome"])) if len(v.numbers) else verdicts_module.UNTESTABLE
    return MaskedClaims(pd.DataFrame(rows), check, *verdicts)
