"""Datasets of the paper (3.1) and our Fashion-MNIST analogues, as normalised tensors.

The paper trains on CIFAR-10 and evaluates out of distribution on CIFAR-10.1 v6 and "a uniform random
sample of 2000 images from the CIFAR-10-C set"; our **fashion-mnist-c** is the analogue: 2000 seeded
(corruption, severity, test image) triples corrupted by ``imagecorruptions-imaug`` (seedable, works on
28x28 padded to 32x32; its ImageNet-C severities are harsher on 28x28 than CIFAR-10-C's).

Every :class:`Split` is normalised with its *in-distribution training set's* mean/std (:data:`STATS`), so
a masked value 0 is the mean pixel (3.3). Files live under :func:`data_root`; checksums are verified on
download only; missing files without network raise :class:`DataUnavailable` naming where to put them.
"""
import gzip
import inspect
import os
import pickle
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torchvision.datasets import CIFAR10, FashionMNIST

from overinterp.store import atomic_write
from torchvision.datasets.utils import download_and_extract_archive, download_url, extract_archive

DATASETS: tuple = ("fashion-mnist", "cifar10", "fashion-mnist-c", "cifar10.1", "cifar10-c")
_PARENT = {"fashion-mnist": "fashion-mnist", "cifar10": "cifar10", "fashion-mnist-c": "fashion-mnist",
           "cifar10.1": "cifar10", "cifar10-c": "cifar10"}
#: (mean, std) per channel in [0,1] pixel units, computed on each training set.
STATS = {"fashion-mnist": ((0.2860,), (0.3530,)),
         "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))}
CLASSES = {"fashion-mnist": list(FashionMNIST.classes),
           "cifar10": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]}
OOD_SAMPLE_SIZE = 2000  # paper 3.1: uniform random sample of 2000 corrupted images
OOD_SEED = 0

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")  # apt-get install dataset-fashion-mnist
_FMNIST_FILES = [f"{p}-{k}-ubyte" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]
_CIFAR_FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]
CIFAR101_URL = "https://raw.githubusercontent.com/modestyachts/CIFAR-10.1/master/datasets/"
CIFAR101_FILES = {"cifar10.1_v6_data.npy": "29615bb88ff99bca6b147cee2520f010",
                  "cifar10.1_v6_labels.npy": "a27460fa134ae91e4a5cb7e6be8d269e"}
CIFAR10C_URL = "https://zenodo.org/record/2535967/files/CIFAR-10-C.tar"
CIFAR10C_MD5 = "56bf5dcef84df0e2308c6dcbcbbd8499"
#: The 15 ImageNet-C corruptions + 4 extra, as in CIFAR-10-C.
FMNIST_C_CORRUPTIONS = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
                        "motion_blur", "zoom_blur", "snow", "frost", "fog", "brightness", "contrast",
                        "elastic_transform", "pixelate", "jpeg_compression", "speckle_noise",
                        "gaussian_blur", "spatter", "saturate")
_MIN_SIDE = 32  # imagecorruptions refuses smaller images


class DataUnavailable(RuntimeError):
    """The data set is not on disk and could not be downloaded."""


@dataclass
class Split:
    """One split, normalised; fresh tensors on every :func:`load` (in-place changes spare the cache).
    ``info``: per-image ``corruption``, ``severity`` (1-5) and ``source_index`` for the corrupted sets."""
    name: str
    split: str
    images: torch.Tensor
    labels: torch.Tensor
    classes: list[str]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.labels)

    def denormalise(self, x: torch.Tensor | None = None) -> torch.Tensor:
        """Back to [0,1] pixels (``x`` (…, C, H, W); default: all images), for plotting."""
        x = self.images if x is None else x
        kw = dict(dtype=x.dtype, device=x.device)
        return x * torch.tensor(self.std, **kw).view(-1, 1, 1) + torch.tensor(self.mean, **kw).view(-1, 1, 1)


def data_root() -> Path:
    """``$OVERINTERP_DATA`` if set, else ``./data``."""
    return Path(os.environ.get("OVERINTERP_DATA") or "data")


def ood_sets(dataset: str) -> list[str]:
    """The out-of-distribution sets evaluated for an in-distribution data set."""
    ood = {"cifar10": ["cifar10.1", "cifar10-c"], "fashion-mnist": ["fashion-mnist-c"]}
    if dataset not in ood:
        raise ValueError(f"dataset must be one of {sorted(ood)} (in-distribution sets), got {dataset!r}")
    return list(ood[dataset])


