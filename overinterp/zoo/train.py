"""Training and evaluation (paper section 3.2 and S1).

SGD with Nesterov momentum 0.9, weight decay 5e-4, batch 128, learning rate 0.1
divided by 5 at 30/60/80% of training (epochs 60/120/160 of 200), cross-entropy,
optional random crop (pad 4) + horizontal flip, optional input dropout.

The data path is airbench-style: the whole training set is one tensor on the
device, batches are slices of a device-side ``randperm`` and augmentation is
done on whole batches -- no DataLoader, no worker processes. ``fit`` takes any
(images, labels) tensors, so the retraining experiments of section 4.2 train on
5% pixel subsets (the rest masked with zeros) with the very same function.

    history = fit(model, images, labels, TrainConfig(epochs=30), seed=0)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from overinterp.store import Store
from overinterp.zoo.models import build_model

__all__ = ["TrainConfig", "InputDropout", "augment_draws", "augment_batch", "fit", "logits", "predict", "accuracy", "resolve_device", "device_name", "plateaued",
           "tail_start_loss",
           "make_model", "cached_training", "cached_fit"]


@dataclass(frozen=True)
class TrainConfig:
    """The paper's recipe (S1); epochs < 200 scale the learning-rate milestones."""
    epochs: int = 200
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9              # Nesterov
    weight_decay: float = 5e-4
    milestones: tuple = (0.3, 0.6, 0.8)  # fractions of training: epochs 60/120/160 of 200
    gamma: float = 0.2                 # lr divided by 5 at each milestone
    augment: bool = True               # random crop (pad 4) + horizontal flip
    keep_prob: float = 1.0             # input dropout (paper code's mitigation); 1 = off
    dropout_samples: int = 1           # dropout draws averaged at evaluation
    fast_cuda: bool = True             # bf16 autocast + channels_last on CUDA; ignored on CPU


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def device_name(device: str | torch.device | None = "auto") -> str:
    """What ran it, for manifests and shards: the GPU's name, or 'CPU (<model>, <n> threads)'."""
    device = resolve_device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or platform.machine()
    n = torch.get_num_threads()
    return f"CPU ({cpu}, {n} thread{'' if n == 1 else 's'})"


class InputDropout(nn.Module):
    """Input dropout (the paper code's mitigation): each pixel, all channels together,
    is kept with probability ``keep_prob`` and otherwise set to 0 (the mean pixel).

    In training mode one fresh mask per image. In eval mode the output is the mean of the
    *logits* over ``samples`` masks, as the paper code's ``ModelWithInputDropout`` averages
    its outputs (``torch.mean(outs, dim=0)``); but where that code draws fresh masks at
    every call, ours are drawn once from a fixed seed and shared by every image of the
    batch, so an image's output is the same at any batch position and batch size: a
    deterministic function of the image (needed by backselect,
    :func:`overinterp.engine.backselect.check_batch_independent`).
    """

    def __init__(self, model: nn.Module, keep_prob: float, samples: int = 1, seed: int = 0):
        super().__init__()
        if not 0 < keep_prob <= 1:
            raise ValueError(f"keep_prob must be in (0, 1], got {keep_prob}")
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        self.model, self.keep_prob, self.samples, self.seed = model, keep_prob, samples, seed

    def eval_masks(self, x: torch.Tensor) -> torch.Tensor:
        """(samples, 1, 1, H, W) keep-masks of eval mode, from ``seed`` on the CPU (same on every device)."""
        u = torch.rand((self.samples, 1, 1, *x.shape[2:]), generator=torch.Generator().manual_seed(self.seed))
        return (u < self.keep_prob).to(device=x.device, dtype=x.dtype)

    def forward(self, x):  # (B, C, H, W) -> (B, classes)
        if self.training:
            mask = torch.rand((x.shape[0], 1, *x.shape[2:]), device=x.device) < self.keep_prob  # (B, 1, H, W)
            return self.model(x * mask.to(x.dtype))
        return torch.stack([self.model(x * m) for m in self.eval_masks(x)]).mean(0)  # mean logits (samples, B, K)


PAD = 4  # random-crop padding (S1)


def augment_draws(n: int, gen: torch.Generator | None = None, device="cpu") -> torch.Tensor:
    """(3, n) int64 random crop offsets (rows dy, columns dx in [0, 2*PAD]) and horizontal flips
    (0/1) for ``n`` images, drawn on the CPU from ``gen`` and moved to ``device`` in one copy."""
    d = torch.randint(0, 2 * PAD + 1, (2, n), generator=gen)
    flip = (torch.rand(n, generator=gen) < 0.5).long()
    return torch.cat([d, flip[None]]).to(device)


