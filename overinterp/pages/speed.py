"""How fast is backward selection? The engine benchmark's result files, read into tables (paper 3.3, S5).

``benchmarks/bench_backselect.py`` writes one JSON file per device into ``benchmarks/results/``
(``backselect-<device>.json``, ``"schema": 2``: every measured case a record whose fields say what it
is, never a name to parse). This module only reads them, for the chapter "How fast is backward
selection?" (``book/13_speed``), into tidy numeric tables, one row per device and measured case:
:func:`files` (what each file is), :func:`exact_vs_reference`, :func:`efficiency`, :func:`fusion`,
:func:`exact_check`, :func:`fidelity` with :func:`fidelity_context`, :func:`projections` and :func:`s5`
(the paper's S5 figure, :data:`overinterp.paper.numbers.PAPER_S5`, beside ours). The values glued into
the chapter and its displayed tables are :mod:`overinterp.pages.speed_display`.

Every ``backselect-*.json`` of the folder is read, labelled by the device that produced it; smoke runs
(``--smoke``) only where no other file exists. A file that is not a result of this schema raises a
one-line ``ValueError`` naming it; a section a file lacks is skipped (:func:`files` lists them).
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
from overinterp.paper.formatting import MISSING
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5
from overinterp.zoo.models import ARCHS, build_model, count_macs

__all__ = ["RESULTS", "SCHEMA", "SECTIONS", "FOLDED_WHEN_UNRECORDED", "device_label", "load_results", "files",
           "file_dates", "shared_cpu", "setting", "exact_vs_reference", "efficiency", "fusion", "exact_check",
           "macs", "initial_filters", "fidelity", "fidelity_context", "projections", "s5", "claim_measures",
           "exact_facts"]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
SCHEMA = 2  # the structure of the result files that this module reads (bench_backselect.SCHEMA)

#: the sections of a result file (:func:`files` lists those a file lacks), and those that are JSON arrays
SECTIONS = ("efficiency", "reference_style_baseline", "fidelity", "projections", "inception_v3_gradient_sis")
_LISTS = ("efficiency", "reference_style_baseline", "projections", "fusion")

#: whether a section's engine folded batch norms into the convolutions (models.fuse_conv_bn), for files
#: that do not record it (``engine_config.fuse`` of an efficiency row, ``fuse`` of the fidelity section).
#: The committed backselect-cpu.json records neither: its efficiency rows were measured by an engine
#: that did not fold batch norms, and its fidelity section by one that did.
FOLDED_WHEN_UNRECORDED = {"efficiency": False, "fidelity": True}


# ----------------------------------------------------------------------------- loading

def device_label(info: dict) -> str:
    """What produced a file: the GPU's name, or 'CPU (<model>, <n> threads)'."""
    if str(info["device"]).startswith("cuda"):
        return info.get("gpu") or str(info["device"])
    cpu = re.sub(r"\((R|TM)\)", "", info.get("cpu", "unknown model"))
    n = info.get("threads", "?")
    return f"CPU ({cpu}, {n} thread{'' if n == 1 else 's'})"


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
    """Every ``backselect-*.json`` of ``folder`` (relative: from the working directory), keyed by device
    label, smoke runs only where no other file exists; each value is the file's JSON with ``file`` (its
    name), ``path`` and ``smoke`` added."""
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


def shared_cpu(d: dict) -> bool:
    """Whether a file says its CPU was shared with other jobs: a note flagged ``shared_cpu``, or a 1-min
    load average above the threads it used."""
    info = d["info"]
    load = max((info.get(k, [0])[0] for k in ("loadavg_start", "loadavg_end")), default=0)
    return any(n.get("shared_cpu") for n in d.get("notes", [])) or \
        (info["device"] == "cpu" and load > info.get("threads", math.inf))


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


