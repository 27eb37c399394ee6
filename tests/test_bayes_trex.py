"""Bayes-TrEx (overinterp.methods.bayes_trex and overinterp.experiments.bayes_trex): relaxed level-set likelihoods, NUTS on a classifier whose
confidence is a known function of the latent, chain diagnostics, the VAE and its cache, the counts."""
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from overinterp.experiments import bayes_trex as bayes_trex_chapter
from overinterp.pages import bayes_trex as pages_bayes_trex
from overinterp.experiments import bayes_trex_cache
from overinterp.methods import bayes_trex
from overinterp.paper import further_verdicts
from overinterp.store import Store
from overinterp.config.profiles import BayesTrExConfig

SIGMA = 0.05
C = -math.log(SIGMA) - 0.5 * math.log(2 * math.pi)   # log N(u*; f, sigma^2) at u* = f


def _logits(*probs):
    return torch.log(torch.tensor(probs, dtype=torch.float64))


def test_high_confidence_likelihood_is_the_gaussian_of_eq6_at_u_star_1():
    # p(class 0) = 0.5, 0.9, 0.99: log N(1; p, 0.05^2) = -(1 - p)^2 / (2 * 0.0025) + C
    got = bayes_trex.level_set_log_lik(_logits([0.5, 0.5], [0.9, 0.1], [0.99, 0.01]), bayes_trex.high(0), SIGMA)
    want = [-0.5 * (q / SIGMA) ** 2 + C for q in (0.5, 0.1, 0.01)]
    assert got.tolist() == pytest.approx(want, rel=1e-9)
    assert bayes_trex.level_set_log_lik(_logits([0.2, 0.8]), bayes_trex.high(1), SIGMA).item() == pytest.approx(-8 + C)


def test_likelihood_works_from_logits_where_float32_softmax_is_exactly_one():
    logits = torch.tensor([[18.0, 0.0, 0.0], [20.0, 0.0, 0.0]], requires_grad=True)
    assert torch.softmax(logits, 1)[:, 0].tolist() == [1.0, 1.0]      # saturated: 1 - p would be 0
    q = bayes_trex.one_minus_p(logits, 0)
    assert q.tolist() == pytest.approx([2 * math.exp(-18), 2 * math.exp(-20)], rel=1e-6)
    ll = bayes_trex.level_set_log_lik(logits, bayes_trex.high(0), SIGMA)
    assert ll[0] < ll[1] < C                                           # still ranks the two
    ll.sum().backward()
    assert (logits.grad[:, 0] > 0).all()                               # and has a gradient toward p = 1


def test_ambiguous_likelihood_is_eqs_7_to_9_by_hand():
    # (0.5, 0.5, 0): on the level set; (0.6, 0.3, 0.1): u1 = 0.3, u2 = 0.3 - 0.1 = 0.2 (target 0.5)
    got = bayes_trex.level_set_log_lik(_logits([0.5, 0.5, 1e-300], [0.6, 0.3, 0.1], [0.3, 0.6, 0.1]),
                                       bayes_trex.ambiguous(0, 1), SIGMA)
    hand = -0.5 * (0.3 / SIGMA) ** 2 - 0.5 * (0.3 / SIGMA) ** 2 + 2 * C
    assert got.tolist() == pytest.approx([2 * C, hand, hand], rel=1e-9)


def test_level_set_membership_high_in_log_odds_and_ambiguous_in_the_band():
    logits = _logits([0.995, 0.004, 0.001], [0.98, 0.01, 0.01], [0.45, 0.55, 1e-9], [0.35, 0.6, 0.05])
    assert bayes_trex.in_level_set(logits, bayes_trex.high(0)).tolist() == [True, False, False, False]
    assert bayes_trex.in_level_set(torch.tensor([[50.0, 0.0]]), bayes_trex.high(0)).tolist() == [True]
    assert bayes_trex.in_level_set(logits, bayes_trex.ambiguous(0, 1)).tolist() == [False, False, True, False]


