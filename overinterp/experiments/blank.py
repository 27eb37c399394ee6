"""The fully masked input, precondition of every claim on masked inputs (section 4.1). google-research
``sis.py``: "one should check that the function's prediction on the fully-masked input is uninformative";
a confident blank makes heavily masked inputs lean to its class (missingness bias, Jain et al. 2022).

Per zoo replicate and fill (mean pixel, black, constant greys, training-mean image): the blank's class and
probability (from log-softmax: float32 softmax saturates), and on random ``frac`` subsets the entropy (bits)
of the predicted classes and the share called the blank's class beside its prior; a blank passes while its
probability is at most :data:`UNINFORMATIVE_MULTIPLE` times a class's prior. :func:`restricted` decides 4.1's
two claims on the images whose label is not a blank class.

    check = blank_check(run)
    check.accepted()             # the fills whose blank passes for every replicate
"""
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from overinterp.engine.sis import pixel_subset, random_subset
from overinterp.experiments import runs
from overinterp.paper import verdicts
from overinterp.paper.claims import BLANK_PRIOR_MULTIPLE, CLAIMS
from overinterp.paper.formatting import number
from overinterp.paper.numbers import ARCH_NAMES, SUBSET_FRAC
from overinterp.zoo import data
from overinterp.zoo.train import logits

PAPER_FILL = "mean pixel"                          # section 3.3: masked pixels take the mean pixel (0 normalised)
LEVELS = tuple(round(0.1 * i, 1) for i in range(11))   # constant greys searched, in [0, 1] pixel units
#: a blank is uninformative while its top-class probability is at most this multiple of a class's prior
UNINFORMATIVE_MULTIPLE = BLANK_PRIOR_MULTIPLE


def fills(dataset: str) -> dict[str, torch.Tensor]:
    """Name -> normalised (C, H, W) fill: mean pixel, each grey of :data:`LEVELS`, training-mean image."""
    test = data.load(dataset, "test")
    C, H, W = test.images.shape[1:]
    mean, std = torch.tensor(test.mean).view(-1, 1, 1), torch.tensor(test.std).view(-1, 1, 1)
    out = {PAPER_FILL: torch.zeros(C, H, W)}
    for g in LEVELS:
        out[f"grey {number(g)}"] = ((g - mean) / std).expand(C, H, W).clone()
    out["training-mean image"] = data.load(dataset, "train").images.mean(0)
    return out


@dataclass(frozen=True)
class BlankCheck:
    """``rows``: per (model, replicate, fill) class, probability, log-odds, subset entropy (bits), share
    called the blank's class, class prior, passes; ``bound``: largest uninformative probability."""
    rows: pd.DataFrame
    bound: float
    classes: int
    frac: float

    def passes(self, fill: str = PAPER_FILL) -> dict[str, bool]:
        """Per architecture name: whether every replicate's blank passes under ``fill``."""
        g = self.rows[self.rows["fill"] == fill]
        return {m: bool(x["passes"].all()) for m, x in g.groupby("model", sort=False)}

    def accepted(self) -> list[str]:
        """The fills whose blank passes for every replicate, in :func:`fills`' order."""
        ok = self.rows.groupby("fill", sort=False)["passes"].all()
        return [f for f, v in ok.items() if v]

    def classes_of(self, fill: str = PAPER_FILL) -> dict[str, list[str]]:
        """Per architecture name: the blank's classes over its replicates (unique, in order)."""
        g = self.rows[self.rows["fill"] == fill]
        return {m: list(dict.fromkeys(x["class"])) for m, x in g.groupby("model", sort=False)}

    def summary(self, fill: str | None = None) -> pd.DataFrame:
        """Per (model, fill): blank's classes, probability range, mean entropy, shares, replicates passing."""
        rows = self.rows if fill is None else self.rows[self.rows["fill"] == fill]
        return rows.groupby(["model", "fill"], sort=False).agg(
            **{"class": ("class", lambda c: ", ".join(dict.fromkeys(c))), "lowest probability": ("probability", "min"),
               "highest probability": ("probability", "max"),
               "subset entropy (bits)": ("subset entropy (bits)", "mean"),
               "called the blank's class (%)": ("called the blank's class (%)", "mean"),
               "class prior (%)": ("class prior (%)", "mean"), "replicates passing": ("passes", "sum"),
               "replicates": ("passes", "size")})


def blank_check(run, frac: float = SUBSET_FRAC, which: dict[str, torch.Tensor] | None = None,
                models: dict[str, list] | None = None) -> BlankCheck:
    """Each zoo replicate (or ``models``) on each fill's blank and on chapter 4's random ``frac`` subsets."""
    X, _ = runs.selection(run, "test").load()
    names = data.load(run.dataset, "test").classes
    k = len(names)
    which = fills(run.dataset) if which is None else which
    keep = random_subset(X, frac, seed=runs.subset_seed(run.dataset, "test"))[1][:, None]
    rows = []
    for arch, replicates in (runs.zoo(run) if models is None else models).items():
        for r, model in enumerate(replicates):
            full = logits(model, X, device=run.device).argmax(1)
            for fill, v in which.items():
                z = torch.cat([logits(model, v[None], device=run.device),
                               logits(model, torch.where(keep, X, v[None]), device=run.device)])
                logp = F.log_softmax(z.double(), -1)
                c = int(logp[0].argmax())
                top, rest = float(logp[0, c]), float(torch.logsumexp(torch.cat([logp[0, :c], logp[0, c + 1:]]), 0))
                sub = logp[1:].argmax(1)
                share = torch.bincount(sub, minlength=k).double() / len(sub)
                share = share[share > 0]
                rows.append({"model": ARCH_NAMES[arch], "replicate": r, "fill": fill, "class": names[c],
                             "probability": math.exp(top), "log-odds": top - rest,
                             "subset entropy (bits)": max(0.0, float(-(share * share.log2()).sum())),  # no -0.0
                             "called the blank's class (%)": 100 * float((sub == c).double().mean()),
                             "class prior (%)": 100 * float((full == c).double().mean()),
                             "passes": math.exp(top) <= UNINFORMATIVE_MULTIPLE / k})
    return BlankCheck(pd.DataFrame(rows), UNINFORMATIVE_MULTIPLE / k, k, frac)


