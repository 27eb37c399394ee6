"""Backward selection over a whole data split in resumable shards (paper 4.1: *every* image's 5% subset).

A run is keyed in the store (kind ``backselect``) by the model (config, weights hash), the images
(selection key, count, shape, hash), the engine config and dtype, and the shard size; not by device or
chunk size, which change results only by rounding (each shard records them). Finished shards are saved
atomically, so a killed run resumes; a shard of another config or engine version raises
:class:`ArtifactMismatch`. Processes may split the shards (``shards=range(0, 10)``); whichever finds all
present assembles ``result.pt``.

    res = run_backselect(model, images, model_config=cfg, data_config=selection.key(),
                         config=BackSelectConfig("pruned", m=16), shard_size=256)
"""
import hashlib
import math

import torch
import torch.nn as nn
from tqdm import tqdm

from overinterp.store import VERSIONS, ArtifactMismatch, Store
from overinterp.engine.backselect import BackSelectConfig, BackSelectResult
from overinterp.zoo.train import device_name

KIND = "backselect"


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
    return {"model": {**model_config, "weights": fingerprint(model)},
            "data": {**data_config, "n_images": len(images), "shape": list(images.shape[1:]),
                     "images": fingerprint(images)},
            "engine": {**config.key(), "dtype": str(next((p.dtype for p in model.parameters() if p.is_floating_point()),
                                                         images.dtype)).replace("torch.", "")},
            "shard_size": shard_size}


def n_shards(n_images: int, shard_size: int) -> int:
    return math.ceil(n_images / shard_size)


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.pt"


def _to_payload(res: BackSelectResult, meta: dict) -> dict:
    out = {n: getattr(res, n).cpu() for n in BackSelectResult.TENSORS}
    out["order"] = out["order"].to(torch.int32)  # half the disk; P < 2**31
    out.update(mask_value=res.mask_value.cpu(), image_size=list(res.image_size), block=res.block, method=res.method,
               meta=meta)
    return out


def _from_payload(p: dict) -> BackSelectResult:
    return BackSelectResult(p["order"].long(), p["log_odds"], p["pred"], p["full_log_odds"], p["n_fixed"],
                            p["mask_value"], tuple(p["image_size"]), p["block"], p["method"])


def run_backselect(model: nn.Module, images: torch.Tensor, *, model_config: dict, data_config: dict,
                   config: BackSelectConfig = BackSelectConfig(), shard_size: int = 256,
                   shards: range | None = None, store: Store | None = None, device=None,
                   chunk_size: int | None = None, progress: bool = True,
                   after_shard=None, target: torch.Tensor | None = None) -> BackSelectResult | None:
    """Backward selection of ``images`` (N, C, H, W), resumable. ``shards``: the shard indices computed here
    (default: all); ``device``: default the model's; ``after_shard(i)``: called once shard i is saved;
    ``target`` (N,): the class of f instead of the prediction (in the key only when given).
    Returns the assembled result (CPU) once every shard exists, else None (others still working).
    """
    store = store or Store()
    cfg = run_config(model, images, model_config, data_config, config, shard_size)
    if target is not None:
        if target.shape != (len(images),):
            raise ValueError(f"target must have shape ({len(images)},), got {tuple(target.shape)}")
        cfg["target"] = fingerprint(target.long())
    store.check(KIND, cfg)                         # ArtifactMismatch if the folder holds another run
    total = n_shards(len(images), shard_size)
    shards = range(total) if shards is None else shards
    if shards.start < 0 or shards.stop > total or shards.start >= shards.stop:
        raise ValueError(f"shards {shards.start}:{shards.stop} is empty or outside 0:{total} "
                         f"({len(images)} images in shards of {shard_size})")
    done = store.load(KIND, cfg)
    if done is not None:
        return _from_payload(done)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    meta = {"engine_version": VERSIONS[KIND], "device": device_name(device), "torch": str(torch.__version__),
            "dtype": cfg["engine"]["dtype"], "chunk_size": chunk_size}
    size = lambda i: min(len(images), (i + 1) * shard_size) - i * shard_size
    todo = [i for i in shards if not store.exists(KIND, cfg, _shard_name(i))]
    bar = tqdm(total=sum(size(i) for i in shards), initial=sum(size(i) for i in shards if i not in todo),
               desc=f"{KIND} {config.method} {data_config.get('set', '')}", unit="img", disable=not progress)
    for i in todo:
        x = images[i * shard_size:(i + 1) * shard_size].to(device)
        kw = {} if target is None else {"target": target[i * shard_size:(i + 1) * shard_size].long().to(device)}
        res = config.run(model, x, chunk_size=chunk_size, progress=progress, **kw)
        store.save(KIND, cfg, _to_payload(res, meta), name=_shard_name(i))
        bar.update(len(x))
        if after_shard is not None:
            after_shard(i)
    bar.close()
    return assemble(store, cfg, total)


def assemble(store: Store, cfg: dict, total: int) -> BackSelectResult | None:
    """Concatenate all shards into ``result.pt`` (None while some are missing; refuses other engine versions)."""
    if not all(store.exists(KIND, cfg, _shard_name(i)) for i in range(total)):
        return None
    parts = [store.load(KIND, cfg, _shard_name(i)) for i in range(total)]  # raises on a foreign shard
    versions = {p.get("meta", {}).get("engine_version") for p in parts}
    if versions != {VERSIONS[KIND]}:
        raise ArtifactMismatch(f"{store.dir(KIND, cfg)}: shards of engine versions {sorted(map(str, versions))}, "
                               f"expected only {VERSIONS[KIND]}; delete the folder and run again")
    payload = {**parts[0], **{n: torch.cat([p[n] for p in parts]) for n in BackSelectResult.TENSORS},
               "meta": [p["meta"] for p in parts]}
    store.save(KIND, cfg, payload)
    return _from_payload(payload)
