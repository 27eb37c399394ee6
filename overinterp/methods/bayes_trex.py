"""Bayes-TrEx (Booth et al., AAAI 2021): in-distribution examples at a target confidence, by NUTS in a
VAE's latent space; the method on tensors (chapter 16's cached runs: :mod:`overinterp.experiments.bayes_trex`).

The level set f(x) = p is relaxed to the posterior p(z | u = u*) with x = g(z), z ~ N(0, I) (their eqs.
2-3, 12), sigma = 0.05 (4.2), by two reductions (eqs. 6-9):

* **high confidence** in class c:  u | x ~ N(f_c(x), sigma^2), u* = 1;
* **ambiguous** between i and j:   u1 | x ~ N(|f_i - f_j|, sigma^2), u1* = 0, and
  u2 | x ~ N(min(f_i, f_j) - max_{k != i, j} f_k, sigma^2), u2* = 0.5.

A VAE trained without a class makes that class's high-confidence samples misclassifications (4.6).
1 - f_c is sigmoid(-log-odds) in float64, never 1 - softmax (exactly 0 for a confident classifier).

    vae = VAE((1, 28, 28), hidden=400, latent=5); fit_vae(vae, images, epochs=30)
    ch = sample_chains(decoder(vae, "fashion-mnist"), clf, high(4), sigma=0.05, latent=5,
                       chains=2, warmup=50, samples=50)         # NUTS, one chain after the other
    ch.z, ch.acceptance, ch.r_hat, ch.ess                        # (C, S, latent), diagnostics
    images = vae.decode(ch.z.flatten(0, 1))                      # (C*S, 1, 28, 28) in [0, 1]
"""
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from overinterp.engine.backselect import logit
from overinterp.methods import optional
from overinterp.paper.numbers import BOOTH_BAND, BOOTH_MISCLASSIFIED_LEVEL
from overinterp.zoo import data

HIGH, AMBIGUOUS = "high", "ambiguous"
HIGH_LEVEL = 0.99            # a sample / test image "reaches" p_c = 1 at f_c >= 0.99 (the SIS chapter's tau)
BAND = BOOTH_BAND            # ambiguous: both f_i and f_j in [40%, 60%] (Booth et al. 4.10)
MISCLASSIFIED_LEVEL = BOOTH_MISCLASSIFIED_LEVEL   # confident misclassification: f_c >= 85% (Booth et al. 4.10)


@dataclass(frozen=True)
class VAEConfig:
    """The VAE's architecture and training (part of its artifact key)."""
    latent: int = 5                    # latent dimensions (Booth et al., Table 6: 5)
    hidden: int = 400                  # hidden units (Booth et al., Table 6: 400)
    epochs: int = 30                   # Adam epochs (not stated by Booth et al.)
    train_size: int | None = None      # training images (None: all of them)
    batch_size: int = 128
    lr: float = 1e-3


@dataclass(frozen=True)
class ChainsConfig:
    """A target's NUTS chains, but for the generator, classifier, target and seed."""
    sigma: float = 0.05                # relaxation of the level set (Booth et al. 4.2: 0.05 everywhere)
    chains: int = 4                    # independent chains per target (for r_hat)
    warmup: int = 500                  # warmup steps (step-size and mass adaptation) per chain
    samples: int = 2000                # kept samples per chain (Booth et al.: stop after 2000)
    max_tree_depth: int = 10           # tree depth cap (Pyro's default: 10, at most 2**10 leapfrog steps)
    init_pool: int = 2000              # training images encoded; chains start at the codes nearest the level set


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


def normalise(x: torch.Tensor, dataset: str) -> torch.Tensor:
    """[0, 1] pixels -> the classifiers' normalised input (:data:`overinterp.zoo.data.STATS`)."""
    mean, std = data.STATS[dataset]
    kw = dict(dtype=x.dtype, device=x.device)
    return (x - torch.tensor(mean, **kw).view(-1, 1, 1)) / torch.tensor(std, **kw).view(-1, 1, 1)



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


def target_log_odds(logits: torch.Tensor, c: int) -> torch.Tensor:
    """(B,) float64 log(f_c / (1 - f_c)) = z_c - logsumexp_{j != c} z_j from logits (B, K). Not
    :func:`~overinterp.engine.backselect.log_odds`: that differs in the last bits, which NUTS amplifies."""
    z = logits.double()
    others = torch.cat([z[:, :c], z[:, c + 1:]], 1)
    return z[:, c] - torch.logsumexp(others, 1)


