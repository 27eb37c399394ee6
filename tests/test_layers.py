"""The library's layers (docs/layout.md; the contract is in pyproject.toml): a package imports only
the ones below it, checked by import-linter over every import statement, function-level ones too."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


@pytest.mark.skipif(LINT is None, reason="import-linter is not installed (pip install -e '.[test]')")
def test_no_package_imports_a_layer_above_it():
    res = subprocess.run([LINT, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "1 kept, 0 broken" in res.stdout


@pytest.mark.skipif(LINT is None, reason="import-linter is not installed (pip install -e '.[test]')")
def test_the_contract_fails_on_an_upward_import(tmp_path):
    """The check can fail: a copy of the library where the store imports the engine breaks the contract."""
    shutil.copytree(ROOT / "overinterp", tmp_path / "overinterp", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    store = tmp_path / "overinterp" / "store.py"
    store.write_text(store.read_text() + "\nfrom overinterp.engine import backselect  # an upward import\n")
    res = subprocess.run([LINT, "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)})
    assert res.returncode != 0 and "overinterp.store -> overinterp.engine" in res.stdout


def test_every_package_says_what_it_holds():
    for init in sorted((ROOT / "overinterp").glob("*/__init__.py")):
        assert init.read_text().lstrip().startswith('"""'), f"{init.parent.name} has no docstring"


def test_the_library_runs_without_pyro_and_captum_until_a_method_needs_them():
    """A bare machine (a GPU image with torch only) trains, selects and prepares: Pyro and Captum are
    imported where Bayes-TrEx, PGD and the saliency maps first need them, and their absence is one line
    naming the package to install."""
    code = """
import sys
sys.modules["pyro"] = sys.modules["captum"] = None          # as if not installed
import overinterp.__main__, overinterp.experiments.claims, overinterp.experiments.prepare
from overinterp.methods import bayes_trex, shared_interest
import torch
for call in (lambda: bayes_trex._pyro(),
             lambda: shared_interest.saliency_map(torch.nn.Flatten(), torch.zeros(1, 1, 2, 2), "saliency",
                                                  torch.zeros(1, dtype=torch.long))):
    try:
        call()
    except ModuleNotFoundError as e:
        print(e)
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0] == "Bayes-TrEx (chapter 16) needs the package pyro-ppl (pip install pyro-ppl); pyro cannot be imported"
    assert lines[1].startswith("saliency maps (chapter 14) needs the package captum (pip install captum); captum")


def test_no_module_outgrows_one_concept():
    """One concept per module: none over 450 lines but the store and the backward-selection engine."""
    allowed = {Path("overinterp/store.py"), Path("overinterp/engine/backselect.py")}
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for p in (ROOT / "overinterp").rglob("*.py")}
    assert sizes and not {p: n for p, n in sizes.items() if n > 450 and p not in allowed}
