"""How fast is backward selection? The engine benchmark's results, read back (paper 3.3, S5).

``benchmarks/bench_backselect.py`` writes one JSON file per device into
``benchmarks/results/`` (``backselect-<device>.json``). This module only *reads*
them (the chapter "How fast is backward selection?", ``book/13_speed``, costs
seconds) and turns each section into a tidy numeric table, one row per device and
measured case:

* :func:`exact_vs_reference` -- exact BackSelect against a per-image implementation
  shaped like the reference ``sis.py``: same order? forward evaluations/s, speedup;
* :func:`efficiency` -- exact BackSelect's forward evaluations/s over the same model's
  plain batched inference images/s, measured alternately in one run (the median ratio over rounds);
* :func:`fidelity` -- ``gradient`` (paper S5) and ``pruned`` against ``exact`` on a
  trained model's test images: s/image against the SIS size ratio to exact at each
  tau, IoU of the 5% subsets with exact's, accuracy on them;
* :func:`exact_check` -- the fidelity section's measured exact run against the efficiency section's,
  scaled by the two models' multiply-adds (:func:`overinterp.zoo.models.count_macs`) and by batch-norm
  folding (:func:`fusion`);
* :func:`projections` -- wall time of a full backward selection of whole datasets;
* :func:`s5` -- the paper's S5 figure (:data:`overinterp.paper.numbers.PAPER_S5`) beside what we
  measured.

What the chapter says of these tables, and how it shows them, is :mod:`overinterp.pages.speed_prose`.

The files are structured records (``"schema": 2``, written by the benchmark): each measured case
carries its fields (``threads``, ``method`` with ``m`` or ``k``, ``tau``, the fidelity model's
``source``: dataset, arch, profile, seed, artifact key; the images' ``shape``), and each note is
``{"sections", "text", "shared_cpu"}``; nothing here parses a name or a sentence.

Which files: every ``backselect-*.json`` of the folder, labelled by the device that
produced it (the GPU's name, or 'CPU (<model>, <n> threads)'). Smoke runs
(``--smoke``: tiny models, to check the wiring) are read only when no other file
exists, and are then labelled as such. A file that is not a benchmark result raises a
one-line ``ValueError`` naming it (as does a file of another schema); a section a file lacks is
skipped (:func:`missing` says which and why); :func:`caveats` lists what each file says about a
shared CPU; :func:`file_dates` when a file was committed.
"""
from __future__ import annotations

import functools
import inspect
import json
import math
import re
import statistics
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from overinterp.config.profiles import get_profile
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5
from overinterp.zoo.models import ARCHS, build_model, count_macs

__all__ = ["claim_measures", "exact_facts", "RESULTS", "SCHEMA", "SECTIONS", "FOLDED_WHEN_UNRECORDED", "load_results",
           "device_label", "files", "file_dates", "shared_cpu", "caveats", "missing", "exact_vs_reference",
           "efficiency", "fusion", "exact_check", "initial_filters", "macs", "fidelity", "fidelity_context",
           "projections", "s5", "setting"]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

SCHEMA = 2  # the structure of the result files that this module reads (bench_backselect.SCHEMA)

#: sections of a result file -> why a file may lack one
SECTIONS = {"efficiency": "the run stopped before it", "reference_style_baseline": "the run stopped before it",
            "fidelity": "the run stopped before it", "projections": "the run stopped before it",
            "inception_v3_gradient_sis": "the benchmark measures Inception-v3 on CUDA only (or tiny with `--smoke`)"}
_LISTS = ("efficiency", "reference_style_baseline", "projections", "fusion")  # sections that are lists of records

#: whether a section's engine folded batch norms into the convolutions (models.fuse_conv_bn), for files
#: that do not record it (``engine_config.fuse`` of an efficiency row, ``fuse`` of the fidelity section).
#: The committed backselect-cpu.json records neither: its efficiency rows were measured on 2026-11-22,
#: before the engine folded batch norms (2026-11-23), and its fidelity section was re-run after, with
#: folding (git history of the file).
FOLDED_WHEN_UNRECORDED = {"efficiency": False, "fidelity": True}


# ----------------------------------------------------------------------------- loading

