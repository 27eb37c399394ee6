"""Artifact store: expensive results kept in ``<root>/<kind>/<key>/`` (root ``$OVERINTERP_ARTIFACTS`` or
``./artifacts``), ``key`` hashing the config and the kind's code version (:data:`VERSIONS`). Writes are atomic
and checksummed (``<name>.sha256``); a damaged file raises :class:`CorruptArtifact`, or with ``repair`` is set
aside and treated as absent. :func:`pack` / :func:`unpack` move a store as one verified ``.tar.gz``.

    store = Store()
    cfg = {"arch": "resnet20", "seed": 0, ...}
    obj = store.load("model", cfg)        # None when absent
    store.save("model", cfg, obj)
"""
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import torch

#: environment variables of the access log: its file, and the running chapter
LOG_ENV, CHAPTER_ENV = "OVERINTERP_STORE_LOG", "OVERINTERP_CHAPTER"

#: Code version of each artifact kind, part of its key. Bump a kind when its results change.
VERSIONS = {
    "model": 2,       # a trained classifier
    "retrained": 2,   # a classifier trained on pixel subsets (section 4.2)
    "backselect": 2,  # a backward-selection run, ranked by float64 log-odds (float32 softmax saturates at 1.0)
    "input_reduction": 1,  # input reduction with beam search (Feng et al. 2018)
    "vae": 1,         # Bayes-TrEx's generative model
    "bayes_trex": 1,  # Bayes-TrEx's NUTS chains in a VAE latent space
}


class ArtifactMismatch(RuntimeError):
    """A stored artifact exists under this key but was produced by another config."""


class CorruptArtifact(RuntimeError):
    """A stored file fails its checksum or cannot be read; ``path`` names it."""

    def __init__(self, path: str | os.PathLike, why: str):
        self.path, self.why = Path(path), why
        super().__init__(f"{path} is damaged ({why}); run again with --repair (or OVERINTERP_REPAIR=1) "
                         f"to move it aside and recompute it")


class PackError(RuntimeError):
    """An artifact pack cannot be unpacked (damaged, tampered, or from other code versions)."""


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


def sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path: str | os.PathLike, doc: dict) -> None:
    """``doc`` as indented UTF-8 JSON with a final newline: the format of the committed results files."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike) -> dict | None:
    """The JSON document at ``path``, None where there is no such file."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Write ``path`` through ``write(binary file)`` to a temp file, then rename: readers never see half a file."""
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

    #: root when none is given, before ``$OVERINTERP_ARTIFACTS`` (set by ``--artifacts``)
    default_root: str | os.PathLike | None = None
    #: repair when not said, before ``$OVERINTERP_REPAIR`` (set by ``--repair``)
    default_repair: bool | None = None

    @classmethod
    @contextmanager
    def using(cls, root: str | os.PathLike | None, repair: bool | None = None):
        """Within the block, ``Store()`` defaults to ``root`` and ``repair`` (None: unchanged)."""
        old = cls.default_root, cls.default_repair
        cls.default_root = root or cls.default_root
        cls.default_repair = cls.default_repair if repair is None else repair
        try:
            yield
        finally:
            cls.default_root, cls.default_repair = old

    def __init__(self, root: str | os.PathLike | None = None, repair: bool | None = None):
        self.root = Path(root or Store.default_root or os.environ.get("OVERINTERP_ARTIFACTS") or "artifacts")
        for choice in (repair, Store.default_repair):
            if choice is not None:
                self.repair = bool(choice)
                break
        else:
            self.repair = os.environ.get("OVERINTERP_REPAIR", "") not in ("", "0")

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
            try:
                stored = json.loads(cfg_file.read_text())
            except (ValueError, UnicodeDecodeError) as e:
                if not self.repair:
                    raise CorruptArtifact(cfg_file, f"not valid JSON: {e}") from None
                self.set_aside(cfg_file, "not valid JSON")
                return self.check(kind, config)
            if stored != plain:
                raise ArtifactMismatch(f"{d} holds a {kind} produced by another config or code version: "
                                       f"stored {stored}, asked {plain}")
        else:
            atomic_save(plain, cfg_file)
        return d

    def save(self, kind: str, config: Any, payload: Any, name: str = "result.pt") -> Path:
        """Atomically save ``payload`` with its config, version and git commit, then its checksum; the file."""
        d = self.check(kind, config)
        f = atomic_save({**self.versioned(kind, config), "code_version": code_version(), "payload": payload}, d / name)
        record_checksum(f)
        log_access("save", self.root, f)
        return f

    def load(self, kind: str, config: Any, name: str = "result.pt", map_location: str = "cpu") -> Any:
        """The saved payload, or None when absent; :class:`ArtifactMismatch` on another config or version,
        :class:`CorruptArtifact` on a damaged file (with ``repair``: set aside, None)."""
        f = self.dir(kind, config) / name
        if not f.exists():
            log_access("miss", self.root, f)
            return None
        log_access("load", self.root, f)
        want = self.versioned(kind, config)
        try:
            blob = read_verified(f, map_location)
        except CorruptArtifact as e:
            try:  # a whole other artifact copied under this key is a mismatch, said as such
                blob = safe_load(f, map_location)
            except Exception:
                blob = None
            if not (isinstance(blob, dict) and {k: blob.get(k) for k in want} != want):
                if not self.repair:
                    raise
                self.set_aside(f, e.why)
                return None
        if {k: blob.get(k) for k in want} != want:
            raise ArtifactMismatch(f"{f} was produced by {kind} version {blob.get('version')} with config "
                                   f"{blob.get('config')}, not version {want['version']} with {want['config']}")
        return blob["payload"]

    def exists(self, kind: str, config: Any, name: str = "result.pt") -> bool:
        """Whether the file is stored; with ``repair``, also intact (a damaged one is moved aside)."""
        f = self.dir(kind, config) / name
        if not f.exists():
            return False
        if self.repair:
            try:
                read_verified(f) if not checksum_file(f).exists() else verify(f)
            except CorruptArtifact as e:
                self.set_aside(f, e.why)
                return False
        return True

    def set_aside(self, f: Path, why: str) -> Path:
        """Move a damaged file (and its checksum) to ``<name>.corrupt-<timestamp>``; says so on stderr."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = f.with_name(f"{f.name}.corrupt-{stamp}")
        os.replace(f, target)
        side = checksum_file(f)
        if side.exists():
            os.replace(side, side.with_name(f"{side.name}.corrupt-{stamp}"))
        print(f"[store] repair: {f} was damaged ({why}); moved to {target.name}, it will be recomputed",
              file=sys.stderr, flush=True)
        return target

    def files(self) -> list[Path]:
        """The store's files (``kind/key/name``), without temporary, hidden or set-aside ones."""
        if not self.root.is_dir():
            return []
        return [f for f in sorted(self.root.rglob("*"))
                if f.is_file() and len(rel := f.relative_to(self.root).parts) == 3
                and not any(p.startswith(".") for p in rel) and ".corrupt-" not in f.name]

    def verify_all(self) -> list[tuple[Path, str]]:
        """Every damaged file and why (checksums verified, unchecksummed ``.pt`` read); ``repair`` sets them aside."""
        bad = []
        for f in self.files():
            if f.suffix == ".sha256":
                continue
            try:
                if checksum_file(f).exists():
                    verify(f)
                elif f.suffix == ".pt":
                    read_verified(f)
                elif f.suffix == ".json":
                    json.loads(f.read_text())
            except CorruptArtifact as e:
                why = e.why
            except ValueError as e:          # UnicodeDecodeError too: a config.json, or a checksum, not text
                why = f"not valid JSON: {' '.join(str(e).split())}" if f.suffix == ".json" else \
                    f"its checksum file is not text: {' '.join(str(e).split())}"
            except OSError as e:             # unreadable (permissions, a folder in a file's place)
                why = f"cannot be read: {e.strerror or e}"
            else:
                continue
            bad.append((f, why))
            if self.repair:
                self.set_aside(f, why)
        return bad


def log_access(event: str, root: Path, f: Path) -> None:
    """Append ``{"event", "kind", "key", "name", "chapter", "time"}`` as one JSON line (one write, so processes
    do not interleave) to ``$OVERINTERP_STORE_LOG`` if set; ``chapter``: ``$OVERINTERP_CHAPTER`` or None."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    kind, key, name = Path(f).relative_to(root).parts[-3:]
    line = json.dumps({"event": event, "kind": kind, "key": f"{kind}/{key}", "name": name,
                       "chapter": os.environ.get(CHAPTER_ENV) or None, "time": round(time.time(), 3)})
    with open(log, "a") as fh:
        fh.write(line + "\n")


def checksum_file(f: Path) -> Path:
    """``f``'s checksum file, ``<name>.sha256`` beside it."""
    return f.with_name(f.name + ".sha256")


def record_checksum(f: Path, digest: str | None = None) -> None:
    """Atomically write ``f``'s checksum beside it, in ``sha256sum -c`` format."""
    line = f"{digest or sha256(f)}  {f.name}\n"
    atomic_write(checksum_file(f), lambda fh: fh.write(line.encode()))


