"""Bayes-TrEx: in-distribution examples at a target confidence, sampled by MCMC (Booth et al., AAAI 2021).

Bayes-TrEx asks which inputs *of a data distribution* p(x) put a classifier f on a level
set f(x) = p (their section 3). The level set has measure zero, so it is widened: a
random vector u with u_i | x ~ N(f(x)_i, sigma^2) (their eq. 2) and the posterior
p(x | u = u*) is sampled instead (eq. 3), which tends to p(x | f(x) = p) as sigma -> 0.
Two reductions are used here (their eqs. 6-9), both with sigma = 0.05 (their 4.2):

* **high confidence** in class c:  u | x ~ N(f_c(x), sigma^2), u* = 1;
* **ambiguous** between i and j:   u1 | x ~ N(|f_i - f_j|, sigma^2), u1* = 0, and
  u2 | x ~ N(min(f_i, f_j) - max_{k != i, j} f_k, sigma^2), u2* = 0.5.

The data distribution is a VAE's (their Table 6: fully connected, 400 hidden units, latent
z ~ N(0, I) of 5 dimensions), x = g(z) its decoder's mean, and z is sampled from
p(z | u = u*) (eq. 12) with Pyro's NUTS (their 4.2). A VAE trained without one class gives a
distribution that lacks it, so its high-confidence examples of that class are high-confidence
*misclassifications* (their 4.6).

Numerics: 1 - f_c is computed from the logits as sigmoid(-(z_c - logsumexp_{j != c} z_j)) in
float64, never as 1 - softmax: a confident classifier's float32 softmax is exactly 1.0, where the
likelihood would be flat and its gradient zero.

    vae = trained_vae("fashion-mnist", cfg)                     # cached in the artifact store
    ch = sample_chains(decoder(vae, "fashion-mnist"), clf, high(4), sigma=0.05, latent=5,
                       chains=2, warmup=50, samples=50)         # NUTS, one chain after the other
    ch.z, ch.acceptance, ch.r_hat, ch.ess                        # (C, S, latent), diagnostics
    images = vae.decode(ch.z.flatten(0, 1))                      # (C*S, 1, 28, 28) in [0, 1]
"""
from __future__ import annotations

import math
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

with warnings.catch_warnings():   # Pyro imports tqdm.auto, which warns in a notebook without ipywidgets
    warnings.filterwarnings("ignore", message="IProgress not found")
    import pyro
    import pyro.distributions as dist
    from pyro.infer.mcmc import MCMC, NUTS
    from pyro.ops.stats import effective_sample_size, split_gelman_rubin

from . import data as D
from . import paper
from .artifacts import Store
from .backselect import logit
from .profiles import BayesTrExConfig
from .verdicts import Verdict, sis_size

__all__ = ["VAE", "negative_elbo", "fit_vae", "vae_config", "trained_vae", "pixels", "normalise", "decoder",
           "Target", "high", "ambiguous", "class_log_odds", "one_minus_p", "level_set_log_lik", "in_level_set",
           "level_set_model", "Chains", "sample_chains", "initial_points", "chains_config", "cached_chains", "confidence_table",
           "test_set_counts", "spread_samples", "sparse_pixels", "classifier", "vaes", "run_target", "sample_logits",
           "sample_backselect", "ambiguous_any", "vae_quality", "vae_figure", "table2", "samples_figure",
           "PAPER_TABLE2", "HIGH", "AMBIGUOUS", "HIGH_LEVEL", "BAND",
           "MISCLASSIFIED_LEVEL"]

HIGH, AMBIGUOUS = "high", "ambiguous"
HIGH_LEVEL = 0.99            # a sample / test image "reaches" p_c = 1 at f_c >= 0.99 (the SIS chapter's tau)
BAND = (0.4, 0.6)            # ambiguous: both f_i and f_j in [40%, 60%] (Booth et al. 4.10)
MISCLASSIFIED_LEVEL = 0.85   # confident misclassification: f_c >= 85% (Booth et al. 4.10)
KIND = "bayes_trex"