def load(dataset: str, split: str = "test", root: str | Path | None = None, download: bool = True, *,
         sample_size: int = OOD_SAMPLE_SIZE) -> Split:
    """One split as a normalised :class:`Split` (cached); ``sample_size``: the corrupted sets' only."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    splits = ("train", "test") if _PARENT[dataset] == dataset else ("test",)
    if split not in splits:
        raise ValueError(f"split must be one of {splits} for dataset {dataset!r}, got {split!r}")
    root = Path(root if root is not None else data_root()).expanduser().absolute()
    images, labels, info = _load_uint8(dataset, split, root, download, sample_size)
    mean, std = STATS[_PARENT[dataset]]
    x = images.float().div_(255)  # new tensor: the cache stays untouched
    x.sub_(torch.tensor(mean).view(-1, 1, 1)).div_(torch.tensor(std).view(-1, 1, 1))
    info = {k: v.clone() if isinstance(v, torch.Tensor) else list(v) for k, v in info.items()}
    return Split(dataset, split, x, labels.clone(), list(CLASSES[_PARENT[dataset]]), mean, std, info)


def shape(dataset: str) -> tuple[int, int]:
    """(channels, classes) of ``dataset``'s images, without loading them."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    return len(STATS[_PARENT[dataset]][0]), len(CLASSES[_PARENT[dataset]])


