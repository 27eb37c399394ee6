"""Artifact store: results kept with the config that produced them.

Every expensive result of the pipeline (a trained model, a backward-selection
run, a metrics table) is saved under ``<root>/<kind>/<key>/`` where ``key`` is a
hash of the producing config. ``<root>`` is ``$OVERINTERP_ARTIFACTS`` or
``./artifacts``. Writes are atomic (temp file in the same folder, then
``os.replace``), so a reader never sees a half-written file, and a stored
artifact whose config differs from the one asked for is never returned
(:class:`ArtifactMismatch`).

    store = Store()
    cfg = {"arch": "resnet20", "seed": 0, ...}
    obj = store.load("model", cfg)        # None when absent
    store.save("model", cfg, obj)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["Store", "ArtifactMismatch", "config_key", "atomic_save", "to_plain", "code_version"]


class ArtifactMismatch(RuntimeError):
    """A stored artifact exists under this key but was produced by another config."""


def to_plain(config: Any) -> Any:
    """Turn dataclasses / tuples / paths into JSON-ready plain values."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if isinstance(config, dict):
        return {str(k): to_plain(v) for k, v in sorted(config.items())}
    if isinstance(config, (list, tuple)):
        return [to_plain(v) for v in config]
    if isinstance(config, Path):
        return str(config)
    if isinstance(config, (str, int, float, bool)) or config is None:
        return config
    raise TypeError(f"config value {config!r} of type {type(config).__name__} is not JSON-serialisable")


def config_key(config: Any) -> str:
    """16 hex digits of the SHA-256 of the canonical JSON of ``config``."""
    text = json.dumps(to_plain(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def code_version() -> str:
    """The git commit of the source tree (with ``+dirty``), or the package version."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(here)], cwd=here,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except Exception:
        from . import __version__
        return __version__


def atomic_save(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save`` to a temp file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if path.suffix == ".json":
                fh.write(json.dumps(obj, indent=2, sort_keys=True).encode())
            else:
                torch.save(obj, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class Store:
    """A folder of artifacts keyed by config hash (see module docstring)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root or os.environ.get("OVERINTERP_ARTIFACTS") or "artifacts")

    def dir(self, kind: str, config: Any) -> Path:
        """The folder of the artifact ``kind`` produced by ``config`` (not created)."""
        return self.root / kind / config_key(config)

    def check(self, kind: str, config: Any) -> Path:
        """Create the artifact folder, write its ``config.json``, or verify the one there."""
        d = self.dir(kind, config)
        plain = to_plain(config)
        cfg_file = d / "config.json"
        if cfg_file.exists():
            stored = json.loads(cfg_file.read_text())
            if stored != plain:
                raise ArtifactMismatch(
                    f"{d} holds a {kind} produced by another config:\n stored {stored}\n asked  {plain}")
        else:
            atomic_save(plain, cfg_file)
        return d

    def save(self, kind: str, config: Any, payload: Any, name: str = "result.pt") -> Path:
        """Atomically save ``payload`` with its config and the code version."""
        d = self.check(kind, config)
        return atomic_save({"config": to_plain(config), "code_version": code_version(),
                            "payload": payload}, d / name)

    def load(self, kind: str, config: Any, name: str = "result.pt", map_location: str = "cpu") -> Any:
        """The saved payload, or ``None`` when absent; raises on a config mismatch."""
        f = self.dir(kind, config) / name
        if not f.exists():
            return None
        blob = torch.load(f, map_location=map_location, weights_only=False)
        if blob.get("config") != to_plain(config):
            raise ArtifactMismatch(f"{f} was produced by config {blob.get('config')}, not {to_plain(config)}")
        return blob["payload"]

    def exists(self, kind: str, config: Any, name: str = "result.pt") -> bool:
        return (self.dir(kind, config) / name).exists()
