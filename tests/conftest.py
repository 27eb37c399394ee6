"""Tests run the tiny profile against a throw-away artifact store, with one torch thread
(small forwards on a 2-core CPU are faster so)."""
import os

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _tiny_profile_and_private_artifacts(tmp_path_factory):
    os.environ["OVERINTERP_PROFILE"] = "tiny"
    os.environ["OVERINTERP_ARTIFACTS"] = str(tmp_path_factory.mktemp("artifacts"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
