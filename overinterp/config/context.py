"""The run context every experiment takes: dataset, profile, device and seed, checked by :func:`make_run`
(a bad value raises :class:`~overinterp.config.chapters.ParameterError`)."""
import numbers
from dataclasses import dataclass

import torch

from overinterp.config.chapters import ParameterError
from overinterp.config.profiles import PROFILES, Profile, default_profile, get_profile
from overinterp.zoo.data import DATASETS
from overinterp.zoo.models import ARCHS
from overinterp.zoo.train import device_name, resolve_device


@dataclass
class Run:
    """What one chapter execution uses; made by :func:`make_run`."""
    dataset: str
    profile: Profile
    device: torch.device
    seed: int

    @property
    def label(self) -> str:
        """Column label of our numbers: 'ours (fashion-mnist, quick, cpu)'."""
        return f"ours ({self.dataset}, {self.profile.name}, {self.device.type})"

    def describe(self) -> str:
        dev = device_name(self.device)
        return (f"**This execution:** dataset `{self.dataset}`, profile `{self.profile.name}` "
                f"({self.profile.doc}), device {dev}, seed {self.seed}, torch {torch.__version__}.")


def _check(name: str, value, valid) -> None:
    if value not in valid:
        raise ParameterError(f"parameter {name}={value!r} is not valid; valid values: {', '.join(map(str, valid))}")


def make_run(dataset: str = "fashion-mnist", profile: str | None = None, device: str = "auto", seed: int = 0,
             archs=None) -> Run:
    """Validate a chapter's parameters and build its :class:`Run` (``profile`` None: the default profile)."""
    profile = profile or default_profile()
    _check("profile", profile, PROFILES)
    _check("dataset", dataset, [d for d in DATASETS if "-c" not in d and "." not in d])
    for a in archs or ():
        _check("archs", a, ARCHS)
    if device not in ("auto", "cpu") and not str(device).startswith("cuda"):
        raise ParameterError(f"parameter device={device!r} is not valid; valid values: auto, cpu, cuda, cuda:N")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ParameterError(f"parameter device={device!r}: no CUDA device is available here; use auto or cpu")
    if isinstance(seed, bool) or not (isinstance(seed, numbers.Integral)
                                      or isinstance(seed, str) and seed.strip().lstrip("-").isdigit()):
        raise ParameterError(f"parameter seed={seed!r} is not valid: must be an integer")
    return Run(dataset, get_profile(profile), resolve_device(device), int(seed))
