"""The artifact store's integrity (a checksum with every result, verified on load, --repair) and the
class-ready pack (``python -m overinterp store pack|unpack``): tiny entries written through the
Store API, no model trained except by the one --repair run of the command line."""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
import torch

from overinterp import store as store_module
from overinterp.__main__ import main
from overinterp.store import CorruptArtifact, PackError, Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tree(root) -> dict:
    """{relative path: sha256} of every file under ``root`` (hidden ones too): what 'unchanged' means."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


@pytest.fixture
def filled(tmp_path):
    """A small store: a model, a backward selection in two shards, and a model written before
    checksums existed (no .sha256)."""
    st = Store(tmp_path / "a")
    st.save("model", {"arch": "cnn", "seed": 0}, {"state_dict": {"w": torch.arange(6.0)}})
    for i in range(2):
        st.save("backselect", {"set": "test"}, {"order": torch.arange(4) + i}, name=f"shard-{i:05d}.pt")
    st.save("backselect", {"set": "test"}, {"order": torch.arange(8)})
    old = st.save("model", {"arch": "cnn", "seed": 1}, {"state_dict": {"w": torch.ones(3)}})
    os.remove(store_module.checksum_file(old))
    return st


def test_every_saved_result_has_a_checksum_that_load_verifies(tmp_path):
    st = Store(tmp_path)
    f = st.save("model", {"a": 1}, {"w": torch.zeros(4)})
    side = store_module.checksum_file(f)
    assert side.read_text() == f"{store_module.sha256(f)}  result.pt\n"
    assert subprocess.run(["sha256sum", "-c", side.name], cwd=f.parent, capture_output=True).returncode == 0
    assert torch.equal(st.load("model", {"a": 1})["w"], torch.zeros(4))
    data = bytearray(f.read_bytes())
    data[-30] ^= 0xFF                                   # one flipped byte torch might not notice
    f.write_bytes(bytes(data))
    with pytest.raises(CorruptArtifact) as err:
        st.load("model", {"a": 1})
    assert err.value.path == f and str(f) in str(err.value) and "\n" not in str(err.value)


def test_an_entry_without_checksum_loads_and_gets_one_and_a_truncated_one_is_named(filled):
    cfg = {"arch": "cnn", "seed": 1}
    f = filled.dir("model", cfg) / "result.pt"
    assert not store_module.checksum_file(f).exists()
    assert torch.equal(filled.load("model", cfg)["state_dict"]["w"], torch.ones(3))
    assert store_module.checksum_file(f).read_text().split()[0] == store_module.sha256(f)     # recorded on its first load
    os.remove(store_module.checksum_file(f))
    os.truncate(f, 100)                                                  # unverifiable, unreadable
    with pytest.raises(CorruptArtifact, match="torch cannot read it") as err:
        filled.load("model", cfg)
    assert err.value.path == f


def test_repair_moves_the_damaged_file_aside_and_the_caller_recomputes_it(tmp_path):
    from overinterp.zoo.train import cached_training
    calls = []

    def train(module):
        calls.append(1)
        torch.nn.init.constant_(module.weight, 3.0)
        return {}
    cfg = {"arch": "linear"}
    cached_training("model", cfg, torch.nn.Linear(2, 2), train, store=Store(tmp_path))
    f = Store(tmp_path).dir("model", cfg) / "result.pt"
    os.truncate(f, 100)
    with pytest.raises(CorruptArtifact):
        cached_training("model", cfg, torch.nn.Linear(2, 2), train, store=Store(tmp_path))
    m = cached_training("model", cfg, torch.nn.Linear(2, 2), train, store=Store(tmp_path, repair=True))
    assert len(calls) == 2 and torch.all(m.weight == 3.0)
    assert [p.name.split("-")[0] for p in f.parent.glob("result.pt.corrupt-*")] == ["result.pt.corrupt"]
    store_module.verify(f)                                          # the recomputed file carries a valid checksum
    assert Store(tmp_path).load("model", cfg) is not None


def test_repair_of_a_damaged_shard_recomputes_that_shard_only(filled):
    shard = filled.dir("backselect", {"set": "test"}) / "shard-00001.pt"
    shard.write_bytes(b"garbage")
    assert filled.exists("backselect", {"set": "test"}, shard.name)          # not verified without repair
    assert not Store(filled.root, repair=True).exists("backselect", {"set": "test"}, shard.name)
    assert not shard.exists() and filled.exists("backselect", {"set": "test"}, "shard-00000.pt")


def test_pack_round_trip_into_an_empty_store(filled, tmp_path):
    pack = tmp_path / "class.tar.gz"
    m = store_module.pack(pack, filled, profile="tiny")
    assert m["profile"] == "tiny" and m["artifact_versions"] == {"backselect": store_module.VERSIONS["backselect"],
                                                                 "model": store_module.VERSIONS["model"]}
    assert set(m["versions"]) >= {"overinterp", "torch", "torchvision"} and m["commit"]
    target = Store(tmp_path / "b")
    summary = store_module.unpack(pack, target)
    assert summary["added"] == len(m["files"]) and summary["kept"] == 0
    # the same files, byte for byte, and the checksum of the entry older than checksums, shipped by the pack
    # (the pack only reads the store: the source still has none)
    legacy = (filled.dir("model", {"arch": "cnn", "seed": 1}) / "result.pt.sha256").relative_to(filled.root)
    assert not (filled.root / legacy).exists()
    assert tree(target.root) == {**tree(filled.root), str(legacy): tree(target.root)[str(legacy)]}
    store_module.verify(target.root / legacy.with_suffix(""))
    assert {rel: e["sha256"] for rel, e in m["files"].items()} == tree(target.root)
    assert torch.equal(target.load("backselect", {"set": "test"})["order"], torch.arange(8))
    assert target.load("model", {"arch": "cnn", "seed": 1}) is not None
    assert store_module.unpack(pack, target)["kept"] == len(m["files"])                 # a second unpack changes nothing


def test_the_command_line_packs_and_unpacks(filled, tmp_path, capsys):
    pack = str(tmp_path / "p.tar.gz")
    assert main(["store", "pack", pack, "--profile", "tiny", "--artifacts", str(filled.root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pack_bytes"] == os.path.getsize(pack) and out["files"] == len(tree(filled.root)) + 1
    assert main(["store", "unpack", pack, "--artifacts", str(tmp_path / "c")]) == 0
    assert tree(filled.root).items() < tree(tmp_path / "c").items()
    assert main(["store", "verify", "--artifacts", str(tmp_path / "c")]) == 0


def _rewrite(src, dst, change):
    """Copy the pack ``src`` to ``dst`` with ``change(name, bytes) -> bytes`` applied to every member."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        for m in tin.getmembers():
            data = change(m.name, tin.extractfile(m).read())
            m.size = len(data)
            tout.addfile(m, io.BytesIO(data))


