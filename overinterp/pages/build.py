"""Building the book: execute the chapters of ``_toc.yml`` with papermill into ``_build/stage/``, then render
``_build/html`` with Jupyter Book. Chapters share results through the artifact store, so each also runs alone:

    papermill book/04_pixel_subsets.ipynb out.ipynb -p dataset cifar10 -p profile paper

An edition (``editions/<name>/``: executed notebooks and a ``manifest.json``) is a committed execution at
another profile (``book --edition``); the build renders each as its own part, without re-executing it.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

from overinterp.config.chapters import ROOT, chapter_config, parameters_cell
from overinterp.pages.launch import INSTALL_TAG, install_cell
from overinterp.config.profiles import default_profile
from overinterp.pages.packs import EDITIONS, unpack_models
from overinterp.store import CHAPTER_ENV

# copied into the stage as they are; MathJax 3 (`make mathjax`) is served as _static/mathjax/es5/
STATIC = ["_config.yml", "_toc.yml", "book/references.bib", "book/_static", ".mathjax/node_modules/mathjax/es5"]

#: the theme's buttons that link to the repository (Jupyter Book's ``html:`` keys)
REPOSITORY_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button")


def chapters(root: Path = ROOT) -> list[Path]:
    """The notebooks of ``_toc.yml`` in reading order."""
    import yaml
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = []

    def walk(entry):  # a file, or parts / chapters / sections holding more entries
        if "file" in entry or "root" in entry:
            files.append(entry.get("file", entry.get("root")))
        for key in ("parts", "chapters", "sections"):
            for e in entry.get(key, []):
                walk(e)

    walk(toc)
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").exists()]


def write_parameters(root: Path = ROOT, url: str | None = None, branch: str | None = None) -> list[str]:
    """Rewrite each chapter's ``parameters`` cell from its dataclass and the install cell after it (for
    :func:`repository`'s URL and branch, or ``url``/``branch``); returns the stems of the chapters changed."""
    import nbformat
    import yaml
    url, branch = repository(yaml.safe_load((root / "_config.yml").read_text()), url, branch)
    install = install_cell(url, branch)
    changed = []
    for nb_path in chapters(root):
        nb = nbformat.read(nb_path, as_version=4)
        before = nbformat.writes(nb)
        found = [k for k, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
        if len(found) != 1:
            raise ValueError(f"{nb_path}: {len(found)} cells tagged parameters, not one")
        i = found[0]
        nb.cells[i].source = parameters_cell(chapter_config(nb_path.stem))
        cells = [c for c in nb.cells if INSTALL_TAG in c.metadata.get("tags", [])]
        cell = cells[0] if cells else nbformat.v4.new_code_cell(id=INSTALL_TAG)
        cell.source, cell.outputs, cell.execution_count = install, [], None
        cell.metadata["tags"] = ["remove-cell", INSTALL_TAG]
        nb.cells = [c for c in nb.cells if c is not cell]
        nb.cells.insert(i + 1, cell)            # papermill injects its parameters between the two
        if nbformat.writes(nb) != before:
            nbformat.write(nb, nb_path)
            changed.append(nb_path.stem)
    return changed


def hide_injected(notebook: Path) -> None:
    """Hide papermill's injected-parameters cell (the box shows them) and drop stderr streams (progress bars)."""
    import nbformat
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
    nbformat.write(nb, notebook)


def _execute_one(nb: Path, target: Path, parameters: dict, root: Path, threads: int | None = None) -> float | str:
    """Execute one chapter into ``target`` (its kernel's ``$OVERINTERP_CHAPTER`` its stem, ``threads`` torch
    threads where given); its seconds, or the one-line reason it failed."""
    import papermill as pm
    from unittest import mock
    env = {CHAPTER_ENV: nb.stem, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    t0 = time.perf_counter()
    with mock.patch.dict(os.environ, env):
        try:
            pm.execute_notebook(str(nb), str(target), parameters=parameters, cwd=str(root), progress_bar=False,
                                kernel_name="python3", log_output=False)
        except pm.PapermillExecutionError as e:
            from overinterp.config.chapters import chapter_label
            return (f"[book] {chapter_label(nb.stem)} failed in cell {e.exec_count}: {e.ename}: {e.evalue}\n"
                    f"         the executed notebook is at {target}")
    hide_injected(target)
    return round(time.perf_counter() - t0, 1)


def execute(parameters: dict, stage: Path, root: Path = ROOT, only: list[str] | None = None,
            jobs: int = 1) -> dict:
    """Execute the chapters (``only`` these stems) into ``stage/book``; returns ``{stem: seconds}``. With
    ``jobs`` > 1 they execute in that many one-thread processes, and the toc's last chapter (the report,
    which reads what every other chapter stored) after them with all threads."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    todo = []
    for nb in chapters(root):
        target = stage / nb.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not only or nb.stem in only:
            todo.append((nb, target))
    timings = {}

    def done(nb, result):
        if isinstance(result, str):
            raise SystemExit(result)
        timings[nb.stem] = result
        print(f"[book] {nb.stem}: {result} s ({len(timings)} of {len(todo)} chapters)", flush=True)

    first, last = (todo[:-1], todo[-1:]) if jobs > 1 and len(todo) > 1 else ([], todo)
    if first:
        print(f"[book] executing {len(first)} chapters in {jobs} processes of one thread with {parameters}",
              flush=True)
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            running = {pool.submit(_execute_one, nb, target, parameters, root, 1): nb for nb, target in first}
            for f in as_completed(running):
                if isinstance(f.result(), str):          # a failed chapter: start no other
                    pool.shutdown(wait=False, cancel_futures=True)
                done(running[f], f.result())
    for nb, target in last:
        print(f"[book] executing {nb.relative_to(root)} with {parameters}", flush=True)
        done(nb, _execute_one(nb, target, parameters, root))
    return {nb.stem: timings[nb.stem] for nb, _ in todo}


def save_edition(stage: Path, parameters: dict, timings: dict, folder: Path = EDITIONS,
                 name: str | None = None) -> Path:
    """Copy the chapters of ``timings`` ({stem: seconds}, this run's) from ``stage`` into ``folder/<name>/book``
    with a manifest dating them; returns that folder. An edition there of the same profile, dataset and seed keeps
    its other chapters and their dates; any other is replaced."""
    from datetime import datetime, timezone
    from overinterp.store import code_version
    from overinterp.zoo.train import device_name
    profile = parameters.get("profile") or default_profile()
    name = name or f"{parameters.get('dataset', 'fashion-mnist')}-{profile}"
    target = Path(folder) / name
    old = json.loads((target / "manifest.json").read_text()) if (target / "manifest.json").is_file() else None
    same = old and all(old.get("parameters", {}).get(k) == parameters.get(k) for k in ("profile", "dataset", "seed"))
    if target.exists() and not same:          # another edition's chapters go; a models pack beside them stays
        shutil.rmtree(target / "book", ignore_errors=True)
    (target / "book").mkdir(parents=True, exist_ok=True)
    for stem in timings:              # a stage shared with earlier runs holds chapters this run did not execute
        if (stage / "book" / f"{stem}.ipynb").is_file():
            shutil.copy(stage / "book" / f"{stem}.ipynb", target / "book" / f"{stem}.ipynb")
    now, commit = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), code_version()
    chapters_done = {**(old.get("chapters", {}) if same else {}),
                     **{stem: {"seconds": sec, "commit": commit, "date": now} for stem, sec in timings.items()}}
    manifest = {"name": name, "profile": profile, "dataset": parameters.get("dataset", "fashion-mnist"),
                "device": device_name(parameters.get("device", "auto")), "torch": torch.__version__,
                "commit": commit, "date": now, "seconds": {k: v["seconds"] for k, v in chapters_done.items()},
                "chapters": chapters_done, "parameters": parameters}
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return target


def glue_gaps(book: Path) -> dict[str, list[str]]:
    """{chapter: ["06_why.ipynb::key", ...]}: what each executed chapter in ``book`` quotes from another chapter
    there whose execution glued no such name (an older execution of it): that one must be executed again, or
    the build fails with warnings as errors. Chapters absent from ``book`` are the quick build's, not checked."""
    books = {f.stem: json.loads(f.read_text()) for f in sorted(Path(book).glob("*.ipynb"))}
    names = {stem: {o.get("metadata", {}).get("scrapbook", {}).get("name") for c in nb.get("cells", [])
                    for o in c.get("outputs", [])} - {None} for stem, nb in books.items()}   # each one's glued names
    gaps = {}
    for stem, nb in books.items():
        text = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []) if c.get("cell_type") == "markdown")
        missing = sorted({f"{s}.ipynb::{k}" for _, s, k in GLUE_REF.findall(text) if s in names and k not in names[s]})
        if missing:
            gaps[stem] = missing
    return gaps


def editions(folder: Path = EDITIONS) -> list[dict]:
    """The manifests of the editions in ``folder`` (with their ``path``), by name."""
    return [{**json.loads(m.read_text()), "path": m.parent} for m in sorted(Path(folder).glob("*/manifest.json"))]


def _edition_page(e: dict) -> str:
    """The Markdown page opening an edition's part: profile, models, verdicts, compute and how to re-execute."""
    from overinterp.config.chapters import chapter_label, toc_chapters
    from overinterp.config.profiles import get_profile
    from overinterp.pages import report
    from overinterp.pages.report_values import scale_values
    folder, profile = Path(e["path"]), get_profile(e["profile"])
    seeds = sorted(folder.glob("verdicts-seed[0-9]*.json"))
    first = report.load(seeds[0]) if seeds else None
    second = report.load(seeds[1]) if len(seeds) > 1 else None
    scale = scale_values(profile, e["dataset"], "x")
    order = {stem: k for k, stem in enumerate(toc_chapters())}
    rows = "\n".join(f"| {chapter_label(stem)} | {e['seconds'][stem] / 60:.1f} |"
                     for stem in sorted(e["seconds"], key=lambda x: order.get(x, len(order))))
    total = sum(e["seconds"].values())
    zoo = folder / "zoo.tar.gz"
    rerun = (f"python -m overinterp store --artifacts STORE unpack \\\n    {folder.relative_to(folder.parents[1])}/zoo.tar.gz\n"
             if zoo.is_file() else "")
    return (f"# The `{e['profile']}` edition\n\n"
            f"The profile `{e['profile']}`: {profile.doc}. Its chapters were executed once, on {e['device']} with "
            f"torch {e['torch']} at commit `{e['commit']}`, and are shown as they were executed; the chapters "
            f"before this part are executed afresh by every build, at a smaller scale.\n\n"
            f"**Models.** {scale['x_replicates']} per architecture ({scale['x_archs']}, {scale['x_widths']} "
            f"initial filters), trained {scale['x_epochs']} epochs on {scale['x_train']} {e['dataset']} images.\n\n"
            f"**Verdicts.** {report.headline(first, second, e['profile'])}\n\n"
            f"**Compute.** {total / 3600:.1f} hours to execute the chapters below, from a store that held the "
            f"models:\n\n| chapter | minutes |\n|---|---|\n{rows}\n\n"
            f"**Re-executing it.** From the committed models (a model the pack lacks is trained), in a store outside "
            f"the work tree:\n\n"
            f"```bash\n{rerun}OVERINTERP_ARTIFACTS=STORE python -m overinterp book --profile {e['profile']} --edition\n```\n")


def repository(config: dict, url: str | None = None, branch: str | None = None) -> tuple[str, str]:
    """(URL, branch) of the book's repository: ``url``, else ``$OVERINTERP_REPOSITORY_URL``, else
    ``repository.url`` of ``_config.yml``, else ""; ``branch``, else ``repository.branch``, else "main"."""
    repo = config.get("repository") or {}
    if url is None:
        url = os.environ.get("OVERINTERP_REPOSITORY_URL") or repo.get("url") or ""
    return url.strip().rstrip("/"), (branch or repo.get("branch") or "main").strip()


def repository_config(config: dict, url: str | None = None) -> dict:
    """A copy of ``_config.yml`` (a dict) with its repository resolved (:func:`repository`); without a URL the
    repository and launch buttons are turned off, so Jupyter Book never links its own placeholder repository."""
    config = copy.deepcopy(config)
    repo = dict(config.get("repository") or {})
    repo["url"], repo["branch"] = repository(config, url)
    config["repository"] = repo
    if not repo["url"]:
        config["html"] = {**(config.get("html") or {}), **{b: False for b in REPOSITORY_BUTTONS}}
        config.pop("launch_buttons", None)
    return config


LABEL = re.compile(r"^\((?P<a>[\w-]+)\)=|^:(?:name|label): (?P<b>[\w-]+)", re.M)
DOC = re.compile(r"(\{doc\}`(?:[^`<]*<)?)([\w/.-]+)(>?`)")
GLUE_DOC = re.compile(r"(\{glue(?::\w+)?\}`)([\w.-]+)\.ipynb::")
GLUE_REF = re.compile(GLUE_DOC.pattern + r"([\w-]+)")   # GLUE_DOC's reference with its key


def localise(folder: Path, prefix: str, title: str = "") -> int:
    """Prefix the labels the edition chapters in ``folder`` define, and their references (Sphinx labels are
    global), and point links to chapters they lack at this build's; returns the number of labels renamed."""
    import nbformat
    from overinterp.config.chapters import chapter_number
    books = {f: nbformat.read(f, as_version=4) for f in sorted(folder.glob("*.ipynb"))}
    present = {f.stem for f in books}
    labels = {m.group("a") or m.group("b") for nb in books.values() for c in nb.cells if c.cell_type == "markdown"
              for m in LABEL.finditer(c.source)}
    own = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels, key=len, reverse=True))) + r")(?![\w-])") \
        if labels else None
    def rewrite(text: str) -> str:
        text = own.sub(lambda m: f"{prefix}-{m.group(1)}", text) if own else text
        text = DOC.sub(lambda m: m.group(0) if m.group(2).split("/")[-1] in present or m.group(2).startswith("/")
                       else f"{m.group(1)}/book/{m.group(2)}{m.group(3)}", text)
        return GLUE_DOC.sub(lambda m: m.group(0) if m.group(2) in present
                            else f"{m.group(1)}/book/{m.group(2)}.ipynb::", text)
    for f, nb in books.items():
        heading = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("# ")), None)
        if heading is not None and title:   # "Standard edition · 2. Sufficient input subsets" in the sidebar
            n = chapter_number(f.stem)
            heading.source = f"# {title} · {f'{n}. ' if n else ''}{heading.source[2:]}"
        for c in nb.cells:
            if c.cell_type == "markdown":
                c.source = rewrite(c.source)
            for o in c.get("outputs", []):       # Markdown a cell displays (a chapter's box) is parsed too
                if "text/markdown" in o.get("data", {}):
                    md = o["data"]["text/markdown"]
                    o["data"]["text/markdown"] = rewrite(md if isinstance(md, str) else "".join(md))
        nbformat.write(nb, f)
    return len(labels)