def device_label(info: dict) -> str:
    """What produced a file: the GPU's name, or 'CPU (<model>, <n> threads)'."""
    if str(info["device"]).startswith("cuda"):
        return info.get("gpu") or str(info["device"])
    cpu = re.sub(r"\((R|TM)\)", "", info.get("cpu", "unknown model"))
    return f"CPU ({cpu}, {info.get('threads', '?')} threads)"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"{path.name}: not a readable JSON file ({type(e).__name__}: {first})") from None
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict) or "device" not in data["info"]:
        raise ValueError(f"{path.name}: not a bench_backselect.py result (no info.device)")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path.name}: schema {data.get('schema')!r}, not {SCHEMA} (written by another version of "
                         "bench_backselect.py)")
    for s in SECTIONS:
        kind = list if s in _LISTS else dict
        if s in data and not isinstance(data[s], kind):
            raise ValueError(f"{path.name}: section '{s}' is not a JSON {'array' if kind is list else 'object'}")
    return data


def load_results(folder: str | Path = RESULTS) -> dict[str, dict]:
    """Every ``backselect-*.json`` of ``folder`` (a relative path is taken from the working directory),
    keyed by device label, smoke runs only where no other file exists. Each value is the file's JSON
    with ``file`` (its name), ``path`` and ``smoke`` added."""
    folder = Path(folder)
    paths = sorted(folder.glob("backselect-*.json"))
    if not paths:
        raise FileNotFoundError(f"no backselect-*.json in {folder}: run benchmarks/bench_backselect.py")
    data = {p: _read(p) for p in paths}
    smoke = {p: p.stem.endswith("-smoke") or bool(d.get("smoke")) for p, d in data.items()}
    out = {}
    for p in [p for p in paths if not smoke[p]] or paths:
        label = device_label(data[p]["info"]) + (" [smoke run]" if smoke[p] else "")
        if label in out:
            label += f" [{p.name}]"
        out[label] = {**data[p], "file": p.name, "path": str(p), "smoke": smoke[p]}
    return out


def files(results: dict) -> pd.DataFrame:
    """One row per file read: device, file, torch, threads, wall hours, 1-min load average at start and end."""
    rows = []
    for label, d in results.items():
        info = d["info"]
        load = [info.get(k, [math.nan])[0] for k in ("loadavg_start", "loadavg_end")]
        rows.append({"device": label, "file": d["file"], "smoke": d["smoke"], "torch": info.get("torch"),
                     "threads": info.get("threads"), "wall_h": info.get("wall_s", math.nan) / 3600,
                     "load_start": load[0], "load_end": load[1],
                     "sections": ", ".join(s for s in SECTIONS if s in d)})
    return pd.DataFrame(rows)


def file_dates(results: dict) -> dict[str, tuple[str, str] | None]:
    """Per device, the dates (YYYY-MM-DD) of the first and the last commit that wrote its file, from
    git; None where its history is not available (no git, no repository, an uncommitted file, or a
    shallow clone, whose one commit would date every file)."""
    out = {}
    for label, d in results.items():
        path = Path(d.get("path", d["file"]))

        def git(*args):
            done = subprocess.run(["git", *args], cwd=path.parent, capture_output=True, text=True, timeout=20)
            return done.stdout.split() if done.returncode == 0 else []
        try:
            full = git("rev-parse", "--is-shallow-repository") == ["false"]
            dates = git("log", "--follow", "--format=%cs", "--", path.name) if full else []
        except (OSError, subprocess.SubprocessError):
            dates = []
        out[label] = (dates[-1], dates[0]) if dates else None
    return out


def shared_cpu(d: dict) -> bool:
    """Whether a file says its CPU was shared with other jobs: a note flagged ``shared_cpu``, or a 1-min
    load average above the threads it used."""
    info = d["info"]
    load = max((info.get(k, [0])[0] for k in ("loadavg_start", "loadavg_end")), default=0)
    return any(n.get("shared_cpu") for n in d.get("notes", [])) or \
        (info["device"] == "cpu" and load > info.get("threads", math.inf))


