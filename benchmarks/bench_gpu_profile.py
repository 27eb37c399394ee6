"""What one unit of a profile's edition costs on this device: the numbers that size the ``gpu`` profile.

    python benchmarks/bench_gpu_profile.py [--device cuda] [--profile gpu] [--out FILE]

For every architecture of the profile, at its widths and training recipe, on the real training set:
seconds of one training epoch (``fit``, fp32, then bf16 autocast + channels_last), seconds per image of
exact backward selection (28x28: P(P+1)/2 = 307k forwards; ``--exact-steps`` removals timed and scaled by
the step count's share of forwards), of ``pruned`` (m=16) and of ``gradient`` (k=8) on ``--images`` test
images. The JSON (``"schema": 1``, device named) adds the projection of the profile's units:
models (epochs x epoch), backward selections (images x per image), retrained models.
The timed models are trained one epoch only: per-image costs do not depend on the weights.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_train import device_info, write_result  # noqa: E402

from overinterp.config.profiles import get_profile  # noqa: E402
from overinterp.engine.backselect import backselect  # noqa: E402
from overinterp.zoo import data  # noqa: E402
from overinterp.zoo.models import build_model  # noqa: E402
from overinterp.zoo.train import fit, resolve_device  # noqa: E402


def timed(fn, device) -> tuple[float, object]:
    """(seconds, result) of ``fn()``, the device synchronised before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--profile", default="gpu")
    p.add_argument("--images", type=int, default=8, help="test images for pruned and gradient")
    p.add_argument("--exact-steps", type=int, default=40, help="removals timed for exact (of 784)")
    p.add_argument("--train-images", type=int, default=None, help="training images of the timed epoch (default all)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    device = resolve_device(a.device)
    prof = get_profile(a.profile)
    train = data.load(prof.dataset, "train")
    test = data.load(prof.dataset, "test")
    x, y = (train.images, train.labels) if a.train_images is None else (train.images[:a.train_images], train.labels[:a.train_images])
    xt = test.images[:a.images].to(device)
    result = {"schema": 1, "info": device_info(device), "profile": prof.name, "train_images": len(x), "archs": []}
    P = xt.shape[-1] * xt.shape[-2]
    full_forwards = P * (P + 1) / 2
    for arch in prof.archs:
        rec = {"arch": arch, "width": prof.width(arch)}
        model = build_model(arch, x.shape[1], 10, width=prof.width(arch))
        for name, fast in (("fp32", False), ("bf16+channels_last", True)):
            cfg = replace(prof.train, epochs=1, fast_cuda=fast)
            s, _ = timed(lambda: fit(model, x, y, cfg, device=device, progress=False), device)
            rec[f"epoch_s_{name}"] = round(s, 2)
            print(arch, name, "epoch", round(s, 1), "s", flush=True)
        model = model.to(device).eval()
        steps = a.exact_steps
        forwards = sum(P - i for i in range(steps))
        s, _ = timed(lambda: backselect(model, xt[:1], "exact", progress=False, max_steps=steps), device)
        rec["exact_s_per_image"] = round(s * full_forwards / forwards, 2)
        rec["exact_timed"] = {"steps": steps, "seconds": round(s, 3)}
        for method, kw in (("pruned", {"m": 16}), ("gradient", {"k": 8})):
            s, _ = timed(lambda: backselect(model, xt, method, progress=False, **kw), device)
            rec[f"{method}_s_per_image"] = round(s / len(xt), 3)
        print(json.dumps(rec), flush=True)
        result["archs"].append(rec)
    # the profile's units (overinterp.experiments.prepare.plan), projected from the records
    n_sets = 1 + len(data.ood_sets(prof.dataset))    # the test sample and every OOD set
    retrain = prof.retrain or prof.train
    proj = {}
    for rec in result["archs"]:
        e = prof.train.epochs
        proj[rec["arch"]] = {
            "models_s": round(prof.replicates * e * rec["epoch_s_fp32"], 1),
            "exact_selections_s": round(prof.replicates * n_sets * prof.test_size * rec["exact_s_per_image"], 1)
            if prof.backselect.method == "exact" else None,
            "retrained_models_s": round(3 * (prof.retrain_replicates or prof.replicates) * retrain.epochs * rec["epoch_s_fp32"]
                                        * (prof.retrain_images or len(x)) / len(x), 1)}
    result["projection"] = {
        "note": "seconds per architecture of the profile's units: models = replicates x epochs x the fp32 epoch (the "
                "profile trains with bf16 autocast + channels_last, 0.8-1.0x of it); exact selections = replicates x "
                f"{n_sets} sets (test sample + every OOD set) x test_size x exact seconds per image; retrained models = "
                "3 kinds x replicates x epochs x epoch scaled to retrain_images",
        "by_arch": proj,
        "total_s": {k: round(sum(v[k] or 0 for v in proj.values()), 1)
                    for k in ("models_s", "exact_selections_s", "retrained_models_s")}}
    write_result(result, a.out or Path(__file__).parent / "results" / f"gpu-profile-{device.type}.json")


if __name__ == "__main__":
    main()
