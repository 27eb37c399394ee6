"""The zoo matches the paper's sizes (S1) and runs on both image sizes."""
import pytest
import torch

from overinterp.models import ARCHS, Ensemble, build_model, count_params

# Paper S1: ResNet20 0.27M, ResNet18 11.2M, VGG16 14.7M; WRN-28-10: 36.5M (Zagoruyko & Komodakis).
PAPER_PARAMS = {"resnet20": 0.27e6, "resnet18": 11.2e6, "vgg16": 14.7e6, "wideresnet": 36.5e6}


@pytest.mark.parametrize("arch", PAPER_PARAMS)
def test_parameter_count_matches_paper_within_3_percent(arch):
    n = count_params(build_model(arch, in_channels=3, num_classes=10))
    assert abs(n - PAPER_PARAMS[arch]) / PAPER_PARAMS[arch] < 0.03, n


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
def test_every_arch_runs_on_28_and_32_pixel_inputs(arch, shape):
    width = {"cnn": 4, "resnet20": 4, "resnet18": 4, "vgg16": 4, "wideresnet": 2}[arch]
    model = build_model(arch, in_channels=shape[0], num_classes=7, width=width).eval()
    assert model(torch.randn(2, *shape)).shape == (2, 7)


def test_ensemble_outputs_mean_of_member_logits():
    members = [build_model("cnn", 1, 10, width=4).eval() for _ in range(3)]
    x = torch.randn(5, 1, 28, 28)
    expected = sum(m(x) for m in members) / 3
    torch.testing.assert_close(Ensemble(members)(x), expected)


def test_unknown_arch_lists_valid_choices():
    with pytest.raises(ValueError, match="resnet20"):
        build_model("resnet50")
