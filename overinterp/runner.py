"""Backward selection over a whole data split, in resumable shards (paper 4.1: the 5%
pixel subsets of *every* CIFAR-10 image; 3.3 for the procedure).

A run is keyed in the artifact store (``overinterp.artifacts``) by everything that
determines its result: the model (its config and a hash of its weights), the
images (dataset, split, count and a hash of the tensor), the engine (method,
block, k, m, mask value, dtype) and the shard size. The images are cut into
shards of ``shard_size``; each finished shard is written atomically as
``shard-NNNNN.pt``, so a run that is killed resumes where it stopped by
skipping finished shards. A shard written under another config raises
:class:`ArtifactMismatch` instead of being mixed in. Processes can split the
work by shard range (``shards=range(0, 10)`` / ``--shards 0:10``); whichever
finds every shard present assembles them into ``result.pt``.

Not in the key: device and chunk size, which change results only by
floating-point rounding (at most the order of exact ties of f).

    res = run_backselect(model, split.images, model_config=cfg, data_config={"dataset": "fashion-mnist",
                         "split": "test"}, method="pruned", m=16, shard_size=256)

CLI: ``python -m overinterp backselect --help``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import time

import torch
import torch.nn as nn
from tqdm import tqdm

from .artifacts import ArtifactMismatch, Store
from .backselect import DEFAULT_M, METHODS, BackSelectConfig, BackSelectResult

__all__ = ["KIND", "run_config", "run_backselect", "assemble", "fingerprint", "parse_shards", "choices", "add_cli",
           "ArtifactMismatch"]

KIND = "backselect"
_FIELDS = ("order", "values", "pred", "confidence", "n_fixed")


def fingerprint(obj) -> str:
    """16 hex digits of SHA-256 over a tensor's bytes or a module's state dict (names, dtypes, shapes)."""
    h = hashlib.sha256()
    items = obj.state_dict().items() if isinstance(obj, nn.Module) else [("", obj)]
    for name, t in items:
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy())  # the bytes, without a copy
    return h.hexdigest()[:16]


def run_config(model: nn.Module, images: torch.Tensor, model_config: dict, data_config: dict,
               config: BackSelectConfig, shard_size: int = 256) -> dict:
    """The artifact key of a run (engine parameters that the method ignores are None)."""
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), images.dtype)
    return {"model": {**model_config, "weights": fingerprint(model)},
            "data": {**data_config, "n": len(images), "shape": list(images.shape[1:]), "images": fingerprint(images)},
            "engine": {**config.key(), "dtype": str(dtype).replace("torch.", "")},
            "shard_size": shard_size}


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.pt"


def _to_payload(res: BackSelectResult) -> dict:
    out = {n: getattr(res, n).cpu() for n in _FIELDS}
    out["order"] = out["order"].to(torch.int32)  # half the disk; P < 2**31
    out.update(mask_value=res.mask_value.cpu(), image_size=list(res.image_size), block=res.block, method=res.method)
    return out


def _from_payload(p: dict) -> BackSelectResult:
    return BackSelectResult(p["order"].long(), p["values"], p["pred"], p["confidence"], p["n_fixed"],
                            p["mask_value"], tuple(p["image_size"]), p["block"], p["method"])


def run_backselect(model: nn.Module, images: torch.Tensor, *, model_config: dict, data_config: dict,
                   method: str = "exact", block: int = 1, k: int = 1, m: int | None = None,
                   mask_value: float = 0.0, shard_size: int = 256, shards: range | None = None,
                   store: Store | None = None, device=None, chunk_size: int | None = None,
                   progress: bool = True, after_shard=None) -> BackSelectResult | None:
    """Backward selection of every image of ``images`` (N, C, H, W), resumable (module docstring).

    ``method``, ``block``, ``k``, ``m`` (None: :data:`DEFAULT_M`), ``mask_value``: as
    :func:`~overinterp.backselect.backselect` (a :class:`BackSelectConfig`).
    ``shards``: the range of shard indices this call computes (default: all). ``device``:
    where the engine runs (default: the model's). ``after_shard(i)`` is called after shard
    ``i`` is saved. Returns the assembled result (on the CPU) once every shard exists,
    else None (other processes still working on their ranges).
    """
    config = BackSelectConfig(method, block, k, m or DEFAULT_M, mask_value)
    store = store or Store()
    cfg = run_config(model, images, model_config, data_config, config, shard_size)
    store.check(KIND, cfg)                         # ArtifactMismatch if the folder holds another run
    n_shards = math.ceil(len(images) / shard_size)
    shards = range(n_shards) if shards is None else shards
    if shards.start < 0 or shards.stop > n_shards:
        raise ValueError(f"shards {shards.start}:{shards.stop} outside 0:{n_shards} ({len(images)} images / {shard_size})")
    done = store.load(KIND, cfg)
    if done is not None:
        return _from_payload(done)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    size = lambda i: min(len(images), (i + 1) * shard_size) - i * shard_size
    todo = [i for i in shards if not store.exists(KIND, cfg, _shard_name(i))]
    bar = tqdm(total=sum(size(i) for i in shards), initial=sum(size(i) for i in shards if i not in todo),
               desc=f"{KIND} {config.method} {data_config.get('dataset', '')}", unit="img", disable=not progress)
    for i in todo:
        x = images[i * shard_size:(i + 1) * shard_size].to(device)
        res = config.run(model, x, chunk_size=chunk_size, progress=progress)
        store.save(KIND, cfg, _to_payload(res), name=_shard_name(i))
        bar.update(len(x))
        if after_shard is not None:
            after_shard(i)
    bar.close()
    return assemble(store, cfg, n_shards)


def assemble(store: Store, cfg: dict, n_shards: int) -> BackSelectResult | None:
    """Concatenate all shards into ``result.pt`` (None while some are missing)."""
    if not all(store.exists(KIND, cfg, _shard_name(i)) for i in range(n_shards)):
        return None
    parts = [store.load(KIND, cfg, _shard_name(i)) for i in range(n_shards)]  # raises on a foreign shard
    payload = {**parts[0], **{n: torch.cat([p[n] for p in parts]) for n in _FIELDS}}
    store.save(KIND, cfg, payload)
    return _from_payload(payload)


# ----------------------------------------------------------------------------- command line

def parse_shards(text: str | None) -> slice | None:
    """"a:b" -> slice(a, b); "a" -> slice(a, a+1); "a:" -> slice(a, None) (to the last shard)."""
    if text is None:
        return None
    try:
        lo, _, hi = text.partition(":")
        lo = int(lo) if lo else 0
        hi = (int(hi) if hi else None) if ":" in text else lo + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shards must look like 0:10, 3 or 5:, got {text!r}") from None
    return slice(lo, hi)


def choices(name: str, valid):
    """argparse type: ``value`` must be one of ``valid``, else an error listing them."""
    valid = [str(v) for v in valid]

    def check(value: str) -> str:
        if value not in valid:
            raise argparse.ArgumentTypeError(f"unknown {name} {value!r}; valid choices: {', '.join(valid)}")
        return value
    return check


def _cli(args) -> int:
    from . import data as D
    from . import train as T
    from .profiles import get_profile
    p = get_profile(args.profile)
    method = args.method or p.bs_method
    block = args.block or p.bs_block
    k = args.k or p.bs_k
    m = args.m or p.bs_m or DEFAULT_M
    limit = args.limit if args.limit is not None else p.test_size
    device = T.resolve_device(args.device)
    store = Store(args.artifacts)
    split = D.load(args.dataset, args.split)
    images = split.images[:limit]
    model = T.trained_model(args.dataset, args.arch, args.profile, args.seed, device=device, store=store)
    n_shards = math.ceil(len(images) / args.shard_size)
    sl = args.shards or slice(0, n_shards)
    shards = range(sl.start, n_shards if sl.stop is None else sl.stop)
    t0 = time.perf_counter()
    config = BackSelectConfig(method, block, k, m, args.mask_value)
    res = run_backselect(model, images, model_config=T.model_config(args.dataset, args.arch, args.profile, args.seed),
                         data_config={"dataset": args.dataset, "split": args.split}, method=method, block=block,
                         k=k, m=m, mask_value=args.mask_value, shard_size=args.shard_size, shards=shards,
                         store=store, device=device, chunk_size=args.chunk_size)
    print(json.dumps({"dataset": args.dataset, "split": args.split, "arch": args.arch, "profile": args.profile,
                      "seed": args.seed, **config.key(), "images": len(images),
                      "shards": f"{shards.start}:{shards.stop} of {n_shards}", "seconds": round(time.perf_counter() - t0, 1),
                      "complete": res is not None, "store": str(store.root)}, indent=2))
    return 0


def add_cli(subparsers) -> argparse.ArgumentParser:
    """Register the ``backselect`` subcommand (``func`` = the command) on ``subparsers``."""
    from .data import DATASETS
    from .models import ARCHS
    from .profiles import PROFILES
    b = subparsers.add_parser(
        "backselect", help="backward selection over a data split, in resumable shards",
        description="Run backward selection (paper 3.3; S5 for --method gradient) of a trained model on every "
                    "image of a split. Shards are saved to the artifact store as they finish; re-running skips "
                    "finished shards, and --shards splits the work across processes. Method, block, k, m and "
                    "the number of images default to the profile's.")
    b.add_argument("--dataset", type=choices("dataset", DATASETS), default="fashion-mnist",
                   help=f"one of {', '.join(DATASETS)} (default fashion-mnist)")
    b.add_argument("--split", type=choices("split", ("train", "test")), default="test", help="train or test (default test)")
    b.add_argument("--arch", type=choices("arch", ARCHS), default="cnn", help=f"one of {', '.join(ARCHS)} (default cnn)")
    b.add_argument("--profile", type=choices("profile", PROFILES), default="quick",
                   help="; ".join(f"{p.name}: {p.doc}" for p in PROFILES.values()))
    b.add_argument("--seed", type=int, default=0, help="replicate seed of the model (default 0)")
    b.add_argument("--method", type=choices("method", METHODS), default=None,
                   help="exact (reference BackSelect), gradient (paper S5) or pruned (m exact candidates per step); "
                        "default: the profile's")
    b.add_argument("--block", type=int, default=None, help="feature = BLOCK x BLOCK pixels (1 = a pixel, as the paper; default: the profile's)")
    b.add_argument("--k", type=int, default=None, help="gradient: features masked per step (paper S5: 100 on ImageNet; default: the profile's)")
    b.add_argument("--m", type=int, default=None, help=f"pruned: candidates evaluated exactly per step (default: the profile's, else {DEFAULT_M})")
    b.add_argument("--mask-value", type=float, default=0.0, help="value of a masked pixel, normalised (0 = mean pixel)")
    b.add_argument("--limit", type=int, default=None, help="only the first LIMIT images (default: the profile's test_size)")
    b.add_argument("--shard-size", type=int, default=256, help="images per saved shard (default 256)")
    b.add_argument("--shards", type=parse_shards, default=None,
                   help="shard range this process computes, e.g. 0:10, 3 or 10: (default all)")
    b.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    b.add_argument("--chunk-size", type=int, default=None, help="forward passes per batch (default by device)")
    b.add_argument("--artifacts", default=None, help="artifact store folder (default $OVERINTERP_ARTIFACTS or ./artifacts)")
    b.set_defaults(func=_cli)
    return b
