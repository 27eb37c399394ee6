"""The model zoo of the paper (section 3.2, S1) and a small CNN for CPU profiles.

* ``resnet20``  -- CIFAR ResNet of He et al. 2016, 16 initial filters, 0.27M params.
* ``resnet18``  -- pre-activation ("v2") ResNet18, 64 initial filters, 11.2M params.
* ``vgg16``     -- VGG16 with batch norm, 14.7M params.
* ``wideresnet``-- WRN-28-10 (the adversarially robust model of section 4.5 is a WRN).
* ``cnn``       -- three conv layers (32/64/128 filters) for laptop-sized runs.

Every model takes ``in_channels`` and ``num_classes``, works on 28x28 and 32x32 (global average pooling),
and has ``width`` initial filters (default: the paper's). ``Ensemble`` averages logits (3.2).
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.optimization import fuse


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def count_macs(model: nn.Module, shape: tuple) -> int:
    """Multiply-adds of one forward pass on one input of ``shape`` (C, H, W): convolutions and matrix
    products only (``FlopCounterMode`` / 2), so folding batch norms leaves it unchanged."""
    from torch.utils.flop_counter import FlopCounterMode
    was_training, device = model.training, next(model.parameters()).device
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model.eval()(torch.zeros(1, *shape, device=device))
    finally:
        model.train(was_training)
    return counter.get_total_flops() // 2


def fuse_conv_bn(model: nn.Module) -> nn.Module:
    """A copy of the eval-mode ``model`` with each batch norm folded into the convolution before it: the
    same function up to rounding, 1.2-2x faster; an untraceable module has only its children fused."""
    return _fuse(copy.deepcopy(model))


def _fuse(model: nn.Module) -> nn.Module:
    if not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return model
    try:
        return fuse(model, inplace=True)  # traces before it changes anything
    except Exception:  # not traceable (data-dependent Python): fuse what is below it
        for name, child in model.named_children():
            setattr(model, name, _fuse(child))
        return model


def _shortcut(cin: int, cout: int, stride: int, bn: bool = True) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    layers = [nn.Conv2d(cin, cout, 1, stride, bias=False)]
    return nn.Sequential(*layers, nn.BatchNorm2d(cout)) if bn else layers[0]


class BasicBlock(nn.Module):
    """Post-activation residual block (He et al. 2016a)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = _shortcut(cin, cout, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class PreActBlock(nn.Module):
    """Pre-activation residual block (He et al. 2016b, "v2"); ``dropout`` for WRN."""

    def __init__(self, cin: int, cout: int, stride: int, dropout: float = 0.0):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()
        self.shortcut = _shortcut(cin, cout, stride, bn=False)

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = x if isinstance(self.shortcut, nn.Identity) else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.drop(F.relu(self.bn2(out))))
        return out + shortcut


def _stage(block, cin: int, cout: int, n: int, stride: int, **kw) -> nn.Sequential:
    layers = [block(cin, cout, stride, **kw)] + [block(cout, cout, 1, **kw) for _ in range(n - 1)]
    return nn.Sequential(*layers)


class ResNet20(nn.Module):
    """CIFAR ResNet-20: 3 stages x 3 basic blocks, filters w/2w/4w (w=16)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 16):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(in_channels, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        self.layers = nn.Sequential(_stage(BasicBlock, w, w, 3, 1), _stage(BasicBlock, w, 2 * w, 3, 2),
                                    _stage(BasicBlock, 2 * w, 4 * w, 3, 2))
        self.fc = nn.Linear(4 * w, num_classes)

    def forward(self, x):  # (B, C, H, W) -> (B, num_classes)
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class PreActResNet18(nn.Module):
    """Pre-activation ResNet-18 (v2): 4 stages x 2 blocks, filters w..8w (w=64)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 64):
        super().__init__()
        w = width
        self.stem = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.layers = nn.Sequential(_stage(PreActBlock, w, w, 2, 1), _stage(PreActBlock, w, 2 * w, 2, 2),
                                    _stage(PreActBlock, 2 * w, 4 * w, 2, 2), _stage(PreActBlock, 4 * w, 8 * w, 2, 2))
        self.bn = nn.BatchNorm2d(8 * w)
        self.fc = nn.Linear(8 * w, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.layers(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VGG16(nn.Module):
    """VGG16 with batch norm (configuration D), CIFAR-style single linear classifier."""

    CFG = (1, 1, "M", 2, 2, "M", 4, 4, 4, "M", 8, 8, 8, "M", 8, 8, 8, "M")  # multiples of w

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 64):
        super().__init__()
        layers, c = [], in_channels
        for v in self.CFG:
            if v == "M":
                # ceil_mode keeps 28x28 inputs alive through five poolings (28->14->7->4->2->1)
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
            else:
                layers += [nn.Conv2d(c, v * width, 3, padding=1, bias=False), nn.BatchNorm2d(v * width), nn.ReLU()]
                c = v * width
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class WideResNet(nn.Module):
    """WRN-depth-k (Zagoruyko & Komodakis 2016): filters 16, 16k, 32k, 64k (pre-activation)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 16,
                 depth: int = 28, widen: int = 10, dropout: float = 0.0):
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"WideResNet depth must be 6n+4, got {depth}")
        n, w = (depth - 4) // 6, width
        self.stem = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.layers = nn.Sequential(_stage(PreActBlock, w, w * widen, n, 1, dropout=dropout),
                                    _stage(PreActBlock, w * widen, 2 * w * widen, n, 2, dropout=dropout),
                                    _stage(PreActBlock, 2 * w * widen, 4 * w * widen, n, 2, dropout=dropout))
        self.bn = nn.BatchNorm2d(4 * w * widen)
        self.fc = nn.Linear(4 * w * widen, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.layers(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SmallCNN(nn.Module):
    """Three 3x3 conv layers (w, 2w, 4w; w=32) with max pooling, then a linear layer."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, width: int = 32):
        super().__init__()
        w = width
        block = lambda cin, cout: [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]
        self.features = nn.Sequential(*block(in_channels, w), nn.MaxPool2d(2), *block(w, 2 * w), nn.MaxPool2d(2),
                                      *block(2 * w, 4 * w))
        self.fc = nn.Linear(4 * w, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


ARCHS = {"resnet20": ResNet20, "resnet18": PreActResNet18, "vgg16": VGG16, "wideresnet": WideResNet, "cnn": SmallCNN}


def build_model(arch: str, in_channels: int = 3, num_classes: int = 10, width: int | None = None) -> nn.Module:
    """Build ``arch`` from the registry; ``width`` (initial filters) defaults to the paper's."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; valid choices: {', '.join(ARCHS)}")
    kw = {} if width is None else {"width": width}
    return ARCHS[arch](in_channels=in_channels, num_classes=num_classes, **kw)


class Ensemble(nn.Module):
    """Arithmetic mean of the members' logits (paper 3.2)."""

    def __init__(self, models):
        super().__init__()
        self.members = nn.ModuleList(models)
        if not len(self.members):
            raise ValueError("Ensemble needs at least one model")

    def forward(self, x):
        return torch.stack([m(x) for m in self.members]).mean(0)
