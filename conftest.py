"""Shared by the tests (tests/) and the chapters executed by nbmake (book/, ``pytest --nbmake``):
the tiny profile against a throw-away artifact store, with one torch thread (small forwards on a
2-core CPU are faster so). Set in ``pytest_configure``, before any test or notebook kernel starts,
so the kernels nbmake launches inherit them."""
import os
import shutil
import tempfile

import pytest
import torch

_STORE = None


def pytest_configure(config):
    global _STORE
    _STORE = tempfile.mkdtemp(prefix="overinterp-artifacts-")
    os.environ["OVERINTERP_PROFILE"] = "tiny"
    os.environ["OVERINTERP_ARTIFACTS"] = _STORE
    torch.set_num_threads(1)


def pytest_unconfigure(config):
    if _STORE:
        shutil.rmtree(_STORE, ignore_errors=True)


class Always(torch.nn.Module):
    """A parameter-free classifier that predicts class ``c`` of 10 for every image, with probability
    ~1 (logit margin 20): a model whose accuracy and confident images are known by hand."""

    def __init__(self, c: int):
        super().__init__()
        self.c = c

    def forward(self, x):
        out = torch.zeros(len(x), 10)
        out[:, self.c] = 20.0
        return out


@pytest.fixture
def always():
    """``always(c)``: an :class:`Always` model."""
    return Always
