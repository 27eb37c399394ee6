"""The artifact store is keyed by config, atomic, and never mixes configs."""
import json
import os

import pytest
import torch

from overinterp.store import VERSIONS, ArtifactMismatch, Store, atomic_save, config_key
from overinterp.zoo.train import TrainConfig


def test_key_depends_on_every_config_value_but_not_on_dict_order():
    a = {"arch": "cnn", "seed": 0, "train": TrainConfig(epochs=3)}
    assert config_key(a) == config_key(dict(reversed(list(a.items()))))
    assert config_key(a) != config_key({**a, "seed": 1})
    assert config_key(a) != config_key({**a, "train": TrainConfig(epochs=4)})


def test_save_then_load_roundtrip_and_absent_is_none(tmp_path):
    store = Store(tmp_path)
    cfg = {"arch": "cnn", "seed": 0}
    assert store.load("model", cfg) is None
    store.save("model", cfg, {"w": torch.arange(3)})
    assert torch.equal(store.load("model", cfg)["w"], torch.arange(3))
    assert json.loads((store.dir("model", cfg) / "config.json").read_text()) == {"version": VERSIONS["model"], "config": cfg}


def test_a_stored_artifact_of_another_config_is_refused(tmp_path):
    store = Store(tmp_path)
    cfg = {"arch": "cnn", "seed": 0}
    store.save("model", cfg, 1)
    (store.dir("model", cfg) / "config.json").write_text(json.dumps(Store.versioned("model", {"arch": "vgg16", "seed": 0})))
    with pytest.raises(ArtifactMismatch):
        store.check("model", cfg)


def test_atomic_save_leaves_old_file_intact_when_writing_fails(tmp_path):
    path = tmp_path / "x.pt"
    atomic_save({"v": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_save({"v": Unpicklable()}, path)
    assert torch.load(path)["v"] == 1
    assert os.listdir(tmp_path) == ["x.pt"]  # no temp file left behind


def test_store_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERINTERP_ARTIFACTS", str(tmp_path))
    assert Store().root == tmp_path


def test_a_code_version_bump_gives_a_new_key_and_refuses_the_old_file(tmp_path, monkeypatch):
    store = Store(tmp_path)
    cfg = {"arch": "cnn", "seed": 0}
    store.save("backselect", cfg, "old engine")
    old_dir = store.dir("backselect", cfg)
    monkeypatch.setitem(VERSIONS, "backselect", VERSIONS["backselect"] + 1)
    assert store.dir("backselect", cfg) != old_dir and store.load("backselect", cfg) is None
    (store.dir("backselect", cfg)).mkdir(parents=True)
    os.replace(old_dir / "result.pt", store.dir("backselect", cfg) / "result.pt")  # an old result moved by hand
    with pytest.raises(ArtifactMismatch, match="version"):
        store.load("backselect", cfg)
    with pytest.raises(ValueError, match="valid kinds"):
        store.dir("metric", cfg)
