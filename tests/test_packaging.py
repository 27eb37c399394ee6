"""environment.yml and pyproject.toml list the same dependencies; the CLI documents itself."""
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> str:
    return req.replace(" ", "").lower()


def test_environment_yml_lists_the_pyproject_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_norm(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_norm(r) for r in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {_norm(r) for r in pip if not r.startswith("-e")}
    assert listed == wanted
    assert any(r.startswith("-e") and "[book,test]" in r for r in pip)
    assert "python=3.11" in env["dependencies"]


def test_cli_help_documents_train_and_backselect():
    out = subprocess.run([sys.executable, "-m", "overinterp", "train", "--help"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    for word in ("--dataset", "--arch", "--profile", "--seed", "resnet20", "quick"):
        assert word in out
    out = subprocess.run([sys.executable, "-m", "overinterp", "--help"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "backselect" in out


def test_cli_unknown_profile_lists_valid_choices():
    res = subprocess.run([sys.executable, "-m", "overinterp", "train", "--profile", "huge"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode != 0
    assert "unknown profile 'huge'" in res.stderr and "quick" in res.stderr