def verify(f: Path) -> None:
    """Raise :class:`CorruptArtifact` if ``f`` differs from its recorded checksum (none recorded: passes)."""
    side = checksum_file(f)
    for attempt in range(2):  # a second look: another process may have just rewritten the file and its checksum
        try:
            recorded = side.read_text().split()[0]
        except (FileNotFoundError, IndexError):
            return
        try:
            actual = sha256(f)
        except FileNotFoundError:
            raise CorruptArtifact(f, "the file is missing") from None
        if actual == recorded:
            return
        time.sleep(0.2)
    raise CorruptArtifact(f, f"sha256 {actual[:12]}... differs from the recorded {recorded[:12]}..., "
                             f"{f.stat().st_size} bytes")


def safe_load(f: Path, map_location: str = "cpu") -> Any:
    """``torch.load(weights_only=True)``, so a foreign pack's file cannot run code; also allows ``TorchVersion``."""
    from torch.torch_version import TorchVersion
    with torch.serialization.safe_globals([TorchVersion]):
        return torch.load(f, map_location=map_location, weights_only=True)


def read_verified(f: Path, map_location: str = "cpu", record: bool = True) -> Any:
    """``f`` loaded after :func:`verify` (unreadable: :class:`CorruptArtifact`); ``record`` adds a missing checksum."""
    verify(f)
    try:
        blob = safe_load(f, map_location)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0].split(". ")[0]
        raise CorruptArtifact(f, f"torch cannot read it: {type(e).__name__}: {first[:120]}") from None
    if record and not checksum_file(f).exists():
        try:
            record_checksum(f)
        except OSError:  # a read-only store stays unverified
            pass
    return blob


# ---------------------------------------------------------------------------------------------- packs
PACK_FORMAT = 1


def library_versions() -> dict:
    """The versions a pack records: this package's, torch's, torchvision's, Python's."""
    import platform

    import torchvision

    from overinterp import __version__
    return {"overinterp": __version__, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "python": platform.python_version()}


def pack(file: str | os.PathLike, store: Store | None = None, profile: str | None = None) -> dict:
    """Write ``store``'s current-version entries (only reading it) into the ``.tar.gz`` ``file`` with a
    ``manifest.json`` (SHA-256s, profile, versions, commit); returns the manifest."""
    import io
    store = store or Store()
    files, extra, stale = {}, {}, set()
    for f in store.files():
        rel = f.relative_to(store.root)
        kind = rel.parts[0]
        if kind not in VERSIONS:
            raise PackError(f"{store.root / kind} is not an artifact kind of this code ({', '.join(VERSIONS)})")
        try:
            version = json.loads((f.parent / "config.json").read_text()).get("version")
        except (FileNotFoundError, ValueError):
            raise CorruptArtifact(f.parent / "config.json", "missing or not valid JSON") from None
        if version != VERSIONS[kind]:
            stale.add(f.parent)
            continue
        if f.suffix != ".sha256":
            verify(f)
        files[rel.as_posix()] = f
        if f.suffix == ".pt" and not checksum_file(f).exists():  # an entry older than checksums: ship one
            read_verified(f, record=False)   # readable by torch; the pack reads the store, never writes it
            extra[rel.as_posix() + ".sha256"] = f"{sha256(f)}  {f.name}\n".encode()
    if not files:
        raise PackError(f"{store.root} holds no artifacts of the current versions to pack")
    entries = {rel: {"sha256": sha256(f), "bytes": f.stat().st_size} for rel, f in files.items()}
    entries.update({rel: {"sha256": hashlib.sha256(b).hexdigest(), "bytes": len(b)} for rel, b in extra.items()})
    manifest = {"format": PACK_FORMAT, "profile": profile, "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "commit": code_version(), "versions": library_versions(),
                "artifact_versions": {k: VERSIONS[k] for k in sorted({r.split("/")[0] for r in entries})},
                "left_out_stale_entries": len(stale), "files": dict(sorted(entries.items()))}

    def write(fh):
        with tarfile.open(fileobj=fh, mode="w:gz", compresslevel=6) as tar:
            def add_bytes(name, data):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
            add_bytes("manifest.json", json.dumps(manifest, indent=1).encode())
            for rel, f in sorted(files.items()):
                tar.add(f, arcname=f"store/{rel}", recursive=False)
            for rel, data in sorted(extra.items()):
                add_bytes(f"store/{rel}", data)
    atomic_write(file, write)
    return manifest


