"""Chapter parameters: one dataclass per chapter, the single source of the notebook's papermill
``parameters`` cell (:func:`parameters_cell`; ``python -m overinterp chapters --write``) and of the
command line's flags (:func:`add_arguments`), so both accept the same names and defaults.

Field metadata: ``help``; ``inherit``, the dotted :class:`~overinterp.config.profiles.Profile` path a
``None`` stands for; ``check`` ("tau" in (0, 1), "threshold" in [0, 1], "fraction" in (0, 1], "min2" an
integer >= 2, "path" a folder, "file" a file -- relative to the repository root unless absolute -- or a
tuple of valid values). :func:`resolve` applies both; a bad value raises :class:`ParameterError`:

    p = resolve(SIS(tau=None), get_profile("quick"))     # p.tau == 0.99, the profile's

Chapter numbers are the sidebar's (:func:`chapter_number`, from ``_toc.yml``), not the file names'.
"""
import argparse
import dataclasses
import functools
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]   # the repository root (relative paths are read from it)

#: the book's table of contents: its reading order and the sidebar's chapter numbers
TOC = ROOT / "_toc.yml"


class ParameterError(ValueError):
    """An invalid chapter parameter: a one-line message naming it and what is valid, which IPython shows in
    place of the traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def param(default: Any, help: str, inherit: str | None = None, check: Any = None):
    """A chapter parameter: its default, a one-line help (the notebook comment and the ``--help`` text),
    the profile value a None default stands for, and its check."""
    return field(default=default, metadata={"help": help, "inherit": inherit, "check": check})


@dataclass(frozen=True)
class RunConfig:
    """What every chapter and every command takes (:class:`overinterp.config.context.Run`)."""
    dataset: str = param("fashion-mnist", "fashion-mnist (default) or cifar10 (the paper's)")
    profile: str | None = param(None, "tiny | quick | standard | gpu | paper; None: $OVERINTERP_PROFILE or quick")
    device: str = param("auto", "auto | cpu | cuda")
    seed: int = param(0, "first replicate's seed; replicate r uses seed + r")


TAU = "SIS threshold; None: the profile's (0.99, the paper's, except for tiny)"
TAUS = "SIS thresholds (Figures 5 and 6)"
#: the "tau" check: tau compares as log-odds >= logit(tau), so only 0 < tau < 1 selects anything
TAU_RANGE = ("must lie strictly between 0 and 1 (the SIS threshold is the probability of the predicted class "
             "that the subset must reach: a softmax never reaches 1, and the empty subset reaches 0)")


@dataclass(frozen=True)
class Introduction(RunConfig):
    standard: str = param("editions/fashion-mnist-standard/verdicts-seed0.json",
                          "the standard edition's verdicts (python -m overinterp verdicts --json), from the repository "
                          "root, shown beside this execution's")


@dataclass(frozen=True)
class ModelZoo(RunConfig):
    pass


@dataclass(frozen=True)
class SIS(RunConfig):
    tau: float | None = param(None, TAU, inherit="sis_threshold", check="tau")
    n_show: int = param(8, "images shown per architecture")
    n_curves: int = param(4, "backward-selection curves drawn per architecture")


@dataclass(frozen=True)
class PixelSubsets(RunConfig):
    frac: float = param(0.05, "fraction of pixels kept (the paper: 5%)", check="fraction")
    n_show: int = param(6, "example images shown")
    variants: str = param("editions/fashion-mnist-standard/masked-variants-seed0.json",
                          "counterfactual fine-tuning variants measured by scripts/masked_variants.py, from the "
                          "repository root")
    strength: str = param("editions/fashion-mnist-standard/finetuning-strength-seed0.json",
                          "section 4.1's claims under two fine-tunings, measured by scripts/finetuning_strength.py, "
                          "from the repository root")


@dataclass(frozen=True)
class Retraining(RunConfig):
    frac: float = param(0.05, "fraction of pixels kept (the paper: 5%)", check="fraction")


@dataclass(frozen=True)
class BenchmarkResults(RunConfig):
    """A chapter that reads the committed benchmark results."""
    results: str = param("benchmarks/results", "folder of the backselect-<device>.json files, from the repository root",
                         check="path")


@dataclass(frozen=True)
class Why(BenchmarkResults):
    pass


@dataclass(frozen=True)
class Scale(RunConfig):
    """The scale study: computed from the artifact store, or read from a committed ``scale --json`` file."""
    study: str | None = param(None, "a JSON of `python -m overinterp scale --json` (from the repository root); None: "
                              "the profile's committed study (ScaleConfig.results), else computed from the store",
                              check="file")


@dataclass(frozen=True)
class Humans(RunConfig):
    per_class: int = param(10, "images per class (paper: 10, i.e. 100 CIFAR-10 images)")
    threshold: float = param(0.99, "confidence the assigned model must reach on the full image (paper: 0.99)",
                             check="threshold")
    fracs: tuple = param((0.05, 0.30, 0.50), "fraction of pixels kept per level, increasing (paper: Table 2)",
                         check="fraction")


@dataclass(frozen=True)
class Critiques(RunConfig):
    """The paper against its published critiques (Springer 2022; Jain et al. 2022; ReCalX)."""
    tau: float | None = param(None, TAU, inherit="sis_threshold", check="tau")
    frac: float = param(0.05, "fraction of pixels kept (the paper: 5%)", check="fraction")
    kernels: tuple = param((3, 5), "dilation kernels, odd sizes in pixels; the verdicts read the first (Springer: 3)")
    smoothgrad_samples: int = param(16, "noisy copies SmoothGrad averages per image (Smilkov et al.: 50)")
    smoothgrad_sigma: float = param(0.15, "SmoothGrad noise as a share of the pixel range (Smilkov et al.: 0.1-0.2)",
                                    check="fraction")
    saliency_images: int = param(50, "first test images whose subsets get SmoothGrad")
    fractions: tuple = param((0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0), "kept fractions of the insertion curves",
                             check="fraction")
    bins: int = param(15, "equal-width confidence bins of the calibration error (Guo et al.: 15)", check="min2")
    n_show: int = param(6, "example images shown")


@dataclass(frozen=True)
class SISAccuracy(RunConfig):
    taus: tuple = param((0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99), TAUS, check="tau")
    n_resamples: int = param(2000, "bootstrap resamples of each interval")
    min_images: int = param(20, "images each group needs for its interval to count", check="min2")


@dataclass(frozen=True)
class Robust(RunConfig):
    tau: float | None = param(None, TAU, inherit="sis_threshold", check="tau")
    n_show: int = param(8, "images shown")


@dataclass(frozen=True)
class Ensembles(RunConfig):
    taus: tuple = param((0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99), TAUS, check="tau")
    tau: float | None = param(None, "threshold of Figure S2 and of the verdict; " + TAU.split("; ")[1],
                              inherit="sis_threshold", check="tau")
    n_show: int = param(6, "images shown in Figure S2")
    n_resamples: int = param(2000, "bootstrap resamples of each interval")
    min_images: int = param(10, "images with an SIS each model needs for the verdict", check="min2")


@dataclass(frozen=True)
class InputDropout(RunConfig):
    taus: tuple = param((0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99), TAUS, check="tau")
    tau: float | None = param(None, "threshold of the verdict; " + TAU.split("; ")[1], inherit="sis_threshold",
                              check="tau")
    n_resamples: int = param(2000, "bootstrap resamples of each interval")
    min_images: int = param(10, "images with an SIS each model needs for the verdict", check="min2")


@dataclass(frozen=True)
class ImageNet(RunConfig):
    tau: float = param(0.9, "the paper's SIS threshold (4.1.1, Figures 3-4)", check="tau")
    taus: tuple = param((0.5, 0.7, 0.9), "thresholds shown; below 0.9 only where the profile backselects such images",
                        check="tau")
    model: str | None = param(None, "efficientnet_lite0 | inception_v3 (downloads torchvision's weights); "
                              "None: the profile's", inherit="imagenet.model",
                              check=("efficientnet_lite0", "inception_v3"))
    imagenet_dir: str | None = param(None, "an ImageNet validation folder (<dir>/<wnid>/*.JPEG); "
                                     "None: the shipped photographs")
    border: float = param(0.125, "border band: the outer 1/8 of the height and width on each side", check="fraction")
    min_images: int = param(10, "images with an SIS that the verdict needs", check="min2")


@dataclass(frozen=True)
class Speed(BenchmarkResults):
    pass


@dataclass(frozen=True)
class SharedInterest(RunConfig):
    binarize: str | None = param(None, "std (mean + 1 std, as Shared Interest) or percentile; None: the profile's",
                                 inherit="shared_interest.binarize", check=("std", "percentile"))
    high: float | None = param(None, "coverage threshold between high and low (0 to 1); None: the profile's, 0.5",
                               inherit="shared_interest.high", check="threshold")
    gallery_arch: str | None = param(None, "architecture of the gallery; None: the profile's first",
                                     inherit="archs.0")


@dataclass(frozen=True)
class InputReduction(RunConfig):
    min_images: int = param(8, "images with a measure under both models needed to test a verdict", check="min2")


@dataclass(frozen=True)
class BayesTrEx(RunConfig):
    tau: float | None = param(None, TAU, inherit="sis_threshold", check="tau")
    n_show: int = param(8, "samples shown per target")


@dataclass(frozen=True)
class Instructors(BenchmarkResults):
    """The appendix for instructors: reads the run times of benchmarks/bench_chapters.py."""
    results: str = param("benchmarks/results", "folder of the benchmark results, from the repository root",
                         check="path")
    times: str = param("chapters-quick-cpu.json", "run-time file of benchmarks/bench_chapters.py in `results`")


@dataclass(frozen=True)
class Report(RunConfig):
    """The reproduction report: the committed editions' verdicts and compute beside this execution's."""
    standard: str = param("editions/fashion-mnist-standard", "the standard edition's folder (manifest.json, "
                          "compute.json, verdicts-seed<seed>.json), from the repository root", check="path")
    results: str = param("benchmarks/results", "folder of the benchmark results (the quick book's times, the "
                         "standard models' accuracy, the engine benchmark), from the repository root", check="path")


#: notebook stem -> its parameters
CHAPTERS = {
    "01_introduction": Introduction, "02_model_zoo": ModelZoo, "03_sis": SIS, "04_pixel_subsets": PixelSubsets,
    "05_retraining": Retraining, "06_why": Why, "06b_scale": Scale, "07_humans": Humans, "07b_critiques": Critiques,
    "08_sis_accuracy": SISAccuracy,
    "09_robust": Robust, "10_ensembles": Ensembles, "11_input_dropout": InputDropout, "12_imagenet": ImageNet,
    "13_speed": Speed, "14_shared_interest": SharedInterest, "15_input_reduction": InputReduction,
    "16_bayes_trex": BayesTrEx, "17_instructors": Instructors,
    "18_report": Report,
}


#: chapters whose paper-scale run (``gpu``, ``paper``) needs a GPU, offered in Colab: each trains or backselects
#: zoo models (or, run alone, first computes what such a chapter stores), or backselects Inception-v3 (ImageNet);
#: not the pages that only read committed results
GPU_CHAPTERS = frozenset({
    "02_model_zoo", "03_sis", "04_pixel_subsets", "05_retraining", "06_why", "06b_scale", "07_humans",
    "07b_critiques", "08_sis_accuracy", "09_robust", "10_ensembles", "11_input_dropout", "12_imagenet",
    "14_shared_interest", "15_input_reduction", "16_bayes_trex"})

def thresholds(taus, tau: float | None = None) -> tuple[float, ...]:
    """``taus`` and the verdict's ``tau`` (when given) as floats, each once, increasing."""
    return tuple(sorted({float(t) for t in taus} | ({float(tau)} if tau is not None else set())))