# ----------------------------------------------------------------------------- the data distribution
class VAE(nn.Module):
    """Booth et al.'s Table 6 VAE: x (B, C, H, W) in [0, 1] -> 400 -> (mu, log var) of ``latent``
    dimensions; decoder ``latent`` -> 400 -> C*H*W logits, sigmoid for the pixel means."""

    def __init__(self, shape: Sequence[int] = (1, 28, 28), hidden: int = 400, latent: int = 5):
        super().__init__()
        self.shape, n = tuple(shape), math.prod(shape)
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(n, hidden), nn.ReLU())
        self.mu, self.logvar = nn.Linear(hidden, latent), nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, n))

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.enc(x)
        return self.mu(h), self.logvar(h)                       # (B, latent) each

    def decode_logits(self, z: torch.Tensor) -> torch.Tensor:
        return self.dec(z).view(-1, *self.shape)                # (B, C, H, W)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """g(z): the decoder's pixel means (B, C, H, W) in [0, 1]."""
        return torch.sigmoid(self.decode_logits(z))

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """g(mu(x)): the reconstruction of x through the posterior mean."""
        return self.decode(self.encode(x)[0])


def negative_elbo(vae: VAE, x: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
    """Mean over the batch of -ELBO = binary cross-entropy of x under g(z) (summed over pixels,
    z drawn once by the reparameterisation) + KL(q(z|x) || N(0, I)), in nats per image."""
    mu, logvar = vae.encode(x)
    eps = torch.randn(mu.shape, generator=gen, device=mu.device) if gen is not None else torch.randn_like(mu)
    z = mu + torch.exp(0.5 * logvar) * eps
    bce = F.binary_cross_entropy_with_logits(vae.decode_logits(z), x, reduction="none").flatten(1).sum(1)
    kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(1)
    return (bce + kl).mean()


def fit_vae(vae: VAE, images: torch.Tensor, epochs: int, batch_size: int = 128, lr: float = 1e-3, seed: int = 0,
            progress: bool = True) -> list[dict]:
    """Train ``vae`` with Adam on ``images`` (N, C, H, W) in [0, 1]; returns the mean -ELBO per epoch."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    history = []
    vae.train()
    for epoch in tqdm(range(epochs), desc="VAE", disable=not progress):
        perm, total = torch.randperm(len(images), generator=gen), 0.0
        for i in range(0, len(images), batch_size):
            x = images[perm[i:i + batch_size]]
            loss = negative_elbo(vae, x, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(x)
        history.append({"epoch": epoch + 1, "loss": total / len(images)})
    return history


def pixels(dataset: str, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """(images in [0, 1] (N, C, H, W), labels) of a split: what the VAE models."""
    s = D.load(dataset, split)
    return s.denormalise().clamp(0, 1), s.labels


def normalise(x: torch.Tensor, dataset: str) -> torch.Tensor:
    """[0, 1] pixels -> the classifiers' normalised input (:data:`overinterp.data.STATS`)."""
    mean, std = D.STATS[dataset]
    kw = dict(dtype=x.dtype, device=x.device)
    return (x - torch.tensor(mean, **kw).view(-1, 1, 1)) / torch.tensor(std, **kw).view(-1, 1, 1)


def vae_config(dataset: str, cfg: BayesTrExConfig, held_out: int | None = None, seed: int = 0) -> dict:
    """Everything that determines a trained VAE: its artifact key."""
    return {"dataset": dataset, "latent": cfg.latent, "hidden": cfg.hidden, "epochs": cfg.vae_epochs,
            "train_size": cfg.vae_train_size, "batch_size": cfg.vae_batch_size, "lr": cfg.vae_lr,
            "held_out": held_out, "seed": seed}


def trained_vae(dataset: str, cfg: BayesTrExConfig, held_out: int | None = None, seed: int = 0,
                store: Store | None = None, progress: bool = True) -> VAE:
    """The VAE of ``dataset``'s training images (without class ``held_out`` when given), the first
    ``cfg.vae_train_size`` of a seeded permutation, from the store or trained now (then saved).
    ``vae.info``: training history, test -ELBO (nats per image, on the test images it models) and seconds."""
    store = store or Store()
    key = vae_config(dataset, cfg, held_out, seed)
    X, Y = pixels(dataset, "train")
    if held_out is not None and not 0 <= held_out < len(D.CLASSES[dataset]):
        raise ValueError(f"held_out={held_out} is not a class of {dataset} (0 to {len(D.CLASSES[dataset]) - 1})")
    torch.manual_seed(seed)
    vae = VAE(X.shape[1:], cfg.hidden, cfg.latent)
    saved = store.load("vae", key)
    if saved is None:
        keep = torch.ones(len(Y), dtype=torch.bool) if held_out is None else Y != held_out
        idx = keep.nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=torch.Generator().manual_seed(0))][:cfg.vae_train_size]
        t0 = time.perf_counter()
        with _threads(1):   # a small dense net: one thread is as fast, and robust to a busy machine
            history = fit_vae(vae, X[idx], cfg.vae_epochs, cfg.vae_batch_size, cfg.vae_lr, seed, progress)
        seconds = time.perf_counter() - t0
        Xt, Yt = pixels(dataset, "test")
        Xt = Xt if held_out is None else Xt[Yt != held_out]
        with torch.no_grad():
            test = negative_elbo(vae.eval(), Xt, torch.Generator().manual_seed(0)).item()
        saved = {"state_dict": vae.state_dict(), "history": history, "test_loss": test, "seconds": seconds,
                 "train_images": len(idx)}
        store.save("vae", key, saved)
    vae.load_state_dict(saved["state_dict"])
    vae.info = {k: v for k, v in saved.items() if k != "state_dict"}
    return vae.eval()