def test_targets_are_checked():
    with pytest.raises(ValueError, match="target"):
        bayes_trex.Target("high", (0, 1))
    with pytest.raises(ValueError, match="target"):
        bayes_trex.ambiguous(2, 2)
    with pytest.raises(ValueError, match="sigma"):
        bayes_trex.level_set_log_lik(_logits([0.5, 0.5]), bayes_trex.high(0), 0.0)
    assert bayes_trex.ambiguous(0, 3).name(["T-shirt", "Trouser", "Pullover", "Dress"]) == "p(T-shirt) = p(Dress) = 0.5"


class _Sigmoid(nn.Module):
    """A classifier of the latent itself: logits (a z, 0), so f_0(z) = sigmoid(a z)."""

    def __init__(self, a: float):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(a))

    def forward(self, x):                      # x (B, 1)
        return torch.cat([self.a * x, torch.zeros_like(x)], 1)


def _grid_posterior(log_lik, lo=-6.0, hi=8.0, n=20001):
    z = np.linspace(lo, hi, n)
    logp = -0.5 * z ** 2 + log_lik(z)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = (w * z).sum()
    return mean, math.sqrt((w * (z - mean) ** 2).sum())


def test_nuts_samples_the_relaxed_posterior_of_a_classifier_whose_confidence_is_a_known_function_of_the_latent():
    # p(z | u = 1) ∝ N(z; 0, 1) N(1; sigmoid(z), 0.05^2): mean and sd by quadrature on a grid
    mean, sd = _grid_posterior(lambda z: -0.5 * ((1 - 1 / (1 + np.exp(-z))) / SIGMA) ** 2)
    assert mean > 2                                                  # far from the prior's 0
    ch = bayes_trex.sample_chains(nn.Identity(), _Sigmoid(1.0), bayes_trex.high(0), sigma=SIGMA, latent=1, chains=2,
                                  warmup=80, samples=200, seed=0, progress=False)
    z = ch.z.flatten().numpy()
    assert ch.z.shape == (2, 200, 1)
    assert z.mean() == pytest.approx(mean, abs=0.12) and z.std() == pytest.approx(sd, rel=0.2)
    assert ch.r_hat.item() < 1.1 and ch.ess.item() > 100 and min(ch.acceptance) > 0.5
    # the ambiguous level set of logits (z, -z, -2): f_0 = f_1 at z = 0, where both are about 0.47
    amb = nn.Sequential(nn.Linear(1, 3, bias=True))
    with torch.no_grad():
        amb[0].weight.copy_(torch.tensor([[1.0], [-1.0], [0.0]]))
        amb[0].bias.copy_(torch.tensor([0.0, 0.0, -2.0]))
    ch = bayes_trex.sample_chains(nn.Identity(), amb, bayes_trex.ambiguous(0, 1), sigma=SIGMA, latent=1, chains=1,
                                  warmup=50, samples=80, seed=1, progress=False)
    logits = amb(ch.flat())
    p = torch.softmax(logits, 1).detach()
    assert abs(ch.z.mean().item()) < 0.1 and (p[:, 0] - p[:, 1]).abs().mean() < 0.1
    assert amb[0].weight.requires_grad                                # parameters restored after sampling


def test_chains_start_where_asked_and_restore_the_rng_and_threads():
    torch.manual_seed(5)
    before = torch.get_num_threads(), torch.random.get_rng_state()
    ch = bayes_trex.sample_chains(nn.Identity(), _Sigmoid(1.0), bayes_trex.high(0), sigma=SIGMA, latent=1, chains=2,
                                  warmup=0, samples=1, init=torch.tensor([[2.5], [-40.0]]), max_tree_depth=1,
                                  progress=False)
    assert (torch.get_num_threads(), torch.random.get_rng_state().tolist()) == (before[0], before[1].tolist())
    assert ch.z[1, 0, 0] < -30                                        # one short step from -40
    assert ch.info["init"].tolist() == [[2.5], [-40.0]]               # start points kept beside the chains
    with pytest.raises(ValueError, match="chains"):
        bayes_trex.sample_chains(nn.Identity(), _Sigmoid(1.0), bayes_trex.high(0), sigma=SIGMA, latent=1, chains=0,
                                 warmup=0, samples=1)


