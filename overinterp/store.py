"""Artifact store: results kept with the config that produced them.

Every expensive result of the pipeline (a trained model, a backward-selection
run, a retrained model) is saved under ``<root>/<kind>/<key>/`` where ``key`` is a
hash of the producing config *and of the kind's code version* (:data:`VERSIONS`,
bumped whenever a change of the code changes that kind's results, so an old
result is never loaded by new code). ``<root>`` is ``$OVERINTERP_ARTIFACTS`` or
``./artifacts``. Writes are atomic (temp file in the same folder, then
``os.replace``), so a reader never sees a half-written file, and a stored
artifact whose config differs from the one asked for is never returned
(:class:`ArtifactMismatch`). Each file also records the git commit that wrote it.

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import torch

__all__ = ["Store", "ArtifactMismatch", "VERSIONS", "config_key", "atomic_write", "atomic_save", "to_plain",
           "code_version"]

#: Code version of each artifact kind, part of its key. Bump a kind when its results change.
VERSIONS = {
    "model": 2,       # 2: InputDropout evaluates with masks shared by the batch; augmentation drawn per epoch
    "retrained": 2,   # as "model"
    "backselect": 2,  # 2: ranks by float64 log-odds (was float32 softmax, which saturates at 1.0)
    "input_reduction": 1,  # input reduction with beam search (overinterp.methods.input_reduction, Feng et al. 2018)
    "vae": 1,         # generative model of Bayes-TrEx (overinterp.methods.bayes_trex)
    "bayes_trex": 1,  # NUTS chains of Bayes-TrEx in a VAE latent space
}


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
        from overinterp import __version__
        return __version__


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Write through ``write(binary file object)`` to a temp file beside ``path``, then rename
    it into place: a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_save(obj: Any, path: str | os.PathLike) -> Path:
    """:func:`atomic_write` of ``obj``: JSON for a ``.json`` path, else ``torch.save``."""
    if Path(path).suffix == ".json":
        return atomic_write(path, lambda fh: fh.write(json.dumps(obj, indent=2, sort_keys=True).encode()))
    return atomic_write(path, lambda fh: torch.save(obj, fh))


class Store:
    """A folder of artifacts keyed by config hash (see module docstring)."""

    #: the folder a ``Store()`` opens when none is given, before ``$OVERINTERP_ARTIFACTS`` and ./artifacts
    #: (the command line's ``--artifacts`` sets it)
    default_root: str | os.PathLike | None = None

    @classmethod
    @contextmanager
    def using(cls, root: str | os.PathLike | None):
        """Within the block, ``Store()`` opens ``root`` (None: no change); the command line's ``--artifacts``."""
        old, cls.default_root = cls.default_root, root or cls.default_root
        try:
            yield
        finally:
            cls.default_root = old

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root or Store.default_root or os.environ.get("OVERINTERP_ARTIFACTS") or "artifacts")

    @staticmethod
    def versioned(kind: str, config: Any) -> dict:
        """What a key hashes and ``config.json`` holds: the kind's code version and the config."""
        if kind not in VERSIONS:
            raise ValueError(f"unknown artifact kind {kind!r}; valid kinds: {', '.join(VERSIONS)}")
        return {"version": VERSIONS[kind], "config": to_plain(config)}

    def dir(self, kind: str, config: Any) -> Path:
        """The folder of the artifact ``kind`` produced by ``config`` (not created)."""
        return self.root / kind / config_key(self.versioned(kind, config))

    def check(self, kind: str, config: Any) -> Path:
        """Create the artifact folder, write its ``config.json``, or verify the one there."""
        d = self.dir(kind, config)
        plain = self.versioned(kind, config)
        cfg_file = d / "config.json"
        if cfg_file.exists():
            stored = json.loads(cfg_file.read_text())
            if stored != plain:
                raise ArtifactMismatch(f"{d} holds a {kind} produced by another config or code version: "
                                       f"stored {stored}, asked {plain}")
        else:
            atomic_save(plain, cfg_file)
        return d

    def save(self, kind: str, config: Any, payload: Any, name: str = "result.pt") -> Path:
        """Atomically save ``payload`` with its config, the kind's version and the git commit."""
        d = self.check(kind, config)
        return atomic_save({**self.versioned(kind, config), "code_version": code_version(), "payload": payload},
                           d / name)

    def load(self, kind: str, config: Any, name: str = "result.pt", map_location: str = "cpu") -> Any:
        """The saved payload, or ``None`` when absent; raises on a config or version mismatch."""
        f = self.dir(kind, config) / name
        if not f.exists():
            return None
        blob = torch.load(f, map_location=map_location, weights_only=False)
        want = self.versioned(kind, config)
        if {k: blob.get(k) for k in want} != want:
            raise ArtifactMismatch(f"{f} was produced by {kind} version {blob.get('version')} with config "
                                   f"{blob.get('config')}, not version {want['version']} with {want['config']}")
        return blob["payload"]

    def exists(self, kind: str, config: Any, name: str = "result.pt") -> bool:
        return (self.dir(kind, config) / name).exists()
