"""Chapter 16: Bayes-TrEx (Booth et al., AAAI 2021; :mod:`overinterp.methods.bayes_trex`, cached in
:mod:`.bayes_trex_cache`): the targets' chains, their confidence and diagnostics (shown beside Booth et al.'s
Table 2 by :mod:`overinterp.pages.bayes_trex`), the test set's counts (their 4.10), and SIS sizes of sampled images
("generated images are classified from sparse pixels too", paper 4.1).

    targets, mis_name = chapter_targets(run, names)    # name -> (Target, which VAE)
    chains, logits = run_targets(run, targets, vaes(run))
"""
import math
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import logit
from overinterp.engine.runner import fingerprint
from overinterp.engine.sis import find_sis
from overinterp.experiments import runs
from overinterp.experiments.bayes_trex_cache import (cached_chains, chains_config, chains_settings, pixels,
                                                     trained_vae, vae_config, vae_settings)
from overinterp.methods.bayes_trex import (AMBIGUOUS, BAND, HIGH, HIGH_LEVEL, MISCLASSIFIED_LEVEL, MIXING, VAE,
                                           Chains, MixingCriteria, Target, ambiguous, ambiguous_any,
                                           chain_separation, decoder, high, in_level_set, initial_points,
                                           near_black, normalise, sample_chains, spread_samples, target_log_odds)
from overinterp.store import Store, config_key
from overinterp.zoo import data
from overinterp.zoo.train import logits as batched_logits


HIGH_COL = f"f_c ≥ {HIGH_LEVEL:g}"                   # criteria named where a share is shown (tables' headers)
MIS_COL = f"f_c ≥ {MISCLASSIFIED_LEVEL:g}"
AMB_COL = f"both in {BAND[0]:g}–{BAND[1]:g}"
APART = 2.0        # chains "sit apart": chain means at least 2 pooled within-chain sds apart in some latent dimension
DARK_LEVEL = 0.1    # near-black: mean pixel intensity (Fashion-MNIST test mean 0.29; 2% of its T-shirts are below)


