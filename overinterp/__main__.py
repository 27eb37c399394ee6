"""Command line: ``python -m overinterp {train,backselect,prepare} --help``.

Every command builds its images and artifact keys with the library functions the
chapters call (:mod:`overinterp.analysis`), so what it computes -- here or on
another machine, in shards -- is what a chapter then loads from the artifact store.
A bad parameter, missing data or a mismatched artifact ends with one line naming it
and exit code 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace

from .artifacts import ArtifactMismatch
from .backselect import METHODS
from .data import DataUnavailable
from .models import ARCHS
from .profiles import PROFILES

TRAINABLE = ("fashion-mnist", "cifar10")  # the other data sets are evaluation-only (OOD)


def choices(name: str, valid):
    """argparse type: the value must be one of ``valid``, else an error listing them."""
    valid = [str(v) for v in valid]

    def check(value: str) -> str:
        if value not in valid:
            raise argparse.ArgumentTypeError(f"unknown {name} {value!r}; valid choices: {', '.join(valid)}")
        return value
    return check


def positive(name: str):
    """argparse type: an integer >= 1."""
    def check(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{name} must be an integer >= 1, got {value!r}")
        return n
    return check


def parse_shards(text: str) -> slice:
    """"a:b" -> slice(a, b); "a" -> slice(a, a+1); "a:" -> slice(a, None) (to the end). Non-empty."""
    try:
        lo, colon, hi = text.partition(":")
        lo = int(lo) if lo else 0
        hi = (int(hi) if hi else None) if colon else lo + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shards must look like 0:10, 3 or 5:, got {text!r}") from None
    if lo < 0 or (hi is not None and hi <= lo):
        raise argparse.ArgumentTypeError(f"--shards {text!r} is empty: it needs 0 <= start < stop")
    return slice(lo, hi)


def _run(args, local_rank: int | None = None):
    """The chapters' :class:`overinterp.book.Run` for these arguments (artifact store from --artifacts);
    under torchrun, ``cuda`` / ``auto`` means the GPU of the process's ``local_rank``."""
    import torch
    from .book import Run
    from .profiles import get_profile
    from .train import resolve_device
    if args.artifacts:
        os.environ["OVERINTERP_ARTIFACTS"] = args.artifacts
    device = resolve_device(args.device)
    if device.type == "cuda" and device.index is None and local_rank is not None:
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
    return Run(args.dataset, get_profile(args.profile), device, args.seed)


def cmd_train(args) -> int:
    from .train import trained_model
    run = _run(args)
    model = trained_model(run.dataset, args.arch, args.profile, run.seed, device=run.device)
    info = model.info
    print(json.dumps({"dataset": args.dataset, "arch": args.arch, "profile": args.profile, "seed": args.seed,
                      "test_acc": info["test_acc"], "train_seconds": info["seconds"], "device": info["device"],
                      "seconds_per_epoch": [round(h["seconds"], 2) for h in info["history"]]}, indent=2))
    return 0


def cmd_backselect(args) -> int:
    from . import analysis as A
    from .runner import n_shards
    run = _run(args)
    sel = A.selection(run, args.set, args.n)
    overrides = {k: getattr(args, k) for k in ("method", "block", "k", "m", "mask_value") if getattr(args, k) is not None}
    config = replace(run.profile.engine(sel.set), **overrides)
    total = n_shards(len(sel.load()[1]), run.profile.shard_size)
    sl = args.shards or slice(0, None)
    shards = range(sl.start, total if sl.stop is None else sl.stop)
    t0 = time.perf_counter()
    res = A.backselect_set(run, args.arch, sel, config=config, shards=shards, chunk_size=args.chunk_size)
    print(json.dumps({**sel.key(), "arch": args.arch, "profile": args.profile, "model_seed": args.seed,
                      **config.key(), "shards": f"{shards.start}:{shards.stop} of {total}",
                      "seconds": round(time.perf_counter() - t0, 1), "complete": res is not None,
                      "reused_by_the_book": config == run.profile.engine(sel.set) and args.n is None}, indent=2))
    return 0