def _check_versions(manifest: dict, file) -> list[str]:
    """Refuse (PackError) a pack of other artifact or package versions; warnings for other torch versions."""
    if manifest.get("format") != PACK_FORMAT:
        raise PackError(f"{file} is a pack of format {manifest.get('format')!r}; this code reads format {PACK_FORMAT}")
    theirs = manifest.get("artifact_versions", {})
    other = {k: v for k, v in theirs.items() if VERSIONS.get(k) != v}
    if other:
        raise PackError(f"{file} was packed by other code: artifact versions "
                        + ", ".join(f"{k} {v} (this code: {VERSIONS.get(k, 'unknown kind')})" for k, v in other.items()))
    ours, got = library_versions(), manifest.get("versions", {})
    if got.get("overinterp") != ours["overinterp"]:
        raise PackError(f"{file} was packed by overinterp {got.get('overinterp')}, this is overinterp {ours['overinterp']}")
    minor = lambda v: ".".join(str(v).split("+")[0].split(".")[:2])
    return [f"{file} was packed with {lib} {got.get(lib)}, this is {lib} {ours[lib]}: results computed here may "
            f"differ in the last digits" for lib in ("torch", "torchvision") if minor(got.get(lib)) != minor(ours[lib])]


def pack_manifest(file: str | os.PathLike) -> dict:
    """The ``manifest.json`` of the pack ``file`` (JSON only: nothing else is read); PackError where none."""
    try:
        with tarfile.open(file, mode="r:gz") as tar:
            for m in tar:
                if m.name == "manifest.json" and m.isfile():
                    return json.loads(tar.extractfile(m).read())
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise PackError(f"{file} is not a readable pack ({type(e).__name__}: {' '.join(str(e).split())})") from None
    raise PackError(f"{file} has no manifest.json: not an overinterp pack")


def unpack(file: str | os.PathLike, store: Store | None = None) -> dict:
    """Verify the pack ``file`` in a temporary folder, then move its files into ``store`` (existing ones kept);
    returns a summary. A damaged, tampered or foreign pack raises :class:`PackError`, the store unchanged."""
    import zlib
    store = store or Store()
    file = Path(file)
    if not file.is_file():
        raise PackError(f"{file} does not exist")
    created = not store.root.exists()
    store.root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=store.root, prefix=".unpack-"))
    try:
        manifest, got = None, {}
        try:
            with tarfile.open(file, mode="r:gz") as tar:
                for m in tar:
                    parts = Path(m.name).parts
                    if m.isdir():
                        continue
                    if (not m.isfile() or Path(m.name).is_absolute() or ".." in parts
                            or not (m.name == "manifest.json" or (parts[0] == "store" and len(parts) == 4))):
                        raise PackError(f"{file} holds an unexpected member {m.name!r}: not an overinterp pack")
                    data = tar.extractfile(m).read()
                    if len(data) != m.size:
                        raise EOFError(f"{m.name} is cut short")
                    if m.name == "manifest.json":
                        manifest = json.loads(data)
                        continue
                    rel = "/".join(parts[1:])
                    target = tmp / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    got[rel] = hashlib.sha256(data).hexdigest()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
            raise PackError(f"{file} is truncated or not a gzip'd tar archive ({type(e).__name__}: "
                            f"{' '.join(str(e).split())})") from None
        except ValueError as e:  # the manifest's JSON
            raise PackError(f"{file} has an unreadable manifest.json ({e})") from None
        if manifest is None:
            raise PackError(f"{file} has no manifest.json: not an overinterp pack")
        warnings = _check_versions(manifest, file)
        listed = {rel: e["sha256"] for rel, e in manifest.get("files", {}).items()}
        if set(listed) != set(got):
            missing, unlisted = sorted(set(listed) - set(got)), sorted(set(got) - set(listed))
            raise PackError(f"{file} does not match its manifest: "
                            + (f"missing {missing[0]} and {len(missing) - 1} more" if missing else
                               f"{unlisted[0]} (and {len(unlisted) - 1} more) not in the manifest"))
        bad = sorted(rel for rel in listed if listed[rel] != got[rel])
        if bad:
            raise PackError(f"{file}: {bad[0]}{f' and {len(bad) - 1} more files' if len(bad) > 1 else ''} "
                            f"fail the manifest's sha256 (the archive was altered or damaged)")
        added, kept = 0, 0
        # checksums last, so a reader never meets a checksum whose file is not there yet
        for rel in sorted(listed, key=lambda r: r.endswith(".sha256")):
            target = store.root / rel
            if target.exists():
                kept += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / rel, target)
            added += 1
        return {"pack": str(file), "store": str(store.root), "profile": manifest.get("profile"),
                "commit": manifest.get("commit"), "added": added, "kept": kept, "warnings": warnings}
    except BaseException:
        if created:
            shutil.rmtree(store.root, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
