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