def confidence_table(logits: dict[str, torch.Tensor], targets: dict[str, Target], chains: dict[str, Chains],
                     level: float = HIGH_LEVEL, band: tuple = BAND, mis_level: float = MISCLASSIFIED_LEVEL,
                     criteria: MixingCriteria = MIXING) -> pd.DataFrame:
    """Per target: Booth et al.'s Table 2 (mean, std of the target classes' confidence), share (%) meeting
    each criterion (NaN: n/a), chain diagnostics. ``logits[name]``: (C*S, K)."""
    rows = {}
    for name, t in targets.items():
        p = torch.softmax(logits[name].double(), 1)
        ch = chains[name]
        row = {}
        for k, c in enumerate(t.classes):
            row[f"mean f (class {k + 1})"] = p[:, c].mean().item()
            row[f"std f (class {k + 1})"] = p[:, c].std().item() if len(p) > 1 else 0.0
        if t.kind == HIGH:
            lo = target_log_odds(logits[name], t.classes[0])
            row[HIGH_COL] = 100 * (lo >= logit(level)).double().mean().item()
            row[MIS_COL] = 100 * (lo >= logit(mis_level)).double().mean().item()
        else:
            row[AMB_COL] = 100 * in_level_set(logits[name], t, level, band).double().mean().item()
        fails = criteria.failures(ch)
        row.update({"samples": len(p), "acceptance": float(np.mean(ch.acceptance)),
                    "divergences": int(sum(ch.divergences)), "max r_hat": ch.r_hat.max().item(),
                    "min ESS": ch.ess.min().item(), "separation": chain_separation(ch.z).max().item(),
                    "mixed": not fails, "why not": "; ".join(fails), "seconds": ch.seconds})
        rows[name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    share_cols = [c for c in (HIGH_COL, MIS_COL, AMB_COL) if c in out]
    first = [c for c in out if c.startswith(("mean f", "std f"))]
    return out[first + share_cols + [c for c in out if c not in first + share_cols]]


def test_set_counts(logits: torch.Tensor, labels: torch.Tensor, targets: dict[str, Target],
                    held_out: dict[str, int] | None = None, level: float = HIGH_LEVEL, band: tuple = BAND,
                    misclassified_level: float = MISCLASSIFIED_LEVEL, classes: Sequence[str] | None = None
                    ) -> pd.DataFrame:
    """Test images (``logits`` (N, K), ``labels`` (N,)) in each target's level set; for ``held_out``
    targets, other classes' images put in it with f_c >= ``misclassified_level`` (Booth et al. 4.10)."""
    held_out = held_out or {}
    rows = {}
    for name, t in targets.items():
        n = [classes[c] if classes else str(c) for c in t.classes]
        if name in held_out:
            c = held_out[name]
            hit = (target_log_odds(logits, c) >= logit(misclassified_level)) & (labels != c)
            crit = f"f_{n[0]} ≥ {misclassified_level:g}, label ≠ {n[0]}"
        else:
            hit = in_level_set(logits, t, level, band)
            crit = f"f_{n[0]} ≥ {level:g}" if t.kind == HIGH else f"f_{n[0]}, f_{n[1]} in {band[0]:g}–{band[1]:g}"
        rows[name] = {"criterion": crit, "test images": len(labels), "meet it": int(hit.sum()),
                      "meet it (%)": 100 * hit.double().mean().item()}
    return pd.DataFrame.from_dict(rows, orient="index")


def classifier(run) -> tuple[nn.Module, dict]:
    """The inspected zoo model (trained if missing) and its artifact key with the weights' fingerprint."""
    arch, p = run.profile.bayes_trex.arch, run.profile
    with torch.enable_grad():   # callers run under no_grad; a model not yet in the store is trained here
        model = runs.trained_model(run.dataset, arch, p.name, seed=run.seed, device=run.device, progress=False)
    return model, {**runs.model_config(run.dataset, arch, p.name, run.seed), "weights": fingerprint(model)}


def vaes(run, store: Store | None = None, progress: bool = True) -> dict[str, VAE]:
    """The two data distributions: "all" classes and "held out" (without ``bayes_trex.held_out``)."""
    cfg, vc = run.profile.bayes_trex, vae_settings(run.profile.bayes_trex)
    return {"all": trained_vae(run.dataset, vc, None, run.seed, store, progress).to(run.device),
            "held out": trained_vae(run.dataset, vc, cfg.held_out, run.seed, store, progress).to(run.device)}


def run_target(run, target: Target, vae: VAE, held_out: int | None = None, progress: bool = True) -> Chains:
    """Cached chains of ``target`` in ``vae``'s latent space, ``info["init"]`` their starts (chains, latent)."""
    vc, cc = vae_settings(run.profile.bayes_trex), chains_settings(run.profile.bayes_trex)
    clf, clf_key = classifier(run)
    gen = decoder(vae, run.dataset)
    key = chains_config(vae_config(run.dataset, vc, held_out, run.seed), clf_key, target, cc, run.seed)

    def starts() -> torch.Tensor:
        X, Y = pixels(run.dataset, "train")
        X = X if held_out is None else X[Y != held_out]
        pool = X[torch.randperm(len(X), generator=torch.Generator().manual_seed(1))[:cc.init_pool]]
        return initial_points(vae, gen, clf, target, pool, cc.chains, cc.sigma)

    def sample() -> Chains:
        return sample_chains(gen, clf, target, sigma=cc.sigma, latent=vc.latent, chains=cc.chains,
                             warmup=cc.warmup, samples=cc.samples, max_tree_depth=cc.max_tree_depth,
                             seed=run.seed, init=starts(), device=run.device, progress=progress)
    ch = cached_chains(key, sample, target)
    if "init" not in ch.info:
        ch.info["init"] = starts().cpu()
    return ch


@torch.no_grad()
def sample_logits(run, vae: VAE, chains: Chains, batch_size: int = 500) -> torch.Tensor:
    """(C*S, K) logits of the inspected classifier on the decoded samples."""
    clf, _ = classifier(run)
    gen, z = decoder(vae, run.dataset), chains.flat().to(run.device)
    return torch.cat([clf(gen(z[i:i + batch_size])).cpu() for i in range(0, len(z), batch_size)])


def sample_backselect(run, vae: VAE, chains: dict[str, Chains], n: int, progress: bool = True):
    """(images (n', C, H, W) normalised, target name per image, cached backward selection) of the ~n / targets
    most confident distinct samples per high target."""
    clf, clf_key = classifier(run)
    per = max(1, math.ceil(n / max(1, len(chains))))
    images, names = [], []
    with torch.no_grad():
        for name, ch in chains.items():
            z = torch.unique(ch.flat(), dim=0)              # NUTS repeats a sample when it rejects a step
            x = decoder(vae, run.dataset)(z.to(run.device))
            conf = target_log_odds(clf(x), ch.target.classes[0]).cpu()
            idx = conf.topk(min(per, len(z))).indices
            images.append(x[idx].cpu())
            names += [name] * len(idx)
    images = torch.cat(images)
    data_cfg = {"set": "bayes-trex", "chains": [config_key(ch.info.get("key", {})) for ch in chains.values()],
                "per_target": per, "pick": "most confident"}
    res = runs.backselect_model(run, clf, {k: v for k, v in clf_key.items() if k != "weights"}, (images, data_cfg),
                                run.profile.backselect, progress=progress)
    return images, names, res


@torch.no_grad()
def vae_quality(run, vaes: dict[str, VAE], images: torch.Tensor, labels: torch.Tensor, held_out: int,
                n_prior: int = 1000, n_eval: int | None = 2000) -> pd.DataFrame:
    """Per VAE: training, test -ELBO (nats/image), accuracy (%) on test images and their reconstructions,
    share (%) of ``n_prior`` prior samples called the held-out class."""
    clf, _ = classifier(run)
    if n_eval is not None and n_eval < len(labels):
        idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:n_eval]
        images, labels = images[idx], labels[idx]
    name = data.CLASSES[run.dataset][held_out]
    gen = torch.Generator().manual_seed(run.seed)

    def predict(x01):
        return torch.cat([clf(normalise(x01[i:i + 1000], run.dataset)).argmax(1).cpu()
                          for i in range(0, len(x01), 1000)])
    rows = {}
    for key, vae in vaes.items():
        keep = torch.ones(len(labels), dtype=torch.bool) if key == "all" else labels != held_out
        x, y = images[keep].to(run.device), labels[keep]
        rec = torch.cat([vae.reconstruct(x[i:i + 1000]) for i in range(0, len(x), 1000)])
        prior = vae.decode(torch.randn(n_prior, vae.mu.out_features, generator=gen).to(run.device))
        rows["all classes" if key == "all" else f"without {name}"] = {
            "training images": vae.info["train_images"], "epochs": len(vae.info["history"]),
            "test −ELBO (nats)": vae.info["test_loss"],
            "accuracy on test images (%)": 100 * (predict(x) == y).double().mean().item(),
            "accuracy on reconstructions (%)": 100 * (predict(rec) == y).double().mean().item(),
            f"prior samples called {name} (%)": 100 * (predict(prior) == held_out).double().mean().item(),
            "training seconds": vae.info["seconds"]}
    return pd.DataFrame.from_dict(rows, orient="index")


