"""The zoo models a profile has in the artifact store: accuracy on the whole test set, confidence and
training cost, per architecture and replicate (does every `standard` model reach its 93% criterion?).

    OVERINTERP_ARTIFACTS=~/.cache/overinterp/artifacts python benchmarks/bench_models.py --profile standard

Only models already stored are read (nothing is trained: a model still training elsewhere is
listed as missing). Writes ``benchmarks/results/models-<profile>-cpu.json``: per model its test
accuracy, mean confidence, share of test images at confidence >= 0.99, median logit margin (top-1
minus top-2, float64: no softmax saturation), training seconds and seconds per epoch, and the device
that trained it; with the device of this run and the profile's recipe.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from overinterp.config.profiles import get_profile
from overinterp.experiments.runs import model_config, trained_model
from overinterp.store import Store
from overinterp.zoo import data
from overinterp.zoo.train import device_name

OUT = Path(__file__).resolve().parent / "results"


@torch.inference_mode()
def measures(model, images: torch.Tensor, labels: torch.Tensor, batch: int = 1000) -> dict:
    """Accuracy (%), mean confidence, share at >= 0.99 and median top-1 minus top-2 logit margin."""
    model.eval()
    z = torch.cat([model(images[i:i + batch]) for i in range(0, len(images), batch)]).double()
    p, top2 = z.softmax(1), z.topk(2, dim=1).values
    conf = p.max(1).values
    return {"test_acc": round(100 * (z.argmax(1) == labels).double().mean().item(), 2),
            "mean_confidence": round(conf.mean().item(), 4),
            "share_conf_0.99": round((conf >= 0.99).double().mean().item(), 4),
            "median_logit_margin": round((top2[:, 0] - top2[:, 1]).median().item(), 2)}


def main(argv=None) -> int:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--profile", default="standard")
    a.add_argument("--dataset", default="fashion-mnist")
    a.add_argument("--seeds", type=int, nargs="+", default=None, help="replicate seeds (default 0 .. replicates-1)")
    a.add_argument("--out", default=None)
    args = a.parse_args(argv)
    p = get_profile(args.profile)
    test = data.load(args.dataset, "test")
    rows, store = [], Store()
    for arch in p.archs:
        for seed in args.seeds if args.seeds is not None else range(p.replicates):
            cfg = model_config(args.dataset, arch, p.name, seed)
            row = {"arch": arch, "seed": seed, "width": cfg["width"]}
            if store.load("model", cfg) is None:
                rows.append({**row, "stored": False})
                continue
            model = trained_model(args.dataset, arch, p.name, seed=seed, device="cpu", progress=False)
            info = model.info
            rows.append({**row, "stored": True, **measures(model, test.images, test.labels),
                         "train_seconds": round(info["seconds"]), "epochs": len(info["history"]),
                         "seconds_per_epoch": round(info["seconds"] / len(info["history"]), 1),
                         "trained_on": info.get("device")})
            print(json.dumps(rows[-1]), flush=True)
    done = [r for r in rows if r["stored"]]
    out = Path(args.out or OUT / f"models-{p.name}-cpu.json")
    out.write_text(json.dumps({
        "what": f"zoo models of the {p.name} profile in the store: accuracy on all {len(test.labels)} test images",
        "command": "python benchmarks/bench_models.py " + " ".join(argv or []), "date": time.strftime("%Y-%m-%d"),
        "device": device_name("cpu"), "store": str(store.root), "recipe": {
            "train_size": p.train_size or "all", "epochs": p.train.epochs, "augment": p.train.augment,
            "widths": dict(p.widths) or "the paper's", "replicates": p.replicates},
        "stored": len(done), "missing": len(rows) - len(done),
        "below_93": [f"{r['arch']} seed {r['seed']}: {r['test_acc']}" for r in done if r["test_acc"] < 93],
        "models": rows}, indent=1) + "\n")
    print(f"wrote {out}: {len(done)} of {len(rows)} models stored")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
