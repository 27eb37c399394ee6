"""The report's glue values beside the verdicts: editions' scale, data, accuracy, controls, engines, compute,
and the book's citation."""
import json
import math
import re
from pathlib import Path

import pandas as pd

from overinterp.paper.formatting import MISSING, and_list, number, span
from overinterp.paper.numbers import ARCH_NAMES, table1_test

ROOT = Path(__file__).resolve().parents[2]
#: the committed standard edition: executed chapters, manifest.json, compute.json, verdicts-seed<seed>.json
STANDARD = ROOT / "editions" / "fashion-mnist-standard"
#: the committed benchmark results (the quick book's times, the standard models, the engine benchmark)
RESULTS = ROOT / "benchmarks" / "results"


def scale_values(profile, dataset: str, prefix: str) -> dict:
    """Glue values ``<prefix>_*`` of ``profile``'s scale on ``dataset`` (archs, widths, replicates, images, epochs)."""
    from overinterp.zoo.data import load
    total = len(load(dataset, "train"))
    widths = sorted({w for _, w in profile.widths})
    return {f"{prefix}_profile": profile.name, f"{prefix}_archs": and_list(ARCH_NAMES.get(a, a) for a in profile.archs),
            f"{prefix}_widths": ", ".join(map(str, widths)) if widths else "the paper's",
            f"{prefix}_replicates": profile.replicates,
            f"{prefix}_train": f"all {total:,}" if not profile.train_size or profile.train_size >= total
            else f"{profile.train_size:,} of the {total:,}",
            f"{prefix}_epochs": profile.train.epochs,
            f"{prefix}_test": "all" if profile.test_size is None else f"{profile.test_size:,}"}


def data_values(dataset: str) -> dict:
    """``data_size`` ('28 × 28'), ``data_classes``, ``data_train`` and ``data_test`` ('60,000') of ``dataset``."""
    from overinterp.zoo.data import load
    train, test = load(dataset, "train"), load(dataset, "test")
    return {"data_size": " × ".join(map(str, train.images.shape[-2:])), "data_classes": len(train.classes),
            "data_train": f"{len(train):,}", "data_test": f"{len(test):,}"}


def paper_values(dataset: str) -> dict:
    """``paper_acc``: the paper's CIFAR-10 test accuracies on full images (Table 1, %); ``chance`` on ``dataset``."""
    from overinterp.zoo.data import CLASSES
    acc = [table1_test(a, "full", "full")[0] for a in ("resnet20", "resnet18", "vgg16")]
    parent = "cifar10" if dataset.startswith("cifar10") else dataset
    return {"paper_acc": span(acc, 1), "chance": number(100 / len(CLASSES[parent]), 0)}


def gpu_values(folder=ROOT / "editions", cost=RESULTS / "gpu-profile-cuda.json") -> dict:
    """Glue values: the editions executed on a GPU, and the ``gpu`` profile's projected GPU-hours."""
    names = []
    for m in sorted(Path(folder).glob("*/manifest.json")):
        e = json.loads(m.read_text())
        if re.search(r"cuda|gpu|h100|h200|a100|nvidia", str(e.get("device", "")), re.I):
            names.append(e.get("name", m.parent.name))
    out = {"gpu_editions": ", ".join(names) or "none yet", "gpu_hours": MISSING, "gpu_device": MISSING}
    if Path(cost).is_file():
        c = json.loads(Path(cost).read_text())
        out.update(gpu_hours=number(sum(c["projection"]["total_s"].values()) / 3600, 0),
                   gpu_device=c["info"].get("gpu", c["info"]["device"]))
    return out


def accuracy_values(measured: tuple, prefix: str) -> dict:
    """Glue values of ``measured`` = (test accuracies in %, the test images they were measured on)."""
    acc, images = [float(a) for a in measured[0]], measured[1]
    return {f"{prefix}_acc": span(acc, 1), f"{prefix}_models": len(acc),
            f"{prefix}_acc_images": MISSING if images is None else f"{images:,}"}