class decoder(nn.Module):
    """z (B, latent) -> the classifier's input: g(z) normalised like ``dataset``'s images."""

    def __init__(self, vae: VAE, dataset: str):
        super().__init__()
        self.vae, self.dataset = vae, dataset

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return normalise(self.vae.decode(z), self.dataset)


# ----------------------------------------------------------------------------- the relaxed level sets
@dataclass(frozen=True)
class Target:
    """A level set: ``high`` confidence in classes[0] (p_c = 1) or ``ambiguous`` between
    classes[0] and classes[1] (p_i = p_j = 0.5, every other class 0)."""
    kind: str
    classes: tuple

    def __post_init__(self):
        n = {HIGH: 1, AMBIGUOUS: 2}.get(self.kind)
        if n is None or len(self.classes) != n or len(set(self.classes)) != n:
            raise ValueError(f"target must be ('high', (c,)) or ('ambiguous', (i, j)) with i != j, "
                             f"got {self.kind!r}, {self.classes!r}")

    def name(self, classes: Sequence[str] | None = None) -> str:
        n = [classes[c] if classes else str(c) for c in self.classes]
        return f"p({n[0]}) = 1" if self.kind == HIGH else f"p({n[0]}) = p({n[1]}) = 0.5"


def high(c: int) -> Target:
    return Target(HIGH, (int(c),))


def ambiguous(i: int, j: int) -> Target:
    return Target(AMBIGUOUS, (int(i), int(j)))


def class_log_odds(logits: torch.Tensor, c: int) -> torch.Tensor:
    """(B,) float64 log(f_c / (1 - f_c)) = z_c - logsumexp_{j != c} z_j from logits (B, K)."""
    z = logits.double()
    others = torch.cat([z[:, :c], z[:, c + 1:]], 1)
    return z[:, c] - torch.logsumexp(others, 1)


def one_minus_p(logits: torch.Tensor, c: int) -> torch.Tensor:
    """(B,) float64 1 - f_c(x), without rounding (sigmoid of minus the log-odds)."""
    return torch.sigmoid(-class_log_odds(logits, c))


