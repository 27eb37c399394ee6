"""Which counterfactual fine-tuning passes chapter 3's acceptance check? Variants of the profile's
:class:`~overinterp.config.profiles.MaskedTrainingConfig` on one replicate per architecture: clean test
accuracy against the zoo model's, and the blank (fully masked input, the paper's mask) against the bound.

    python scripts/masked_variants.py --profile standard --archs resnet20 --out FILE.json

Variants: Hase et al.'s shares (removed share from {0.5, 0.8, 0.9, 0.95}) at the default rate; a lower
learning rate; the fully masked input added to the shares (its label is every class in turn, so its loss is
least at the class prior); both; the blank with twice the epochs or a tenth of the rate (the standard
profile's). Each model is stored under its own config, so a second run reads them back.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from overinterp.config.context import make_run
from overinterp.config.profiles import MaskedTrainingConfig
from overinterp.experiments import blank, masked
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.zoo.train import device_name


def variants(profile_config) -> dict:
    """The variants, built on the profile's config with Hase et al.'s shares and the book's default rate."""
    hase = MaskedTrainingConfig()
    c = replace(profile_config, removed=hase.removed, lr=hase.lr)
    return {"Hase et al.'s shares": c, "lr / 3": replace(c, lr=c.lr / 3),
            "with the blank": replace(c, removed=(*c.removed, 1.0)),
            "with the blank, lr / 3": replace(c, removed=(*c.removed, 1.0), lr=c.lr / 3),
            "with the blank, twice the epochs": replace(c, removed=(*c.removed, 1.0), epochs=2 * c.epochs),
            "with the blank, lr / 10": replace(c, removed=(*c.removed, 1.0), lr=c.lr / 10)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--archs", nargs="+", default=["resnet20"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    base = make_run(profile=a.profile, device="cpu", seed=a.seed)
    paper = {blank.PAPER_FILL: blank.fills(base.dataset)[blank.PAPER_FILL]}
    rows = []
    for name, cfg in variants(base.profile.masked).items():
        run = replace(base, profile=replace(base.profile, masked=cfg))
        for arch in a.archs:
            t0 = time.perf_counter()
            model = masked.masked_model(run, arch, a.seed)
            seconds = time.perf_counter() - t0
            acc = masked.clean_accuracies(run, arch, a.seed, model)
            blank_check = blank.blank_check(run, which=paper, models={arch: [model]})
            check = blank_check.rows.iloc[0]
            rows.append({"variant": name, "model": ARCH_NAMES[arch], "seed": a.seed, "config": asdict(cfg),
                         "clean accuracy": acc[0], "zoo accuracy": acc[1], "drop (points)": acc[1] - acc[0],
                         "blank class": check["class"], "blank probability": float(check["probability"]),
                         "blank bound": blank_check.bound,
                         "blank passes": bool(check["passes"]),
                         "accepted": bool(check["passes"]) and acc[1] - acc[0] <= cfg.max_drop,
                         "seconds (0: stored)": round(seconds, 1)})
            print(json.dumps(rows[-1]), flush=True)
            a.out.write_text(json.dumps({"profile": a.profile, "device": device_name("cpu"),
                                         "torch": torch.__version__, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