def caveats(results: dict) -> dict[str, list[str]]:
    """Per device, what its file says about its own numbers: a smoke run, and every note about a shared
    CPU (or, without such a note, a 1-min load average above the threads used)."""
    out = {}
    for label, d in results.items():
        info, notes = d["info"], [n["text"] for n in d.get("notes", []) if n.get("shared_cpu")]
        load = max((info.get(k, [0])[0] for k in ("loadavg_start", "loadavg_end")), default=0)
        if not notes and info["device"] == "cpu" and load > info.get("threads", math.inf):
            notes.append(f"1-min load average up to {load:.1f} with {info['threads']} threads: the CPU was shared, "
                         "absolute rates are depressed")
        if d["smoke"]:
            notes.insert(0, "smoke run (--smoke): tiny models and sizes to check the wiring, not a speed measurement")
        if notes:
            out[label] = notes
    return out


def missing(results: dict, section: str) -> list[str]:
    """One line per device whose file lacks ``section``, saying why it may."""
    return [f"{label} (`{d['file']}`) has no `{section}` section: {SECTIONS.get(section, 'not measured')}."
            for label, d in results.items() if section not in d]


def _sections(results: dict, section: str):
    for label, d in results.items():
        if section in d:
            yield label, d["file"], d[section]


@contextmanager
def _parsing(file: str, section: str):
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise ValueError(f"{file}: section '{section}' is malformed ({type(e).__name__}: {e})") from None


_TEXT = {"device", "model", "best_plain", "method", "setting", "dataset", "arch", "profile", "chosen_m_rule",
         "chosen_m_reason", "shape", "model_key", "fold_setting", "folded", "eff_folded", "fid_folded"}


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """The rows as a table; without rows, empty numeric columns (so that sorting and ranges still work)."""
    df = pd.DataFrame(rows, columns=columns)
    return df if rows else df.astype({c: float for c in columns if c not in _TEXT})


def setting(run: dict) -> tuple[str, str, float]:
    """(method, setting, parameter) of a run record: ``{"method": "pruned", "m": 16}`` ->
    ('pruned', 'm=16', 16.0); ``{"method": "exact"}`` -> ('exact', '', nan)."""
    for name in ("m", "k"):
        if name in run:
            return run["method"], f"{name}={run[name]}", float(run[name])
    return run["method"], "", math.nan


# ----------------------------------------------------------------------------- tables

def exact_vs_reference(results: dict) -> pd.DataFrame:
    """Exact BackSelect against a per-image implementation shaped like the reference ``sis.py`` (one
    image at a time, masks in NumPy, batches of 128), same model, images and steps: whether the orders
    agree, forward evaluations/s of each, and the engine's speedup over it in NCHW and channels_last.
    ``arch`` and ``shape``: those of the efficiency row of the same file and model name (None if none)."""
    rows = []
    for label, file, sec in _sections(results, "reference_style_baseline"):
        known = {e.get("model"): (e.get("arch"), tuple(e.get("shape", ())))
                 for e in results[label].get("efficiency", [])}
        with _parsing(file, "reference_style_baseline"):
            for r in sec:
                arch, shape = known.get(r["model"], (None, None))
                rows.append({"device": label, "threads": r["threads"], "model": r["model"], "arch": arch,
                             "shape": shape, "images": r["images"],
                             "steps": r["steps_timed"], "same_order": bool(r["same_order"]),
                             "engine_evals_s": r["engine_evals_s"],
                             "reference_evals_s": r["reference_nchw_evals_s"],
                             "reference_cl_evals_s": r["reference_channels_last_evals_s"],
                             "speedup": r["speedup_vs_reference_nchw"],
                             "speedup_cl": r["speedup_vs_reference_channels_last"]})
    return _frame(rows, ["device", "threads", "model", "arch", "shape", "images", "steps", "same_order",
                         "engine_evals_s", "reference_evals_s", "reference_cl_evals_s", "speedup", "speedup_cl"])


@functools.lru_cache(maxsize=None)
def macs(arch: str, shape: tuple, width: int | None) -> int:
    """Multiply-adds of one forward pass of ``arch`` (``width`` initial filters, None: the paper's) on one
    input of ``shape`` (C, H, W), 10 classes (:func:`overinterp.zoo.models.count_macs`)."""
    return count_macs(build_model(arch, shape[0], 10, width), tuple(shape))


