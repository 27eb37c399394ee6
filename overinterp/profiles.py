"""Named parameter sets: how big a run is (paper section 3.2 and S1 for ``paper``).

A profile fixes the dataset default, the model zoo (architectures, widths,
replicates), how much data and how many epochs, and how backward selection is
run. A notebook's papermill parameters ``dataset`` / ``profile`` pick one.

* ``tiny``  -- seconds; what the tests run. Numbers are meaningless.
* ``quick`` -- the book's default: Fashion-MNIST on a 2-core laptop CPU, the whole
  book in 45 minutes (the target; not yet measured to hold). Models are narrowed (8 initial filters) and trained 12
  epochs on 8000 images without augmentation (which, measured, costs accuracy and
  confidence at this budget); retraining uses 1500 training images.
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

__all__ = ["TrainConfig", "FactorConfig", "Profile", "PROFILES", "get_profile", "default_profile"]


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
class FactorConfig:
    """The one-factor-at-a-time sweeps of the chapter "Why it holds or fails here"
    (:mod:`overinterp.factors`): each varies one choice of ours away from the profile's."""
    arch: str = "resnet20"             # the architecture whose choices are varied
    images: int = 40                   # test images for the gradient / pruned / mask-value / model sweeps
    pruned_images: int | None = None   # first test images run by pruned backward selection (None: ``images``)
    exact_images: int = 8              # first test images run by exact backward selection (slow on a CPU; 0: none)
    ks: tuple = (4, 16, 64)            # gradient method: features removed per step (+ the profile's k)
    epochs: tuple = (1, 3, 10, 20)     # training lengths of the epoch sweep's models
    widths: tuple = (4, 8, 16)         # initial filters of the width sweep's models
    width_epochs: int = 10             # training length of the width sweep's models (shared with the epoch sweep)
    train_size: int = 2000             # training images of the epoch and width sweeps' models


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
    retrain: TrainConfig | None = None  # recipe of the models retrained on subsets (4.2); None = ``train``
    retrain_augment_rows: bool = True  # also retrain with augmentation (Table S1)
    factors: FactorConfig = field(default_factory=FactorConfig)

    def width(self, arch: str) -> int | None:
        return dict(self.widths).get(arch)

    def deviations(self, *topics: str) -> list[str]:
        """What this profile does differently from the paper's protocol (the ``paper`` profile,
        sections 3.2, 3.3, 4.1, 4.2, S1), for the ``topics`` a chapter depends on: "models",
        "evaluation", "backselect", "retraining" (all when none given). Empty for ``paper``."""
        ref, out = PROFILES["paper"], []
        topics = set(topics or ("models", "evaluation", "backselect", "retraining"))
        if "models" in topics:
            if self.dataset != ref.dataset:
                out.append(f"dataset {self.dataset} (the paper: CIFAR-10)")
            if self.widths:
                out.append("initial filters " + ", ".join(f"{a} {w}" for a, w in self.widths) +
                           " (the paper: 16 for ResNet20, 64 for ResNet18 and VGG16)")
            if self.replicates != ref.replicates:
                out.append(f"{self.replicates} replicates per architecture (the paper: {ref.replicates})")
            if self.train_size:
                out.append(f"trained on {self.train_size} training images (the paper: all)")
            if self.train.epochs != ref.train.epochs:
                out.append(f"{self.train.epochs} epochs (the paper: {ref.train.epochs})")
            if self.train.augment != ref.train.augment:
                out.append("no data augmentation (the paper: random crop and horizontal flip)")
        if "evaluation" in topics and self.test_size:
            out.append(f"{self.test_size}-image seeded samples of the test and out-of-distribution sets "
                       "(the paper: all test images)")
        if "backselect" in topics:
            for name, cfg in [("test images", self.backselect)] + (
                    [("training images", self.backselect_train)] if self.backselect_train else []):
                if cfg.method != "exact" or cfg.block != 1:
                    out.append(f"backward selection of {name}: {cfg.describe()} (the paper: exact, pixel by pixel)")
                if cfg.mask_value != 0:
                    out.append(f"masked pixels set to {cfg.mask_value:g} (the paper: the mean pixel)")
        if "retraining" in topics:
            if self.retrain_images:
                out.append(f"backward selection and retraining on {self.retrain_images} training images "
                           "(the paper: all 50,000)")
            r = self.retrain or self.train
            if r.epochs != ref.train.epochs:
                out.append(f"retrained models train {r.epochs} epochs (the paper: {ref.train.epochs})")
            if not self.retrain_augment_rows:
                out.append("no retraining with augmentation (the paper's Table S1)")
        return out

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
        retrain_images=128,
        factors=FactorConfig(arch="cnn", images=6, exact_images=2, ks=(4, 16), epochs=(1, 2), widths=(4, 8),
                             width_epochs=2, train_size=512)),
    Profile(
        name="quick", doc="book default: Fashion-MNIST on a 2-core CPU (target: the whole book in 45 min)",
        dataset="fashion-mnist", archs=("resnet20", "resnet18", "vgg16"),
        widths=(("resnet20", 8), ("resnet18", 8), ("vgg16", 8)),
        replicates=2, train_size=8000, test_size=500,
        # augmentation off: measured on ResNet20 (8 filters, 8000 images, 12 epochs), it lowers test
        # accuracy from 87.8% to 84.5% and mean confidence from 0.90 to 0.83 at this budget
        train=TrainConfig(epochs=12, augment=False),
        backselect=BackSelectConfig("gradient", k=8), sis_images=20,
        retrain_images=1500, retrain=TrainConfig(epochs=15, augment=False), retrain_augment_rows=False,
        # the "why" chapter within ~7 CPU minutes: exact backward selection of ResNet20 takes minutes per
        # image here, so it is left to the benchmark (exact vs gradient / pruned on 32 images) and the gpu profile
        factors=FactorConfig(images=40, pruned_images=16, exact_images=0, epochs=(1, 3, 10), widths=(4, 8, 16),
                             width_epochs=10, train_size=2000)),
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