# every Sphinx warning (broken reference, unwritten glue key, missing figure) fails the build, after all are reported
STRICT = ["-W", "-n", "--keep-going"]


def render(stage: Path, out: Path, root: Path = ROOT, edition_folder: Path | None = None) -> None:
    """Render ``stage`` and every edition into ``out/html``, warnings as errors unless chapters are missing."""
    import yaml
    for f in STATIC:
        if (root / f).is_dir():
            shutil.copytree(root / f, stage / f, dirs_exist_ok=True)
        elif (root / f).exists():
            (stage / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / f, stage / f)
    config = repository_config(yaml.safe_load((root / "_config.yml").read_text()))
    sphinx = (config.get("sphinx") or {}).get("config") or {}
    if "html_static_path" in sphinx:  # a static folder this machine lacks (no npm: no MathJax) is no warning
        sphinx["html_static_path"] = [d for d in sphinx["html_static_path"] if (stage / d).is_dir()]
    (stage / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    missing = [nb for nb in chapters(root) if not (stage / nb.relative_to(root)).exists()]
    found = [] if missing else editions(edition_folder or root / "editions")
    if missing:
        have = [str(nb.relative_to(root).with_suffix("")) for nb in chapters(root) if nb not in missing]
        toc = ({"format": "jb-book", "root": have[0], "chapters": [{"file": f} for f in have[1:]]} if have[1:]
               else {"format": "jb-article", "root": have[0]})           # a book's chapters may not be empty
        (stage / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        print(f"[book] rendering {len(have)} of {len(have) + len(missing)} chapters (no earlier whole build "
              f"in {stage}): links into the others stay unresolved", flush=True)
    elif found:  # the chapters' parts are labelled as this build's, each edition becomes another part
        toc = yaml.safe_load((root / "_toc.yml").read_text())
        profile = json.loads((out / "timings.json").read_text())["parameters"].get("profile") or default_profile()
        ours = toc.pop("parts", None) or [{"caption": "", "chapters": toc.pop("chapters")}]
        parts = [{**part, "caption": f"{part['caption'] or 'Chapters'}, executed by this build ({profile} profile)"}
                 for part in ours]
        for e in found:
            dest = stage / "editions" / e["name"]
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(e["path"] / "book", dest / "book")
            localise(dest / "book", e["profile"], f"{e['profile'].capitalize()} edition")
            (dest / "index.md").write_text(_edition_page(e))
            files = [f"editions/{e['name']}/book/{nb.stem}" for nb in chapters(root)
                     if (dest / "book" / nb.name).exists()]
            parts.append({"caption": f"The {e['profile']} edition ({e['dataset']}, executed on {e['device']})",
                          "chapters": [{"file": f"editions/{e['name']}/index"}] + [{"file": f} for f in files]})
        toc["parts"] = parts
        (stage / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(stage), "--path-output", str(stage),
           *([] if missing else STRICT)]
    if subprocess.run(cmd).returncode:
        raise SystemExit(f"[book] Jupyter Book reported warnings or errors (listed above) rendering {stage}")
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.move(str(stage / "_build" / "html"), html)
    print(f"[book] rendered {html / 'index.html'}", flush=True)


def _run(parameters: dict):
    from overinterp.config.context import make_run
    return make_run(parameters.get("dataset", "fashion-mnist"), parameters.get("profile"),
                    parameters.get("device", "auto"), parameters.get("seed", 0))


def prepare_first(parameters: dict, jobs: int = 1) -> dict:
    """Compute chapters 2-5's artifacts in ``jobs`` one-thread processes (faster, and independent of the core
    count); returns ``{"prepare": seconds}``, {} when ``jobs`` < 2."""
    if jobs < 2:
        return {}
    run = _run(parameters)
    from overinterp.experiments.prepare import prepare_parallel
    print(f"[book] computing the models, backward selections and retrained models of chapters 2-5 in {jobs} "
          "processes of one thread (with the input-dropout models)", flush=True)
    t0 = time.perf_counter()
    from unittest import mock
    with mock.patch.dict(os.environ, {CHAPTER_ENV: "prepare"}):     # the store's access log names the stage
        prepare_parallel(run, jobs, study="book")
    seconds = round(time.perf_counter() - t0, 1)
    print(f"[book] prepare: {seconds} s", flush=True)
    return {"prepare": seconds}


def build(parameters: dict, root: Path = ROOT, out: Path | None = None, only: list[str] | None = None,
          render_html: bool = True, edition: bool = False, edition_folder: Path | None = None,
          jobs: int = 1, train: bool = False) -> dict:
    """Execute the chapters into ``out/stage``, then render ``out/html`` (or, with ``edition``, save an edition);
    ``only`` re-executes those chapters into an earlier build's stage. The committed trained models are
    unpacked first unless ``train``. Returns ``{stem: seconds}``."""
    out = Path(out or root / "_build")
    stage, record = out / "stage", out / "timings.json"
    earlier = json.loads(record.read_text()) if only and record.exists() else {}
    if earlier.get("parameters", parameters) != parameters:
        raise SystemExit(f"[book] {out} holds a build with {earlier['parameters']}, not {parameters}: "
                         f"pass --out with another folder to keep both")
    if stage.exists() and not earlier:
        shutil.rmtree(stage)
    stage.mkdir(parents=True, exist_ok=True)
    line = None if train else unpack_models(_run(parameters))
    if line:
        print(line, flush=True)
    timings = dict(earlier.get("seconds", {})) if only else prepare_first(parameters, jobs)
    t0 = time.perf_counter()
    done = execute(parameters, stage, root, only, jobs)
    timings.update(done)
    wall = {"chapters": round(time.perf_counter() - t0, 1)}       # below the sum of theirs where jobs > 1
    record.parent.mkdir(parents=True, exist_ok=True)
    from overinterp.store import code_version
    write = lambda: record.write_text(json.dumps({"parameters": parameters, "seconds": timings, "wall_seconds": wall,
                                                  "commit": code_version()}, indent=2))
    write()                                   # before rendering: a failed render keeps the executed chapters
    if edition:
        saved = save_edition(stage, parameters, done, edition_folder or root / 'editions')
        print(f"[book] saved edition {saved}")
        for stem, refs in glue_gaps(saved / "book").items():
            quoted = sorted({r.split(".ipynb::")[0] for r in refs})
            print(f"[book] edition {saved.name}: {stem} quotes {len(refs)} value(s) that {', '.join(quoted)} of this "
                  f"edition does not glue ({refs[0]}, ...); execute {', '.join(quoted)} again: book --edition --only "
                  f"{' '.join(quoted)}", flush=True)
    elif render_html:
        t0 = time.perf_counter()
        render(stage, out, root, edition_folder)
        wall["render"] = round(time.perf_counter() - t0, 1)
        write()
    return timings