def initial_filters(arch: str, width: int | None) -> int:
    """``width``, or where it is None the paper's initial filters of ``arch`` (the default of its class)."""
    return width if width is not None else inspect.signature(ARCHS[arch]).parameters["width"].default


def _full_exact(features: int) -> int:
    """Forward passes of a full exact BackSelect of one image of ``features`` features: F(F+1)/2."""
    return features * (features + 1) // 2


def efficiency(results: dict) -> pd.DataFrame:
    """Exact BackSelect's forward evaluations/s over plain batched inference images/s of the same randomly
    initialised model, the two timed alternately ``rounds`` times in one run: per round the ratio, and
    over rounds its median (the efficiency: each ratio compares two timings taken back to back, under
    the same load), min and max; the median plain and engine rates; the seconds of a full exact run of
    one image (P(P+1)/2 forwards) at the fastest and the slowest engine round; the plain rate's min and
    max over rounds. Also the model's initial
    filters (``width``), whether the engine folded batch norms (``folded``, see
    :data:`FOLDED_WHEN_UNRECORDED`), and the benchmark's ``ratio_of_bests`` (the fastest engine round
    over the fastest plain rate anywhere in the run, its batch-size sweep included: taken at other
    moments, so not the chapter's efficiency); ``plain_img_s`` and ``engine_evals_s`` are those bests."""
    rows = []
    for label, file, sec in _sections(results, "efficiency"):
        with _parsing(file, "efficiency"):
            for r in sec:
                ratios = [x["ratio"] for x in r["rounds"]]
                engine = [x["engine_evals_s"] for x in r["rounds"]]
                evals = _full_exact(r["shape"][1] * r["shape"][2])
                rows.append({"device": label, "threads": r["threads"], "model": r["model"], "arch": r["arch"],
                             "shape": tuple(r["shape"]), "width": initial_filters(r["arch"], r.get("width")),
                             "folded": bool(r.get("engine_config", {}).get(
                                 "fuse", FOLDED_WHEN_UNRECORDED["efficiency"])),
                             "best_plain": r["best_plain_config"],
                             "plain_img_s": max([x["plain_img_s"] for x in r["rounds"]] +
                                                [r["plain_sweep_img_s"][r["best_plain_config"]]]),
                             "engine_evals_s": max(engine),
                             "plain_median": statistics.median(x["plain_img_s"] for x in r["rounds"]),
                             "plain_min": min(x["plain_img_s"] for x in r["rounds"]),
                             "plain_max": max(x["plain_img_s"] for x in r["rounds"]),
                             "engine_median": statistics.median(engine), "engine_min": min(engine),
                             "ratio_median": r["ratio_median"], "ratio_min": min(ratios), "ratio_max": max(ratios),
                             "ratio_of_bests": r["ratio_of_bests"], "rounds": len(ratios), "images": r["images"],
                             "steps": r["steps_timed"], "exact_s_per_image": r["exact_s_per_image"],
                             "exact_s_fastest": evals / max(engine), "exact_s_slowest": evals / min(engine)})
    return _frame(rows, ["device", "threads", "model", "arch", "shape", "width", "folded", "best_plain",
                         "plain_img_s", "engine_evals_s", "plain_median", "plain_min", "plain_max", "engine_median",
                         "engine_min", "ratio_median", "ratio_min", "ratio_max", "ratio_of_bests", "rounds", "images",
                         "steps", "exact_s_per_image", "exact_s_fastest", "exact_s_slowest"])


def fusion(results: dict) -> pd.DataFrame:
    """Batch norms folded into the convolutions against the model as trained (section ``fusion``): per
    trained model (``model_key``) and method, the speedup of the folded engine per round (the two timed
    alternately) as median, min and max, and the benchmark's ``speedup_of_bests``."""
    rows = []
    for label, file, sec in _sections(results, "fusion"):
        with _parsing(file, "fusion"):
            for r in sec:
                method, set_, param = setting(r)
                per = r["speedups_per_round"]
                rows.append({"device": label, "arch": r["arch"], "model_key": r.get("model_key"), "method": method,
                             "setting": set_, "images": r["images"], "rounds": len(per),
                             "speedup_median": statistics.median(per), "speedup_min": min(per),
                             "speedup_max": max(per), "speedup_of_bests": r["speedup_of_bests"]})
    return _frame(rows, ["device", "arch", "model_key", "method", "setting", "images", "rounds", "speedup_median",
                         "speedup_min", "speedup_max", "speedup_of_bests"])