def one_minus_p(logits: torch.Tensor, c: int) -> torch.Tensor:
    """(B,) float64 1 - f_c(x), without rounding (sigmoid of minus the log-odds)."""
    return torch.sigmoid(-target_log_odds(logits, c))


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
        return target_log_odds(logits, target.classes[0]) >= logit(level)
    p = torch.softmax(logits.double(), 1)[:, list(target.classes)]
    return ((p >= band[0]) & (p <= band[1])).all(1)


# ----------------------------------------------------------------------------- NUTS in the latent space
def _pyro(part: str = ""):
    """Pyro (or its submodule ``part``), imported when a chain is first sampled."""
    return optional("pyro." + part if part else "pyro", "pyro-ppl", "Bayes-TrEx (chapter 16)")


def level_set_model(generator: Callable, classifier: Callable, target: Target, sigma: float, latent: int,
                    device="cpu") -> Callable:
    """The Pyro model of eq. 12: z ~ N(0, I_latent), x = generator(z), factor log p(u = u* | x)."""
    pyro, dist = _pyro(), _pyro("distributions")

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
def torch_threads(n: int | None):
    """torch's intra-op threads set to ``n`` (None: unchanged) while inside, restored after."""
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
        return _pyro("ops.stats").split_gelman_rubin(self.z.double(), chain_dim=0, sample_dim=1)

    @property
    def ess(self) -> torch.Tensor:
        """(latent,) effective sample size over all chains (Pyro's)."""
        if self.z.shape[1] < 2:
            return torch.full(self.z.shape[2:], float("nan"), dtype=torch.float64)
        return _pyro("ops.stats").effective_sample_size(self.z.double(), chain_dim=0, sample_dim=1)

    def flat(self) -> torch.Tensor:
        """(chains * samples, latent)."""
        return self.z.flatten(0, 1)


def sample_chains(generator: Callable, classifier: Callable, target: Target, *, sigma: float, latent: int,
                  chains: int, warmup: int, samples: int, max_tree_depth: int = 10, seed: int = 0,
                  init: torch.Tensor | None = None, device="cpu", threads: int | None = 1,
                  progress: bool = True) -> Chains:
    """``chains`` NUTS chains of p(z | u = u*), one after the other, seeds seed * 1000 + chain, chain c from
    ``init[c]`` (chains, latent) or Pyro's uniform start in [-2, 2]^latent (which may miss a small level
    set). ``threads``: torch threads while sampling (None: unchanged). The global RNG state is restored."""
    if min(chains, samples) < 1 or warmup < 0:
        raise ValueError(f"chains and samples must be >= 1 and warmup >= 0, got {chains}, {samples}, {warmup}")
    model = level_set_model(generator, classifier, target, sigma, latent, device)
    pyro, mc = _pyro(), _pyro("infer.mcmc")
    zs, acc, div = [], [], []
    t0 = time.perf_counter()
    with torch_threads(threads), _frozen(classifier), _frozen(generator), torch.random.fork_rng(devices=[]):
        for c in range(chains):
            pyro.set_rng_seed(seed * 1000 + c)
            start = None if init is None else {"z": init[c].to(device)}
            diag = {}

            def last(kernel, params, stage, i):  # the kernel's own counts after the last kept sample
                if stage == "Sample" and i == samples - 1:
                    d = kernel.diagnostics()
                    diag.update(acceptance=float(d["acceptance rate"]), divergences=len(d["divergences"]))
            mcmc = mc.MCMC(mc.NUTS(model, max_tree_depth=max_tree_depth), num_samples=samples, warmup_steps=warmup,
                           num_chains=1, initial_params=start, disable_progbar=not progress, hook_fn=last)
            mcmc.run()
            zs.append(mcmc.get_samples()["z"].detach().cpu())
            acc.append(diag["acceptance"])
            div.append(diag["divergences"])
    info = {} if init is None else {"init": init.detach().cpu()}
    return Chains(target, torch.stack(zs), acc, div, time.perf_counter() - t0, info)


