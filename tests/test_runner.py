"""Tests for overinterp.engine.runner: resumable, sharded, config-keyed backward selection of a split."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from overinterp.store import ArtifactMismatch, Store, safe_load
from overinterp.engine.backselect import BackSelectConfig, backselect
from overinterp.zoo.models import build_model
from overinterp.engine.runner import KIND, run_backselect, run_config

ROOT = Path(__file__).resolve().parent.parent
DATA = {"dataset": "toy", "split": "test"}


def toy():
    """A seeded small CNN and 10 seeded 1x8x8 images (same in every process)."""
    torch.manual_seed(0)
    model = build_model("cnn", 1, 10, width=2).eval()
    images = torch.randn(10, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    return model, images


def run(store, method="pruned", k=1, m=5, **kw):
    model, images = toy()
    kw = {"shard_size": 3, "progress": False, **kw}
    return run_backselect(model, images, model_config={"arch": "cnn", "width": 2}, data_config=DATA, store=store,
                          config=BackSelectConfig(method, k=k, m=m), **kw)


def assert_same(a, b):
    for name in ("order", "log_odds", "pred", "full_log_odds", "n_fixed", "mask_value"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert (a.image_size, a.block, a.method) == (b.image_size, b.block, b.method)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run(Store(tmp_path_factory.mktemp("ref")))


def test_uninterrupted_run_equals_one_engine_call(reference):
    model, images = toy()
    direct = backselect(model, images, "pruned", m=5, progress=False)
    assert reference.order.shape == (10, 64)
    # float32: other batch compositions than the shards' change f in the last bits only
    assert torch.equal(reference.order, direct.order)
    torch.testing.assert_close(reference.log_odds, direct.log_odds)


def test_exception_after_a_shard_then_rerun_gives_the_same_result(tmp_path, reference):
    store = Store(tmp_path)

    def crash(i):
        if i == 1:
            raise KeyboardInterrupt("injected after shard 1")
    with pytest.raises(KeyboardInterrupt):
        run(store, after_shard=crash)
    cfg_dir = next((tmp_path / KIND).iterdir())
    assert sorted(p.name for p in cfg_dir.glob("shard-*.pt")) == ["shard-00000.pt", "shard-00001.pt"]
    computed = []
    assert_same(run(store, after_shard=computed.append), reference)
    assert computed == [2, 3]  # finished shards were skipped


def test_killed_process_then_rerun_gives_the_same_result(tmp_path, reference):
    # a separate process that SIGKILLs itself right after saving shard 0 (no cleanup at all),
    # with a stray temp file as a crash mid-write would leave
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys, torch
        sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
        torch.set_num_threads(1)
        from test_runner import run
        from overinterp.store import Store
        run(Store({str(tmp_path / 'store')!r}), after_shard=lambda i: os.kill(os.getpid(), signal.SIGKILL))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    cfg_dir = next((tmp_path / "store" / KIND).iterdir())
    assert [p.name for p in cfg_dir.glob("shard-*.pt")] == ["shard-00000.pt"]
    (cfg_dir / ".shard-00001.pt.abc.tmp").write_bytes(b"half a file")
    computed = []
    assert_same(run(Store(tmp_path / "store"), after_shard=computed.append), reference)
    assert computed == [1, 2, 3]


def test_shard_ranges_in_separate_calls_assemble_the_same(tmp_path, reference):
    store = Store(tmp_path)
    assert run(store, shards=range(2, 4)) is None          # shards 0, 1 still missing
    assert run(store, shards=range(0, 2)) is not None
    assert_same(run(store), reference)
    with pytest.raises(ValueError, match="outside 0:4"):
        run(store, shards=range(3, 5))
    with pytest.raises(ValueError, match="empty"):
        run(store, shards=range(3, 3))


def test_a_shard_of_another_config_is_refused(tmp_path):
    store = Store(tmp_path)
    run(store, method="gradient", k=2)
    run(store, shards=range(0, 1))
    dirs = {d.name: d for d in (tmp_path / KIND).iterdir()}
    assert len(dirs) == 2                                    # method -> another key
    model, images = toy()
    grad_dir = store.dir(KIND, run_config(model, images, {"arch": "cnn", "width": 2}, DATA,
                                          BackSelectConfig("gradient", k=2), shard_size=3))
    pruned_dir = next(d for d in dirs.values() if d != grad_dir)
    shutil.copy(grad_dir / "shard-00001.pt", pruned_dir / "shard-00001.pt")  # a gradient shard in the pruned run
    with pytest.raises(ArtifactMismatch):
        run(store)
    (pruned_dir / "config.json").write_text('{"something": "else"}')
    with pytest.raises(ArtifactMismatch):
        run(store)


def test_the_key_holds_what_determines_the_result():
    model, images = toy()
    key = lambda **kw: run_config(model, images, {"arch": "cnn"}, DATA, BackSelectConfig(**{"method": "pruned", **kw}))
    assert key(m=5) != key(m=6) != key(m=6, block=2)
    assert key(k=3) == key(k=4)                              # k is ignored by pruned
    assert key(method="exact", m=3) == key(method="exact", m=9)
    assert key(method="exact") != run_config(model, images, {"arch": "cnn"}, DATA, BackSelectConfig(), shard_size=5)
    other = build_model("cnn", 1, 10, width=2).eval()       # same config, other weights
    assert run_config(other, images, {"arch": "cnn"}, DATA, BackSelectConfig()) != key(method="exact")
    assert run_config(model, images + 1, {"arch": "cnn"}, DATA, BackSelectConfig()) != key(method="exact")
    with pytest.raises(ValueError, match="valid choices"):
        key(method="fast")


def test_shards_record_what_produced_them_and_assembly_refuses_another_engine_version(tmp_path):
    from overinterp.store import VERSIONS, atomic_save, record_checksum
    from overinterp.engine.runner import assemble
    store = Store(tmp_path)
    model, images = toy()
    run_backselect(model, images, model_config={"arch": "cnn", "width": 2}, data_config=DATA, store=store,
                   config=BackSelectConfig("pruned", m=5), shard_size=3, device=torch.device("cpu"), chunk_size=7,
                   progress=False)
    d = next((tmp_path / KIND).iterdir())
    shard = safe_load(d / "shard-00002.pt")
    meta = shard["payload"]["meta"]
    assert meta["engine_version"] == VERSIONS[KIND] and meta["device"].startswith("CPU")
    assert meta["torch"] == torch.__version__ and meta["dtype"] == "float32" and meta["chunk_size"] == 7
    shard["payload"]["meta"]["engine_version"] = VERSIONS[KIND] - 1      # a shard of an older engine
    atomic_save(shard, d / "shard-00002.pt")
    record_checksum(d / "shard-00002.pt")                               # intact, only older
    (d / "result.pt").unlink()
    cfg = run_config(model, images, {"arch": "cnn", "width": 2}, DATA, BackSelectConfig("pruned", m=5), 3)
    with pytest.raises(ArtifactMismatch, match="engine versions"):
        assemble(store, cfg, 4)
