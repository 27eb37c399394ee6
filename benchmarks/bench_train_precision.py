"""Does bf16 autocast and/or torch.compile make CPU training faster here? Ratios measured in one run.

    python benchmarks/bench_train_precision.py [--rounds 5] [--archs resnet20 resnet18 vgg16] [--epochs 60]
        [--accuracy-epochs 10] [--out benchmarks/results/train-precision-cpu.json]

Variants of the training step of :func:`overinterp.zoo.train.fit` (forward + cross-entropy, backward,
Nesterov SGD step, the same per-step bookkeeping): ``float32`` (today's CPU loop), ``bf16``
(``torch.autocast("cpu", dtype=torch.bfloat16)`` around forward and loss), ``compile``
(``torch.compile(model)``, default mode) and ``bf16+compile``. Models are the quick profile's (width 8)
on Fashion-MNIST-sized random tensors (1x28x28, 10 classes), one epoch of the quick recipe per timing
(1500 images at the default batch: 11 batches of 128 and one of 92, ``augment=False``).

Other processes share this machine's cores and their load drifts, so the variants are interleaved:
each round times one epoch of every variant, in a rotated order, and the reported speed-up is the
median over rounds of the per-round ratio float32 / variant. A compiled variant also pays a one-time
cost per model: ``compile_s`` is the wall time of its first epoch (where both batch shapes are
compiled, forward and backward) minus one steady epoch. ``end_to_end`` compares the quick recipe's
total per model: ``epochs`` x the median epoch time + ``compile_s`` (the book compiles each model it
trains once). ``compile_s_warm`` is the same cost for a second, fresh model of the architecture in the
same process (a later replicate in the same chapter: Dynamo reuses the compiled code), and
``compile_s_new_process`` the cost in a new Python process with the on-disk Inductor cache warm (the
next chapter's kernel). The Inductor cache starts empty (a fresh ``TORCHINDUCTOR_CACHE_DIR``), as on
a fresh clone.

``--accuracy-epochs`` (0: skip) then trains ResNet20 (width 8) on the first 1500 real Fashion-MNIST
training images (:func:`overinterp.zoo.data.take`, seed 0) for that many epochs with every variant
from the same initial weights and evaluates float32 test accuracy on 1000 test images, so bf16's
effect on training is on record beside its speed.

Writes ``"schema": 2`` JSON with the device (CPU model, threads, torch) in ``info``.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from overinterp.zoo.models import build_model
from overinterp.zoo.train import TrainConfig, accuracy, device_name

VARIANTS = ("float32", "bf16", "compile", "bf16+compile")
WIDTH = 8          # the quick profile's widths
TRAIN_SIZE = 1500  # the quick profile's training images
SHAPE = (1, 28, 28)


def device_info() -> dict:
    import platform
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
        flags = next(l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags"))
    except (OSError, StopIteration):
        cpu, flags = platform.processor() or platform.machine(), []
    return {"device": "cpu", "device_name": device_name("cpu"), "cpu": cpu, "threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(),
            "cpu_flags": [f for f in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]}


class Trainer:
    """One model, its optimizer and the training step of one variant (mirrors ``fit``'s inner loop)."""

    def __init__(self, model: torch.nn.Module, variant: str, cfg: TrainConfig):
        self.model = model.train()
        self.bf16 = "bf16" in variant
        self.forward = torch.compile(model) if "compile" in variant else model
        self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True,
                                   weight_decay=cfg.weight_decay)
        self.batch = cfg.batch_size

    def epoch(self, X: torch.Tensor, Y: torch.Tensor, gen: torch.Generator) -> float:
        """One epoch over (X, Y) in a random order; returns the mean training loss."""
        loss_sum = torch.zeros(())
        correct = torch.zeros((), dtype=torch.long)
        perm = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), self.batch):
            x, y = X[perm[i:i + self.batch]], Y[perm[i:i + self.batch]]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                out = self.forward(x)
                loss = F.cross_entropy(out, y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            loss_sum += loss.detach().float() * len(y)
            correct += (out.argmax(1) == y).sum()
        return loss_sum.item() / len(X)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def speed(arch: str, rounds: int, epochs: int, cfg: TrainConfig) -> dict:
    torch.manual_seed(0)
    X, Y = torch.randn(TRAIN_SIZE, *SHAPE), torch.randint(0, 10, (TRAIN_SIZE,))
    gen = torch.Generator().manual_seed(0)
    init = build_model(arch, SHAPE[0], 10, WIDTH)
    trainers = {v: Trainer(copy.deepcopy(init), v, cfg) for v in VARIANTS}
    first = {v: timed(lambda: t.epoch(X, Y, gen)) for v, t in trainers.items()}  # eager warm-up / compilation
    times = {v: [] for v in VARIANTS}
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for v in order:
            times[v].append(timed(lambda: trainers[v].epoch(X, Y, gen)))
        print(arch, "round", r, {v: round(times[v][-1], 3) for v in VARIANTS}, flush=True)
    # a second, fresh model per compiled variant: the cost of compiling a later replicate
    warm = {v: timed(lambda: Trainer(copy.deepcopy(init), v, cfg).epoch(X, Y, gen)) for v in VARIANTS if "compile" in v}
    med = {v: statistics.median(times[v]) for v in VARIANTS}
    fresh = {v: new_process_compile(arch, v) for v in VARIANTS if "compile" in v}
    rec = {"arch": arch, "width": WIDTH, "shape": list(SHAPE), "images_per_epoch": TRAIN_SIZE, "rounds": rounds,
           "epoch_s": {v: [round(t, 4) for t in times[v]] for v in VARIANTS},
           "epoch_s_median": {v: round(med[v], 4) for v in VARIANTS},
           "speedup_steady": {v: round(statistics.median(b / t for b, t in zip(times["float32"], times[v])), 3)
                              for v in VARIANTS},
           "compile_s": {v: round(max(0.0, first[v] - med[v]), 2) for v in VARIANTS if "compile" in v},
           "compile_s_warm": {v: round(max(0.0, warm[v] - med[v]), 2) for v in warm},
           "compile_s_new_process": {v: round(c, 2) for v, c in fresh.items()},
           "epochs": epochs}
    total = {v: epochs * med[v] + rec["compile_s"].get(v, 0.0) for v in VARIANTS}
    total_warm = {v: epochs * med[v] + rec["compile_s_warm"].get(v, 0.0) for v in VARIANTS}
    rec["total_s"] = {v: round(total[v], 1) for v in VARIANTS}
    rec["speedup_end_to_end"] = {v: round(total["float32"] / total[v], 3) for v in VARIANTS}
    rec["speedup_end_to_end_warm"] = {v: round(total_warm["float32"] / total_warm[v], 3) for v in VARIANTS}
    total_new = {v: epochs * med[v] + fresh.get(v, 0.0) for v in VARIANTS}
    rec["speedup_end_to_end_new_process"] = {v: round(total_new["float32"] / total_new[v], 3) for v in VARIANTS}
    return add_min_estimates(rec)


def add_min_estimates(rec: dict) -> dict:
    """The same speed-ups from each variant's fastest epoch: contention only ever adds time, so
    when it is bursty (a neighbour compiling) the minimum is the steadier estimate of the unloaded speed."""
    mins = {v: min(ts) for v, ts in rec["epoch_s"].items()}
    rec["epoch_s_min"] = {v: round(t, 4) for v, t in mins.items()}
    rec["speedup_steady_min"] = {v: round(mins["float32"] / t, 3) for v, t in mins.items()}
    for key, cost in (("", "compile_s"), ("_warm", "compile_s_warm"), ("_new_process", "compile_s_new_process")):
        total = {v: rec["epochs"] * t + rec.get(cost, {}).get(v, 0.0) for v, t in mins.items()}
        rec["speedup_end_to_end_min" + key] = {v: round(total["float32"] / total[v], 3) for v in mins}
    return rec


def new_process_compile(arch: str, variant: str) -> float:
    """One-time cost of ``variant`` in a new process (the disk cache as this run left it): its first
    epoch minus the median of two steady ones, measured there."""
    out = subprocess.run([sys.executable, __file__, "--child", arch, variant, "--threads", str(torch.get_num_threads())],
                         capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])["compile_s"]