def near_black_counts(images: dict[str, torch.Tensor], logits: dict[str, torch.Tensor], targets: dict[str, Target],
                      n_show: int, level: float = DARK_LEVEL, confident: float = HIGH_LEVEL) -> dict:
    """Near-black (mean < ``level``) confident (f_c >= ``confident``) high-target samples, shown and kept.
    ``images[name]``: (C*S, 1, H, W) in [0, 1]."""
    out = dict.fromkeys(("shown_confident", "shown_dark", "kept_confident", "kept_dark"), 0)
    for name, t in targets.items():
        if t.kind != HIGH:
            continue
        conf = target_log_odds(logits[name], t.classes[0]) >= logit(confident)
        dark = near_black(images[name], level)
        shown = torch.zeros_like(conf)
        shown[spread_samples(len(conf), n_show)] = True
        out["shown_confident"] += int((conf & shown).sum())
        out["shown_dark"] += int((conf & shown & dark).sum())
        out["kept_confident"] += int(conf.sum())
        out["kept_dark"] += int((conf & dark).sum())
    return out


def near_black_summary(vaes: dict[str, VAE], chains: dict[str, Chains], logits: dict, targets: dict[str, Target],
                       n_show: int, test_images: torch.Tensor, test_labels: torch.Tensor,
                       level: float = DARK_LEVEL) -> dict:
    """:func:`near_black_counts` of the decoded chains, and the near-black test images: all of them, and those of
    the high targets' classes (``classes``); ``test_mean`` is the test images' mean pixel."""
    with torch.no_grad():
        decoded = {k: vaes[k].decode(ch.flat().to(next(vaes[k].parameters()).device)).cpu() for k, ch in chains.items()}
    dark = near_black(test_images, level)
    cls = sorted({t.classes[0] for t in targets.values() if t.kind == HIGH})
    of_cls = torch.isin(test_labels, torch.tensor(cls))
    return {**near_black_counts(decoded, logits, targets, n_show, level), "level": level, "classes": cls,
            "test_mean": test_images.mean().item(), "dark_test": int(dark.sum()), "n_test_images": len(test_labels),
            "dark_test_cls": int((dark & of_cls).sum()), "n_test_cls": int(of_cls.sum())}


