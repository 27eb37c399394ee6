"""Retraining recipes (paper 4.2): which batch size and number of epochs bring a model trained on the
quick profile's few retraining images to the plateau of its training loss, at what cost.

    OVERINTERP_ARTIFACTS=<store> python benchmarks/bench_retrain.py [--images N] [--smoke]

For each architecture of the zoo and each of "full" (the control) and "random" (5% random subsets;
the hardest to fit), a new model is trained from seed 0 with the quick recipe at each
``--recipes`` batch x epochs, on ``--images`` of the training selection (default: the profile's), and
evaluated on the matching test images. Writes ``benchmarks/results/retrain-<device>.json``: per run
the SGD steps, seconds, the training loss at the start of the last third and at the end,
:func:`overinterp.zoo.train.plateaued`, and test accuracy.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import torch

from overinterp.experiments.subsets import subsets
from overinterp.config.context import make_run
from overinterp.zoo.models import build_model
from overinterp.zoo.data import CLASSES
from overinterp.zoo.train import accuracy, device_name, fit, plateaued, tail_start_loss

OUT = Path(__file__).resolve().parent / "results"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="quick")
    p.add_argument("--device", default="cpu")
    p.add_argument("--images", type=int, default=None, help="retraining images (default: the profile's retrain_images)")
    p.add_argument("--recipes", default="128x30,64x30,32x30,64x60", help="batch x epochs, comma-separated")
    p.add_argument("--kinds", default="full,random")
    p.add_argument("--smoke", action="store_true", help="tiny profile, one short recipe (checks the wiring)")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if a.smoke:
        a.profile, a.images, a.recipes = "tiny", 64, "32x2"
    run = make_run(profile=a.profile, device=a.device)
    a.images = a.images or run.profile.retrain_images
    run = replace(run, profile=replace(run.profile, retrain_images=a.images))
    recipes = [tuple(map(int, r.split("x"))) for r in a.recipes.split(",")]
    rows, t0 = [], time.time()
    for arch in run.profile.archs:
        subs = subsets(run, arch, 0.05, train=True)
        for kind in a.kinds.split(","):
            X, Y = subs["train"][kind][0], subs["train"]["labels"]
            for batch, epochs in recipes:
                torch.manual_seed(0)
                model = build_model(arch, X.shape[1], len(CLASSES[run.dataset]), run.profile.width(arch))
                cfg = replace(run.profile.retrain or run.profile.train, batch_size=batch, epochs=epochs)
                ts = time.perf_counter()
                h = fit(model, X, Y, cfg, seed=0, device=run.device, progress=False)
                row = {"arch": arch, "kind": kind, "batch": batch, "epochs": epochs,
                       "steps": epochs * -(-len(X) // batch), "seconds": round(time.perf_counter() - ts, 1),
                       "loss_last_third_start": tail_start_loss(h),
                       "loss_end": h[-1]["loss"], "train_acc_end": h[-1]["train_acc"], "plateaued": plateaued(h),
                       "test_acc": 100 * accuracy(model, subs["test"][kind][0], subs["test"]["labels"], run.device)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    result = {"device": device_name(run.device), "torch": torch.__version__, "profile": a.profile,
              "images": a.images, "date": time.strftime("%Y-%m-%d"), "loadavg_start": os.getloadavg(),
              "wall_s": round(time.time() - t0, 1), "runs": rows,
              "notes": ["seed 0 only; the backward-selection subsets of the profile's engine (cached in the store)",
                        "plateaued: train.plateaued (loss fell < 10% or < 0.01 nats over the last third of the epochs)"]}
    path = Path(a.out) if a.out else OUT / f"retrain-{run.device.type}{'-smoke' if a.smoke else ''}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print("wrote", path)


if __name__ == "__main__":
    main()