def own_subsets(model, res, X: torch.Tensor, Y: torch.Tensor, frac: float, device) -> dict[str, torch.Tensor]:
    """A replicate on its own ``frac`` BS subsets: per image "full class", "subset class", 1/0 "full" and
    "bs", "drop" of the full class's probability (4.1)."""
    pf = F.softmax(logits(model, X, device=device).double(), -1)
    ps = F.softmax(logits(model, pixel_subset(res, X, frac)[0], device=device).double(), -1)
    conf = pf.max(1)
    return {"full class": conf.indices, "subset class": ps.argmax(1), "full": (conf.indices == Y).double(),
            "bs": (ps.argmax(1) == Y).double(), "drop": conf.values - ps.gather(1, conf.indices[:, None]).squeeze(1)}


@dataclass
class Restricted:
    """4.1's two claims on images whose label is no blank class, beside BS subsets called the blank's class."""
    accurate: verdicts.Verdict
    kept: verdicts.Verdict
    called: pd.DataFrame       # per model: images kept, blank's classes, BS subsets called them (%), prior


def restricted(run, check: BlankCheck | None = None, frac: float = SUBSET_FRAC) -> Restricted:
    """4.1's two claims on chapter 4's 5% BS subsets of test images whose label is none of the architecture's
    blank classes. ``check``: a :func:`blank_check` with the paper's fill (default: computed)."""
    X, Y = runs.selection(run, "test").load()
    names = data.load(run.dataset, "test").classes
    check = check or blank_check(run, frac, which={PAPER_FILL: fills(run.dataset)[PAPER_FILL]})
    blank = check.rows[check.rows["fill"] == PAPER_FILL]
    full, bs, drops, called = {}, {}, {}, {}
    for arch, models in runs.zoo(run).items():
        name = ARCH_NAMES[arch]
        mine = blank[blank["model"] == name].sort_values("replicate")
        cls = [names.index(c) for c in dict.fromkeys(mine["class"])]
        keep = ~torch.isin(Y, torch.tensor(cls))
        full[name], bs[name], drops[name], shares, priors = [], [], [], [], []
        for r, model in enumerate(models):
            res = runs.backselect_set(run, arch, runs.selection(run, "test"), seed=run.seed + r, progress=False)
            m = own_subsets(model, res, X, Y, frac, run.device)
            b = names.index(mine["class"].iloc[r])
            shares.append(100 * float((m["subset class"] == b).double().mean()))
            priors.append(100 * float((m["full class"] == b).double().mean()))
            for out, k in ((full, "full"), (bs, "bs"), (drops, "drop")):
                out[name].append(m[k][keep].numpy())
        called[name] = {"images kept": int(keep.sum()), "images": len(Y), "blank's classes": ", ".join(
            names[c] for c in cls), "BS subsets called the blank's class (%)": float(np.mean(shares)),
            "its prior (%)": float(np.mean(priors))}
    return Restricted(verdicts.subsets_accurate(full, bs, seed=run.seed), verdicts.confidence_kept(drops, seed=run.seed),
                      pd.DataFrame.from_dict(called, orient="index"))


_PAPER_CHECKS: dict = {}   # the paper's fill only, per run: what every verdict on masked inputs carries


def paper_passes(run) -> dict[str, bool]:
    """Per architecture name: every replicate's blank uninformative under the paper's mask (cached)."""
    key = (run.dataset, run.profile.name, run.seed, str(run.device))
    if key not in _PAPER_CHECKS:
        _PAPER_CHECKS[key] = blank_check(run, which={PAPER_FILL: fills(run.dataset)[PAPER_FILL]}).passes()
    return _PAPER_CHECKS[key]


def engine_of(run, claim: str) -> str:
    """The backward selection behind ``claim``'s subsets, described ('' where its chapter picks its own)."""
    p, which = run.profile, CLAIMS[claim].engine
    engine = {"test": p.engine("test"), "train": p.engine("train"),
              "sis": p.sis_engine or p.engine("test")}.get(which)
    return engine.describe() if engine is not None else ""


def annotate(run, claim: str, verdict: verdicts.Verdict) -> verdicts.Verdict:
    """``verdict`` with ``claim``'s engine and, for masked-input claims, each architecture's blank check."""
    verdict.engine = engine_of(run, claim)
    if CLAIMS[claim].blank:
        verdict.blank_passes = paper_passes(run)
    return verdict
