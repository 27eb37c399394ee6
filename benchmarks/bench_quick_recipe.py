"""Quick-profile recipes at one training budget: for each architecture and
(training images, epochs), the zoo model's test accuracy on the whole test set, its mean confidence,
the share of test images at confidence >= tau (0.99, the SIS chapter's) and the training seconds.

    OVERINTERP_ARTIFACTS=/tmp/recipes python benchmarks/bench_quick_recipe.py \
        --recipes 7500x12 60000x2 --archs resnet20 resnet18 vgg16 --seeds 0 --out FILE

Models are trained through ``trained_model`` (the zoo's cache), so a later quick build reuses them
when the recipe becomes the profile's.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from overinterp.experiments.runs import trained_model
from overinterp.zoo import data
from overinterp.zoo.train import predict, resolve_device
import sys
sys.path.insert(0, str(Path(__file__).parent))
from bench_train import device_info  # noqa: E402


def measure(arch: str, n: int, epochs: int, seed: int, device, tau: float = 0.99) -> dict:
    t0 = time.perf_counter()
    model = trained_model("fashion-mnist", arch, "quick", seed=seed, device=device, progress=False,
                          train_size=n, epochs=epochs)
    seconds = time.perf_counter() - t0
    test = data.load("fashion-mnist", "test")
    p = predict(model, test.images, device=device)
    conf, pred = p.max(1)
    h = model.info["history"]
    return {"arch": arch, "train_images": n, "epochs": epochs, "seed": seed, "seconds": round(seconds, 1),
            "test_accuracy": round(100 * (pred == test.labels).float().mean().item(), 2),
            "mean_confidence": round(conf.mean().item(), 4),
            "share_confident": round((conf >= tau).float().mean().item(), 4),
            "final_loss": round(h[-1]["loss"], 4)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recipes", nargs="+", default=["7500x12"], help="TRAIN_IMAGESxEPOCHS, e.g. 7500x12")
    p.add_argument("--archs", nargs="+", default=["resnet20", "resnet18", "vgg16"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    device = resolve_device(a.device)
    result = {"what": __doc__.split("\n\n")[0], "info": device_info(device), "date": time.strftime("%Y-%m-%d"),
              "runs": []}
    for recipe in a.recipes:
        n, e = (int(v) for v in recipe.lower().split("x"))
        for arch in a.archs:
            for s in a.seeds:
                r = measure(arch, n, e, s, device)
                print(json.dumps(r), flush=True)
                result["runs"].append(r)
                if a.out:
                    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