def chapter_config(chapter: str) -> type:
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; valid chapters: {', '.join(CHAPTERS)}")
    return CHAPTERS[chapter]


@functools.lru_cache(maxsize=None)
def _toc(toc: Path) -> tuple[tuple[str, int | None], ...]:
    """(notebook stem, sidebar number or None) of every page of ``toc``, in reading order."""
    import yaml
    doc = yaml.safe_load(toc.read_text()) or {}
    out = [(Path(doc["root"]).stem, None)] if doc.get("root") else []
    parts = doc.get("parts") or [{"chapters": doc.get("chapters", []), **doc.get("options", {})}]
    k = 0

    def walk(entry, numbered: bool, top: bool):
        nonlocal k
        if "file" in entry:
            number = None
            if numbered and top:
                k += 1
                number = k
            out.append((Path(entry["file"]).stem, number))
        for e in entry.get("sections", []):
            walk(e, numbered, False)

    for part in parts:
        for entry in part.get("chapters", []):
            walk(entry, bool(part.get("numbered")), True)
    return tuple(out)


def chapter_stem(chapter: str) -> str:
    """'03_sis' of '03_sis', 'book/03_sis' or 'book/03_sis.ipynb'."""
    name = Path(str(chapter)).name
    return name[:-len(".ipynb")] if name.endswith(".ipynb") else name