def test_diagnostics_r_hat_near_one_for_agreeing_chains_and_large_for_disagreeing_ones():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 500, 2, generator=g)
    ok = bayes_trex.Chains(bayes_trex.high(0), z, [0.8] * 4, [0] * 4, 1.0)
    assert ok.r_hat.tolist() == pytest.approx([1.0, 1.0], abs=0.02)
    assert (ok.ess > 1000).all()
    shifted = z + torch.tensor([0.0, 0.0, 5.0, 5.0]).view(4, 1, 1)
    bad = bayes_trex.Chains(bayes_trex.high(0), shifted, [0.8] * 4, [0] * 4, 1.0)
    assert (bad.r_hat > 2).all() and (bad.ess < 50).all()


def _chains(z, divergences=None):
    return bayes_trex.Chains(bayes_trex.high(0), z, [0.8] * len(z), divergences or [0] * len(z), 1.0)


def test_mixing_gate_passes_agreeing_chains_and_names_each_criterion_they_miss():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2, 500, 2, generator=g)                            # independent draws: R-hat ~1, ESS ~1000
    assert bayes_trex.MIXING.failures(_chains(z)) == [] and bayes_trex.MIXING.mixed(_chains(z))
    apart = z + torch.tensor([0.0, 6.0]).view(2, 1, 1)                 # chains 6 sds apart
    assert [f.split()[0] for f in bayes_trex.MIXING.failures(_chains(apart))] == ["R̂", "ESS"]
    held = torch.randn(2, 4, 2, generator=g).repeat_interleave(125, 1)  # 4 values per chain, each held 125 steps
    assert [f.split()[0] for f in bayes_trex.MIXING.failures(_chains(held))][-1] == "ESS"
    # divergences: 1% of the 1000 kept transitions is allowed, 11 are not
    assert bayes_trex.MIXING.mixed(_chains(z, [5, 5])) and not bayes_trex.MIXING.mixed(_chains(z, [5, 6]))
    assert bayes_trex.MIXING.failures(_chains(z, [5, 6])) == ["1% divergent > 1%"]
    # too few samples for R-hat: not mixed, said so
    assert "too few samples for R̂" in bayes_trex.MIXING.failures(_chains(torch.randn(2, 3, 1, generator=g)))
    loose = bayes_trex.MixingCriteria(max_r_hat=100.0, min_ess_per_chain=0.0, max_divergent_share=1.0)
    assert loose.mixed(_chains(apart))


def test_chain_separation_is_the_range_of_chain_means_in_pooled_within_chain_sds():
    z = torch.tensor([[-1.0, 1.0, -1.0, 1.0], [9.0, 11.0, 9.0, 11.0]]).view(2, 4, 1)
    # means 0 and 10; within-chain variance (unbiased) 4/3 in both
    assert bayes_trex.chain_separation(z).item() == pytest.approx(10 / math.sqrt(4 / 3))
    assert bayes_trex.chain_separation(torch.cat([z[:1], z[:1]])).item() == 0.0


def test_nearest_start_says_whether_each_chain_stayed_by_its_own_start():
    z = torch.tensor([[[0.1, 0.0], [-0.1, 0.0]], [[5.0, 5.1], [5.0, 4.9]]])   # (2 chains, 2 samples, 2)
    assert bayes_trex.nearest_start(z, torch.tensor([[0.0, 0.0], [5.0, 5.0]])).tolist() == [0, 1]
    assert bayes_trex.nearest_start(z, torch.tensor([[5.0, 5.0], [0.0, 0.0]])).tolist() == [1, 0]


def test_near_black_is_a_mean_intensity_strictly_below_the_level():
    x = torch.zeros(3, 1, 2, 2)
    x[1] = 0.2
    x[2, 0, 0, 0] = 0.25                                               # mean 0.0625: not below 0.05
    x[0, 0, 0, 0] = 0.19                                               # mean 0.0475: below
    assert bayes_trex.near_black(x, 0.05).tolist() == [True, False, False]


