"""Named parameter sets: how big a run is (paper section 3.2 and S1 for ``paper``).

A profile fixes the dataset default, the model zoo (architectures, widths,
replicates), how much data and how many epochs, and how backward selection is
run. A notebook's papermill parameters ``dataset`` / ``profile`` pick one.

* ``tiny``  -- seconds; what the tests run. Numbers are meaningless.
* ``quick`` -- the book's default: Fashion-MNIST on a 2-core laptop CPU, the whole
  book in about 20 minutes. Models are narrowed and trained briefly on a subset.
* ``gpu``   -- Fashion-MNIST at the paper's widths and recipe, scaled to about 25
  minutes of one H100 (the paper-scale edition of the book, issue 11): exact
  backward selection on a stated sample of test and OOD images, ``pruned`` on the
  retraining images. Sizes are first estimates, to be calibrated on the GPU.
* ``paper`` -- CIFAR-10 with the paper's hyperparameters (200 epochs, 5 replicates,
  full widths, exact backward selection on every image). Needs a GPU.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .backselect import BackSelectConfig

__all__ = ["TrainConfig", "Profile", "PROFILES", "get_profile", "default_profile"]


@dataclass(frozen=True)
class TrainConfig:
    """The paper's recipe (S1); epochs < 200 scale the learning-rate milestones."""
    epochs: int = 200
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9              # Nesterov
    weight_decay: float = 5e-4
    milestones: tuple = (0.3, 0.6, 0.8)  # fractions of training: epochs 60/120/160 of 200
    gamma: float = 0.2                 # lr divided by 5 at each milestone
    augment: bool = True               # random crop (pad 4) + horizontal flip
    keep_prob: float = 1.0             # input dropout (paper code's mitigation); 1 = off
    dropout_samples: int = 1           # dropout draws averaged at evaluation
    fast_cuda: bool = True             # bf16 autocast + channels_last on CUDA; ignored on CPU


@dataclass(frozen=True)
class Profile:
    name: str
    doc: str
    dataset: str                       # default dataset of this profile
    archs: tuple                       # the model zoo (paper: resnet20, resnet18, vgg16)
    widths: tuple = ()                 # (arch, initial filters) overrides; () = paper widths
    replicates: int = 5                # models per architecture (paper: 5)
    train_size: int | None = None      # training images used (None = all)
    test_size: int | None = None       # test / OOD images evaluated (None = all)
    train: TrainConfig = field(default_factory=TrainConfig)
    backselect: BackSelectConfig = field(default_factory=BackSelectConfig)  # paper 3.3: exact, pixels, mean pixel
    backselect_train: BackSelectConfig | None = None  # for the retraining images (4.2); None = ``backselect``
    shard_size: int = 256              # images per saved shard of a backward-selection run (part of its key)
    sis_images: int = 100              # confidently classified test images for the SIS chapter
    sis_threshold: float = 0.99        # tau of the SIS chapter (paper 4.1: 0.99)
    retrain_images: int | None = None  # training images backselected and retrained on (4.2; None = all)

    def width(self, arch: str) -> int | None:
        return dict(self.widths).get(arch)

    def engine(self, set_name: str) -> BackSelectConfig:
        """The backward selection run on images of ``set_name`` ("train" for retraining, 4.2)."""
        return self.backselect_train if set_name == "train" and self.backselect_train else self.backselect


PROFILES = {p.name: p for p in [
    Profile(
        name="tiny", doc="tests only: seconds, meaningless numbers",
        dataset="fashion-mnist", archs=("cnn", "resnet20"), widths=(("cnn", 8), ("resnet20", 4)),
        replicates=2, train_size=2048, test_size=64,
        train=TrainConfig(epochs=2, batch_size=64, augment=False),
        backselect=BackSelectConfig("gradient", block=4, k=8), shard_size=32, sis_images=4, sis_threshold=0.3,
        retrain_images=128),
    Profile(
        name="quick", doc="book default: Fashion-MNIST on a 2-core CPU, whole book in ~20 min",
        dataset="fashion-mnist", archs=("resnet20", "resnet18", "vgg16"),
        widths=(("resnet20", 8), ("resnet18", 8), ("vgg16", 8)),
        replicates=2, train_size=40000, test_size=500,
        train=TrainConfig(epochs=3, augment=False),  # short runs learn faster without augmentation
        backselect=BackSelectConfig("gradient", k=8), sis_images=20, retrain_images=2000),
    Profile(
        name="gpu", doc="Fashion-MNIST at the paper's widths and recipe on one GPU (~25 min of an H100)",
        dataset="fashion-mnist", archs=("resnet20", "resnet18", "vgg16"),
        replicates=3, train_size=None, test_size=200, shard_size=100,
        train=TrainConfig(epochs=30),
        backselect=BackSelectConfig("exact"), backselect_train=BackSelectConfig("pruned", m=16),
        sis_images=32, retrain_images=10000),
    Profile(
        name="paper", doc="CIFAR-10, the paper's hyperparameters (S1); needs a GPU",
        dataset="cifar10", archs=("resnet20", "resnet18", "vgg16"),
        replicates=5, train=TrainConfig(epochs=200),
        backselect=BackSelectConfig("exact"), sis_images=100),
]}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; valid choices: {', '.join(PROFILES)}")
    return PROFILES[name]


def default_profile() -> str:
    """``$OVERINTERP_PROFILE`` (tests set ``tiny``) or ``quick``."""
    return os.environ.get("OVERINTERP_PROFILE", "quick")

