"""Tests run the tiny profile against a throw-away artifact store."""
import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _tiny_profile_and_private_artifacts(tmp_path_factory):
    os.environ["OVERINTERP_PROFILE"] = "tiny"
    os.environ["OVERINTERP_ARTIFACTS"] = str(tmp_path_factory.mktemp("artifacts"))
    yield