def exact_check(results: dict) -> pd.DataFrame:
    """The fidelity section's measured exact run against what the efficiency section predicts for it:
    per device and efficiency thread count, the efficiency rows of the fidelity model's architecture and
    input shape give the seconds of a full exact run of the fidelity section's images (F(F+1)/2
    forwards, F features) at the fastest and the slowest engine round (``s_fast``, ``s_slow``); those
    seconds scaled by the multiply-adds of the fidelity model over the efficiency model's (their initial
    filters differ: ``eff_width``, ``fid_width`` from the fidelity model's profile) (``scaled_*``); and,
    where the fidelity engine folded batch norms and the efficiency engine did not
    (:data:`FOLDED_WHEN_UNRECORDED`), divided by the median per-round speedup of folding measured on the
    fidelity model with ``pruned`` (like exact, mostly forward passes; :func:`fusion`) (``folded_*``;
    NaN where the file has no such measurement). ``measured``: exact's seconds per image in the
    fidelity section, at ``fid_threads``; ``plain_median``, ``plain_slow``, ``plain_fast``: the
    efficiency row's median, slowest and fastest plain rate over its rounds."""
    rows = []
    eff, fus = efficiency(results), fusion(results)
    for label, file, sec in _sections(results, "fidelity"):
        with _parsing(file, "fidelity"):
            src, info = sec["source"], results[label]["info"]
            block = sec.get("block", 1)
            features = math.ceil(sec["shape"][1] / block) * math.ceil(sec["shape"][2] / block)
            fid_width = initial_filters(src["arch"], get_profile(src["profile"]).width(src["arch"]))
            fid_macs = macs(src["arch"], tuple(sec["shape"]), fid_width)
            fid_folded = bool(sec.get("fuse", FOLDED_WHEN_UNRECORDED["fidelity"]))
            measured = next(r for r in sec["runs"] if r["method"] == "exact")["s_per_image"]
            f = fus[(fus["device"] == label) & (fus["arch"] == src["arch"]) & (fus["method"] == "pruned")]
            if src.get("key") is not None and f["model_key"].notna().any():
                f = f[f["model_key"] == src["key"]]
            same = eff[(eff["device"] == label) & (eff["arch"] == src["arch"]) &
                       eff["shape"].map(lambda shape: shape == tuple(sec["shape"])).astype(bool)]
            for _, e in same.iterrows():
                eff_macs = macs(e["arch"], e["shape"], e["width"])
                fold = 1.0 if fid_folded == e["folded"] else math.nan if f.empty else \
                    float(f["speedup_median"].iloc[0]) ** (1 if fid_folded else -1)
                s_fast = _full_exact(features) / e["engine_evals_s"]
                s_slow = _full_exact(features) / e["engine_min"]
                ratio = fid_macs / eff_macs
                rows.append({"device": label, "threads": e["threads"], "arch": src["arch"],
                             "shape": tuple(sec["shape"]),
                             "eff_width": e["width"], "fid_width": fid_width, "eff_macs": eff_macs,
                             "fid_macs": fid_macs, "macs_ratio": ratio, "eff_folded": e["folded"],
                             "fid_folded": fid_folded, "fold_speedup": fold,
                             "fold_rounds": math.nan if f.empty else float(f["rounds"].iloc[0]),
                             "fold_setting": "" if f.empty else f["setting"].iloc[0],
                             "engine_fast": e["engine_evals_s"], "engine_slow": e["engine_min"],
                             "plain_median": e["plain_median"], "plain_slow": e["plain_min"],
                             "plain_fast": e["plain_max"],
                             "s_fast": s_fast, "s_slow": s_slow,
                             "scaled_fast": s_fast * ratio, "scaled_slow": s_slow * ratio,
                             "folded_fast": s_fast * ratio / fold, "folded_slow": s_slow * ratio / fold,
                             "measured": measured, "evals": _full_exact(features),
                             "fid_threads": info.get("threads_fidelity_projections", info.get("threads")),
                             "fid_images": sec["images"]})
    return _frame(rows, ["device", "threads", "arch", "shape", "eff_width", "fid_width", "eff_macs", "fid_macs",
                         "macs_ratio", "eff_folded", "fid_folded", "fold_speedup", "fold_rounds", "fold_setting",
                         "engine_fast", "engine_slow", "plain_median", "plain_slow", "plain_fast", "s_fast", "s_slow",
                         "scaled_fast", "scaled_slow", "folded_fast", "folded_slow", "measured", "evals",
                         "fid_threads", "fid_images"])


