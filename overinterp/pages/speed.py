"""How fast is backward selection? The engine benchmark's results, read back (paper 3.3, S5).

``benchmarks/bench_backselect.py`` writes one JSON file per device into
``benchmarks/results/`` (``backselect-<device>.json``). This module only *reads*
them (the chapter "How fast is backward selection?", ``book/13_speed``, costs
seconds) and turns each section into a tidy numeric table, one row per device and
measured case:

* :func:`exact_vs_reference` -- exact BackSelect against a per-image implementation
  shaped like the reference ``sis.py``: same order? forward evaluations/s, speedup;
* :func:`efficiency` -- exact BackSelect's forward evaluations/s over the same model's
  best plain batched inference images/s, measured alternately in one run;
* :func:`fidelity` -- ``gradient`` (paper S5) and ``pruned`` against ``exact`` on a
  trained model's test images: s/image against the SIS size ratio to exact at each
  tau, IoU of the 5% subsets with exact's, accuracy on them;
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
shared CPU.
"""
from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5

__all__ = ["claim_measures", "exact_facts", "RESULTS", "SCHEMA", "SECTIONS", "load_results", "device_label", "files",
           "caveats", "missing", "exact_vs_reference", "efficiency", "fidelity", "fidelity_context", "projections",
           "s5", "setting"]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

SCHEMA = 2  # the structure of the result files that this module reads (bench_backselect.SCHEMA)

#: sections of a result file -> why a file may lack one
SECTIONS = {"efficiency": "the run stopped before it", "reference_style_baseline": "the run stopped before it",
            "fidelity": "the run stopped before it", "projections": "the run stopped before it",
            "inception_v3_gradient_sis": "the benchmark measures Inception-v3 on CUDA only (or tiny with `--smoke`)"}
_LISTS = ("efficiency", "reference_style_baseline", "projections")  # sections that are lists of records


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
    with ``file`` (its name) and ``smoke`` added."""
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
        out[label] = {**data[p], "file": p.name, "smoke": smoke[p]}
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
         "chosen_m_reason"}


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
    agree, forward evaluations/s of each, and the engine's speedup over it in NCHW and channels_last."""
    rows = []
    for label, file, sec in _sections(results, "reference_style_baseline"):
        with _parsing(file, "reference_style_baseline"):
            for r in sec:
                rows.append({"device": label, "threads": r["threads"], "model": r["model"], "images": r["images"],
                             "steps": r["steps_timed"], "same_order": bool(r["same_order"]),
                             "engine_evals_s": r["engine_evals_s"],
                             "reference_evals_s": r["reference_nchw_evals_s"],
                             "reference_cl_evals_s": r["reference_channels_last_evals_s"],
                             "speedup": r["speedup_vs_reference_nchw"],
                             "speedup_cl": r["speedup_vs_reference_channels_last"]})
    return _frame(rows, ["device", "threads", "model", "images", "steps", "same_order", "engine_evals_s",
                         "reference_evals_s", "reference_cl_evals_s", "speedup", "speedup_cl"])


def efficiency(results: dict) -> pd.DataFrame:
    """Exact BackSelect's forward evaluations/s over the best plain batched inference images/s of the
    same model (best over batch sizes and layouts), alternated ``rounds`` times in one run: the ratio
    per round (median, min, max) and of the bests; and the seconds of a full exact run of one image
    (P(P+1)/2 forwards at the best engine rate)."""
    rows = []
    for label, file, sec in _sections(results, "efficiency"):
        with _parsing(file, "efficiency"):
            for r in sec:
                ratios = [x["ratio"] for x in r["rounds"]]
                rows.append({"device": label, "threads": r["threads"], "model": r["model"],
                             "best_plain": r["best_plain_config"],
                             "plain_img_s": max([x["plain_img_s"] for x in r["rounds"]] +
                                                [r["plain_sweep_img_s"][r["best_plain_config"]]]),
                             "engine_evals_s": max(x["engine_evals_s"] for x in r["rounds"]),
                             "ratio_median": r["ratio_median"], "ratio_min": min(ratios), "ratio_max": max(ratios),
                             "ratio_of_bests": r["ratio_of_bests"], "rounds": len(ratios), "images": r["images"],
                             "steps": r["steps_timed"], "exact_s_per_image": r["exact_s_per_image"]})
    return _frame(rows, ["device", "threads", "model", "best_plain", "plain_img_s", "engine_evals_s",
                         "ratio_median", "ratio_min", "ratio_max", "ratio_of_bests", "rounds", "images",
                         "steps", "exact_s_per_image"])


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
             "steps": paper_steps, "images": p["images"], "how": f"quoted (S5), hardware {p['hardware']}",
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
                ours(label, "Inception-v3 (torchvision, random weights)", f"random inputs, {r['size']}×{r['size']}",
                     r["size"] ** 2, r["k"], r["images"], r["s_per_image"],
                     f"measured, {r['images']} images in one batch (BackSelect; FindSIS untimed)", True)
        if "fidelity" in d:
            with _parsing(d["file"], "fidelity"):
                sec, src = d["fidelity"], d["fidelity"]["source"]
                h, w = sec["shape"][1:]
                block = sec.get("block", 1)
                features = math.ceil(h / block) * math.ceil(w / block)
                model = f"{ARCH_NAMES.get(src['arch'], src['arch'])} (trained, {src['profile']} profile)"
                for r in sec["runs"]:
                    if r["method"] == "gradient":
                        ours(label, model, f"{src['dataset']} test images, {h}×{w}", features, r["k"],
                             sec["images"], r["s_per_image"], f"measured, {sec['images']} images in one batch", True)
        if "projections" in d:
            with _parsing(d["file"], "projections"):
                for wl in d["projections"]:
                    h, w = wl["shape"][1:]
                    for r in wl["runs"]:
                        if r["method"] == "gradient":
                            ours(label, f"{ARCH_NAMES.get(wl['arch'], wl['arch'])} (random weights)",
                                 f"{wl['dataset']}-sized random inputs, {h}×{w}", h * w, r["k"], wl["batch"],
                                 r["s_per_image"], f"projected from timed steps of a batch of {wl['batch']}", False)
    df = pd.DataFrame(rows)
    dist = (df["steps"] / paper_steps).map(lambda x: abs(math.log(x)))
    df["closest"] = False
    for who, g in df[df["who"] != "paper"].groupby("who", sort=False):
        best = min(g.index, key=lambda i: (not g.at[i, "measured"], dist[i]))
        df.loc[best, "closest"] = True
    return df