def files(results: dict) -> pd.DataFrame:
    """One row per file read: device, file, torch, threads, hours of benchmarking, the dates of the first
    and the last commit that wrote it (:func:`file_dates`), the 1-min load average at its start and end,
    whether its CPU was shared (:func:`shared_cpu`), whether it is a smoke run, the sections it lacks."""
    dates, rows = file_dates(results), []
    for label, d in results.items():
        info, (first, last) = d["info"], dates.get(label) or (None, None)
        rows.append({"device": label, "file": d["file"], "torch": info.get("torch"), "threads": info.get("threads"),
                     "wall_h": info.get("wall_s", math.nan) / 3600, "first_commit": first, "last_commit": last,
                     "load_start": info.get("loadavg_start", [math.nan])[0],
                     "load_end": info.get("loadavg_end", [math.nan])[0], "shared_cpu": shared_cpu(d),
                     "smoke": d["smoke"], "missing": ", ".join(s for s in SECTIONS if s not in d) or MISSING})
    return pd.DataFrame(rows)


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


_TEXT = {"device", "model", "method", "setting", "dataset", "arch", "profile", "chosen_m_rule", "chosen_m_reason",
         "shape", "model_key", "fold_setting", "folded", "eff_folded", "fid_folded"}


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


def _full_exact(features: int) -> int:
    """Forward passes of a full exact BackSelect of one image of ``features`` features: F(F+1)/2."""
    return features * (features + 1) // 2


# ----------------------------------------------------------------------------- exact: reference, efficiency, check