def fidelity_context(results: dict) -> pd.DataFrame:
    """Per device, what the fidelity section ran on: the trained model, images, feature block, the
    model's test accuracy, accuracy on the full and on random 5% versions of those images, the m
    the benchmark chose for ``pruned`` and its rule."""
    rows = []
    for label, file, sec in _sections(results, "fidelity"):
        with _parsing(file, "fidelity"):
            src = sec["source"]
            rows.append({"device": label, "dataset": src["dataset"], "arch": src["arch"], "profile": src["profile"],
                         "model_key": src.get("key"),
                         "selection": sec.get("selection"),
                         "images": sec["images"], "block": sec.get("block", 1),
                         "test_acc": sec.get("test_acc"), "full_acc": sec["full_images"]["acc"],
                         "random_5pct_acc": sec.get("random_5pct", {}).get("acc"), "chosen_m": sec.get("chosen_m"),
                         "chosen_m_rule": sec.get("chosen_m_rule", ""), "chosen_m_reason": sec.get("chosen_m_reason", "")})
    return _frame(rows, ["device", "dataset", "arch", "profile", "model_key", "selection", "images", "block", "test_acc", "full_acc",
                         "random_5pct_acc", "chosen_m", "chosen_m_rule", "chosen_m_reason"])


def fidelity(results: dict) -> pd.DataFrame:
    """``gradient`` (S5, k features per step) and ``pruned`` (m candidates per step) against ``exact``
    on the same trained model's test images (:func:`fidelity_context`): measured s/image and the speedup
    over exact; per tau the mean SIS size over exact's on images where both find one
    (``size_ratio_tau<t>``); whether every SIS was verified (f >= tau); IoU of the 5% subsets with
    exact's; accuracy (fraction) and confidence on the 5% subsets."""
    rows, taus = [], []
    for label, file, sec in _sections(results, "fidelity"):
        with _parsing(file, "fidelity"):
            exact_s = next(r for r in sec["runs"] if r["method"] == "exact")["s_per_image"]
            for r in sec["runs"]:
                method, set_, param = setting(r)
                row = {"device": label, "method": method, "setting": set_, "param": param,
                       "s_per_image": r["s_per_image"], "speedup_vs_exact": exact_s / r["s_per_image"],
                       "iou_5pct": r.get("iou_5pct_with_exact", math.nan),
                       "overlap_5pct": r.get("overlap_5pct_with_exact", math.nan),
                       "acc_5pct": r["subset_5pct"]["acc"], "confidence_5pct": r["subset_5pct"]["confidence"]}
                verified = []
                for s in r["sis"]:
                    taus.append(s["tau"])
                    ratio = s.get("mean_size_ratio_vs_exact")
                    row[f"size_ratio_tau{s['tau']:g}"] = math.nan if ratio is None else ratio
                    verified.append(bool(s["all_verified_f_ge_tau"]))
                row["verified"] = all(verified)
                rows.append(row)
    ratio_cols = [f"size_ratio_tau{t:g}" for t in sorted(set(taus))]
    return _frame(rows, ["device", "method", "setting", "param", "s_per_image", "speedup_vs_exact",
                         *ratio_cols, "verified", "iou_5pct", "overlap_5pct", "acc_5pct",
                         "confidence_5pct"])