def _log_normal(d: torch.Tensor, sigma: float) -> torch.Tensor:
    """log N(u*; f, sigma^2) with d = u* - f."""
    return -0.5 * (d / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def level_set_log_lik(logits: torch.Tensor, target: Target, sigma: float = 0.05) -> torch.Tensor:
    """(B,) float64 log p(u = u* | x) of the relaxed level set (Booth et al. eqs. 6-9) from logits (B, K):
    high: log N(1; f_c, sigma^2); ambiguous: log N(0; |f_i - f_j|, sigma^2) +
    log N(0.5; min(f_i, f_j) - max_{k != i, j} f_k, sigma^2)."""
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    if target.kind == HIGH:
        return _log_normal(one_minus_p(logits, target.classes[0]), sigma)
    i, j = target.classes
    p = torch.softmax(logits.double(), 1)
    others = p.clone()
    others[:, [i, j]] = -1.0
    u1 = (p[:, i] - p[:, j]).abs()
    u2 = torch.minimum(p[:, i], p[:, j]) - others.max(1).values
    return _log_normal(0 - u1, sigma) + _log_normal(0.5 - u2, sigma)


def in_level_set(logits: torch.Tensor, target: Target, level: float = HIGH_LEVEL,
                 band: tuple = BAND) -> torch.Tensor:
    """(B,) bool: high -- f_c >= ``level`` (compared in log-odds); ambiguous -- f_i and f_j both in ``band``."""
    if target.kind == HIGH:
        return class_log_odds(logits, target.classes[0]) >= logit(level)
    p = torch.softmax(logits.double(), 1)[:, list(target.classes)]
    return ((p >= band[0]) & (p <= band[1])).all(1)


# ----------------------------------------------------------------------------- NUTS in the latent space
def level_set_model(generator: Callable, classifier: Callable, target: Target, sigma: float, latent: int,
                    device="cpu") -> Callable:
    """The Pyro model of eq. 12: z ~ N(0, I_latent), x = generator(z), factor log p(u = u* | x)."""

    def model():
        z = pyro.sample("z", dist.Normal(torch.zeros(latent, device=device), 1.0).to_event(1))
        logits = classifier(generator(z[None]))
        pyro.factor("level_set", level_set_log_lik(logits, target, sigma)[0].float())
    return model


@contextmanager
def _frozen(module):
    """Parameters without gradients (NUTS differentiates z only), restored after."""
    params = [p for p in module.parameters()] if isinstance(module, nn.Module) else []
    flags = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, f in zip(params, flags):
            p.requires_grad_(f)


@contextmanager
def _threads(n: int | None):
    old = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@dataclass
class Chains:
    """Independent NUTS chains of one target: ``z`` (chains, samples, latent) after warmup."""
    target: Target
    z: torch.Tensor
    acceptance: list            # per chain: mean acceptance probability (Pyro's "acceptance rate")
    divergences: list           # per chain: divergent transitions after warmup
    seconds: float
    info: dict = field(default_factory=dict)

    @property
    def r_hat(self) -> torch.Tensor:
        """(latent,) split Gelman-Rubin (Pyro's; NaN with fewer than 4 samples per chain)."""
        if self.z.shape[1] < 4:
            return torch.full(self.z.shape[2:], float("nan"), dtype=torch.float64)
        return split_gelman_rubin(self.z.double(), chain_dim=0, sample_dim=1)

    @property
    def ess(self) -> torch.Tensor:
        """(latent,) effective sample size over all chains (Pyro's)."""
        if self.z.shape[1] < 2:
            return torch.full(self.z.shape[2:], float("nan"), dtype=torch.float64)
        return effective_sample_size(self.z.double(), chain_dim=0, sample_dim=1)

    def flat(self) -> torch.Tensor:
        """(chains * samples, latent)."""
        return self.z.flatten(0, 1)


def sample_chains(generator: Callable, classifier: Callable, target: Target, *, sigma: float, latent: int,
                  chains: int, warmup: int, samples: int, max_tree_depth: int = 10, seed: int = 0,
                  init: torch.Tensor | None = None, device="cpu", threads: int | None = 1,
                  progress: bool = True) -> Chains:
    """``chains`` NUTS chains (Pyro, target acceptance 0.8, adapted step size and diagonal mass
    matrix) of p(z | u = u*), run one after the other with seeds seed * 1000 + chain, chain c from
    ``init[c]`` (chains, latent) or else Pyro's default start (uniform in [-2, 2]^latent; far from a
    small level set, where f's gradient vanishes, a chain may not find it). ``threads``: torch threads while sampling
    (one image per step: a single thread avoids synchronisation; None keeps the setting).
    The global RNG state is restored afterwards."""
    if min(chains, samples) < 1 or warmup < 0:
        raise ValueError(f"chains and samples must be >= 1 and warmup >= 0, got {chains}, {samples}, {warmup}")
    model = level_set_model(generator, classifier, target, sigma, latent, device)
    zs, acc, div = [], [], []
    t0 = time.perf_counter()
    with _threads(threads), _frozen(classifier), _frozen(generator), torch.random.fork_rng(devices=[]):
        for c in range(chains):
            pyro.set_rng_seed(seed * 1000 + c)
            start = None if init is None else {"z": init[c].to(device)}
            diag = {}

            def last(kernel, params, stage, i):  # the kernel's own counts after the last kept sample
                if stage == "Sample" and i == samples - 1:
                    d = kernel.diagnostics()
                    diag.update(acceptance=float(d["acceptance rate"]), divergences=len(d["divergences"]))
            mcmc = MCMC(NUTS(model, max_tree_depth=max_tree_depth), num_samples=samples, warmup_steps=warmup,
                        num_chains=1, initial_params=start, disable_progbar=not progress, hook_fn=last)
            mcmc.run()
            zs.append(mcmc.get_samples()["z"].detach().cpu())
            acc.append(diag["acceptance"])
            div.append(diag["divergences"])
    return Chains(target, torch.stack(zs), acc, div, time.perf_counter() - t0)


@torch.no_grad()
def initial_points(vae: VAE, generator: Callable, classifier: Callable, target: Target, images: torch.Tensor,
                   n: int, sigma: float = 0.05, batch_size: int = 500) -> torch.Tensor:
    """(n, latent): the encoder means mu(x) of the ``n`` images of ``images`` (N, C, H, W) in [0, 1]
    whose codes decode closest to the level set (highest :func:`level_set_log_lik` of g(mu(x))),
    one image each: starting points of the chains in the data distribution's typical set."""
    mus, lls = [], []
    for i in range(0, len(images), batch_size):
        mu = vae.encode(images[i:i + batch_size].to(next(vae.parameters()).device))[0]
        mus.append(mu)
        lls.append(level_set_log_lik(classifier(generator(mu)), target, sigma))
    mu, ll = torch.cat(mus), torch.cat(lls)
    return mu[ll.topk(min(n, len(ll))).indices].detach()


def chains_config(generator_config: dict, classifier_config: dict, target: Target, cfg: BayesTrExConfig,
                  seed: int) -> dict:
    """The artifact key of a set of chains: generator, classifier (with its weights' fingerprint),
    target, sigma and the chain sizes."""
    return {"generator": generator_config, "classifier": classifier_config, "target": [target.kind,
            list(target.classes)], "sigma": cfg.sigma, "chains": cfg.chains, "warmup": cfg.warmup,
            "samples": cfg.samples, "max_tree_depth": cfg.max_tree_depth, "init_pool": cfg.init_pool, "seed": seed}


def cached_chains(key: dict, sample: Callable[[], Chains], target: Target, store: Store | None = None) -> Chains:
    """``sample()`` unless the store holds the chains of ``key`` (then loaded)."""
    store = store or Store()
    saved = store.load(KIND, key)
    if saved is None:
        ch = sample()
        saved = {"z": ch.z, "acceptance": ch.acceptance, "divergences": ch.divergences, "seconds": ch.seconds}
        store.save(KIND, key, saved)
    return Chains(target, saved["z"], saved["acceptance"], saved["divergences"], saved["seconds"], {"key": key})


# ----------------------------------------------------------------------------- what the samples show
def confidence_table(logits: dict[str, torch.Tensor], targets: dict[str, Target], chains: dict[str, Chains],
                     level: float = HIGH_LEVEL, band: tuple = BAND) -> pd.DataFrame:
    """Per target (row name): Booth et al.'s Table 2 -- mean and std of the target classes'
    confidence over all samples -- the share (%) of samples in the level set (:func:`in_level_set`),
    and the chains' diagnostics: acceptance (mean over chains), divergences (sum), largest r_hat
    and smallest ESS over the latent dimensions, seconds. ``logits[name]``: (C*S, K) of the samples."""
    rows = {}
    for name, t in targets.items():
        p = torch.softmax(logits[name].double(), 1)
        ch = chains[name]
        row = {}
        for k, c in enumerate(t.classes):
            row[f"mean f (class {k + 1})"] = p[:, c].mean().item()
            row[f"std f (class {k + 1})"] = p[:, c].std().item() if len(p) > 1 else 0.0
        row["in level set (%)"] = 100 * in_level_set(logits[name], t, level, band).double().mean().item()
        row.update({"samples": len(p), "acceptance": float(np.mean(ch.acceptance)),
                    "divergences": int(sum(ch.divergences)), "max r_hat": ch.r_hat.max().item(),
                    "min ESS": ch.ess.min().item(), "seconds": ch.seconds})
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def test_set_counts(logits: torch.Tensor, labels: torch.Tensor, targets: dict[str, Target],
                    held_out: dict[str, int] | None = None, level: float = HIGH_LEVEL, band: tuple = BAND,
                    misclassified_level: float = MISCLASSIFIED_LEVEL) -> pd.DataFrame:
    """How many test images (``logits`` (N, K), ``labels`` (N,)) lie in each target's level set
    (:func:`in_level_set`); for the targets named in ``held_out`` (name -> class), the images of
    *another* class that the classifier puts in that class with f_c >= ``misclassified_level``
    (Booth et al. 4.10's confident misclassifications). Columns: test images, in level set, in level set (%)."""
    held_out = held_out or {}
    rows = {}
    for name, t in targets.items():
        if name in held_out:
            c = held_out[name]
            hit = (class_log_odds(logits, c) >= logit(misclassified_level)) & (labels != c)
        else:
            hit = in_level_set(logits, t, level, band)
        rows[name] = {"test images": len(labels), "in level set": int(hit.sum()),
                      "in level set (%)": 100 * hit.double().mean().item()}
    return pd.DataFrame.from_dict(rows, orient="index")


def spread_samples(n_total: int, n: int) -> torch.Tensor:
    """``n`` indices spread evenly over ``n_total`` samples (every one when n >= n_total)."""
    if n >= n_total:
        return torch.arange(n_total)
    return torch.linspace(0, n_total - 1, n).round().long()


def sparse_pixels(generated: Sequence[float], real: Sequence[float], tau: float,
                  bound: float = paper.SIS_MEAN_SIZE_BELOW, min_images: int = 3) -> Verdict:
    """Are generated in-distribution images classified from sparse pixels, as real ones are (paper 4.1)?
    ``generated`` / ``real``: SIS sizes (fractions of the image's pixels) at ``tau`` of the sampled
    high-confidence images and of the SIS chapter's confident test images. Holds when the generated
    images' mean SIS size is below ``bound`` (the paper's 5%, the criterion the SIS chapter applies to
    real images); cannot be tested with fewer than ``min_images`` generated images that reach tau."""
    g, r = np.asarray(generated, float), np.asarray(real, float)
    numbers = pd.DataFrame({"images": [len(g), len(r)],
                            "mean SIS size (%)": [100 * g.mean() if len(g) else np.nan,
                                                  100 * r.mean() if len(r) else np.nan],
                            "median SIS size (%)": [100 * np.median(g) if len(g) else np.nan,
                                                    100 * np.median(r) if len(r) else np.nan],
                            "empty SIS (%)": [100 * (g == 0).mean() if len(g) else np.nan,
                                              100 * (r == 0).mean() if len(r) else np.nan]},
                           index=pd.Index(["sampled by Bayes-TrEx", "confident test images"], name="images of"))
    holds = sis_size({"sampled": g}, tau, bound, min_images).holds   # claim C1's verdict on the samples
    claim = (f"Images a generative model makes in-distribution, sampled where the classifier is confident, are "
             f"classified from sparse pixels as real test images are: at tau = {tau:g} the mean SIS is below "
             f"{100 * bound:g}% of the image (the paper's 4.1 finding for real CIFAR-10 test images).")
    criterion = (f"the mean SIS size at tau = {tau:g} of the sampled high-confidence images is below "
                 f"{100 * bound:g}% of the pixels (the bound the SIS chapter applies to real test images); "
                 f"cannot be tested with fewer than {min_images} sampled images that reach tau.")
    return Verdict(claim, criterion, holds, numbers)


# ----------------------------------------------------------------------------- the chapter's runs
def classifier(run) -> tuple[nn.Module, dict]:
    """The inspected zoo model (``profile.bayes_trex.arch``, replicate ``run.seed``) and its artifact key
    with its weights' fingerprint."""
    from .runner import fingerprint
    from .train import model_config, trained_model
    arch, p = run.profile.bayes_trex.arch, run.profile
    model = trained_model(run.dataset, arch, p.name, seed=run.seed, device=run.device, progress=False)
    return model, {**model_config(run.dataset, arch, p.name, run.seed), "weights": fingerprint(model)}


def vaes(run, store: Store | None = None, progress: bool = True) -> dict[str, VAE]:
    """The two data distributions: "all" classes and "held out" (without ``bayes_trex.held_out``)."""
    cfg = run.profile.bayes_trex
    return {"all": trained_vae(run.dataset, cfg, None, run.seed, store, progress).to(run.device),
            "held out": trained_vae(run.dataset, cfg, cfg.held_out, run.seed, store, progress).to(run.device)}


def run_target(run, target: Target, vae: VAE, held_out: int | None = None, store: Store | None = None,
               progress: bool = True) -> Chains:
    """The chains of ``target`` in the latent space of ``vae`` (trained without ``held_out``),
    started at :func:`initial_points` of ``init_pool`` training images of its distribution; cached."""
    cfg = run.profile.bayes_trex
    clf, clf_key = classifier(run)
    gen = decoder(vae, run.dataset)
    key = chains_config(vae_config(run.dataset, cfg, held_out, run.seed), clf_key, target, cfg, run.seed)

    def sample() -> Chains:
        X, Y = pixels(run.dataset, "train")
        X = X if held_out is None else X[Y != held_out]
        pool = X[torch.randperm(len(X), generator=torch.Generator().manual_seed(1))[:cfg.init_pool]]
        init = initial_points(vae, gen, clf, target, pool, cfg.chains, cfg.sigma)
        return sample_chains(gen, clf, target, sigma=cfg.sigma, latent=cfg.latent, chains=cfg.chains,
                             warmup=cfg.warmup, samples=cfg.samples, max_tree_depth=cfg.max_tree_depth,
                             seed=run.seed, init=init, device=run.device, progress=progress)
    return cached_chains(key, sample, target, store)


@torch.no_grad()
def sample_logits(run, vae: VAE, chains: Chains, batch_size: int = 500) -> torch.Tensor:
    """(C*S, K) logits of the inspected classifier on the decoded samples."""
    clf, _ = classifier(run)
    gen, z = decoder(vae, run.dataset), chains.flat().to(run.device)
    return torch.cat([clf(gen(z[i:i + batch_size])).cpu() for i in range(0, len(z), batch_size)])


def sample_backselect(run, vae: VAE, chains: dict[str, Chains], n: int, store: Store | None = None,
                      progress: bool = True):
    """Backward selection (the profile's engine, :func:`overinterp.runner.run_backselect`, cached) of
    ``n`` decoded samples of the high-confidence targets in ``chains``: for each target, the about
    n / targets distinct samples of its chains on which the classifier is most confident in the target
    class. Returns (images (n', C, H, W) normalised, target name per image, BackSelectResult)."""
    from .artifacts import config_key
    from .runner import run_backselect
    clf, clf_key = classifier(run)
    per = max(1, math.ceil(n / max(1, len(chains))))
    images, names = [], []
    with torch.no_grad():
        for name, ch in chains.items():
            z = torch.unique(ch.flat(), dim=0)              # NUTS repeats a sample when it rejects a step
            x = decoder(vae, run.dataset)(z.to(run.device))
            conf = class_log_odds(clf(x), ch.target.classes[0]).cpu()
            idx = conf.topk(min(per, len(z))).indices
            images.append(x[idx].cpu())
            names += [name] * len(idx)
    images = torch.cat(images)
    data = {"set": "bayes-trex", "chains": [config_key(ch.info.get("key", {})) for ch in chains.values()],
            "per_target": per, "pick": "most confident"}
    res = run_backselect(clf, images, model_config={k: v for k, v in clf_key.items() if k != "weights"},
                         data_config=data, config=run.profile.backselect, shard_size=run.profile.shard_size,
                         store=store, device=run.device, progress=progress)
    return images, names, res


def ambiguous_any(logits: torch.Tensor, band: tuple = BAND) -> torch.Tensor:
    """(N,) bool: at least two classes with confidence within ``band`` (Booth et al. 4.10's count over all pairs)."""
    p = torch.softmax(logits.double(), 1)
    return ((p >= band[0]) & (p <= band[1])).sum(1) >= 2


@torch.no_grad()
def vae_quality(run, vaes: dict[str, VAE], images: torch.Tensor, labels: torch.Tensor, held_out: int,
                n_prior: int = 1000, n_eval: int | None = 2000) -> pd.DataFrame:
    """Per VAE ("all classes", "without <held-out>"): training images, epochs, test -ELBO (nats per image),
    the classifier's accuracy (%) on the first ``n_eval`` of a seeded permutation of the test images it
    models and on their reconstructions g(mu(x)), and the share (%) of ``n_prior`` prior samples
    g(z), z ~ N(0, I) (seeded), it calls the held-out class."""
    clf, _ = classifier(run)
    if n_eval is not None and n_eval < len(labels):
        idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:n_eval]
        images, labels = images[idx], labels[idx]
    name = D.CLASSES[run.dataset][held_out]
    gen = torch.Generator().manual_seed(run.seed)
    rows = {}
    for key, vae in vaes.items():
        keep = torch.ones(len(labels), dtype=torch.bool) if key == "all" else labels != held_out
        x, y = images[keep].to(run.device), labels[keep]

        def predict(x01):
            return torch.cat([clf(normalise(x01[i:i + 1000], run.dataset)).argmax(1).cpu()
                              for i in range(0, len(x01), 1000)])
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