def toc_chapters(toc: Path | None = None) -> list[str]:
    """The notebook stems of ``toc`` (default: the book's ``_toc.yml``) in reading order, the root first."""
    return [stem for stem, _ in _toc(Path(toc or TOC).resolve())]


def chapter_number(chapter: str, toc: Path | None = None) -> int | None:
    """The sidebar's number of ``chapter`` (stem or file name), counted across the numbered parts of ``toc`` as
    Jupyter Book 1.x does; None for an unnumbered page. ``03_sis`` is chapter 2."""
    return dict(_toc(Path(toc or TOC).resolve())).get(chapter_stem(chapter))


def chapter_label(chapter: str, toc: Path | None = None) -> str:
    """'chapter 2 (03_sis)': how a message names a chapter; the stem alone for an unnumbered page."""
    stem = chapter_stem(chapter)
    n = chapter_number(stem, toc)
    return f"chapter {n} ({stem})" if n else stem


def _number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check(name: str, value, check) -> None:
    if check is None or value is None:
        return
    values = value if isinstance(value, (tuple, list)) and check in ("tau", "threshold", "fraction") else [value]
    for v in values:
        if isinstance(check, tuple):
            ok, valid = v in check, "valid values: " + ", ".join(map(str, check))
        elif check == "tau":
            ok, valid = _number(v) and 0 < v < 1, TAU_RANGE
        elif check == "threshold":
            ok, valid = _number(v) and 0 <= v <= 1, "must lie in [0, 1]"
        elif check == "fraction":
            ok, valid = _number(v) and 0 < v <= 1, "must lie in (0, 1]"
        elif check == "path":
            ok, valid = Path(v).is_dir(), "no such folder"
        elif check == "file":
            ok, valid = Path(v).is_file(), "no such file"
        elif check == "min2":
            ok, valid = _number(v) and int(v) == v and v >= 2, "must be an integer of at least 2"
        else:
            raise ValueError(f"unknown check {check!r} of parameter {name}")
        if not ok:
            raise ParameterError(f"parameter {name}={value!r} is not valid: {valid}")