def exact_vs_reference(results: dict) -> pd.DataFrame:
    """Exact BackSelect against a per-image implementation shaped like the reference ``sis.py`` (one
    image at a time, masks in NumPy, batches of 128), same model, images and steps: whether the orders
    agree, forward evaluations/s of each, and the engine's speedup in NCHW and channels_last. ``arch``
    and ``shape``: those of the efficiency row of the same file and model name (None if none)."""
    rows = []
    for label, file, sec in _sections(results, "reference_style_baseline"):
        known = {e.get("model"): (e.get("arch"), tuple(e.get("shape", ())))
                 for e in results[label].get("efficiency", [])}
        with _parsing(file, "reference_style_baseline"):
            for r in sec:
                arch, shape = known.get(r["model"], (None, None))
                rows.append({"device": label, "threads": r["threads"], "model": r["model"], "arch": arch,
                             "shape": shape, "images": r["images"], "steps": r["steps_timed"],
                             "same_order": bool(r["same_order"]), "engine_evals_s": r["engine_evals_s"],
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


def efficiency(results: dict) -> pd.DataFrame:
    """Exact BackSelect's forward evaluations/s over plain batched inference images/s of the same randomly
    initialised model, timed alternately ``rounds`` times in one run: the ratio's median over rounds (the
    efficiency: each ratio compares two timings taken back to back), min and max; the plain and engine
    rates' median, min and max over rounds (``engine_evals_s``: the fastest engine round); the seconds of
    a full exact run of one image (P(P+1)/2 forwards) at the fastest and the slowest engine round; the
    model's initial filters (``width``); whether the engine folded batch norms (``folded``,
    :data:`FOLDED_WHEN_UNRECORDED`); the benchmark's ``ratio_of_bests`` (the fastest engine round over the
    fastest plain rate anywhere in the run, its batch-size sweep included: other moments, other loads)."""
    rows = []
    for label, file, sec in _sections(results, "efficiency"):
        with _parsing(file, "efficiency"):
            for r in sec:
                ratios = [x["ratio"] for x in r["rounds"]]
                engine = [x["engine_evals_s"] for x in r["rounds"]]
                plain = [x["plain_img_s"] for x in r["rounds"]]
                evals = _full_exact(r["shape"][1] * r["shape"][2])
                rows.append({"device": label, "threads": r["threads"], "model": r["model"], "arch": r["arch"],
                             "shape": tuple(r["shape"]), "width": initial_filters(r["arch"], r.get("width")),
                             "folded": bool(r.get("engine_config", {}).get(
                                 "fuse", FOLDED_WHEN_UNRECORDED["efficiency"])),
                             "plain_median": statistics.median(plain), "plain_min": min(plain),
                             "plain_max": max(plain), "engine_evals_s": max(engine),
                             "engine_median": statistics.median(engine), "engine_min": min(engine),
                             "ratio_median": r["ratio_median"], "ratio_min": min(ratios), "ratio_max": max(ratios),
                             "ratio_of_bests": r["ratio_of_bests"], "rounds": len(ratios), "images": r["images"],
                             "steps": r["steps_timed"], "exact_s_fastest": evals / max(engine),
                             "exact_s_slowest": evals / min(engine)})
    return _frame(rows, ["device", "threads", "model", "arch", "shape", "width", "folded", "plain_median",
                         "plain_min", "plain_max", "engine_evals_s", "engine_median", "engine_min", "ratio_median",
                         "ratio_min", "ratio_max", "ratio_of_bests", "rounds", "images", "steps", "exact_s_fastest",
                         "exact_s_slowest"])


def fusion(results: dict) -> pd.DataFrame:
    """Batch norms folded into the convolutions against the model as trained (section ``fusion``): per
    trained model (``model_key``) and method, the folded engine's speedup per round (the two timed
    alternately) as median, min and max, and the benchmark's ``speedup_of_bests``."""
    rows = []
    for label, file, sec in _sections(results, "fusion"):
        with _parsing(file, "fusion"):
            for r in sec:
                method, set_, _ = setting(r)
                per = r["speedups_per_round"]
                rows.append({"device": label, "arch": r["arch"], "model_key": r.get("model_key"), "method": method,
                             "setting": set_, "images": r["images"], "rounds": len(per),
                             "speedup_median": statistics.median(per), "speedup_min": min(per),
                             "speedup_max": max(per), "speedup_of_bests": r["speedup_of_bests"]})
    return _frame(rows, ["device", "arch", "model_key", "method", "setting", "images", "rounds", "speedup_median",
                         "speedup_min", "speedup_max", "speedup_of_bests"])


def exact_check(results: dict) -> pd.DataFrame:
    """The fidelity section's measured exact run against what the efficiency section predicts for it, per
    device and efficiency row of the fidelity model's architecture and input shape: a full exact run of
    one image (F(F+1)/2 forwards) at the fastest and the slowest engine round (``s_fast``, ``s_slow``);
    scaled by the fidelity model's multiply-adds over the efficiency model's (their initial filters
    differ: ``eff_width``, ``fid_width``) (``scaled_*``); and, where one engine folded batch norms and
    the other did not (:data:`FOLDED_WHEN_UNRECORDED`), divided by folding's median per-round speedup
    on the fidelity model with ``pruned`` (like exact, mostly forward passes; :func:`fusion`)
    (``folded_*``; NaN without that measurement). ``measured``: exact's seconds per image in the
    fidelity section, at ``fid_threads``; ``plain_*``: the efficiency row's plain rates."""
    rows = []
    eff, fus, fid = efficiency(results), fusion(results), fidelity(results)
    for _, c in fidelity_context(results).iterrows():
        label, arch = c["device"], c["arch"]
        fid_width = initial_filters(arch, get_profile(c["profile"]).width(arch))
        fid_macs, evals = macs(arch, c["shape"], fid_width), _full_exact(c["features"])
        measured = fid.loc[(fid["device"] == label) & (fid["method"] == "exact"), "s_per_image"].iloc[0]
        f = fus[(fus["device"] == label) & (fus["arch"] == arch) & (fus["method"] == "pruned")]
        if c["model_key"] is not None and f["model_key"].notna().any():
            f = f[f["model_key"] == c["model_key"]]
        same = eff[(eff["device"] == label) & (eff["arch"] == arch) &
                   eff["shape"].map(lambda shape: shape == c["shape"]).astype(bool)]
        for _, e in same.iterrows():
            eff_macs = macs(arch, e["shape"], e["width"])
            fold = 1.0 if c["folded"] == e["folded"] else math.nan if f.empty else \
                float(f["speedup_median"].iloc[0]) ** (1 if c["folded"] else -1)
            s_fast, s_slow, ratio = evals / e["engine_evals_s"], evals / e["engine_min"], fid_macs / eff_macs
            rows.append({"device": label, "threads": e["threads"], "arch": arch, "shape": c["shape"],
                         "eff_width": e["width"], "fid_width": fid_width, "eff_macs": eff_macs, "fid_macs": fid_macs,
                         "macs_ratio": ratio, "eff_folded": e["folded"], "fid_folded": c["folded"],
                         "fold_speedup": fold, "fold_rounds": math.nan if f.empty else float(f["rounds"].iloc[0]),
                         "fold_setting": "" if f.empty else f["setting"].iloc[0],
                         "engine_fast": e["engine_evals_s"], "engine_slow": e["engine_min"],
                         "plain_median": e["plain_median"], "plain_slow": e["plain_min"], "plain_fast": e["plain_max"],
                         "s_fast": s_fast, "s_slow": s_slow, "scaled_fast": s_fast * ratio,
                         "scaled_slow": s_slow * ratio, "folded_fast": s_fast * ratio / fold,
                         "folded_slow": s_slow * ratio / fold, "measured": measured, "evals": evals,
                         "fid_threads": c["threads"], "fid_images": c["images"]})
    return _frame(rows, ["device", "threads", "arch", "shape", "eff_width", "fid_width", "eff_macs", "fid_macs",
                         "macs_ratio", "eff_folded", "fid_folded", "fold_speedup", "fold_rounds", "fold_setting",
                         "engine_fast", "engine_slow", "plain_median", "plain_slow", "plain_fast", "s_fast", "s_slow",
                         "scaled_fast", "scaled_slow", "folded_fast", "folded_slow", "measured", "evals",
                         "fid_threads", "fid_images"])


# ----------------------------------------------------------------------------- the approximations

def fidelity_context(results: dict) -> pd.DataFrame:
    """Per device, what the fidelity section ran on: the trained model, images, their ``shape`` (C, H, W)
    and ``features`` per image (blocks of ``block`` pixels), the threads, whether the engine folded batch
    norms (:data:`FOLDED_WHEN_UNRECORDED`), the model's test accuracy, accuracy on the full and on random
    5% versions of those images, the m the benchmark chose for ``pruned``, its rule and the reason."""
    rows = []
    for label, file, sec in _sections(results, "fidelity"):
        with _parsing(file, "fidelity"):
            src, info, block = sec["source"], results[label]["info"], sec.get("block", 1)
            rows.append({"device": label, "dataset": src["dataset"], "arch": src["arch"], "profile": src["profile"],
                         "model_key": src.get("key"), "selection": sec.get("selection"), "images": sec["images"],
                         "shape": tuple(sec["shape"]), "block": block,
                         "features": math.ceil(sec["shape"][1] / block) * math.ceil(sec["shape"][2] / block),
                         "threads": info.get("threads_fidelity_projections", info.get("threads")),
                         "folded": bool(sec.get("fuse", FOLDED_WHEN_UNRECORDED["fidelity"])),
                         "test_acc": sec.get("test_acc"), "full_acc": sec["full_images"]["acc"],
                         "random_5pct_acc": sec.get("random_5pct", {}).get("acc"), "chosen_m": sec.get("chosen_m"),
                         "chosen_m_rule": sec.get("chosen_m_rule", ""),
                         "chosen_m_reason": sec.get("chosen_m_reason", "")})
    return _frame(rows, ["device", "dataset", "arch", "profile", "model_key", "selection", "images", "shape", "block",
                         "features", "threads", "folded", "test_acc", "full_acc", "random_5pct_acc", "chosen_m",
                         "chosen_m_rule", "chosen_m_reason"])


def fidelity(results: dict) -> pd.DataFrame:
    """``gradient`` (S5, k features per step) and ``pruned`` (m candidates per step) against ``exact``
    on the same trained model's test images (:func:`fidelity_context`): s/image and the speedup over
    exact; per tau the mean SIS size over exact's on images where both find one (``size_ratio_tau<t>``);
    whether every SIS was verified (f >= tau); IoU of the 5% subsets with exact's; accuracy (fraction)
    and confidence on them."""
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
                       "acc_5pct": r["subset_5pct"]["acc"], "confidence_5pct": r["subset_5pct"]["confidence"],
                       "verified": all(bool(s["all_verified_f_ge_tau"]) for s in r["sis"])}
                for s in r["sis"]:
                    taus.append(s["tau"])
                    ratio = s.get("mean_size_ratio_vs_exact")
                    row[f"size_ratio_tau{s['tau']:g}"] = math.nan if ratio is None else ratio
                rows.append(row)
    ratio_cols = [f"size_ratio_tau{t:g}" for t in sorted(set(taus))]
    return _frame(rows, ["device", "method", "setting", "param", "s_per_image", "speedup_vs_exact", *ratio_cols,
                         "verified", "iou_5pct", "overlap_5pct", "acc_5pct", "confidence_5pct"])


def projections(results: dict) -> pd.DataFrame:
    """Projected wall time of a full backward selection of every image of a dataset (of ``shape``), per method: exact
    from its measured forward rate (P(P+1)/2 forwards per image), pruned and gradient from a few timed
    lockstep steps of a batch scaled to a full run (for pruned an upper bound)."""
    rows = []
    for label, file, sec in _sections(results, "projections"):
        with _parsing(file, "projections"):
            for w in sec:
                for r in w["runs"]:
                    method, set_, param = setting(r)
                    rows.append({"device": label, "dataset": w["dataset"], "arch": w["arch"],
                                 "shape": tuple(w["shape"]), "images": w["images"], "batch": w["batch"],
                                 "method": method, "setting": set_, "param": param, "s_per_image": r["s_per_image"],
                                 "hours": r["s_per_image"] * w["images"] / 3600})
    return _frame(rows, ["device", "dataset", "arch", "shape", "images", "batch", "method", "setting", "param",
                         "s_per_image", "hours"])


def s5(results: dict) -> pd.DataFrame:
    """The paper's S5 figure (first row, ``device`` None) beside each of our measurements of Batched
    Gradient BackSelect, scaled to its 32 images by their seconds per image (minutes): Inception-v3 at
    the paper's size and k where measured (random weights and inputs: CUDA runs), the fidelity section's
    trained model (its test images), the projection workloads (a few timed steps). ``closest`` marks,
    per device, the row nearest the paper's setting: measured before projected, then the fewest steps
    apart (the paper: ceil(89401 / 100) = 895)."""
    p = PAPER_S5
    paper_steps = math.ceil(p["pixels"] / p["k"])
    rows = [{"who": "paper", "device": None, "model": p["model"], "data": p["data"], "features": p["pixels"],
             "k": p["k"], "steps": paper_steps, "images": p["images"], "how": f"quoted ({p['section']})",
             "measured": True, "minutes_32": math.nan, "minutes_32_low": p["minutes"][0],
             "minutes_32_high": p["minutes"][1]}]

    def ours(label, model, data, features, k, images, s_per_image, how, measured):
        m = s_per_image * p["images"] / 60
        rows.append({"who": f"ours ({label})", "device": label, "model": model, "data": data, "features": features,
                     "k": k, "steps": math.ceil(features / k), "images": images, "how": how, "measured": measured,
                     "minutes_32": m, "minutes_32_low": m, "minutes_32_high": m})

    fid = fidelity(results).merge(fidelity_context(results), on="device")
    fid, proj = fid[fid["method"] == "gradient"], projections(results)
    proj = proj[proj["method"] == "gradient"]
    for label, d in results.items():  # per device: Inception-v3, the fidelity section, the projections
        with _parsing(d["file"], "inception_v3_gradient_sis"):
            for r in [d["inception_v3_gradient_sis"]] if "inception_v3_gradient_sis" in d else []:
                ours(label, "Inception-v3 (random weights)", f"random inputs, {r['size']}×{r['size']}",
                     r["size"] ** 2, r["k"], r["images"], r["s_per_image"],
                     f"measured, {r['images']} images, BackSelect only", True)
        for _, r in fid[fid["device"] == label].iterrows():
            ours(label, f"{ARCH_NAMES.get(r['arch'], r['arch'])} (trained, {r['profile']})",
                 f"{r['dataset']} test, {r['shape'][1]}×{r['shape'][2]}", r["features"], int(r["param"]),
                 r["images"], r["s_per_image"], f"measured, {r['images']} images", True)
        for _, r in proj[proj["device"] == label].iterrows():
            ours(label, f"{ARCH_NAMES.get(r['arch'], r['arch'])} (random weights)",
                 f"random inputs, {r['shape'][1]}×{r['shape'][2]}", r["shape"][1] * r["shape"][2], int(r["param"]),
                 r["batch"], r["s_per_image"], f"projected, batch of {r['batch']}", False)
    df = pd.DataFrame(rows)
    dist = (df["steps"] / paper_steps).map(lambda x: abs(math.log(x)))
    df["closest"] = False
    for who, g in df[df["who"] != "paper"].groupby("who", sort=False):
        df.loc[min(g.index, key=lambda i: (not g.at[i, "measured"], dist[i])), "closest"] = True
    return df


# --------------------------------------------------------------- for the chapter "Why it holds or fails here"

def claim_measures(results: dict, tau: float = 0.99) -> pd.DataFrame:
    """C1 and C2 of the chapter "Why it holds or fails here" per method of the fidelity section, exact
    included: the mean SIS size at ``tau`` (% of the pixels, over the images where the method finds one)
    and the accuracy (%) on the 5% subsets beside the full images'."""
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
    model and images, exact's C1 and C2 measures and those of its coarsest gradient setting, whether
    exact's mean SIS is above or below ``bound`` (% of pixels), and how the benchmark's model and images
    relate to the chapter's (artifact key ``source_key``, ``sample``: a
    :meth:`overinterp.zoo.data.Selection.key`). :data:`MISSING` where a file lacks them."""
    bench = claim_measures(results, tau)
    keys = ("images", "dataset", "arch", "profile", "acc", "n", "exact_sis", "coarse", "coarse_sis", "bound",
            "full", "exact_acc", "coarse_acc", "relation")
    if bench.empty or not (bench["method"] == "exact").any():
        return dict.fromkeys(keys, MISSING)
    ctx = fidelity_context(results).iloc[0]
    exact = bench[bench["method"] == "exact"].iloc[0]
    grad = bench[bench["method"] == "gradient"]
    coarse = grad.iloc[-1] if len(grad) else exact
    size = exact["SIS size (% of pixels)"]
    pct = lambda v: MISSING if math.isnan(v) else f"{v:.1f}"  # noqa: E731  (no SIS at this tau: no number)
    return {"images": f"{ctx['images']:.0f}", "dataset": ctx["dataset"],
            "arch": ARCH_NAMES.get(ctx["arch"], ctx["arch"]), "profile": ctx["profile"],
            "acc": f"{100 * ctx['test_acc']:.1f}", "n": f"{exact['confident images']:.0f}", "exact_sis": pct(size),
            "coarse": f"{coarse['method']} {coarse['setting']}".strip(),
            "coarse_sis": pct(coarse["SIS size (% of pixels)"]),
            "bound": MISSING if math.isnan(size) else "above" if size > bound else "below",
            "full": f"{exact['full images (%)']:.1f}", "exact_acc": f"{exact['own BS subsets (%)']:.1f}",
            "coarse_acc": f"{coarse['own BS subsets (%)']:.1f}", "relation": _relation(ctx, source_key, sample)}


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