def augment_batch(x: torch.Tensor, pad_value: torch.Tensor, gen: torch.Generator | None = None,
                  draws: torch.Tensor | None = None) -> torch.Tensor:
    """Random crop with ``PAD`` pixels of padding, then random horizontal flip, on a batch.

    ``pad_value`` (C,) is what padding is filled with (black, as torchvision pads raw pixels).
    ``draws`` (3, B) from :func:`augment_draws` (default: drawn now from ``gen``); passing an
    epoch's draws keeps the training loop free of host-device copies.
    """
    B, C, H, W = x.shape
    dy, dx, flip = augment_draws(B, gen, x.device) if draws is None else draws
    xp = pad_value.view(1, C, 1, 1).expand(B, C, H + 2 * PAD, W + 2 * PAD).clone()
    xp[:, :, PAD:PAD + H, PAD:PAD + W] = x
    rows = (dy[:, None] + torch.arange(H, device=x.device))[:, None, :, None]  # (B, 1, H, 1)
    cols = (dx[:, None] + torch.arange(W, device=x.device))[:, None, None, :]  # (B, 1, 1, W)
    out = xp[torch.arange(B, device=x.device)[:, None, None, None], torch.arange(C, device=x.device)[None, :, None, None],
             rows, cols]
    return torch.where(flip.bool()[:, None, None, None], out.flip(3), out)


def _autocast(device: torch.device, bf16: bool):
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16 and device.type == "cuda")


def fit(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig = TrainConfig(),
        seed: int = 0, device="auto", progress: bool = True, desc: str = "train", perturb=None) -> list[dict]:
    """Train ``model`` in place on (images (N,C,H,W), labels (N,)); returns per-epoch stats.

    ``perturb(model, x, y) -> x'`` (or ``(x', y')``), if given, replaces each (augmented) batch before the
    step: adversarial training trains on PGD examples (:mod:`overinterp.experiments.robust`, Madry et al. 2018),
    counterfactual training on the batch and its masked copy (:mod:`overinterp.experiments.masked`); the stats
    are then those of the replaced batches."""
    device = resolve_device(device)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    fast = cfg.fast_cuda and device.type == "cuda"
    memory_format = torch.channels_last if fast else torch.contiguous_format
    model.to(device=device, memory_format=memory_format).train()
    X, Y = images.to(device), labels.to(device)
    pad_value = X.amin(dim=(0, 2, 3))  # darkest value per channel = black
    steps_per_epoch = -(-len(X) // cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True,
                          weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [int(f * total) for f in cfg.milestones], cfg.gamma)
    history, bar = [], tqdm(total=total, desc=desc, disable=not progress, unit="step")
    for epoch in range(cfg.epochs):
        # one host->device copy per epoch (permutation, augmentation draws); the loss and accuracy
        # accumulate on the device and are read once per epoch: no host round trip per step
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        correct, seen = torch.zeros((), dtype=torch.long, device=device), 0
        perm = torch.randperm(len(X), generator=gen).to(device)
        draws = augment_draws(len(X), gen, device) if cfg.augment else None
        for i in range(steps_per_epoch):
            sl = slice(i * cfg.batch_size, (i + 1) * cfg.batch_size)
            x, y = X[perm[sl]], Y[perm[sl]]
            if cfg.augment:
                x = augment_batch(x, pad_value, draws=draws[:, sl])
            if perturb is not None:
                x = perturb(model, x, y)
                x, y = x if isinstance(x, tuple) else (x, y)
            with _autocast(device, fast):
                out = model(x.contiguous(memory_format=memory_format))
                loss = F.cross_entropy(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.detach().float() * len(y)
            correct += (out.argmax(1) == y).sum()
            seen += len(y)
            bar.update(1)
        loss_mean, acc = loss_sum.item() / seen, correct.item() / seen
        bar.set_postfix(epoch=epoch + 1, loss=f"{loss_mean:.3f}", acc=f"{acc:.3f}")
        history.append({"epoch": epoch + 1, "loss": loss_mean, "train_acc": acc, "seconds": time.perf_counter() - t0})
    bar.close()
    return history


def tail_start_loss(history: list[dict], tail: float = 1 / 3) -> float:
    """The training loss at the start of the last ``tail`` of the epochs (what :func:`plateaued` compares)."""
    return history[max(0, len(history) - 1 - max(1, round(tail * len(history))))]["loss"]


def plateaued(history: list[dict], tail: float = 1 / 3, rtol: float = 0.1, atol: float = 0.01) -> bool:
    """Our stopping criterion: training has plateaued when the mean training loss fell
    by less than ``rtol`` (relative) or less than ``atol`` nats over the last ``tail`` of the epochs.

    ``atol`` = 0.01 nats is the loss of a true-class probability of 0.99, the paper's tau: a loss
    resting at its weight-decay floor still falls by tens of percent in relative terms (measured on
    the quick ResNet20 trained 48 epochs on 6000 images: 0.0058 -> 0.0044 over the last third)."""
    if len(history) < 2:
        return False
    start = tail_start_loss(history, tail)
    return start - history[-1]["loss"] <= max(rtol * start, atol)


@torch.inference_mode()
def logits(model: nn.Module, images: torch.Tensor, batch_size: int = 1000, device="auto") -> torch.Tensor:
    """(N, num_classes) float32 outputs of ``model`` in eval mode, in batches of ``batch_size``, on the CPU:
    the library's one batched-inference loop."""
    device = resolve_device(device)
    model.to(device).eval()
    return torch.cat([model(images[i:i + batch_size].to(device)).float().cpu()
                      for i in range(0, len(images), batch_size)])


def predict(model: nn.Module, images: torch.Tensor, batch_size: int = 1000, device="auto") -> torch.Tensor:
    """Softmax probabilities (N, num_classes) on the CPU, model in eval mode (:func:`logits`)."""
    return F.softmax(logits(model, images, batch_size, device), -1)


def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, device="auto") -> float:
    return (predict(model, images, device=device).argmax(1) == labels).float().mean().item()