def _refused(pack, target, capsys, *words):
    """unpack fails with one line on stderr holding ``words``, exit code 2, and the store untouched."""
    before = tree(target)
    assert main(["store", "unpack", str(pack), "--artifacts", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    assert tree(target) == before


@pytest.fixture
def packed(filled, tmp_path):
    pack = tmp_path / "good.tar.gz"
    store_module.pack(pack, filled, profile="tiny")
    other = Store(tmp_path / "student")                  # a store that already holds something
    other.save("model", {"arch": "mine"}, {"w": torch.ones(1)})
    return pack, other.root


def test_a_truncated_or_tampered_pack_is_refused_without_touching_the_store(packed, tmp_path, capsys):
    pack, target = packed
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    _refused(cut, target, capsys, str(cut), "truncated")
    tampered = tmp_path / "tampered.tar.gz"
    _rewrite(pack, tampered, lambda n, b: b[:-1] + bytes([b[-1] ^ 1]) if n.endswith("shard-00001.pt") else b)
    _refused(tampered, target, capsys, str(tampered), "shard-00001.pt", "sha256")
    unlisted = tmp_path / "unlisted.tar.gz"
    _rewrite(pack, unlisted, lambda n, b: json.dumps({**json.loads(b), "files": {}}).encode()
             if n == "manifest.json" else b)
    _refused(unlisted, target, capsys, "not in the manifest")
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar archive at all" * 100))
    _refused(junk, target, capsys, "not a gzip'd tar archive")
    fresh = tmp_path / "never-created"
    assert main(["store", "unpack", str(cut), "--artifacts", str(fresh)]) == 2
    assert not fresh.exists()                            # a store that was not there is still not there
    capsys.readouterr()


def test_a_pack_of_other_code_versions_is_refused_without_touching_the_store(packed, tmp_path, capsys,
                                                                              monkeypatch):
    pack, target = packed
    monkeypatch.setitem(store_module.VERSIONS, "backselect", store_module.VERSIONS["backselect"] + 1)
    _refused(pack, target, capsys, "artifact versions", "backselect")
    monkeypatch.undo()
    older = tmp_path / "older.tar.gz"
    _rewrite(pack, older, lambda n, b: json.dumps({**json.loads(b), "versions": {
        **json.loads(b)["versions"], "overinterp": "0.0.1"}}).encode() if n == "manifest.json" else b)
    _refused(older, target, capsys, "overinterp 0.0.1")


def test_pack_refuses_a_damaged_store_and_leaves_out_stale_entries(filled, tmp_path):
    stale = filled.root / "model" / "0123456789abcdef"
    stale.mkdir()
    (stale / "config.json").write_text(json.dumps({"version": 0, "config": {}}))
    (stale / "result.pt").write_bytes(b"old")
    m = store_module.pack(tmp_path / "p.tar.gz", filled)
    assert m["left_out_stale_entries"] == 1 and not any("0123456789abcdef" in f for f in m["files"])
    f = filled.dir("model", {"arch": "cnn", "seed": 0}) / "result.pt"
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(CorruptArtifact):
        store_module.pack(tmp_path / "q.tar.gz", filled)
    assert not (tmp_path / "q.tar.gz").exists()


def _cli(*args, store):
    env = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "overinterp", *args, "--profile", "tiny", "--artifacts", str(store)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def test_a_truncated_model_ends_train_with_one_line_naming_it_and_repair_retrains_it(tmp_path):
    """`truncate -s 100` on a trained model: `train` stops with exit code 2 and one line naming the
    file (not torch's zip-reader traceback); `train --repair` moves it aside and trains it again."""
    from overinterp.experiments.runs import model_config
    st = Store(tmp_path)
    f = st.save("model", model_config("fashion-mnist", "cnn", "tiny", 0), {"state_dict": {}})  # its real key
    os.truncate(f, 100)
    r = _cli("train", "--arch", "cnn", store=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(f) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = _cli("train", "--arch", "cnn", "--repair", store=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["test_acc"] > 0 and list(f.parent.glob("result.pt.corrupt-*"))
    store_module.verify(f)
    assert "state_dict" in st.load("model", model_config("fashion-mnist", "cnn", "tiny", 0))


class _RunsCode:
    """What a hostile pack would hold: unpickling it calls ``open(path, "w")``."""
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pack_whose_payload_is_a_malicious_pickle_is_refused_without_running(tmp_path):
    marker = tmp_path / "ran"
    st = Store(tmp_path / "theirs")
    f = st.save("model", {"arch": "cnn", "seed": 0}, {"state_dict": {"w": torch.zeros(2)}})
    blob = torch.load(f, weights_only=True)
    blob["payload"] = _RunsCode(str(marker))
    torch.save(blob, f)                                 # re-checksummed: the pack looks intact
    store_module.record_checksum(f)
    store_module.pack(tmp_path / "hostile.tar.gz", st)
    ours = Store(tmp_path / "ours")
    assert store_module.unpack(tmp_path / "hostile.tar.gz", ours)["added"] >= 2  # result, checksum, config
    with pytest.raises(CorruptArtifact, match="cannot read it"):
        ours.load("model", {"arch": "cnn", "seed": 0})
    assert not marker.exists()


def test_a_pack_member_outside_the_store_is_refused(tmp_path):
    bad = tmp_path / "escape.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("store/../../outside.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(PackError, match="unexpected member"):
        store_module.unpack(bad, Store(tmp_path / "s"))
    assert not (tmp_path / "outside.txt").exists()


# ----------------------------------------------------------------------------- store verify and pack of a missing folder

def test_verify_of_a_folder_that_does_not_exist_names_it(tmp_path, capsys):
    missing = tmp_path / "no-store"
    assert main(["store", "verify", "--artifacts", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (f"python -m overinterp store: error: no artifact store at {missing}: no such folder "
                   "(--artifacts or $OVERINTERP_ARTIFACTS names the store)\n")
    assert not missing.exists()


def test_verify_lists_every_damaged_file_then_their_count(filled, capsys):
    files = [f for f in filled.files() if f.suffix == ".pt"]
    damaged = [f for f in files if f.name in ("shard-00000.pt", "shard-00001.pt")]
    legacy = next(f for f in files if not store_module.checksum_file(f).exists())   # no checksum: torch must read it
    damaged[0].write_bytes(damaged[0].read_bytes()[:10])
    damaged[1].write_bytes(b"x" + damaged[1].read_bytes()[1:])
    legacy.write_bytes(b"not a torch file")
    capsys.readouterr()
    assert main(["store", "verify", "--artifacts", str(filled.root)]) == 2
    lines = capsys.readouterr().err.splitlines()
    bad = sorted([*damaged, legacy])
    assert len(lines) == 4 and [l.split(": damaged: ")[1].split(" (")[0] for l in lines[:3]] == list(map(str, bad))
    assert all(l.startswith("python -m overinterp store verify: damaged: ") for l in lines[:3])
    n = sum(1 for f in filled.files() if f.suffix != ".sha256")
    assert lines[3].startswith(f"python -m overinterp store: error: 3 of the {n} files of {filled.root} are damaged; "
                               "run again with --repair")
    assert main(["store", "verify", "--repair", "--artifacts", str(filled.root)]) == 0      # all three moved aside
    assert not any(f.exists() for f in bad) and json.loads(capsys.readouterr().out)["moved_aside"]
    assert main(["store", "verify", "--artifacts", str(filled.root)]) == 0


def test_pack_of_a_folder_that_does_not_exist_writes_no_pack(tmp_path, capsys):
    missing, pack = tmp_path / "no-store", tmp_path / "class.tar.gz"
    assert main(["store", "pack", str(pack), "--artifacts", str(missing)]) == 2
    assert "no artifact store at" in capsys.readouterr().err and not pack.exists() and not missing.exists()