def standard_accuracies(path=RESULTS / "models-standard-cpu.json") -> tuple[list[float], int | None]:
    """(test accuracy in % of every standard zoo model, the test images) from ``benchmarks/bench_models.py``'s file."""
    path = Path(path)
    if not path.is_file():
        return [], None
    doc = json.loads(path.read_text())
    m = re.search(r"all (\d+) test images", doc.get("what", ""))
    return [model["test_acc"] for model in doc.get("models", []) if model.get("test_acc") is not None], \
        (int(m.group(1)) if m else None)


def zoo_accuracies(run) -> tuple[list[float], int]:
    """(test accuracy in % of every zoo model of ``run`` on its seeded test sample, the sample's size)."""
    from overinterp.experiments import runs
    images, labels = runs.selection(run, "test").load()
    return [100 * float(runs.correct(m, images, labels, run.device).mean()) for ms in runs.zoo(run).values()
            for m in ms], len(labels)


def control_values(verdicts: dict, prefix: str = "exec") -> dict:
    """Glue values (ranges over models, %) of the controls of sections 4.1 (transfer) and 4.2 (retraining)."""
    out = {f"{prefix}_{k}": MISSING for k in ("random_acc", "bs_acc", "own_acc", "random_subsets")}
    for claim, columns in (("beats", {"random_acc": "random subsets", "bs_acc": "BS subsets"}),
                           ("transfer", {"own_acc": "own accuracy", "random_subsets": "random subsets"})):
        if verdicts.get(claim) is not None:
            n = verdicts[claim].numbers
            out.update({f"{prefix}_{k}": span(n[col], 1) if col in n else MISSING for k, col in columns.items()})
    return out


def engine_values(engines: dict, tau: float = 0.99, path=RESULTS / "backselect-cpu.json") -> dict:
    """Glue values: per ``{name: BackSelectConfig}`` its mean SIS size at ``tau`` over exact's (benchmark)."""
    fid = json.loads(Path(path).read_text()).get("fidelity", {}) if Path(path).is_file() else {}
    runs = fid.get("runs", [])

    def ratio(run):
        return next((s["mean_size_ratio_vs_exact"] for s in run.get("sis", []) if abs(s["tau"] - tau) < 1e-9), None)
    out = {}
    for name, cfg in engines.items():
        key = "k" if cfg.method == "gradient" else "m"
        match = [r for r in runs if r["method"] == cfg.method
                 and (cfg.method == "exact" or r.get(key) == getattr(cfg, key))]
        out[f"{name}_engine"] = cfg.describe()
        out[f"{name}_ratio"] = number(ratio(match[0]) if match else None, 2)
        out[f"{name}_size"] = (f"{out[f'{name}_ratio']} times exact's mean SIS size on the benchmark's images"
                               if out[f"{name}_ratio"] != MISSING else "an engine the benchmark did not run")
    grad = [r for r in runs if r["method"] == "gradient" and ratio(r) is not None]
    exact = [r for r in runs if r["method"] == "exact"]
    return {**out, "gradient_ratios": span([ratio(r) for r in grad], 2),
            "gradient_ks": ", ".join(str(r["k"]) for r in grad) or MISSING,
            "fidelity_images": fid.get("images", MISSING) if runs else MISSING, "fidelity_tau": f"{tau:g}",
            "exact_seconds": number(exact[0]["s_per_image"], 0) if exact else MISSING}