@torch.no_grad()
def vae_figure(vaes: dict[str, VAE], images: torch.Tensor, labels: torch.Tensor, classes: Sequence[str],
               held_out: int, n: int = 10, seed: int = 0):
    """Rows: the first test image of each class, its reconstruction by the VAE of all classes, ``n``
    prior samples of each VAE (seeded)."""
    import matplotlib.pyplot as plt
    first = torch.stack([(labels == c).nonzero()[0, 0] for c in range(len(classes))])
    dev = next(vaes["all"].parameters()).device
    x = images[first].to(dev)
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, vaes["all"].mu.out_features, generator=gen).to(dev)
    rows = {"test image": x, "reconstruction": vaes["all"].reconstruct(x), "sample (all classes)": vaes["all"].decode(z),
            f"sample (no {classes[held_out]})": vaes["held out"].decode(z)}
    cols = max(len(x), n)
    fig, axes = plt.subplots(len(rows), cols, figsize=(1.0 * cols, 1.05 * len(rows) + 0.3), squeeze=False)
    for r, (label, imgs) in enumerate(rows.items()):
        for c in range(cols):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c, 0].cpu(), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            if c == 0:
                ax.set_ylabel(label, fontsize=7)
            if r == 0:
                ax.set_title(classes[c], fontsize=7)
    fig.tight_layout()
    return fig


