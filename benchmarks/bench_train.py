"""Training throughput (images/s) of every architecture; JSON with device info, one record per
architecture and input shape (``"schema": 2``: ``{"arch", "shape", "images_per_s"}``).

    python benchmarks/bench_train.py [--device cuda] [--steps 10]

On CUDA it also times one ResNet18 epoch on synthetic 32x32x3 data (50k images)
with and without bf16 autocast + channels_last.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from overinterp.zoo.models import ARCHS, build_model
from overinterp.zoo.train import TrainConfig
from overinterp.zoo.train import fit, resolve_device


def device_info(device: torch.device) -> dict:
    info = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": platform.processor() or platform.machine(), "python": platform.python_version()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    else:
        try:
            info["cpu"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
        except (OSError, StopIteration):
            pass
    return info


def train_throughput(arch: str, shape, device, steps: int, batch: int = 128, **cfg) -> float:
    """Images per second of ``fit`` (forward, backward, SGD step, augmentation) after one warm-up step."""
    model = build_model(arch, shape[0], 10)
    n = batch * (steps + 1)
    x, y = torch.randn(n, *shape), torch.randint(0, 10, (n,))
    fit(model, x[:batch], y[:batch], TrainConfig(epochs=1, batch_size=batch, **cfg), device=device, progress=False)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fit(model, x[batch:], y[batch:], TrainConfig(epochs=1, batch_size=batch, **cfg), device=device, progress=False)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=5, help="timed SGD steps per measurement")
    p.add_argument("--archs", nargs="*", default=list(ARCHS))
    p.add_argument("--out", default=None)
    a = p.parse_args()
    device = resolve_device(a.device)
    result = {"schema": 2, "info": device_info(device), "batch": 128, "runs": []}
    for arch in a.archs:
        for shape in [(1, 28, 28), (3, 32, 32)]:
            result["runs"].append({"arch": arch, "shape": list(shape),
                                   "images_per_s": round(train_throughput(arch, shape, device, a.steps), 1)})
            print(json.dumps(result["runs"][-1]), "img/s", flush=True)
    if device.type == "cuda":
        epoch = {}
        for name, bf16 in [("fp32", False), ("bf16+channels_last", True)]:
            ips = train_throughput("resnet18", (3, 32, 32), device, steps=100, fast_cuda=bf16)
            epoch[name] = round(50000 / ips, 2)
        result["resnet18_cifar_epoch_seconds"] = epoch
    write_result(result, a.out or Path(__file__).parent / "results" / f"train-{device.type}.json")


def write_result(result: dict, out) -> None:
    """Write a benchmark's JSON to ``out`` (folders made as needed) and say where."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print("wrote", out)


if __name__ == "__main__":
    main()