def chapter_targets(run, names) -> tuple[dict[str, tuple[Target, str]], str]:
    """(name -> (Target, the VAE sampled: "all" | "held out"), the misclassification target's name)."""
    cfg = run.profile.bayes_trex
    targets = {high(c).name(names): (high(c), "all") for c in cfg.high_classes}
    targets.update({ambiguous(i, j).name(names): (ambiguous(i, j), "all") for i, j in cfg.ambiguous_pairs})
    mis_name = high(cfg.held_out).name(names) + f" (VAE without {names[cfg.held_out]})"
    targets[mis_name] = (high(cfg.held_out), "held out")
    return targets, mis_name


def target_map(targets: dict) -> dict[str, Target]:
    """Name -> Target of :func:`chapter_targets`' targets."""
    return {k: t for k, (t, _) in targets.items()}


def run_targets(run, targets: dict, vaes: dict[str, VAE], progress: bool = False) -> tuple[dict, dict]:
    """(chains, logits) per target name: :func:`run_target` then :func:`sample_logits`."""
    chains, logits = {}, {}
    for name, (t, which) in targets.items():
        held = run.profile.bayes_trex.held_out if which == "held out" else None
        chains[name] = run_target(run, t, vaes[which], held, progress=progress)
        logits[name] = sample_logits(run, vaes[which], chains[name])
    return chains, logits


def test_comparison(run, split, targets: dict, mis_name: str, logits: dict, table: pd.DataFrame):
    """(:func:`test_set_counts` beside the chain samples' shares (%), the test set's counts): Booth et al.'s 4.10."""
    held_out = run.profile.bayes_trex.held_out
    tl = batched_logits(classifier(run)[0], split.images, device=run.device)     # (N, K), on the CPU
    counts = test_set_counts(tl, split.labels, target_map(targets), held_out={mis_name: held_out},
                             classes=split.classes)
    counts["chain samples meeting it (%)"] = [
        table.loc[k, MIS_COL] if k == mis_name else table.loc[k, HIGH_COL if t.kind == HIGH else AMB_COL]
        for k, t in target_map(targets).items()]
    mis_any = ((torch.softmax(tl.double(), 1).max(1).values >= MISCLASSIFIED_LEVEL) & (tl.argmax(1) != split.labels))
    amb_name = [k for k, (t, _) in targets.items() if t.kind == AMBIGUOUS][0]
    return counts, {"n_test": len(split.labels), "amb_any": int(ambiguous_any(tl).sum()),
                    "mis_any": int(mis_any.sum()), "amb_pair_test": int(counts.loc[amb_name, "meet it"]),
                    "mis_test": int(counts.loc[mis_name, "meet it"])}


def sis_comparison(run, targets: dict, chains: dict, vae: VAE, tau: float) -> dict:
    """SIS at ``tau`` of sampled high-confidence images and of the SIS chapter's test images (paper 4.1): images,
    which, classes, sis, SIS sizes (pixel fractions) "generated" and "real", prose values."""
    cfg = run.profile.bayes_trex
    high_chains = {k: chains[k] for k, (t, w) in targets.items() if t.kind == HIGH and w == "all"}
    Xs, which, res = sample_backselect(run, vae, high_chains, cfg.sis_images, progress=False)
    sis = find_sis(res, tau)
    gen_sizes = runs.sis_fractions(sis)
    real_sizes = runs.sis_fractions(find_sis(runs.backselect_set(run, cfg.arch, runs.confident_selection(run, tau),
                                                                 progress=False), tau))
    return {"images": Xs, "which": which, "classes": [targets[k][0].classes[0] for k in which], "sis": sis,
            "generated": gen_sizes, "real": real_sizes,
            "values": {"method": run.profile.backselect.describe(), "n_gen": len(Xs), "n_gen_sis": len(gen_sizes),
                       "n_real": len(real_sizes)}}