@torch.no_grad()
def initial_points(vae: VAE, generator: Callable, classifier: Callable, target: Target, images: torch.Tensor,
                   n: int, sigma: float = 0.05, batch_size: int = 500) -> torch.Tensor:
    """(n, latent): encoder means mu(x) of the ``n`` images (N, C, H, W) in [0, 1] whose g(mu(x)) has the
    highest :func:`level_set_log_lik`: chain starts in the data's typical set."""
    mus, lls = [], []
    for i in range(0, len(images), batch_size):
        mu = vae.encode(images[i:i + batch_size].to(next(vae.parameters()).device))[0]
        mus.append(mu)
        lls.append(level_set_log_lik(classifier(generator(mu)), target, sigma))
    mu, ll = torch.cat(mus), torch.cat(lls)
    return mu[ll.topk(min(n, len(ll))).indices].detach()


def spread_samples(n_total: int, n: int) -> torch.Tensor:
    """``n`` indices spread evenly over ``n_total`` samples (every one when n >= n_total)."""
    if n >= n_total:
        return torch.arange(n_total)
    return torch.linspace(0, n_total - 1, n).round().long()



# ----------------------------------------------------------------------------- have the chains mixed?
@dataclass(frozen=True)
class MixingCriteria:
    """When a target's chains count as mixed: largest split R-hat < 1.1 (BDA3 11.4), smallest ESS >= 10
    per chain (BDA3 11.5), divergent transitions <= 1% of the kept ones (so one does not decide a short
    run). Fewer than 4 samples per chain give no R-hat: not mixed."""
    max_r_hat: float = 1.1
    min_ess_per_chain: float = 10.0
    max_divergent_share: float = 0.01

    def failures(self, chains: "Chains") -> list[str]:
        """The criteria ``chains`` miss, in words (empty: mixed)."""
        r_hat, ess = chains.r_hat.max().item(), chains.ess.min().item()
        n_chains, kept = chains.z.shape[0], chains.z.shape[0] * chains.z.shape[1]
        share = sum(chains.divergences) / kept
        out = []
        if not r_hat < self.max_r_hat:            # NaN fails too
            out.append(f"R̂ {r_hat:.2f} ≥ {self.max_r_hat:g}" if r_hat == r_hat else "too few samples for R̂")
        if not ess >= self.min_ess_per_chain * n_chains:
            out.append(f"ESS {ess:.0f} < {self.min_ess_per_chain * n_chains:g}" if ess == ess else "no ESS")
        if share > self.max_divergent_share:
            out.append(f"{100 * share:.0f}% divergent > {100 * self.max_divergent_share:g}%")
        return out

    def mixed(self, chains: "Chains") -> bool:
        return not self.failures(chains)

    def describe(self) -> str:
        return (f"largest split R̂ < {self.max_r_hat:g}, smallest ESS ≥ {self.min_ess_per_chain:g} per chain, "
                f"divergent transitions ≤ {100 * self.max_divergent_share:g}% of the kept ones")


MIXING = MixingCriteria()


def chain_separation(z: torch.Tensor) -> torch.Tensor:
    """(latent,) range of the chain means of ``z`` (chains, samples, latent) in pooled within-chain sds:
    ~0-1 for one region, >> 1 for chains confined apart (which R-hat alone does not tell from drift)."""
    z = z.double()
    means = z.mean(1)                                                          # (chains, latent)
    within = z.var(1).mean(0) if z.shape[1] > 1 else torch.zeros(z.shape[2:], dtype=z.dtype)
    return (means.max(0).values - means.min(0).values) / within.clamp_min(1e-300).sqrt()


def nearest_start(z: torch.Tensor, init: torch.Tensor) -> torch.Tensor:
    """(chains,) index of the ``init`` (chains, latent) point nearest each chain's mean of ``z`` (chains,
    samples, latent): ``arange(chains)`` when every chain stayed by its start."""
    return torch.cdist(z.double().mean(1), init.double()).argmin(1)


def near_black(images: torch.Tensor, level: float) -> torch.Tensor:
    """(B,) bool: images (B, C, H, W) in [0, 1] whose mean pixel intensity is below ``level``."""
    return images.flatten(1).mean(1) < level


def ambiguous_any(logits: torch.Tensor, band: tuple = BAND) -> torch.Tensor:
    """(N,) bool: at least two classes with confidence within ``band`` (Booth et al. 4.10's count over all pairs)."""
    p = torch.softmax(logits.double(), 1)
    return ((p >= band[0]) & (p <= band[1])).sum(1) >= 2
