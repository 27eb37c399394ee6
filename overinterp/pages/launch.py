"""Sphinx extension (loaded by ``_config.yml``) narrowing the theme's book-wide launch buttons per page: Binder
on every chapter; Colab only on GPU chapters whose notebook holds the :func:`install_cell` for the linked
repository and branch (Colab opens a notebook alone); none without a repository URL.
"""
import json
from pathlib import Path

from overinterp.config.chapters import GPU_CHAPTERS

#: the tag of each chapter's install cell, right after its parameters cell
INSTALL_TAG = "install-overinterp"


def install_cell(repository: str, branch: str = "main") -> str:
    """Source of a chapter's install cell: where ``overinterp`` does not import (Colab), clone ``repository`` at
    ``branch`` and ``pip install -e`` it with the ``book`` extra; elsewhere a no-op. An empty ``repository``
    makes it raise with instructions."""
    if repository:
        body = (f'    subprocess.run(["git", "clone", "-q", "--depth", "1", "-b", {json.dumps(branch)},\n'
                f'                    {json.dumps(repository)}, "overinterp-book"], check=True)\n'
                '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "overinterp-book[book]"], check=True)\n'
                '    sys.path.insert(0, os.path.abspath("overinterp-book"))')
    else:
        body = ('    raise RuntimeError("overinterp is not installed and this notebook names no repository: pip install "\n'
                '                       "the project, or set repository.url in _config.yml and run chapters --write")')
    return ("# Colab: where overinterp does not import, clone the book and install it (`overinterp chapters --write`)\n"
            "import importlib.util, os, subprocess, sys\n"
            'if importlib.util.find_spec("overinterp") is None:\n' + body)


def installs_from(notebook: str | Path, url: str, branch: str) -> bool:
    """Whether ``notebook`` holds the install cell that installs from ``url`` at ``branch``."""
    try:
        cells = json.loads(Path(notebook).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return False
    want = install_cell(url, branch)
    return any(INSTALL_TAG in c.get("metadata", {}).get("tags", [])
               and "".join(c.get("source", "")) == want for c in cells)


def _drop_without_url(app, config) -> None:
    options = config.html_theme_options
    if not (options.get("repository_url") or "").strip():
        options.pop("launch_buttons", None)


def _narrow(app, pagename, templatename, context, doctree) -> None:
    buttons = context.get("header_buttons") or []
    group = next((b for b in buttons if b.get("label") == "launch-buttons"), None)
    if group is None:
        return
    options = app.config.html_theme_options
    colab = (options.get("launch_buttons", {}).get("colab_url") or "").strip("/")
    if colab:
        url = (options.get("repository_url") or "").strip().rstrip("/")
        branch = options.get("repository_branch") or "master"        # the theme's links fall back to master
        keep = Path(pagename).name in GPU_CHAPTERS and installs_from(app.env.doc2path(pagename), url, branch)
        group["buttons"] = [b for b in group["buttons"] if keep or not str(b.get("url", "")).startswith(colab)]
    if not group["buttons"]:
        buttons.remove(group)


def setup(app):
    app.connect("config-inited", _drop_without_url)
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the page is written
    app.connect("html-page-context", _narrow, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