#: Booth et al.'s Table 2, Fashion-MNIST rows that match a target of this chapter: (kind, classes) -> text.
PAPER_TABLE2 = {(AMBIGUOUS, (0, 3)): "0.48, 0.48 ± .02, .02", (HIGH, (8,)): "0.97 ± .03 (held out)"}


def table2(table: pd.DataFrame, targets: dict[str, Target], misclassification: str | None,
           ours_label: str) -> pd.DataFrame:
    """:func:`confidence_table` shown like Booth et al.'s Table 2 (mean ± std of the target classes'
    confidence), with their Fashion-MNIST value beside ours where they have one (:data:`PAPER_TABLE2`;
    the misclassification row only for the held-out target)."""
    rows = {}
    for name, t in targets.items():
        r = table.loc[name]
        k = len(t.classes)
        means = ", ".join(f"{r[f'mean f (class {i + 1})']:.2f}" for i in range(k))
        stds = ", ".join(f"{r[f'std f (class {i + 1})']:.2f}" for i in range(k))
        key = (t.kind, t.classes)
        ours_paper = PAPER_TABLE2.get(key, "—") if (t.kind == AMBIGUOUS or name == misclassification) else "—"
        rows[name] = {("Booth et al. (Fashion-MNIST)", "confidence"): ours_paper,
                      (ours_label, "confidence"): f"{means} ± {stds}",
                      (ours_label, "in level set (%)"): f"{r['in level set (%)']:.0f}",
                      (ours_label, "samples"): int(r["samples"])}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.columns = pd.MultiIndex.from_tuples(out.columns)
    return out