def claim_measures(results: dict, tau: float = 0.99) -> pd.DataFrame:
    """C1 and C2 of the chapter "Why it holds or fails here" per method of the fidelity section,
    exact included: the mean SIS size at ``tau`` (% of the pixels, over the images where the method
    finds one) and the accuracy (%) on the 5% subsets beside the full images'. The only exact
    backward selection the CPU profiles have (:func:`fidelity_context` names the model)."""
    rows = []
    for label, file, sec in _sections(results, "fidelity"):
        with _parsing(file, "fidelity"):
            pixels = sec["shape"][1] * sec["shape"][2] * sec.get("block", 1) ** 2
            for r in sec["runs"]:
                method, set_, _ = setting(r)
                sis = {f"{s['tau']:g}": s for s in r["sis"]}.get(f"{tau:g}", {})
                rows.append({"device": label, "method": method, "setting": set_,
                             "confident images": sis.get("images_with_sis", 0),
                             "SIS size (% of pixels)": 100 * sis.get("mean_size", math.nan) / pixels,
                             "full images (%)": 100 * sec["full_images"]["acc"],
                             "own BS subsets (%)": 100 * r["subset_5pct"]["acc"]})
    return _frame(rows, ["device", "method", "setting", "confident images", "SIS size (% of pixels)",
                         "full images (%)", "own BS subsets (%)"])


def exact_facts(results: dict, tau: float = 0.99, bound: float = 5.0, source_key: str | None = None,
                sample: dict | None = None) -> dict[str, str]:
    """What the chapter "Why it holds or fails here" says of :func:`claim_measures`: the benchmark's
    model (by its display name) and images, exact's C1 and C2 measures and those of its coarsest gradient setting, whether
    exact's mean SIS is above or below ``bound`` (% of pixels), and whether the benchmark ran the
    chapter's model (its artifact key equals ``source_key``) on the first images of the chapter's
    ``sample`` (a :meth:`overinterp.zoo.data.Selection.key`). "—" where a file lacks them."""
    bench = claim_measures(results, tau)
    keys = ("images", "dataset", "arch", "profile", "acc", "n", "exact_sis", "coarse", "coarse_sis", "bound",
            "full", "exact_acc", "coarse_acc", "relation")
    if bench.empty or not (bench["method"] == "exact").any():
        return dict.fromkeys(keys, "—")
    ctx = fidelity_context(results).iloc[0]
    exact = bench[bench["method"] == "exact"].iloc[0]
    grad = bench[bench["method"] == "gradient"]
    coarse = grad.iloc[-1] if len(grad) else exact
    size = exact["SIS size (% of pixels)"]
    pct = lambda v: "—" if math.isnan(v) else f"{v:.1f}"  # no SIS at this tau in the file: no number
    return {"images": f"{ctx['images']:.0f}", "dataset": ctx["dataset"], "arch": ARCH_NAMES.get(ctx["arch"], ctx["arch"]),
            "profile": ctx["profile"],
            "acc": f"{100 * ctx['test_acc']:.1f}", "n": f"{exact['confident images']:.0f}", "exact_sis": pct(size),
            "coarse": f"{coarse['method']} {coarse['setting']}".strip(),
            "coarse_sis": pct(coarse["SIS size (% of pixels)"]),
            "bound": "—" if math.isnan(size) else "above" if size > bound else "below",
            "full": f"{exact['full images (%)']:.1f}", "exact_acc": f"{exact['own BS subsets (%)']:.1f}",
            "coarse_acc": f"{coarse['own BS subsets (%)']:.1f}",
            "relation": _relation(ctx, source_key, sample)}


def _relation(ctx, source_key: str | None, sample: dict | None) -> str:
    """How the fidelity section's model and images relate to a chapter's (:func:`exact_facts`)."""
    if not source_key or ctx["model_key"] != source_key:
        return "not this chapter's source model (another artifact key), so its numbers sit beside the sweep"
    sel = ctx["selection"] if isinstance(ctx["selection"], dict) else {}
    same = bool(sample) and all(sel.get(k) == sample.get(k) for k in ("dataset", "set", "n", "seed")) and \
        sel.get("index") is not None and list(sel["index"]) == list(sample.get("index") or [])[:len(sel["index"])]
    return ("this chapter's source model itself (the same artifact key), on the first "
            f"{ctx['images']:.0f} images of its sample" if same else
            "this chapter's source model itself (the same artifact key), on other images than its sample")


