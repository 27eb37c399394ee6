"""ROAD's noisy linear imputation (overinterp.methods.imputation) on images whose fill is known by hand."""
import pytest
import torch

from overinterp.methods.imputation import NEIGHBOURS, noisy_linear_impute


def test_one_removed_pixel_is_the_weighted_mean_of_its_eight_neighbours():
    img = torch.arange(9.0).reshape(1, 1, 3, 3)
    keep = torch.ones(1, 3, 3, dtype=torch.bool)
    keep[0, 1, 1] = False
    out = noisy_linear_impute(img, keep, noise=0.0)
    direct, diagonal = (1 + 3 + 5 + 7) / 6, (0 + 2 + 6 + 8) / 12       # weights sum to 1
    assert out[0, 0, 1, 1].item() == pytest.approx(direct + diagonal)
    assert torch.equal(out[keep[:, None]], img[keep[:, None]])          # kept pixels unchanged
    assert sum(NEIGHBOURS.values()) == pytest.approx(1.0)


def test_a_ramp_is_recovered_from_its_border_and_a_constant_from_one_pixel():
    ramp = (torch.arange(8.0)[None, :] * 0.5 + torch.arange(8.0)[:, None] * 0.25).expand(2, 3, 8, 8).clone()
    keep = torch.zeros(2, 8, 8, dtype=torch.bool)
    keep[:, 0], keep[:, -1], keep[:, :, 0], keep[:, :, -1] = True, True, True, True
    assert torch.allclose(noisy_linear_impute(ramp, keep, noise=0.0), ramp, atol=1e-5)   # linear is harmonic
    const = torch.full((1, 1, 5, 5), -0.7)
    one = torch.zeros(1, 5, 5, dtype=torch.bool)
    one[0, 2, 3] = True
    assert torch.allclose(noisy_linear_impute(const, one, noise=0.0), const, atol=1e-6)


def test_noise_is_seeded_and_has_the_stated_size_on_filled_pixels_only():
    img = torch.zeros(4, 1, 28, 28)
    keep = torch.rand(4, 28, 28, generator=torch.Generator().manual_seed(0)) < 0.05
    keep[:, 0, 0] = True
    a, b = noisy_linear_impute(img, keep, 0.01, seed=3), noisy_linear_impute(img, keep, 0.01, seed=3)
    assert torch.equal(a, b) and not torch.equal(a, noisy_linear_impute(img, keep, 0.01, seed=4))
    filled = a[~keep[:, None]]
    assert filled.std().item() == pytest.approx(0.01, rel=0.1) and (a[keep[:, None]] == 0).all()
    assert a.dtype == img.dtype and a.shape == img.shape


def test_bad_shapes_and_an_image_without_kept_pixels_raise():
    with pytest.raises(ValueError, match="images must be"):
        noisy_linear_impute(torch.zeros(1, 1, 4, 4), torch.ones(1, 3, 4, dtype=torch.bool))
    keep = torch.ones(2, 4, 4, dtype=torch.bool)
    keep[1] = False
    with pytest.raises(ValueError, match="no kept pixel"):
        noisy_linear_impute(torch.zeros(2, 1, 4, 4), keep)
