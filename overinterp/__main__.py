"""Command line: ``python -m overinterp {train,backselect} --help``."""
from __future__ import annotations

import argparse
import json
import sys


def cmd_train(args) -> int:
    from .train import trained_model
    from .artifacts import Store
    model = trained_model(args.dataset, args.arch, args.profile, args.seed, device=args.device,
                          store=Store(args.artifacts))
    info = model.info
    print(json.dumps({"dataset": args.dataset, "arch": args.arch, "profile": args.profile, "seed": args.seed,
                      "test_acc": info["test_acc"], "train_seconds": info["seconds"], "device": info["device"],
                      "seconds_per_epoch": [round(h["seconds"], 2) for h in info["history"]]}, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .data import DATASETS
    from .models import ARCHS
    from .profiles import PROFILES
    from .runner import add_cli, choices
    parser = argparse.ArgumentParser(prog="python -m overinterp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train one model of the zoo (cached in the artifact store)",
                       description="Train ARCH on DATASET with the PROFILE recipe and seed; the model is saved "
                                   "under the artifact store keyed by its config and reused when present.")
    t.add_argument("--dataset", type=choices("dataset", DATASETS), default="fashion-mnist",
                   help=f"one of {', '.join(DATASETS)} (default fashion-mnist)")
    t.add_argument("--arch", type=choices("arch", ARCHS), default="cnn", help=f"one of {', '.join(ARCHS)}")
    t.add_argument("--profile", type=choices("profile", PROFILES), default="quick",
                   help="; ".join(f"{p.name}: {p.doc}" for p in PROFILES.values()))
    t.add_argument("--seed", type=int, default=0, help="replicate seed (initialisation and batch order)")
    t.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    t.add_argument("--artifacts", default=None, help="artifact store folder (default $OVERINTERP_ARTIFACTS or ./artifacts)")
    t.set_defaults(func=cmd_train)

    add_cli(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