@torch.no_grad()
def samples_figure(vaes: dict[str, VAE], chains: dict[str, Chains], logits: dict[str, torch.Tensor],
                   targets: dict[str, Target], classes: Sequence[str], n: int = 8):
    """One row per target: ``n`` decoded samples spread over its chains, titled with the classifier's
    confidence in the target class(es)."""
    import matplotlib.pyplot as plt
    cols = max(1, min(n, min(c.z.shape[0] * c.z.shape[1] for c in chains.values())))
    fig, axes = plt.subplots(len(chains), cols, figsize=(1.05 * cols, 1.25 * len(chains) + 0.2), squeeze=False)
    for r, (name, ch) in enumerate(chains.items()):
        idx = spread_samples(ch.z.shape[0] * ch.z.shape[1], cols)
        vae = vaes[name]
        imgs = vae.decode(ch.flat()[idx].to(next(vae.parameters()).device)).cpu()
        p = torch.softmax(logits[name][idx].double(), 1)[:, list(targets[name].classes)]
        for c in range(cols):
            ax = axes[r, c]
            ax.set_xticks([]), ax.set_yticks([])
            if c < len(imgs):
                ax.imshow(imgs[c, 0], cmap="gray", vmin=0, vmax=1, interpolation="nearest")
                ax.set_title(" / ".join(f"{v:.2f}" for v in p[c].tolist()), fontsize=6)
            if c == 0:
                ax.set_ylabel(name.replace(" (", "\n("), fontsize=6)
    fig.tight_layout()
    return fig
