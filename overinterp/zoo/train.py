"""Training and evaluation (paper 3.2, S1): the paper's SGD recipe (:class:`TrainConfig`) on whole tensors
on the device (airbench-style: no DataLoader, augmentation per batch), so the retraining of 4.2 trains on
pixel subsets with the same :func:`fit`.

    history = fit(model, images, labels, TrainConfig(epochs=30), seed=0)
"""
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from overinterp.store import Store
from overinterp.zoo.models import build_model


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
    """Input dropout (the paper code's mitigation): each pixel (all channels) kept with probability
    ``keep_prob``, else 0 (the mean pixel); a fresh mask per image in training. In eval mode the mean
    *logits* over ``samples`` masks drawn once from ``seed`` and shared by the batch (the paper code draws
    fresh ones), so the output is a deterministic function of the image, as backselect needs.
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
    """(3, n) int64: crop offsets dy, dx in [0, 2*PAD] and flips (0/1), drawn on the CPU from ``gen``."""
    d = torch.randint(0, 2 * PAD + 1, (2, n), generator=gen)
    flip = (torch.rand(n, generator=gen) < 0.5).long()
    return torch.cat([d, flip[None]]).to(device)


def augment_batch(x: torch.Tensor, pad_value: torch.Tensor, gen: torch.Generator | None = None,
                  draws: torch.Tensor | None = None) -> torch.Tensor:
    """Random crop (``PAD`` padding of ``pad_value`` (C,), black) then horizontal flip of a batch;
    ``draws`` (3, B): :func:`augment_draws`' (default: drawn now from ``gen``)."""
    B, C, H, W = x.shape
    dy, dx, flip = augment_draws(B, gen, x.device) if draws is None else draws
    xp = pad_value.view(1, C, 1, 1).expand(B, C, H + 2 * PAD, W + 2 * PAD).clone()
    xp[:, :, PAD:PAD + H, PAD:PAD + W] = x
    rows = (dy[:, None] + torch.arange(H, device=x.device))[:, None, :, None]  # (B, 1, H, 1)
    cols = (dx[:, None] + torch.arange(W, device=x.device))[:, None, None, :]  # (B, 1, 1, W)
    out = xp[torch.arange(B, device=x.device)[:, None, None, None], torch.arange(C, device=x.device)[None, :, None, None],
             rows, cols]
    return torch.where(flip.bool()[:, None, None, None], out.flip(3), out)


def fit(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig = TrainConfig(),
        seed: int = 0, device="auto", progress: bool = True, desc: str = "train", perturb=None) -> list[dict]:
    """Train ``model`` in place on (images (N,C,H,W), labels (N,)); returns per-epoch stats.
    ``perturb(model, x, y) -> x'`` (or ``(x', y')``) replaces each augmented batch (PGD, masked copies);
    the stats are then the replaced batches'."""
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
        # one host->device copy and one read per epoch: no host round trip per step
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
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=fast and device.type == "cuda"):
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
    """Our stopping criterion: the training loss fell by less than ``rtol`` (relative) or ``atol`` nats over
    the last ``tail`` of the epochs. ``atol`` = 0.01 nats, the loss at p = 0.99 (the paper's tau): a loss at
    its weight-decay floor still falls by tens of percent relatively."""
    if len(history) < 2:
        return False
    start = tail_start_loss(history, tail)
    return start - history[-1]["loss"] <= max(rtol * start, atol)


@torch.inference_mode()
def logits(model: nn.Module, images: torch.Tensor, batch_size: int = 1000, device="auto") -> torch.Tensor:
    """(N, num_classes) float32 outputs of ``model`` in eval mode, in batches, on the CPU."""
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
    """``module`` with the store's weights for (``kind``, ``cfg``), or trained now and saved. ``train(module)``
    trains in place and returns a dict to keep (timed: ``seconds``); ``evaluate(module)`` returns more;
    ``module.info`` holds all kept but the weights."""
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
    """:func:`fit` unless the store holds ``cfg``'s weights; the model in eval mode on ``device``, ``info``:
    history, accuracy on ``eval_data`` = (images, labels), seconds, device. ``images`` may be a function
    returning (images, labels) (``labels`` None), called only to train. ``perturb`` must be part of ``cfg``.
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