class _CodeIsFirstPixel(nn.Module):
    """A stand-in VAE whose encoder mean is the image's first pixel."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))

    def encode(self, x):
        return x.flatten(1)[:, :1], None


def test_initial_points_are_the_codes_that_decode_nearest_the_level_set():
    images = torch.tensor([0.5, 3.0, -1.0, 2.0, 0.0]).view(5, 1, 1, 1)
    init = bayes_trex.initial_points(_CodeIsFirstPixel(), nn.Identity(), _Sigmoid(1.0), bayes_trex.high(0), images, 2,
                                     SIGMA, batch_size=2)
    assert init.flatten().tolist() == [3.0, 2.0]                      # sigmoid largest: closest to p = 1


def test_chains_are_cached_by_their_key(tmp_path):
    store, calls = Store(tmp_path), []

    def sample():
        calls.append(1)
        return bayes_trex.Chains(bayes_trex.high(0), torch.ones(2, 3, 1), [0.5, 0.7], [0, 1], 2.0)
    key = bayes_trex_cache.chains_config({"vae": 1}, {"model": "m"}, bayes_trex.high(0),
                                         bayes_trex.ChainsConfig(chains=2, samples=3), seed=0)
    a = bayes_trex_cache.cached_chains(key, sample, bayes_trex.high(0), store)
    b = bayes_trex_cache.cached_chains(key, sample, bayes_trex.high(0), store)
    assert len(calls) == 1 and torch.equal(a.z, b.z) and b.acceptance == [0.5, 0.7] and b.divergences == [0, 1]

    def with_start():
        return bayes_trex.Chains(bayes_trex.high(0), torch.ones(2, 3, 1), [0.5, 0.7], [0, 1], 2.0,
                                 {"init": torch.tensor([[1.0], [2.0]])})
    key2 = {**key, "seed": 1}
    bayes_trex_cache.cached_chains(key2, with_start, bayes_trex.high(0), store)
    again = bayes_trex_cache.cached_chains(key2, sample, bayes_trex.high(0), store)
    assert again.info["init"].tolist() == [[1.0], [2.0]]


def test_vae_learns_and_its_training_is_cached(tmp_path, monkeypatch):
    # two 4x4 patterns: a trained VAE's -ELBO drops well below an untrained one's
    x = torch.zeros(64, 1, 4, 4)
    x[::2, :, :2] = 1
    x[1::2, :, 2:] = 1
    torch.manual_seed(0)
    vae = bayes_trex.VAE((1, 4, 4), hidden=16, latent=2)
    gen = torch.Generator().manual_seed(0)
    before = bayes_trex.negative_elbo(vae, x, gen).item()
    hist = bayes_trex.fit_vae(vae, x, epochs=60, batch_size=16, lr=1e-2, progress=False)
    assert hist[-1]["loss"] < 0.5 * hist[0]["loss"] and bayes_trex.negative_elbo(vae, x, gen).item() < 0.3 * before
    assert ((vae.reconstruct(x) > 0.5) == (x > 0.5)).float().mean() > 0.95
    assert vae.decode(torch.zeros(3, 2)).shape == (3, 1, 4, 4)

    cfg = bayes_trex.VAEConfig(latent=2, hidden=8, epochs=1, train_size=64)
    store = Store(tmp_path)
    a = bayes_trex_cache.trained_vae("fashion-mnist", cfg, held_out=8, store=store, progress=False)
    assert a.info["train_images"] == 64
    monkeypatch.setattr(bayes_trex_cache, "fit_vae", lambda *a, **k: pytest.fail("retrained a cached VAE"))
    b = bayes_trex_cache.trained_vae("fashion-mnist", cfg, held_out=8, store=store, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with pytest.raises(ValueError, match="held_out"):
        bayes_trex_cache.trained_vae("fashion-mnist", cfg, held_out=10, store=store)


def test_normalise_inverts_the_data_sets_denormalise():
    from overinterp.zoo import data
    x = torch.rand(2, 1, 3, 3)
    split = data.Split("fashion-mnist", "test", x, torch.zeros(2), [], *data.STATS["fashion-mnist"])
    assert torch.allclose(split.denormalise(bayes_trex.normalise(x, "fashion-mnist")), x, atol=1e-6)


def test_test_set_counts_level_sets_and_confident_misclassifications_into_the_held_out_class():
    logits = _logits([0.995, 0.004, 0.001], [0.5, 0.45, 0.05], [0.05, 0.05, 0.9], [0.01, 0.01, 0.98],
                     [0.1, 0.1, 0.8])
    labels = torch.tensor([0, 1, 0, 2, 1])
    targets = {"h0": bayes_trex.high(0), "a01": bayes_trex.ambiguous(0, 1), "m2": bayes_trex.high(2)}
    t = bayes_trex_chapter.test_set_counts(logits, labels, targets,
                                           held_out={"m2": 2}, classes=["A", "B", "C"])
    assert t["meet it"].to_dict() == {"h0": 1, "a01": 1, "m2": 1}   # m2: image 2 (label 0, f = 0.9 >= 0.85)
    assert t.loc["h0", "meet it (%)"] == pytest.approx(20.0)
    assert t["criterion"].to_dict() == {"h0": "f_A ≥ 0.99", "a01": "f_A, f_B in 0.4–0.6", "m2": "f_C ≥ 0.85, label ≠ C"}


def _table(mixed_z=True):
    logits = _logits([0.999, 0.001], [0.98, 0.02], [0.995, 0.005], [0.5, 0.5])
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2, 200, 1, generator=g)
    z = z if mixed_z else z + torch.tensor([0.0, 8.0]).view(2, 1, 1)
    ch = bayes_trex.Chains(bayes_trex.high(0), z, [0.8, 0.6], [1, 2], 3.0)
    return bayes_trex_chapter.confidence_table({"h": logits}, {"h": bayes_trex.high(0)}, {"h": ch}), ch


def test_confidence_table_names_each_criterion_in_its_column_and_gates_on_mixing():
    t, _ = _table()
    row = t.loc["h"]
    assert row["mean f (class 1)"] == pytest.approx(np.mean([0.999, 0.98, 0.995, 0.5]))
    assert row["f_c ≥ 0.99"] == pytest.approx(50.0) and row["f_c ≥ 0.85"] == pytest.approx(75.0)
    assert (row["acceptance"], row["divergences"], row["samples"]) == (pytest.approx(0.7), 3, 4)
    assert bool(row["mixed"]) and row["why not"] == ""
    bad, ch = _table(mixed_z=False)
    assert not bad.loc["h", "mixed"] and bad.loc["h", "why not"].startswith("R̂")
    assert bad.loc["h", "separation"] == pytest.approx(bayes_trex.chain_separation(ch.z).item())
    assert bad.loc["h", "separation"] > 5


def test_table2_sets_ours_beside_booth_only_where_the_chains_mixed():
    targets = {"amb": bayes_trex.ambiguous(0, 3), "bag": bayes_trex.high(8)}
    amb = torch.full((2, 10), -20.0, dtype=torch.float64)
    amb[:, [0, 3]] = torch.log(torch.tensor([[0.5, 0.5], [0.46, 0.54]], dtype=torch.float64))
    bag = torch.full((2, 10), -20.0, dtype=torch.float64)
    bag[:, [0, 8]] = torch.log(torch.tensor([[0.02, 0.98], [0.1, 0.9]], dtype=torch.float64))
    g = torch.Generator().manual_seed(0)
    good = bayes_trex.Chains(bayes_trex.ambiguous(0, 3), torch.randn(2, 200, 1, generator=g), [0.8] * 2, [0, 0], 1.0)
    bad = bayes_trex.Chains(bayes_trex.high(8), good.z + torch.tensor([0.0, 8.0]).view(2, 1, 1), [0.8] * 2, [0, 0], 1.0)
    t = bayes_trex_chapter.confidence_table({"amb": amb, "bag": bag}, targets, {"amb": good, "bag": bad})
    shown = pages_bayes_trex.table2(t, targets, "bag", "ours")
    assert shown.loc["amb", ("Booth et al.", "mean ± std")] == "0.48, 0.48 ± .02, .02"
    assert shown.loc["amb", ("ours", "mean ± std")] == "0.48, 0.52 ± 0.03, 0.03"       # std of (0.5, 0.46): 0.028
    assert shown.loc["bag", ("Booth et al.", "mean ± std")] == "0.97 ± .03 (held out)"
    assert shown.loc["bag", ("ours", "mean ± std")] == "not mixed: not comparable"
    assert shown.loc["amb", ("ours", "both in 0.4–0.6 (%)")] == "100" and shown.loc["amb", ("ours", "f_c ≥ 0.99 (%)")] == ""
    assert shown.loc["bag", ("ours", "f_c ≥ 0.85 (%)")] == "100" and shown.loc["bag", ("ours", "f_c ≥ 0.99 (%)")] == "0"
    assert "nan" not in shown.to_string().lower()
    alone = pages_bayes_trex.table2(t, {"bag": bayes_trex.high(8)}, None, "ours")     # no Booth row for this target
    assert alone.loc["bag", ("ours", "mean ± std")] == "not mixed" and alone.loc["bag", ("Booth et al.", "mean ± std")] == "—"


def test_diagnostics_show_n_a_not_nan_and_whether_each_target_mixed():
    t, _ = _table()
    t.loc["h", "max r_hat"] = float("nan")
    d = pages_bayes_trex.diagnostics(t)
    assert d.loc["h", "max R̂"] == "n/a" and d.loc["h", "mixed"] == "yes" and "nan" not in d.to_string().lower()


def test_near_black_values_write_the_counts_with_their_plurals_and_the_classes_names():
    summary = {"shown_confident": 1, "shown_dark": 0, "kept_confident": 12, "kept_dark": 3, "level": 0.05,
               "classes": [0, 8], "test_mean": 0.2861, "dark_test": 7, "n_test_images": 10000, "dark_test_cls": 2,
               "n_test_cls": 2000}
    v = pages_bayes_trex.near_black_values(summary, {0: "T-shirt/top", 8: "Bag"})
    assert (v["nb_shown_samples"], v["nb_kept_samples"], v["nb_kept_dark"]) == ("1 sample", "12 samples", 3)
    assert (v["dark_level"], v["test_mean"], v["n_test_images"], v["n_test_cls"]) == ("0.05", "0.29", "10,000", "2,000")
    assert v["dark_cls_names"] == "T-shirt/top, Bag" and v["dark_test_cls"] == 2


def test_the_test_sets_comparison_is_shown_with_its_shares_rounded_and_its_count_grouped():
    counts = pd.DataFrame({"criterion": ["f_Bag >= 0.99"], "test images": [10000], "meet it": [812],
                           "meet it (%)": [8.1234], "chain samples meeting it (%)": [97.6]}, index=["bag"])
    shown = pages_bayes_trex.comparison_table(counts)
    assert list(shown.columns) == ["criterion", "test images meeting it", "test images (%)", "chain samples meeting it (%)"]
    assert shown.loc["bag"].tolist() == ["f_Bag >= 0.99", 812, "8.1", "98"]
    assert pages_bayes_trex.comparison_values({"n_test": 10000, "mis_any": 3}) == {"n_test": "10,000", "mis_any": 3}


def test_near_black_counts_count_confident_dark_samples_among_those_shown_and_kept():
    # 4 samples of a high target: confident (f >= 0.99) are 0, 1, 3; dark (mean < 0.05) are 1, 2, 3
    logits = _logits([0.999, 0.001], [0.995, 0.005], [0.5, 0.5], [0.999, 0.001])
    images = torch.full((4, 1, 2, 2), 0.3)
    images[1:] = 0.01
    amb = {"a": _logits([0.5, 0.5], [0.5, 0.5])}                        # ambiguous targets are not counted
    got = bayes_trex_chapter.near_black_counts({"h": images, "a": torch.zeros(2, 1, 2, 2)}, {"h": logits, **amb},
                                               {"h": bayes_trex.high(0), "a": bayes_trex.ambiguous(0, 1)}, n_show=2)
    # shown: samples 0 and 3 (spread over 4): both confident, sample 3 dark
    assert got == {"shown_confident": 2, "shown_dark": 1, "kept_confident": 3, "kept_dark": 2}


def test_spread_samples_cover_the_chains_evenly():
    assert bayes_trex.spread_samples(10, 3).tolist() in ([0, 4, 9], [0, 5, 9])
    assert bayes_trex.spread_samples(3, 5).tolist() == [0, 1, 2]


def test_sparse_pixels_verdict_compares_the_mean_sis_with_the_papers_bound():
    assert further_verdicts.sparse_pixels([0.01, 0.02, 0.03], [0.02], 0.99).holds is True
    v = further_verdicts.sparse_pixels([0.06, 0.08, 0.09], [0.02, 0.03], 0.99)
    assert v.holds is False and v.numbers.loc["sampled by Bayes-TrEx", "mean SIS size (%)"] == pytest.approx(23 / 3)
    assert v.numbers.loc["sampled by Bayes-TrEx", "95% low"] >= 6.0
    assert v.numbers.loc["confident test images", "mean SIS size (%)"] == pytest.approx(2.5)
    assert v.numbers.loc["confident test images", "outcome"].startswith("(reference")
    assert v.numbers.loc["sampled by Bayes-TrEx", "median SIS size (%)"] == pytest.approx(8.0)
    spread = further_verdicts.sparse_pixels([0.02, 0.04, 0.09], [0.02], 0.99)     # 2% to 9%
    assert spread.word == "inconclusive at this scale"
    assert further_verdicts.sparse_pixels([0.01, 0.01], [0.02], 0.99).word == "cannot be tested"
    assert "Verdict: the claim" in v._repr_markdown_()


def test_class_log_odds_agrees_with_the_engines_log_odds_to_rounding_but_is_kept_for_its_exact_bits():
    # engine.backselect.log_odds sums over all K logits with -inf at c; target_log_odds over the K - 1
    # others. Same value up to the last bits (NUTS would amplify those), so chapter 16 keeps its own.
    from overinterp.engine.backselect import log_odds
    gen = torch.Generator().manual_seed(0)
    for scale in (0.01, 1.0, 100.0, 1e4):
        z = (torch.randn(64, 10, generator=gen) * scale).float()
        z[::7, 3] += 80.0                                                  # extreme margins too
        for c in range(10):
            ours = bayes_trex.target_log_odds(z, c)
            engine = log_odds(z, torch.full((64,), c, dtype=torch.long))
            assert ours.dtype == torch.float64 and torch.allclose(ours, engine, rtol=1e-12, atol=1e-12)


def test_vae_and_chains_keys_hold_every_field_of_their_configs_and_the_old_keys_stay_the_same():
    cfg = BayesTrExConfig(vae_epochs=3, vae_train_size=100, chains=2, warmup=5, samples=7, init_pool=9)
    vc, cc = bayes_trex_cache.vae_settings(cfg), bayes_trex_cache.chains_settings(cfg)
    key = bayes_trex_cache.vae_config("fashion-mnist", vc, 8, 1)
    assert key == {"dataset": "fashion-mnist", "latent": 5, "hidden": 400, "epochs": 3, "train_size": 100,
                   "batch_size": 128, "lr": 1e-3, "held_out": 8, "seed": 1}          # the key before the refactoring
    ch = bayes_trex_cache.chains_config({"g": 1}, {"c": 2}, bayes_trex.ambiguous(0, 3), cc, 4)
    assert ch == {"generator": {"g": 1}, "classifier": {"c": 2}, "target": ["ambiguous", [0, 3]], "sigma": 0.05,
                  "chains": 2, "warmup": 5, "samples": 7, "max_tree_depth": 10, "init_pool": 9, "seed": 4}
    from dataclasses import fields
    assert {f.name for f in fields(bayes_trex.VAEConfig)} <= set(key)
    assert {f.name for f in fields(bayes_trex.ChainsConfig)} <= set(ch)


def test_trained_vae_keeps_history_test_loss_seconds_and_training_images_beside_the_weights(tmp_path):
    cfg = bayes_trex.VAEConfig(latent=2, hidden=8, epochs=1, train_size=32)
    vae = bayes_trex_cache.trained_vae("fashion-mnist", cfg, store=Store(tmp_path), progress=False)
    saved = Store(tmp_path).load("vae", bayes_trex_cache.vae_config("fashion-mnist", cfg))
    assert set(saved) == {"state_dict", "history", "test_loss", "seconds", "train_images"}
    assert vae.info["train_images"] == 32 and len(vae.info["history"]) == 1 and not vae.training


def test_diagnostics_values_count_unmixed_targets_whose_chains_sit_apart_by_their_own_starts():
    g = torch.Generator().manual_seed(0)
    ok = torch.randn(2, 200, 1, generator=g)                                      # mixed
    apart = ok + torch.tensor([0.0, 8.0]).view(2, 1, 1)                           # 8 sds apart, each by its start
    block = torch.cat([-torch.ones(100), torch.ones(100)])
    swap = torch.stack([block, -block]).view(2, 200, 1) + 0.01 * torch.randn(2, 200, 1, generator=g)  # same mean
    chains = {"ok": bayes_trex.Chains(bayes_trex.high(0), ok, [0.8] * 2, [0, 0], 1.0),
              "apart": bayes_trex.Chains(bayes_trex.high(0), apart, [0.8] * 2, [0, 0], 1.0,
                                         {"init": torch.tensor([[0.0], [8.0]])}),
              "swap": bayes_trex.Chains(bayes_trex.high(0), swap, [0.8] * 2, [0, 0], 1.0,
                                        {"init": torch.tensor([[-1.0], [1.0]])})}
    logits = {k: _logits(*[[0.999, 0.001]] * 400) for k in chains}
    table = bayes_trex_chapter.confidence_table(logits, {k: bayes_trex.high(0) for k in chains}, chains)
    v = pages_bayes_trex.diagnostics_values(table, chains, n_show=8)
    assert (v["n_mixed"], v["n_unmixed"], v["n_apart"], v["n_overlap"]) == (1, 2, 1, 1)
    assert v["apart_names"] == "apart" and v["sep_max_name"] == "apart" and v["mix_ess"] == "20"
    del chains["apart"].info["init"]                                              # no start points kept: not counted
    assert pages_bayes_trex.diagnostics_values(table, chains, n_show=8)["n_apart"] == 0


def _toy_figures():
    from types import SimpleNamespace
    from overinterp.pages import related_plots
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    vae = bayes_trex.VAE((1, 4, 4), hidden=8, latent=2)
    targets = {"p(A) = 1": bayes_trex.high(0), "p(A) = p(B) = 0.5": bayes_trex.ambiguous(0, 1)}
    chains = {k: bayes_trex.Chains(t, torch.randn(2, 6, 2, generator=g), [0.8] * 2, [0, 0], 1.0,
                                   {"init": torch.zeros(2, 2)}) for k, t in targets.items()}
    logits = {k: torch.randn(12, 3, generator=g) for k in targets}
    images, labels = torch.rand(6, 1, 4, 4, generator=g), torch.tensor([0, 1, 2, 0, 1, 2])
    comparison = {"images": torch.zeros(6, 1, 4, 4), "classes": [0, 0, 0, 2, 2, 2],
                  "sis": SimpleNamespace(found=[True] * 6, mask=torch.ones(6, 4, 4, dtype=torch.bool))}
    split = SimpleNamespace(mean=(0.0,), std=(1.0,), classes=["A", "B", "C"])
    return {"vae": related_plots.vae_figure({"all": vae, "held out": vae}, images, labels, ["A", "B", "C"], 2, n=3),
            "samples": related_plots.samples_figure({k: vae for k in targets}, chains, logits, targets, ["A", "B", "C"],
                                                    4),
            "trace": related_plots.trace_figure(chains), "sis": related_plots.sis_figure(comparison, split, 0.99, 4)}


def test_chapter_16_figures_fit_the_page_with_text_of_at_least_9_pt():
    import matplotlib.pyplot as plt
    from overinterp.pages.plots import text_sizes
    for name, fig in _toy_figures().items():
        assert fig.get_size_inches()[0] <= 7.5, name                 # shown at its own size on a 750 px page
        assert min(text_sizes(fig)) >= 9, name
        plt.close(fig)


def test_sis_figure_shows_the_targets_classes_in_turn():
    import matplotlib.pyplot as plt
    fig = _toy_figures()["sis"]
    first_row = fig.subfigs[0].axes
    assert [ax.get_title() for ax in first_row] == ["A", "C", "A", "C"]       # not the first target's four
    plt.close("all")
