"""Counterfactual training (Hase, Xie and Bansal, NeurIPS 2021) makes masked inputs in distribution: the
paper's 5% subsets are 95% mean pixel, unseen in training (see :mod:`.blank`). Each zoo replicate is
fine-tuned on batches doubled with a randomly masked copy (removed share per batch from {0.5, 0.8, 0.9,
0.95}); a model is **accepted** if its clean accuracy drops at most ``max_drop`` points and its blank is
uninformative; 4.1's two claims are then decided on its own 5% BS subsets: overinterpretation, or missingness?
Beside them, as a labelled sensitivity analysis, the same claims on every replicate that did not diverge
(acceptance waived), so a reader sees what the models that failed acceptance say.

    models = masked_zoo(run)                     # {arch: [fine-tuned replicate, ...]}
    result = masked_claims(run)                  # accuracies, blank check, the claims' verdicts
"""
import copy
import math
from dataclasses import asdict, dataclass

import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import apply_keep
from overinterp.engine.sis import random_subset
from overinterp.experiments import blank as blank_module, runs
from overinterp.paper import verdicts as verdicts_module
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo import data
from overinterp.zoo.train import TrainConfig, cached_fit, logits


def masked_copy(removed: tuple, seed: int):
    """``perturb`` for ``fit``: each batch plus a seeded copy with a share of ``removed`` pixels set to 0."""
    gen = torch.Generator().manual_seed(seed)
    shares = torch.tensor(removed, dtype=torch.float32)

    def perturb(model, x, y):
        share = shares[torch.randint(len(shares), (1,), generator=gen)]
        keep = (torch.rand((len(x), *x.shape[2:]), generator=gen) >= share).to(x.device)
        return torch.cat([x, apply_keep(x, keep, 0.0)]), torch.cat([y, y])
    return perturb


class FrozenNorm(nn.Module):
    """``model`` with batch norms kept in eval mode, so masked halves never enter the zoo's statistics
    (Hase et al.'s Transformer has no such state)."""

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
    """Artifact key of replicate ``seed``'s fine-tuned model: the zoo model's plus the fine-tuning's."""
    c = run.profile.masked
    return {**runs.model_config(run.dataset, arch, run.profile.name, seed),
            "masked": {"removed": list(c.removed), "epochs": c.epochs, "lr": c.lr, "train_size": c.train_size,
                       "norm": "frozen"}}


def masked_model(run, arch: str, seed: int, progress: bool = True) -> nn.Module:
    """Cached counterfactually fine-tuned replicate ``seed`` (``epochs`` at constant ``lr``, norms frozen)."""
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


def clean_accuracies(run, arch: str, seed: int, model: nn.Module) -> tuple[float, float]:
    """Test accuracy (%) on the whole test set of fine-tuned ``model`` and of its zoo replicate ``seed``."""
    whole = data.load(run.dataset, "test")
    zoo = runs.trained_model(run.dataset, arch, run.profile.name, seed=seed, device=run.device, progress=False)
    return tuple(100 * float((logits(m, whole.images, device=run.device).argmax(1) == whole.labels).double().mean())
                 for m in (model, zoo))


@dataclass
class MaskedClaims:
    """``models``: a row per fine-tuned replicate (accuracies, drop, blank, accepted); ``blank``: their
    blank check; ``accurate``, ``kept``: 4.1's claims on the accepted replicates; ``accurate_all``,
    ``kept_all``: the same on every replicate that did not diverge (acceptance waived: a sensitivity analysis)."""
    models: pd.DataFrame
    blank: blank_module.BlankCheck
    accurate: verdicts_module.Verdict
    kept: verdicts_module.Verdict
    accurate_all: verdicts_module.Verdict
    kept_all: verdicts_module.Verdict


def masked_claims(run, frac: float = SUBSET_FRAC, progress: bool = True) -> MaskedClaims:
    """Fine-tune every replicate, check accuracy and blank, decide 4.1's two claims on the accepted
    replicates' own BS subsets; the table lists every replicate."""
    c = run.profile.masked
    tuned = masked_zoo(run, progress)
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
            acc = clean_accuracies(run, arch, seed, m)
            diverged = not all(bool(torch.isfinite(w).all()) for w in m.state_dict().values())
            row = {"model": name, "replicate": r, "clean accuracy (%)": math.nan if diverged else acc[0],
                   "zoo accuracy (%)": acc[1], "drop (points)": math.nan if diverged else acc[1] - acc[0],
                   "own BS subsets (%)": math.nan, "random subsets (%)": math.nan,
                   "blank uninformative": bool(passes[(name, r)]) and not diverged, "accepted": False}
            own = None
            if not diverged:       # a fine-tuning that diverged is reported, not backselected
                res = runs.backselect_model(run, m, masked_config(run, arch, seed), sel, progress=progress)
                own = blank_module.own_subsets(m, res, X, Y, frac, run.device)
                rnd = random_subset(X, frac, seed=runs.subset_seed(run.dataset, "test"), block=res.block,
                                    mask_value=res.mask_value)[0]
                row.update({"own BS subsets (%)": 100 * float(own["bs"].mean()),
                            "random subsets (%)": 100 * float(runs.correct(m, rnd, Y, run.device).mean()),
                            "accepted": bool(passes[(name, r)] and acc[1] - acc[0] <= c.max_drop)})
            for out, k in ((full, "full"), (bs, "bs"), (drops, "drop")):
                out[name].append(None if own is None else own[k].numpy())
            rows.append(row)
            accepted[name].append(row["accepted"])
    passed = {n: [i for i, ok in enumerate(a) if ok] for n, a in accepted.items()}
    finite = {n: [i for i, x in enumerate(full[n]) if x is not None] for n in full}
    return MaskedClaims(pd.DataFrame(rows), check, *_decide(full, bs, drops, passed, run.seed),
                        *_decide(full, bs, drops, finite, run.seed))


def _decide(full, bs, drops, pick, seed):
    """4.1's two claims on the replicates ``pick`` = {architecture: [index, ...]}; an architecture without one
    cannot test them."""
    def only(d):
        return {n: [d[n][i] for i in pick[n]] for n in d if pick[n]}
    verdicts = (verdicts_module.subsets_accurate(only(full), only(bs), seed=seed),
                verdicts_module.confidence_kept(only(drops), seed=seed))
    for v in verdicts:
        for n in (n for n in pick if not pick[n]):
            v.numbers.loc[n, ["replicates", "outcome"]] = [0, verdicts_module.UNTESTABLE]
        v.outcome = verdicts_module.combine(list(v.numbers["outcome"])) if len(v.numbers) else verdicts_module.UNTESTABLE
    return verdicts