def make_model(cfg: dict, in_channels: int, num_classes: int) -> nn.Module:
    model = build_model(cfg["arch"], in_channels, num_classes, cfg["width"])
    t = cfg["train"]
    return InputDropout(model, t.keep_prob, t.dropout_samples) if t.keep_prob < 1 else model


def cached_training(kind: str, cfg, module: nn.Module, train, evaluate=None, store: Store | None = None) -> nn.Module:
    """``module`` with the weights the store holds for (``kind``, ``cfg``), or trained now and saved:
    the one "train once, keep in the store" of the library.

    ``train(module)`` trains in place and returns what to keep beside the weights (e.g. the
    history); it is timed (``seconds``). ``evaluate(module)``, after it, returns more to keep (e.g.
    a test accuracy). ``module.info`` holds everything kept but the weights.
    """
    store = store or Store()
    saved = store.load(kind, cfg)
    if saved is None:
        t0 = time.perf_counter()
        kept = train(module)
        kept["seconds"] = time.perf_counter() - t0
        kept.update(evaluate(module) if evaluate is not None else {})
        saved = {"state_dict": {k: v.cpu() for k, v in module.state_dict().items()}, **kept}
        store.save(kind, cfg, saved)
    module.load_state_dict(saved["state_dict"])
    module.info = {k: v for k, v in saved.items() if k != "state_dict"}
    return module


def cached_fit(kind: str, cfg: dict, model: nn.Module, images, labels: torch.Tensor | None,
               train_cfg: TrainConfig, seed: int, device="auto", store: Store | None = None,
               progress: bool = True, desc: str = "train", eval_data: tuple | None = None,
               perturb=None) -> nn.Module:
    """:func:`fit` ``model`` on (images, labels) unless the store holds the weights for ``cfg``
    (:func:`cached_training`). Returns the model in eval mode on ``device``; ``model.info`` holds the
    training history, the accuracy on ``eval_data`` = (images, labels), the wall time and the device.
    ``images`` may be a function returning (images, labels) (``labels`` None), called only when the
    model must be trained, so a stored model costs no data loading. ``perturb``: see :func:`fit` (what it
    does must be part of ``cfg``).
    """
    def train(m):
        x, y = images() if callable(images) else (images, labels)
        return {"history": fit(m, x, y, train_cfg, seed=seed, device=device, progress=progress, desc=desc,
                               perturb=perturb)}

    def evaluate(m):
        return {"test_acc": accuracy(m, *eval_data, device=device) if eval_data is not None else None,
                "device": str(resolve_device(device))}

    model = cached_training(kind, cfg, model, train, evaluate, store)
    return model.to(resolve_device(device)).eval()