def child(arch: str, variant: str) -> None:
    torch.manual_seed(0)
    X, Y = torch.randn(TRAIN_SIZE, *SHAPE), torch.randint(0, 10, (TRAIN_SIZE,))
    gen = torch.Generator().manual_seed(0)
    t = Trainer(build_model(arch, SHAPE[0], 10, WIDTH), variant, TrainConfig(augment=False))
    first = timed(lambda: t.epoch(X, Y, gen))
    steady = statistics.median(timed(lambda: t.epoch(X, Y, gen)) for _ in range(2))
    print(json.dumps({"compile_s": max(0.0, first - steady)}))


def training_effect(epochs: int, cfg: TrainConfig) -> dict:
    """ResNet20 (width 8) on 1500 real Fashion-MNIST images: final loss and float32 test accuracy per variant."""
    from overinterp.zoo.data import load, take
    X, Y = take(load("fashion-mnist", "train"), TRAIN_SIZE, seed=0)
    Xt, Yt = take(load("fashion-mnist", "test"), 1000, seed=0)
    torch.manual_seed(0)
    init = build_model("resnet20", 1, 10, WIDTH)
    out = {"arch": "resnet20", "width": WIDTH, "train_images": TRAIN_SIZE, "test_images": len(Xt), "epochs": epochs,
           "lr": "constant 0.1 (no milestones)", "evaluation": "float32, eager", "runs": {}}
    for v in VARIANTS:
        t = Trainer(copy.deepcopy(init), v, cfg)
        gen = torch.Generator().manual_seed(0)
        t0 = time.perf_counter()
        losses = [t.epoch(X, Y, gen) for _ in range(epochs)]
        secs = time.perf_counter() - t0
        out["runs"][v] = {"loss_first_epoch": round(losses[0], 4), "loss_final": round(losses[-1], 4),
                          "test_acc": round(accuracy(t.model, Xt, Yt, device="cpu"), 4), "seconds": round(secs, 1)}
        print("accuracy", v, out["runs"][v], flush=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (one epoch per variant each)")
    p.add_argument("--archs", nargs="*", default=["resnet20", "resnet18", "vgg16"])
    p.add_argument("--epochs", type=int, default=60, help="epochs of the recipe compared end to end (quick: 60)")
    p.add_argument("--accuracy-epochs", type=int, default=10, help="epochs of the real-data check (0: skip)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--child", nargs=2, metavar=("ARCH", "VARIANT"), help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "train-precision-cpu.json"))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.child:
        return child(*a.child)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))  # cold, as on a fresh clone
    cfg = TrainConfig(augment=False)
    result = {"schema": 2, "info": device_info(), "batch": cfg.batch_size, "variants": list(VARIANTS),
              "command": "python benchmarks/bench_train_precision.py " + " ".join(
                  f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}" for k, v in vars(a).items()
                  if k not in ("out", "child")),
              "runs": []}
    t0 = time.perf_counter()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write():  # after every part: a run cut short keeps what it measured
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(result, indent=2) + "\n")

    for arch in a.archs:
        result["runs"].append(speed(arch, a.rounds, a.epochs, cfg))
        r = result["runs"][-1]
        print(json.dumps({k: r[k] for k in ("arch", "speedup_steady", "compile_s", "speedup_end_to_end")}), flush=True)
        write()
    if a.accuracy_epochs:
        result["training_effect"] = training_effect(a.accuracy_epochs, cfg)
    write()
    print("wrote", out)


if __name__ == "__main__":
    main()