def compute_frame(standard=STANDARD / "compute.json", book=RESULTS / "book-quick-cpu.json",
                  chapters=RESULTS / "chapters-quick-cpu.json") -> pd.DataFrame:
    """The compute of each edition's runs, discarded ones included: hours (process or wall clock), machine, kept."""
    out = []

    def add(edition, run, machine, hours, clock="wall", kept="yes"):
        out.append({"edition": edition, "run": run, "machine": machine, "hours": hours, "clock": clock, "kept": kept})
    if Path(standard).is_file():
        d = json.loads(Path(standard).read_text())

        def std(run, seconds, clock="wall", kept="yes"):
            add("standard", run, d["device"], seconds / 3600, clock, kept)
        for seed, part in [(None, d), *d.get("seeds", {}).items()]:      # the edition's seed, then each other
            at, option = ("", "") if seed is None else (f" at seed {seed}", f" --seed {seed}")
            for stage, v in part.get("stages", {}).items():
                std(f"prepare{at}: {stage} ({v['units']} units)", v["process_seconds"], "process")
            if seed is None:
                std("the edition's chapters executed", sum(d.get("edition_chapters_seconds", {}).values()))
            if part.get("verdicts_seconds") is not None:
                std(f"python -m overinterp verdicts{option}", part["verdicts_seconds"])
        if d.get("not_recorded"):
            std(d["not_recorded"].split(";")[0], math.nan, "process", "no: stopped")
    if Path(book).is_file():
        d = json.loads(Path(book).read_text())
        add(d.get("profile", "quick"), f"the whole book from an empty store (make book, {d.get('date', 'undated')})",
            d["device"], d["total_minutes"] / 60)
    if Path(chapters).is_file():
        d = json.loads(Path(chapters).read_text())
        add(d.get("profile", "quick"), "each chapter timed alone from a full store (benchmarks/bench_chapters.py, "
            f"{d.get('date', 'undated')})", d["device"], d["bench_seconds"] / 3600, kept="a measurement")
    if not out:
        return pd.DataFrame()
    frame = pd.DataFrame(out)
    where = list(zip(frame["edition"], frame["machine"]))     # named on the first of its rows
    frame.index = [f"{e}: {m}" if i == 0 or where[i - 1] != (e, m) else "" for i, (e, m) in enumerate(where)]
    return frame


def compute_values(frame, editions=("standard", "quick")) -> dict:
    """Glue values per edition of :func:`compute_frame`: kept hours per clock, runs discarded, machine."""
    out = {f"{e}_{k}": MISSING for e in editions for k in ("process_hours", "wall_hours", "discarded", "device")}
    if len(frame):
        for edition, part in frame.groupby("edition", sort=False):
            kept = part[part["kept"] == "yes"]
            for clock in ("process", "wall"):
                hours = kept.loc[kept["clock"] == clock, "hours"]
                out[f"{edition}_{clock}_hours"] = number(hours.sum(), 2) if len(hours) else MISSING
            out[f"{edition}_discarded"] = int(part["kept"].str.startswith("no").sum())
            out[f"{edition}_device"] = part["machine"].iloc[0]
    return out


def citation(path=ROOT / "CITATION.cff") -> dict:
    """The book's ``CITATION.cff`` (Citation File Format 1.2.0) as a dict."""
    import yaml
    return yaml.safe_load(Path(path).read_text())


def _bibtex(kind: str, key: str, fields: dict, width: int = 72) -> str:
    """A BibTeX entry wrapped at ``width`` columns."""
    import textwrap
    pad = max(map(len, fields)) + 2
    lines = []
    for name, value in fields.items():
        if value in (None, ""):
            continue
        head = f"  {name.ljust(pad - 2)} = "
        lines.append(textwrap.fill(f"{{{value}}}", width, initial_indent=head, subsequent_indent=" " * len(head),
                                   break_on_hyphens=False))
    return f"@{kind}{{{key},\n" + ",\n".join(lines) + "\n}"


def citation_values(cff: dict) -> dict:
    """The book's title, version and authors, and the BibTeX of the book and of the paper (the first reference)."""
    def names(authors):
        return " and ".join(f"{{{a['name']}}}" if a.get("name") else   # an entity, kept whole by BibTeX
                            f"{a.get('family-names', '')}, {a.get('given-names', '')}".strip(", ") for a in authors)
    book = _bibtex("software", "overinterp", {"title": cff["title"], "author": names(cff["authors"]),
                                              "version": cff.get("version"), "url": cff.get("repository-code"),
                                              "year": str(cff.get("date-released") or "")[:4]})
    paper = ""
    if refs := cff.get("references"):
        r = refs[0]
        paper = _bibtex("inproceedings", "carter2021overinterpretation", {
            "author": names(r["authors"]), "title": r["title"], "booktitle": r.get("collection-title"),
            "volume": r.get("volume"), "pages": f"{r['start']}--{r['end']}" if r.get("start") else None,
            "year": r.get("year"), "url": r.get("url")})
    return {"cite_title": cff["title"], "cite_version": str(cff.get("version", MISSING)),
            "cite_authors": names(cff["authors"]).replace("{", "").replace("}", ""), "bibtex_book": book,
            "bibtex_paper": paper}