def resolve(params, profile):
    """``params`` checked, with each None that stands for a profile value replaced by it."""
    changes = {}
    for f in dataclasses.fields(params):
        value, meta = getattr(params, f.name), f.metadata
        if value is None and meta.get("inherit"):
            value = changes[f.name] = functools.reduce(lambda obj, k: obj[int(k)] if k.isdigit() else getattr(obj, k),
                                                       meta["inherit"].split("."), profile)
        if meta.get("check") in ("path", "file") and value is not None:
            value = changes[f.name] = str(ROOT / value)     # an absolute value stays as it is
        _check(f.name, value, meta.get("check"))
    return dataclasses.replace(params, **changes)


def literal(text: str):
    """A command-line parameter value as papermill's ``-p`` reads it: a Python literal (number, None, True,
    a list), else the text itself. ``ast.literal_eval`` evaluates no code."""
    import ast
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def chapter_parameters(chapters, pairs, profile) -> dict:
    """``book -p NAME VALUE`` pairs for ``chapters`` (stems), checked before anything executes: each name must
    be a parameter of one of them (not one of :class:`RunConfig`'s, which have their own flags) and its value
    must pass that chapter's check. Returns ``{name: value}``; :class:`ParameterError` names the bad one."""
    out = {}
    for name, text in pairs:
        value, takes = literal(text), [c for c in chapters if name in {f.name for f in dataclasses.fields(CHAPTERS[c])}]
        if name in {f.name for f in dataclasses.fields(RunConfig)}:
            raise ParameterError(f"parameter {name}: use --{name}, the flag every chapter shares")
        if not takes:
            known = sorted({f.name for c in chapters for f in dataclasses.fields(CHAPTERS[c])} -
                           {f.name for f in dataclasses.fields(RunConfig)})
            raise ParameterError(f"parameter {name}: no chapter executed here takes it; theirs: "
                                 f"{', '.join(known) or 'none beyond --dataset, --profile, --device, --seed'}")
        for c in takes:
            resolve(CHAPTERS[c](**{name: value}), profile)
        out[name] = value
    return out


