"""Tests for overinterp.runner: resumable, sharded, config-keyed backward selection of a split."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from overinterp.artifacts import ArtifactMismatch, Store
from overinterp.backselect import BackSelectConfig, backselect
from overinterp.models import build_model
from overinterp.runner import KIND, add_cli, parse_shards, run_backselect, run_config

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
                          method=method, k=k, m=m, **kw)


def assert_same(a, b):
    for name in ("order", "values", "pred", "confidence", "n_fixed", "mask_value"):
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
    torch.testing.assert_close(reference.values, direct.values)


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
        from overinterp.artifacts import Store
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


def test_a_shard_of_another_config_is_refused(tmp_path):
    store = Store(tmp_path)
    run(store, method="gradient", k=2)
    run(store, shards=range(0, 1))
    dirs = {d.name: d for d in (tmp_path / KIND).iterdir()}
    assert len(dirs) == 2                                    # method -> another key
    model, images = toy()
    from overinterp.artifacts import config_key
    grad_dir = dirs[config_key(run_config(model, images, {"arch": "cnn", "width": 2}, DATA,
                                          BackSelectConfig("gradient", k=2), shard_size=3))]
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


def test_parse_shards():
    assert parse_shards("0:10") == slice(0, 10) and parse_shards("3") == slice(3, 4)
    assert parse_shards("5:") == slice(5, None) and parse_shards(None) is None
    import argparse
    with pytest.raises(argparse.ArgumentTypeError):
        parse_shards("a:b")


def test_cli_help_and_invalid_choices(capsys):
    import argparse
    parser = argparse.ArgumentParser(prog="overinterp")
    add_cli(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["backselect", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--dataset", "--split", "--arch", "--profile", "--seed", "--method", "--block", "--k", "--m",
                "--shard-size", "--shards", "--device", "--artifacts"):
        assert opt in out
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["backselect", "--method", "fast"])
    assert e.value.code == 2 and "valid choices: exact, gradient, pruned" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["backselect", "--arch", "resnet1000"])
    assert "valid choices" in capsys.readouterr().err
    args = parser.parse_args(["backselect", "--shards", "0:2"])
    assert callable(args.func) and args.shards == slice(0, 2)


def test_cli_end_to_end_on_fashion_mnist(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERINTERP_DATA", str(tmp_path / "data"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "overinterp", "backselect", "--profile", "tiny", "--arch", "cnn", "--limit", "6",
           "--shard-size", "4", "--device", "cpu", "--artifacts", str(tmp_path / "art")]
    first = subprocess.run(cmd + ["--shards", "0"], capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert '"complete": false' in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    from overinterp.backselect import feature_grid
    from overinterp.profiles import get_profile
    tiny = get_profile("tiny")                               # method and block default to the profile's
    assert '"complete": true' in second.stdout and f'"method": "{tiny.bs_method}"' in second.stdout
    result = next((tmp_path / "art" / KIND).iterdir()) / "result.pt"
    payload = torch.load(result, weights_only=False)["payload"]
    hf, wf = feature_grid(28, 28, tiny.bs_block)
    assert payload["order"].shape == (6, hf * wf) and payload["method"] == tiny.bs_method