def take(split: Split, n: int | None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(images, labels): the first ``n`` of a seeded permutation (all, in order, when ``n`` is None or >= size)."""
    if n is None or n >= len(split):
        return split.images, split.labels
    idx = torch.randperm(len(split), generator=torch.Generator().manual_seed(seed))[:n]
    return split.images[idx], split.labels[idx]


@dataclass(frozen=True)
class Selection:
    """Which images a run sees: :func:`take` of ``n`` images of one set, optionally narrowed to positions
    ``index``; its :meth:`key` is part of every backward-selection key."""
    dataset: str                 # the models' (in-distribution) data set: fashion-mnist, cifar10
    set: str = "test"            # "train", "test" or one of ood_sets(dataset)
    n: int | None = None         # images sampled (None = all)
    seed: int = 0                # seed of the sample's permutation
    index: tuple | None = None   # positions within the sample (None = all of it)

    def __post_init__(self):
        valid = ["train", "test"] + ood_sets(self.dataset)
        if self.set not in valid:
            raise ValueError(f"set {self.set!r} is not a set of {self.dataset}; valid sets: {', '.join(valid)}")
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be >= 1 or None (all images), got {self.n}")

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(images (N, C, H, W), labels (N,)), normalised."""
        split = load(self.dataset, self.set) if self.set in ("train", "test") else load(self.set, "test")
        images, labels = take(split, self.n, self.seed)
        if self.index is not None:
            idx = torch.tensor(self.index, dtype=torch.long)
            images, labels = images[idx], labels[idx]
        return images, labels

    def narrow(self, index) -> "Selection":
        """The images at positions ``index`` of this selection's sample."""
        return Selection(self.dataset, self.set, self.n, self.seed, tuple(int(i) for i in index))

    def key(self) -> dict:
        return {"dataset": self.dataset, "set": self.set, "n": self.n, "seed": self.seed,
                "index": None if self.index is None else list(self.index)}


@lru_cache(maxsize=16)
def _load_uint8(dataset: str, split: str, root: Path, download: bool, sample_size: int):
    """(uint8 images (N,C,H,W), int64 labels (N,), info dict); callers must not modify them."""
    if dataset == "fashion-mnist":
        return (*_fashion_mnist(root, split == "train", download), {})
    if dataset == "cifar10":
        return (*_cifar10(root, split == "train", download), {})
    if dataset == "cifar10.1":
        return (*_cifar101(root, download), {})
    if dataset == "cifar10-c":
        return _cifar10c(root, download, sample_size)
    return _fashion_mnist_c(root, download, sample_size)


# --------------------------------------------------------------------------- helpers

def _ensure(what: str, ready: Callable[[], bool], fetch: Callable[[], object], download: bool, hint: str,
            archive: Path | None = None) -> None:
    """Make sure a data set is on disk (there, in ``archive``, or fetched); else :class:`DataUnavailable`."""
    if ready():
        return
    if archive is not None and archive.is_file():
        extract_archive(str(archive), str(archive.parent))
        if ready():
            return
    reason, cause = "download=False", None
    if download:
        try:
            fetch()
        except Exception as err:  # no network, bad checksum, server error, ...
            reason, cause = f"download failed: {type(err).__name__}: {err}", err
        else:
            if ready():
                return
            reason = "download finished but the expected files are still missing"
    raise DataUnavailable(f"{what} is not available ({reason}).\n{hint}") from cause


def _download_file(url: str, path: Path, md5: str) -> None:
    """Download with md5 check into a staging folder, then move into place."""
    stage = path.parent / ".partial"
    try:
        download_url(url, str(stage), path.name, md5)  # raises RuntimeError on a bad checksum
        os.replace(stage / path.name, path)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _sample_pairs(n_groups: int, n_per_group: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` distinct (group, index) pairs drawn uniformly from all ``n_groups * n_per_group``, sorted."""
    total = n_groups * n_per_group
    if not 0 < size <= total:
        raise ValueError(f"sample_size must be in [1, {total}], got {size}")
    flat = torch.randperm(total, generator=torch.Generator().manual_seed(seed))[:size].sort().values.numpy()
    return flat // n_per_group, flat % n_per_group


# --------------------------------------------------------------------------- Fashion-MNIST

def _stage_fashion_mnist(raw: Path) -> bool:
    """Decompressed IDX files in ``raw`` (torchvision's layout), from ``raw/*.gz`` or Debian's."""
    if all((raw / f).is_file() for f in _FMNIST_FILES):
        return True
    for src in (raw, DEBIAN_FASHION_MNIST):
        if all((src / f"{f}.gz").is_file() for f in _FMNIST_FILES):
            for f in _FMNIST_FILES:
                with gzip.open(src / f"{f}.gz", "rb") as gz:
                    atomic_write(raw / f, lambda fh: shutil.copyfileobj(gz, fh))
            return True
    return False


def _fashion_mnist(root: Path, train: bool, download: bool):
    raw = root / "FashionMNIST" / "raw"
    _ensure("Fashion-MNIST", lambda: _stage_fashion_mnist(raw), lambda: FashionMNIST(str(root), download=True),
            download, f"Put the four files {', '.join(f + '[.gz]' for f in _FMNIST_FILES)} in {raw}/ "
            f"(or `apt-get install dataset-fashion-mnist`, which provides {DEBIAN_FASHION_MNIST}/).")
    ds = FashionMNIST(str(root), train=train, download=False)
    return ds.data.unsqueeze(1).contiguous(), ds.targets.long()


def corrupt_images(images: np.ndarray, labels: np.ndarray, sample_size: int = OOD_SAMPLE_SIZE,
                   seed: int = OOD_SEED, corruptions: tuple[str, ...] = FMNIST_C_CORRUPTIONS) -> dict:
    """The CIFAR-10-C protocol on grey uint8 ``images`` (N, H, W): ``sample_size`` (corruption, severity,
    image) triples drawn without replacement, each seeded (numpy's global RNG restored after). Returns
    uint8 ``images`` (n, H, W), ``labels``, ``corruption`` (index), ``severity`` (1-5), ``source_index``."""
    from imagecorruptions import corrupt, corruption_dict  # heavy import (numba): only when building

    n, h, w = images.shape
    group, idx = _sample_pairs(len(corruptions), 5 * n, sample_size, seed)
    severity, src = idx // n + 1, idx % n
    seeds = torch.randint(0, 2**31 - 1, (sample_size,), generator=torch.Generator().manual_seed(seed + 1))
    ph, pw = max(0, _MIN_SIDE - h), max(0, _MIN_SIDE - w)
    pad = ((ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0))
    grey = np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma, as PIL's "L" mode
    out = np.empty((sample_size, h, w), np.uint8)
    state = np.random.get_state()
    try:
        for k, (c, s, i, sd) in enumerate(zip(group, severity, src, seeds.tolist())):
            name = corruptions[c]
            kw = {"seed": sd} if "seed" in inspect.signature(corruption_dict[name]).parameters else {}
            np.random.seed(sd)
            rgb = np.pad(np.repeat(images[i][:, :, None], 3, axis=2), pad, mode="reflect")
            y = corrupt(rgb, severity=int(s), corruption_name=name, **kw)[pad[0][0]:pad[0][0] + h,
                                                                            pad[1][0]:pad[1][0] + w]
            out[k] = np.clip(np.rint(y @ grey), 0, 255)
    finally:
        np.random.set_state(state)
    return {"images": out, "labels": np.asarray(labels)[src].astype(np.int64), "corruption": group,
            "severity": severity, "source_index": src}


def _fashion_mnist_c(root: Path, download: bool, size: int):
    from importlib.metadata import PackageNotFoundError, version
    stem = f"fashion-mnist-c_n{size}_seed{OOD_SEED}_imagecorruptions-imaug-"
    try:
        path = root / "fashion-mnist-c" / f"{stem}{version('imagecorruptions-imaug')}.npz"
    except PackageNotFoundError:  # no corruption library (e.g. a GPU machine): a sample built elsewhere, carried here
        built = sorted((root / "fashion-mnist-c").glob(f"{stem}*.npz"))
        if not built:
            raise RuntimeError(f"fashion-mnist-c: no {stem}<version>.npz in {root / 'fashion-mnist-c'} and the package "
                               "imagecorruptions-imaug is not installed to build it (pip install imagecorruptions-imaug)")
        path = built[-1]
    if not path.is_file():
        images, labels = _fashion_mnist(root, train=False, download=download)
        built = corrupt_images(images[:, 0].numpy(), labels.numpy(), size, OOD_SEED)
        atomic_write(path, lambda fh: np.savez(fh, corruption_names=np.array(FMNIST_C_CORRUPTIONS), **built))
    with np.load(path) as z:
        names = [str(c) for c in z["corruption_names"]]
        return (torch.from_numpy(z["images"][:, None]), torch.from_numpy(z["labels"]).long(),
                {"corruption": [names[c] for c in z["corruption"]], "severity": torch.from_numpy(z["severity"]),
                 "source_index": torch.from_numpy(z["source_index"])})


# --------------------------------------------------------------------------- CIFAR-10 family

class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, bytes and NumPy arrays only: any other global (how a pickle runs code) is refused."""
    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.numeric", "_frombuffer"),
               ("numpy._core.numeric", "_frombuffer"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a CIFAR batch file")
        return super().find_class(module, name)


def _read_cifar_batches(folder: Path, names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-10 python pickles -> uint8 (N,3,32,32), (N,); not via torchvision, which re-checks md5s per load."""
    data, labels = [], []
    for name in names:
        with open(folder / name, "rb") as fh:
            entry = _ArrayUnpickler(fh, encoding="bytes").load()
        data.append(np.asarray(entry[b"data"], np.uint8).reshape(-1, 3, 32, 32))
        labels.extend(entry[b"labels"])
    return torch.from_numpy(np.concatenate(data)), torch.tensor(labels, dtype=torch.int64)


def _cifar10(root: Path, train: bool, download: bool):
    folder = root / CIFAR10.base_folder
    _ensure("CIFAR-10", lambda: all((folder / f).is_file() for f in _CIFAR_FILES),
            lambda: download_and_extract_archive(CIFAR10.url, str(root), filename=CIFAR10.filename,
                                                 md5=CIFAR10.tgz_md5),
            download, f"Put {CIFAR10.filename} in {root}/ or its extracted folder at {folder}/ "
            f"(files {', '.join(_CIFAR_FILES)}).", archive=root / CIFAR10.filename)
    return _read_cifar_batches(folder, _CIFAR_FILES[:5] if train else ["test_batch"])


def _hwc_to_tensor(images: np.ndarray, labels: np.ndarray, source: Path) -> tuple[torch.Tensor, torch.Tensor]:
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[3] != 3 or len(images) != len(labels):
        raise ValueError(f"{source}: expected uint8 images (N,32,32,3) and N labels, "
                         f"got {images.dtype} {images.shape} and {len(labels)} labels")
    return torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))), torch.from_numpy(
        np.asarray(labels).astype(np.int64))


def _cifar101(root: Path, download: bool):
    folder = root / "cifar10.1"
    _ensure("CIFAR-10.1 v6", lambda: all((folder / f).is_file() for f in CIFAR101_FILES),
            lambda: [_download_file(CIFAR101_URL + f, folder / f, md5)
                     for f, md5 in CIFAR101_FILES.items() if not (folder / f).is_file()],
            download, f"Put {' and '.join(CIFAR101_FILES)} (from github.com/modestyachts/CIFAR-10.1, "
            f"datasets/) in {folder}/.")
    data, labels = (np.load(folder / f) for f in CIFAR101_FILES)
    return _hwc_to_tensor(data, labels, folder)


def _cifar10c(root: Path, download: bool, size: int):
    folder = root / "CIFAR-10-C"
    _ensure("CIFAR-10-C", lambda: (folder / "labels.npy").is_file() and len(list(folder.glob("*.npy"))) > 1,
            lambda: download_and_extract_archive(CIFAR10C_URL, str(root), md5=CIFAR10C_MD5),
            download, f"Put CIFAR-10-C.tar (zenodo.org/record/2535967) in {root}/ or extract it so that "
            f"{folder}/ holds labels.npy and one <corruption>.npy per corruption.",
            archive=root / "CIFAR-10-C.tar")
    labels = np.load(folder / "labels.npy")
    names = sorted(p.stem for p in folder.glob("*.npy") if p.stem != "labels")
    group, idx = _sample_pairs(len(names), len(labels), size, OOD_SEED)
    chunks = []
    for c in np.unique(group):
        arr = np.load(folder / f"{names[c]}.npy", mmap_mode="r")
        if arr.shape[0] != len(labels):
            raise ValueError(f"{folder / names[c]}.npy has {arr.shape[0]} images, labels.npy {len(labels)}")
        chunks.append(np.asarray(arr[idx[group == c]]))
    per_severity = len(labels) // 5  # each file: severities 1..5 of the 10000 test images, in order
    images, labels = _hwc_to_tensor(np.concatenate(chunks), labels[idx], folder)
    return images, labels, {"corruption": [names[c] for c in group],
                            "severity": torch.from_numpy(idx // per_severity + 1),
                            "source_index": torch.from_numpy(idx % per_severity)}