def parameters_cell(cls: type, width: int = 78) -> str:
    """A chapter's papermill ``parameters`` cell: per field its help as a comment wrapped at ``width``,
    then ``name = default``."""
    import textwrap
    out = []
    for f in dataclasses.fields(cls):
        out += textwrap.wrap(f.metadata.get("help", ""), width, initial_indent="# ", subsequent_indent="# ")
        out.append(f"{f.name} = {f.default!r}")
    return "\n".join(out)


def _parser(name: str, default, annotation: str = ""):
    """argparse type of ``--name``: the type of ``default`` (tuples: comma-separated numbers; 'None': None;
    a None default: the annotation's first type)."""
    named = {"float": float, "int": int, "bool": bool}.get(str(annotation).split("|")[0].strip(), str)
    kind = float if isinstance(default, tuple) else type(default) if default is not None else named

    def parse(text: str):
        if text == "None":
            return None
        try:
            if isinstance(default, tuple):
                return tuple(float(t) for t in text.split(","))
            if kind is bool:
                return text.lower() in ("1", "true", "yes")
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--{name.replace('_', '-')} expects {kind.__name__}"
                                             f"{' values separated by commas' if isinstance(default, tuple) else ''}"
                                             f", got {text!r}") from None
    parse.__name__ = name
    return parse


def add_arguments(parser: argparse.ArgumentParser, cls: type, inherit: str | None = None) -> argparse.ArgumentParser:
    """One ``--name`` flag per field of ``cls``; with ``inherit`` (the defaults' source, in words) every flag
    defaults to None, meaning "the value of ``inherit``"."""
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        shown = inherit if inherit else default
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, default=None if inherit else default,
                            type=_parser(f.name, default, f.type),
                            help=f"{f.metadata.get('help', '')} (default: {shown})")
    return parser


def from_arguments(cls: type, args: argparse.Namespace):
    """The ``cls`` dataclass made from the parsed flags that :func:`add_arguments` added."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})
