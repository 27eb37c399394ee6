"""Tests for overinterp.zoo.data: small files in each real on-disk format, loaded through the real code paths."""
from __future__ import annotations

import gzip
import pickle
import struct
import tarfile
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pytest
import torch

from overinterp.zoo import data

REAL_FMNIST = data.DEBIAN_FASHION_MNIST


@pytest.fixture(autouse=True)
def _fresh_cache():
    data._load_uint8.cache_clear()
    yield
    data._load_uint8.cache_clear()


def write_idx_gz(path: Path, array: np.ndarray) -> None:
    """IDX format: big-endian magic (0x08 = uint8, then ndim), one uint32 per dimension, raw bytes."""
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as fh:
        fh.write(header + array.astype(np.uint8).tobytes())


def write_fashion_mnist(root: Path, n_train: int = 30, n_test: int = 20, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = np.arange(n, dtype=np.uint8) % 10
        write_idx_gz(root / "FashionMNIST" / "raw" / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx_gz(root / "FashionMNIST" / "raw" / f"{prefix}-labels-idx1-ubyte.gz", labels)
        arrays[prefix] = (images, labels)
    return arrays


def write_cifar10(root: Path, n_per_batch: int = 4) -> dict:
    """cifar-10-batches-py/: pickled dicts with b"data" uint8 (N, 3072) and b"labels", plus batches.meta."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {b"batch_label": name.encode(), b"data": rng.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8),
                 b"labels": [int(v) for v in rng.integers(0, 10, n_per_batch)]}
        (folder / name).write_bytes(pickle.dumps(entry))
        batches[name] = entry
    meta = {b"label_names": [c.encode() for c in data.CLASSES["cifar10"]], b"num_vis": 3072}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta))
    return batches


def expected_normalised(uint8_nchw: np.ndarray, dataset: str) -> torch.Tensor:
    mean, std = (torch.tensor(v).view(-1, 1, 1) for v in data.STATS[dataset])
    return (torch.from_numpy(uint8_nchw).float() / 255 - mean) / std


# ---------------------------------------------------------------- API basics

def test_unknown_dataset_and_split():
    with pytest.raises(ValueError, match="dataset.*fashion-mnist.*cifar10-c"):
        data.load("imagenet")
    with pytest.raises(ValueError, match="split.*'train', 'test'"):
        data.load("cifar10", "val")
    with pytest.raises(ValueError, match="split.*'test'"):
        data.load("cifar10.1", "train")
    with pytest.raises(ValueError, match="dataset"):
        data.ood_sets("cifar10.1")


def test_ood_sets_and_constants():
    assert data.ood_sets("cifar10") == ["cifar10.1", "cifar10-c"]
    assert data.ood_sets("fashion-mnist") == ["fashion-mnist-c"]
    assert set(data.DATASETS) == {"fashion-mnist", "cifar10", "fashion-mnist-c", "cifar10.1", "cifar10-c"}


def test_data_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("OVERINTERP_DATA", str(tmp_path))
    assert data.data_root() == tmp_path
    monkeypatch.delenv("OVERINTERP_DATA")
    assert data.data_root() == Path("data")


# ---------------------------------------------------------------- Fashion-MNIST

def test_fashion_mnist_idx_through_env_root(monkeypatch, tmp_path):
    arrays = write_fashion_mnist(tmp_path)
    monkeypatch.setenv("OVERINTERP_DATA", str(tmp_path))
    for split, prefix in (("train", "train"), ("test", "t10k")):
        s = data.load("fashion-mnist", split, download=False)
        images, labels = arrays[prefix]
        assert (s.name, s.split, len(s)) == ("fashion-mnist", split, len(labels))
        assert s.images.shape == (len(labels), 1, 28, 28) and s.images.dtype == torch.float32
        assert s.labels.dtype == torch.int64 and s.labels.tolist() == labels.tolist()
        torch.testing.assert_close(s.images, expected_normalised(images[:, None], "fashion-mnist"))
        torch.testing.assert_close(s.denormalise(s.images[:2]), torch.from_numpy(images[:2, None]).float() / 255)
        assert s.classes[0] == "T-shirt/top" and s.mean == (0.2860,) and s.std == (0.3530,)
    # decompressed into torchvision's layout
    assert (tmp_path / "FashionMNIST" / "raw" / "train-images-idx3-ubyte").is_file()


def test_cache_cannot_be_corrupted(tmp_path):
    write_fashion_mnist(tmp_path)
    a = data.load("fashion-mnist", root=tmp_path, download=False)
    original = a.images.clone()
    a.images.zero_()
    a.labels.fill_(3)
    b = data.load("fashion-mnist", root=tmp_path, download=False)
    assert data._load_uint8.cache_info().hits == 1
    assert torch.equal(b.images, original) and b.labels.tolist() != [3] * len(b)


def test_mask_value_zero_is_mean_pixel(tmp_path):
    write_cifar10(tmp_path)
    s = data.load("cifar10", "test", root=tmp_path, download=False)
    grey = s.denormalise(torch.zeros(3, 2, 2))
    torch.testing.assert_close(grey[:, 0, 0], torch.tensor(data.STATS["cifar10"][0]))


@pytest.mark.skipif(not REAL_FMNIST.is_dir(), reason=f"{REAL_FMNIST} not installed")
def test_real_fashion_mnist(tmp_path):
    train = data.load("fashion-mnist", "train", root=tmp_path, download=False)
    test = data.load("fashion-mnist", "test", root=tmp_path, download=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert torch.bincount(train.labels).tolist() == [6000] * 10
    assert torch.bincount(test.labels).tolist() == [1000] * 10
    pixels = train.denormalise(train.images)
    assert abs(pixels.mean().item() - data.STATS["fashion-mnist"][0][0]) < 5e-4
    assert abs(pixels.std().item() - data.STATS["fashion-mnist"][1][0]) < 5e-4
    assert abs(train.images.mean().item()) < 2e-3  # normalised: mean pixel -> 0


# ---------------------------------------------------------------- CIFAR-10 family

def test_cifar10_pickles(tmp_path):
    batches = write_cifar10(tmp_path)
    train = data.load("cifar10", "train", root=tmp_path, download=False)
    test = data.load("cifar10", "test", root=tmp_path, download=False)
    assert train.images.shape == (20, 3, 32, 32) and len(test) == 4
    want = np.concatenate([batches[f"data_batch_{i}"][b"data"] for i in range(1, 6)]).reshape(-1, 3, 32, 32)
    torch.testing.assert_close(train.images, expected_normalised(want, "cifar10"))
    assert test.labels.tolist() == batches["test_batch"][b"labels"]
    assert train.classes == data.CLASSES["cifar10"] and train.mean == (0.4914, 0.4822, 0.4465)


def test_cifar10_preplaced_archive_is_extracted(tmp_path):
    batches = write_cifar10(tmp_path / "src")
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "src" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    s = data.load("cifar10", "test", root=tmp_path, download=False)
    assert s.labels.tolist() == batches["test_batch"][b"labels"]
    assert (tmp_path / "cifar-10-batches-py" / "batches.meta").is_file()


def test_cifar10_offline_error_names_path(tmp_path):
    with pytest.raises(data.DataUnavailable) as err:
        data.load("cifar10", root=tmp_path, download=False)
    msg = str(err.value)
    assert "cifar-10-python.tar.gz" in msg and str(tmp_path / "cifar-10-batches-py") in msg


def test_download_failure_becomes_data_unavailable():
    def fetch():
        raise URLError("no network")
    with pytest.raises(data.DataUnavailable, match=r"(?s)download failed.*no network.*put it here") as err:
        data._ensure("X", lambda: False, fetch, True, "put it here")
    assert isinstance(err.value.__cause__, URLError)


def test_cifar101_npy_pair(tmp_path):
    folder = tmp_path / "cifar10.1"
    folder.mkdir()
    images = np.random.default_rng(2).integers(0, 256, (6, 32, 32, 3), dtype=np.uint8)
    labels = np.array([0, 1, 2, 3, 4, 9], dtype=np.int64)
    np.save(folder / "cifar10.1_v6_data.npy", images)
    np.save(folder / "cifar10.1_v6_labels.npy", labels)
    # pre-placed files are used as they are: md5 is checked on download only
    s = data.load("cifar10.1", root=tmp_path, download=True)
    assert s.images.shape == (6, 3, 32, 32) and s.labels.tolist() == labels.tolist()
    torch.testing.assert_close(s.images, expected_normalised(images.transpose(0, 3, 1, 2), "cifar10"))
    assert s.mean == data.STATS["cifar10"][0]


def test_cifar101_offline_error(tmp_path):
    with pytest.raises(data.DataUnavailable, match="cifar10.1_v6_data.npy") as err:
        data.load("cifar10.1", root=tmp_path, download=False)
    assert str(tmp_path / "cifar10.1") in str(err.value)


def write_cifar10c(root: Path, n_test: int = 10) -> dict:
    folder = root / "CIFAR-10-C"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    labels = np.tile(rng.integers(0, 10, n_test).astype(np.uint8), 5)  # 5 severities x test images
    np.save(folder / "labels.npy", labels)
    arrays = {}
    for name in ("fog", "gaussian_noise"):
        arrays[name] = rng.integers(0, 256, (5 * n_test, 32, 32, 3), dtype=np.uint8)
        np.save(folder / f"{name}.npy", arrays[name])
    return {"labels": labels, **arrays}


def test_cifar10c_sample(tmp_path):
    arrays = write_cifar10c(tmp_path)
    s = data.load("cifar10-c", root=tmp_path, download=False, sample_size=30)
    assert s.images.shape == (30, 3, 32, 32) and len(set(zip(s.info["corruption"], s.info["source_index"].tolist(),
                                                                 s.info["severity"].tolist()))) == 30
    for k in range(30):
        j = (s.info["severity"][k].item() - 1) * 10 + s.info["source_index"][k].item()
        raw = arrays[s.info["corruption"][k]][j]
        torch.testing.assert_close(s.images[k], expected_normalised(raw.transpose(2, 0, 1)[None], "cifar10")[0])
        assert s.labels[k].item() == arrays["labels"][j]
    assert set(s.info["corruption"]) == {"fog", "gaussian_noise"}
    data._load_uint8.cache_clear()
    again = data.load("cifar10-c", root=tmp_path, download=False, sample_size=30)
    assert torch.equal(again.images, s.images)  # fixed seed
    with pytest.raises(ValueError, match="sample_size"):
        data.load("cifar10-c", root=tmp_path, download=False, sample_size=101)


def test_cifar10c_offline_error(tmp_path):
    with pytest.raises(data.DataUnavailable, match="CIFAR-10-C.tar") as err:
        data.load("cifar10-c", root=tmp_path, download=False)
    assert str(tmp_path / "CIFAR-10-C") in str(err.value)


# ---------------------------------------------------------------- Fashion-MNIST-C

def test_corrupt_images_deterministic():
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    labels = np.array([7, 1, 4])
    state = np.random.get_state()
    a = data.corrupt_images(images, labels, sample_size=len(data.FMNIST_C_CORRUPTIONS) * 2, seed=5)
    b = data.corrupt_images(images, labels, sample_size=len(data.FMNIST_C_CORRUPTIONS) * 2, seed=5)
    assert np.array_equal(np.random.get_state()[1], state[1])  # global RNG left as it was
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    assert a["images"].shape == (38, 28, 28) and a["images"].dtype == np.uint8
    assert np.array_equal(a["labels"], labels[a["source_index"]])
    assert set(a["severity"].tolist()) <= {1, 2, 3, 4, 5}
    assert not np.array_equal(a["images"], images[a["source_index"]])  # actually corrupted


def test_fashion_mnist_c_built_once(tmp_path):
    write_fashion_mnist(tmp_path, n_test=20)
    s = data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25)
    assert (s.name, s.split) == ("fashion-mnist-c", "test")
    assert s.images.shape == (25, 1, 28, 28) and s.labels.dtype == torch.int64
    assert s.mean == data.STATS["fashion-mnist"][0]  # normalised like its training set
    assert s.labels.tolist() == (s.info["source_index"] % 10).tolist()  # labels in write_fashion_mnist are i % 10
    assert set(s.info["corruption"]) <= set(data.FMNIST_C_CORRUPTIONS)
    files = list((tmp_path / "fashion-mnist-c").glob("*.npz"))
    assert len(files) == 1 and not list((tmp_path / "fashion-mnist-c").glob(".*"))
    data._load_uint8.cache_clear()
    mtime = files[0].stat().st_mtime_ns
    assert torch.equal(data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25).images, s.images)
    assert files[0].stat().st_mtime_ns == mtime  # read back, not rebuilt
    files[0].unlink()
    data._load_uint8.cache_clear()
    assert torch.equal(data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25).images, s.images)


def test_fashion_mnist_c_without_the_corruption_library(tmp_path, monkeypatch):
    """Where imagecorruptions-imaug is not installed (the GPU machine), a sample built elsewhere is read;
    with none, one line names the file and the package."""
    write_fashion_mnist(tmp_path, n_test=20)
    built = data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25)
    import importlib.metadata as md

    def missing(name):
        raise md.PackageNotFoundError(name)
    monkeypatch.setattr(md, "version", missing)
    data._load_uint8.cache_clear()
    assert torch.equal(data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25).images, built.images)
    for f in (tmp_path / "fashion-mnist-c").glob("*.npz"):
        f.unlink()
    data._load_uint8.cache_clear()
    with pytest.raises(RuntimeError, match="imagecorruptions-imaug is not installed") as e:
        data.load("fashion-mnist-c", root=tmp_path, download=False, sample_size=25)
    assert "\n" not in str(e.value)


class _RunsCode:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_cifar_batch_that_would_run_code_is_refused(tmp_path):
    write_cifar10(tmp_path)
    marker = tmp_path / "ran"
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": _RunsCode(str(marker)), b"labels": [0]}))
    with pytest.raises(Exception, match="not allowed"):
        data.load("cifar10", "test", root=tmp_path, download=False)
    assert not marker.exists()