def projections(results: dict) -> pd.DataFrame:
    """Projected wall time of a full backward selection of every image of a dataset, per method:
    exact from its measured forward rate (P(P+1)/2 forwards per image), pruned and gradient from a
    few timed lockstep steps of a batch scaled to a full run (for pruned an upper bound)."""
    rows = []
    for label, file, sec in _sections(results, "projections"):
        with _parsing(file, "projections"):
            for w in sec:
                for r in w["runs"]:
                    method, set_, param = setting(r)
                    rows.append({"device": label, "dataset": w["dataset"], "arch": w["arch"], "images": w["images"],
                                 "batch": w["batch"], "method": method, "setting": set_, "param": param,
                                 "s_per_image": r["s_per_image"], "hours": r["s_per_image"] * w["images"] / 3600})
    return _frame(rows, ["device", "dataset", "arch", "images", "batch", "method", "setting", "param",
                         "s_per_image", "hours"])


def s5(results: dict) -> pd.DataFrame:
    """The paper's S5 figure (first row) beside ours: Batched Gradient BackSelect on 32 images, in
    minutes. Ours, per device: Inception-v3 at the paper's size and k where measured (random weights,
    random inputs: CUDA runs), the trained model of the fidelity section (measured on its test
    images), and the projection workloads (scaled from a few timed steps); each scaled to 32 images
    by its seconds per image. ``closest`` marks, per device, the row nearest the paper's setting:
    measured before projected, then the fewest-steps-apart (the paper: ceil(89401 / 100) = 895).
    ``device``: the device label of our rows (None for the paper's)."""
    p = PAPER_S5
    paper_steps = math.ceil(p["pixels"] / p["k"])
    rows = [{"who": "paper", "device": None, "model": p["model"], "data": p["data"], "features": p["pixels"], "k": p["k"],
             "steps": paper_steps, "images": p["images"], "how": f"quoted ({p['section']})",
             "measured": True, "minutes_32": math.nan, "minutes_32_low": p["minutes"][0],
             "minutes_32_high": p["minutes"][1]}]

    def ours(label, model, data, features, k, images, s_per_image, how, measured):
        m = s_per_image * p["images"] / 60
        rows.append({"who": f"ours ({label})", "device": label, "model": model, "data": data, "features": features, "k": k,
                     "steps": math.ceil(features / k), "images": images, "how": how, "measured": measured,
                     "minutes_32": m, "minutes_32_low": m, "minutes_32_high": m})

    for label, d in results.items():
        if "inception_v3_gradient_sis" in d:
            with _parsing(d["file"], "inception_v3_gradient_sis"):
                r = d["inception_v3_gradient_sis"]
                ours(label, "Inception-v3 (random weights)", f"random inputs, {r['size']}×{r['size']}",
                     r["size"] ** 2, r["k"], r["images"], r["s_per_image"],
                     f"measured, {r['images']} images, BackSelect only", True)
        if "fidelity" in d:
            with _parsing(d["file"], "fidelity"):
                sec, src = d["fidelity"], d["fidelity"]["source"]
                h, w = sec["shape"][1:]
                block = sec.get("block", 1)
                features = math.ceil(h / block) * math.ceil(w / block)
                model = f"{ARCH_NAMES.get(src['arch'], src['arch'])} (trained, {src['profile']})"
                for r in sec["runs"]:
                    if r["method"] == "gradient":
                        ours(label, model, f"{src['dataset']} test, {h}×{w}", features, r["k"],
                             sec["images"], r["s_per_image"], f"measured, {sec['images']} images", True)
        if "projections" in d:
            with _parsing(d["file"], "projections"):
                for wl in d["projections"]:
                    h, w = wl["shape"][1:]
                    for r in wl["runs"]:
                        if r["method"] == "gradient":
                            ours(label, f"{ARCH_NAMES.get(wl['arch'], wl['arch'])} (random weights)",
                                 f"random inputs, {h}×{w}", h * w, r["k"], wl["batch"],
                                 r["s_per_image"], f"projected, batch of {wl['batch']}", False)
    df = pd.DataFrame(rows)
    dist = (df["steps"] / paper_steps).map(lambda x: abs(math.log(x)))
    df["closest"] = False
    for who, g in df[df["who"] != "paper"].groupby("who", sort=False):
        best = min(g.index, key=lambda i: (not g.at[i, "measured"], dist[i]))
        df.loc[best, "closest"] = True
    return df
