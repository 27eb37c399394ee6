"""The zoo matches the paper's sizes (S1) and runs on both image sizes."""
import pytest
import torch

from overinterp.zoo.models import ARCHS, Ensemble, build_model, count_macs, count_params, fuse_conv_bn

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


def test_count_macs_counts_convolutions_and_linear_layers_by_hand():
    # conv: 2 x 4 x 4 outputs x (1 x 3 x 3) weights = 288; linear: 32 inputs x 5 outputs = 160
    toy = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1, bias=False), torch.nn.BatchNorm2d(2),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 5)).train()
    assert count_macs(toy, (1, 4, 4)) == 288 + 160
    assert toy.training                                                      # its mode is restored
    assert count_macs(fuse_conv_bn(toy.eval()), (1, 4, 4)) == 448            # folding adds no multiply-adds


def test_halving_resnet20s_width_quarters_its_multiply_adds():
    wide, narrow = (count_macs(build_model("resnet20", 1, 10, w), (1, 28, 28)) for w in (16, 8))
    assert 3.9 < wide / narrow < 4.0             # w^2 in every 3x3 layer; the first conv and the classifier w


def test_ensemble_outputs_mean_of_member_logits():
    members = [build_model("cnn", 1, 10, width=4).eval() for _ in range(3)]
    x = torch.randn(5, 1, 28, 28)
    expected = sum(m(x) for m in members) / 3
    torch.testing.assert_close(Ensemble(members)(x), expected)


def test_unknown_arch_lists_valid_choices():
    with pytest.raises(ValueError, match="resnet20"):
        build_model("resnet50")


def _with_running_stats(model):
    """Random batch-norm statistics and affine parameters, so folding them is not the identity."""
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.randn(m.num_features, generator=g))
            m.bias.data.copy_(torch.randn(m.num_features, generator=g))
    return model.eval()


@pytest.mark.parametrize("arch", ["resnet20", "resnet18", "vgg16", "cnn"])
def test_fuse_conv_bn_folds_batch_norms_and_keeps_the_function(arch):
    model = _with_running_stats(build_model(arch, 1, 10, width=4))
    n_bn = sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    fused = fuse_conv_bn(model)
    x = torch.randn(3, 1, 28, 28)
    torch.testing.assert_close(fused(x), model(x), rtol=1e-4, atol=1e-4)
    left = sum(isinstance(m, torch.nn.BatchNorm2d) for m in fused.modules())
    if arch == "resnet18":  # pre-activation: the batch norms that come before a convolution stay
        assert 0 < left < n_bn
    else:
        assert n_bn > 0 and left == 0
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()) == n_bn  # the original is untouched


def test_fuse_conv_bn_fuses_inside_a_module_it_cannot_trace():
    from overinterp.zoo.train import InputDropout
    model = InputDropout(_with_running_stats(build_model("resnet20", 1, 10, width=4)), keep_prob=0.8, samples=2).eval()
    fused = fuse_conv_bn(model)
    assert isinstance(fused, InputDropout)  # its mask loop is kept
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fused.modules())
    x = torch.randn(3, 1, 28, 28)
    torch.testing.assert_close(fused(x), model(x), rtol=1e-4, atol=1e-4)


def test_criterion_counts_models_meeting_both_the_accuracy_and_the_confidence_floor():
    from types import SimpleNamespace
    from overinterp.pages.runs import criterion_values
    from overinterp.paper.formatting import MISSING
    whole = {"resnet20": [(88.0, 40.0), (87.9, 60.0)], "vgg16": [(91.25, 29.0), (90.0, 30.0)]}
    prof = SimpleNamespace(min_accuracy=88.0, min_confident=30.0, sis_threshold=0.99)
    v = criterion_values(SimpleNamespace(dataset="fashion-mnist", profile=prof), whole)
    assert (v["n_meet"], v["n_whole_models"], v["whole_min"], v["whole_max"]) == (2, 4, "87.9", "91.2")
    assert (v["min_accuracy"], v["min_confident"], v["whole_conf_min"], v["n_whole_test"]) == ("88%", "30%", "29", 10000)
    none = SimpleNamespace(min_accuracy=None, min_confident=None, sis_threshold=0.99)
    v = criterion_values(SimpleNamespace(dataset="fashion-mnist", profile=none), whole)
    assert v["n_meet"] == v["min_accuracy"] == v["min_confident"] == MISSING