def cmd_prepare(args) -> int:
    from .prepare import plan, prepare, worker
    rank, world, local_rank = worker()
    run = _run(args, local_rank)
    units = args.shards or slice(0, None)
    if args.list:
        for i, u in enumerate(plan(run)):
            print(f"{i:4d}  {u.kind:10s} {u.name}")
        return 0
    n = len(plan(run))
    if units.start >= n:
        raise ValueError(f"--shards {units.start}:{units.stop or ''} is outside the plan's 0:{n} units")
    t0 = time.perf_counter()
    seconds = prepare(run, units, rank, world)
    print(json.dumps({"profile": args.profile, "dataset": args.dataset, "device": str(run.device),
                      "units": f"{units.start}:{min(n, units.stop or n)} of {n}", "process": f"{rank} of {world}",
                      "seconds": seconds,
                      "total_seconds": round(time.perf_counter() - t0, 1)}, indent=2))
    return 0


def _common(p: argparse.ArgumentParser, seed_help: str) -> None:
    p.add_argument("--dataset", type=choices("dataset", TRAINABLE), default="fashion-mnist",
                   help=f"the models' data set: {', '.join(TRAINABLE)} (default fashion-mnist)")
    p.add_argument("--profile", type=choices("profile", PROFILES), default="quick",
                   help="; ".join(f"{p.name}: {p.doc}" for p in PROFILES.values()))
    p.add_argument("--seed", type=int, default=0, help=seed_help)
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    p.add_argument("--artifacts", default=None, help="artifact store folder (default $OVERINTERP_ARTIFACTS or ./artifacts)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m overinterp", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train one model of the zoo (cached in the artifact store)",
                       description="Train ARCH on DATASET with the PROFILE recipe and seed; the model is saved "
                                   "in the artifact store keyed by its config and reused when present.")
    _common(t, "replicate seed (initialisation and batch order)")
    t.add_argument("--arch", type=choices("arch", ARCHS), default="cnn", help=f"one of {', '.join(ARCHS)}")
    t.set_defaults(func=cmd_train)

    b = sub.add_parser(
        "backselect", help="backward selection of a set's images, in resumable shards",
        description="Backward selection (paper 3.3; S5 for --method gradient) of a trained model on the images "
                    "a chapter uses (the profile's seeded sample of --set). Shards are saved to the artifact "
                    "store as they finish; re-running skips finished shards, and --shards splits the work "
                    "across processes. With the profile's engine and sample size the result is the one the "
                    "book loads.")
    _common(b, "replicate seed of the model (default 0)")
    b.add_argument("--arch", type=choices("arch", ARCHS), default="resnet20", help=f"one of {', '.join(ARCHS)}")
    b.add_argument("--set", default="test", help="train, test or an OOD set of the dataset (default test)")
    b.add_argument("--n", type=positive("--n"), default=None,
                   help="images sampled from the set (default: the profile's test_size, or retrain_images for train)")
    b.add_argument("--method", type=choices("method", METHODS), default=None,
                   help="exact (reference BackSelect), gradient (paper S5) or pruned (m exact candidates per step); "
                        "default: the profile's")
    b.add_argument("--block", type=positive("--block"), default=None, help="feature = BLOCK x BLOCK pixels (default: the profile's)")
    b.add_argument("--k", type=positive("--k"), default=None, help="gradient: features masked per step (default: the profile's)")
    b.add_argument("--m", type=positive("--m"), default=None, help="pruned: candidates evaluated exactly per step (default: the profile's)")
    b.add_argument("--mask-value", type=float, default=None, help="value of a masked pixel, normalised (0 = mean pixel)")
    b.add_argument("--shards", type=parse_shards, default=None,
                   help="shard range this process computes, e.g. 0:10, 3 or 10: (default all)")
    b.add_argument("--chunk-size", type=positive("--chunk-size"), default=None, help="forward passes per batch (default by device)")
    b.set_defaults(func=cmd_backselect)

    p = sub.add_parser(
        "prepare", help="precompute every model and backward selection the book needs (resumable)",
        description="Train the model zoo, run every backward selection and retrain every model the chapters "
                    "need for PROFILE, skipping what the artifact store holds. --list shows the numbered units; "
                    "--shards a:b runs units a to b-1 (e.g. one range per process or machine). Under torchrun "
                    "(RANK, WORLD_SIZE) or a SLURM job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) each "
                    "process takes every N-th unit of the range.")
    _common(p, "first replicate's seed (default 0)")
    p.add_argument("--shards", type=parse_shards, default=None, help="unit range, e.g. 0:10 (default all)")
    p.add_argument("--list", action="store_true", help="print the units and exit")
    p.set_defaults(func=cmd_prepare)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, DataUnavailable, ArtifactMismatch, FileNotFoundError) as e:
        message = " ".join(str(e).split())  # one line
        print(f"python -m overinterp {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
