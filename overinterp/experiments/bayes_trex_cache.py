"""Bayes-TrEx's cached artifacts (chapter 16): the VAEs and NUTS chains, keyed by their whole config so that
any change trains or samples anew. :mod:`overinterp.experiments.bayes_trex` runs them.

    vae = trained_vae("fashion-mnist", vae_settings(profile.bayes_trex), held_out=8)
    chains = cached_chains(chains_config(vae_key, classifier_key, target, cfg, seed), sample, target)
"""
from dataclasses import asdict
from typing import Callable

import torch

from overinterp.config.profiles import BayesTrExConfig
from overinterp.methods.bayes_trex import (VAE, Chains, ChainsConfig, Target, VAEConfig, fit_vae, negative_elbo,
                                           torch_threads)
from overinterp.store import Store
from overinterp.zoo import data
from overinterp.zoo.train import cached_training

KIND = "bayes_trex"


# ----------------------------------------------------------------------------- the VAEs, cached
def pixels(dataset: str, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """(images in [0, 1] (N, C, H, W), labels) of a split: what the VAE models."""
    s = data.load(dataset, split)
    return s.denormalise().clamp(0, 1), s.labels


def vae_settings(cfg: BayesTrExConfig) -> VAEConfig:
    """The VAE's config from the profile's Bayes-TrEx settings."""
    return VAEConfig(latent=cfg.latent, hidden=cfg.hidden, epochs=cfg.vae_epochs, train_size=cfg.vae_train_size,
                     batch_size=cfg.vae_batch_size, lr=cfg.vae_lr)


def chains_settings(cfg: BayesTrExConfig) -> ChainsConfig:
    """The chains' config from the profile's Bayes-TrEx settings."""
    return ChainsConfig(sigma=cfg.sigma, chains=cfg.chains, warmup=cfg.warmup, samples=cfg.samples,
                        max_tree_depth=cfg.max_tree_depth, init_pool=cfg.init_pool)


def vae_config(dataset: str, cfg: VAEConfig, held_out: int | None = None, seed: int = 0) -> dict:
    """The VAE's artifact key: ``cfg``, data set, held-out class, seed."""
    return {"dataset": dataset, **asdict(cfg), "held_out": held_out, "seed": seed}


def trained_vae(dataset: str, cfg: VAEConfig, held_out: int | None = None, seed: int = 0,
                store: Store | None = None, progress: bool = True) -> VAE:
    """Cached VAE of ``dataset``'s training images (without ``held_out``; first ``cfg.train_size`` seeded).
    ``vae.info``: history, test -ELBO (nats per image), seconds, training images."""
    key = vae_config(dataset, cfg, held_out, seed)
    X, Y = pixels(dataset, "train")
    if held_out is not None and not 0 <= held_out < len(data.CLASSES[dataset]):
        raise ValueError(f"held_out={held_out} is not a class of {dataset} (0 to {len(data.CLASSES[dataset]) - 1})")
    torch.manual_seed(seed)
    vae = VAE(X.shape[1:], cfg.hidden, cfg.latent)
    keep = torch.ones(len(Y), dtype=torch.bool) if held_out is None else Y != held_out
    idx = keep.nonzero().flatten()
    idx = idx[torch.randperm(len(idx), generator=torch.Generator().manual_seed(0))][:cfg.train_size]

    def train(vae: VAE) -> dict:
        with torch_threads(1):   # a small dense net: one thread is as fast, and robust to a busy machine
            history = fit_vae(vae, X[idx], cfg.epochs, cfg.batch_size, cfg.lr, seed, progress)
        return {"history": history, "train_images": len(idx)}

    def evaluate(vae: VAE) -> dict:
        Xt, Yt = pixels(dataset, "test")
        Xt = Xt if held_out is None else Xt[Yt != held_out]
        with torch.no_grad():
            return {"test_loss": negative_elbo(vae.eval(), Xt, torch.Generator().manual_seed(0)).item()}
    return cached_training("vae", key, vae, train, evaluate, store).eval()


# ----------------------------------------------------------------------------- the chains, cached
def chains_config(generator_config: dict, classifier_config: dict, target: Target, cfg: ChainsConfig,
                  seed: int) -> dict:
    """The chains' artifact key: generator, classifier (with weights' fingerprint), target, ``cfg``, seed."""
    return {"generator": generator_config, "classifier": classifier_config,
            "target": [target.kind, list(target.classes)], **asdict(cfg), "seed": seed}


def cached_chains(key: dict, sample: Callable[[], Chains], target: Target, store: Store | None = None) -> Chains:
    """The stored chains of ``key``, else ``sample()`` and store them (with ``info["init"]``)."""
    store = store or Store()
    saved = store.load(KIND, key)
    if saved is None:
        ch = sample()
        saved = {"z": ch.z, "acceptance": ch.acceptance, "divergences": ch.divergences, "seconds": ch.seconds}
        if "init" in ch.info:
            saved["init"] = ch.info["init"]
        store.save(KIND, key, saved)
    info = {"key": key, **({"init": saved["init"]} if "init" in saved else {})}
    return Chains(target, saved["z"], saved["acceptance"], saved["divergences"], saved["seconds"], info)
