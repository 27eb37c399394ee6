"""environment.yml and pyproject.toml list the same dependencies; the CLI documents itself."""
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


def _imported_top_level_modules(folder: Path) -> set[str]:
    import ast
    names = set()
    for f in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_package_the_library_imports_is_declared():
    from importlib.metadata import packages_distributions
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_norm(r).split(">")[0].split("<")[0].split("=")[0].split("[")[0].replace("_", "-")
                for r in project["dependencies"] + [r for e in project["optional-dependencies"].values() for r in e]}
    dists = packages_distributions()
    third_party = {m for m in _imported_top_level_modules(ROOT / "overinterp")
                   if m not in sys.stdlib_module_names and m != "overinterp"}
    assert {"torch", "pandas", "yaml", "PIL", "myst_nb"} <= third_party   # the scan sees imports inside functions
    missing = {m: dists.get(m) for m in third_party
               if not any(_norm(d).replace("_", "-") in declared for d in dists.get(m, [m]))}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_requires_python_admits_only_versions_with_the_stdlib_the_code_uses():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"      # tomllib (tests) and typing features need 3.11
