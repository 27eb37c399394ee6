"""How fast is backward selection? The chapter ``book/13_speed`` (paper 3.3, S5): the engine benchmark's result
files read into tables, and what the chapter glues and shows of them.

``benchmarks/bench_backselect.py`` writes ``benchmarks/results/backselect-<device>.json`` (``"schema": 2``). The
readers (:func:`efficiency`, :func:`fidelity`, ...) return one row per device and measured case, with empty columns
where no file has the section; a file not of this schema raises a one-line ``ValueError`` naming it. ``*_values``
are ``{glue name: str}`` for :func:`overinterp.pages.chapter.glue_all` and ``*_table`` the tables as shown: numbers
rounded as the prose rounds them (:func:`fmt`), :data:`MISSING` for a missing one, no device column for one device.
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
from overinterp.paper.formatting import MISSING, number
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5
from overinterp.zoo.models import ARCHS, build_model, count_macs

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
SCHEMA = 2  # the structure of the result files read here (bench_backselect.SCHEMA)
SECTIONS = ("efficiency", "reference_style_baseline", "fidelity", "projections", "inception_v3_gradient_sis")
_LISTS = ("efficiency", "reference_style_baseline", "projections", "fusion")  # the sections that are JSON arrays
#: whether an engine folded batch norms, where a file does not record it (the committed CPU file's efficiency
#: rows did not, its fidelity section did)
FOLDED_WHEN_UNRECORDED = {"efficiency": False, "fidelity": True}
_TEXT = {"device", "model", "method", "setting", "dataset", "arch", "profile", "chosen_m_rule", "chosen_m_reason",
         "shape", "model_key", "fold_setting", "folded", "eff_folded", "fid_folded"}  # not numeric when empty


# ----------------------------------------------------------------------------- reading the files

def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        first = (str(e).splitlines() or [""])[0]
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
    """Every ``backselect-*.json`` of ``folder`` keyed by what produced it (the GPU's name, or 'CPU (<model>, <n>
    threads)'), smoke runs only where no other file exists: its JSON with ``file``, ``path`` and ``smoke``."""
    paths = sorted(Path(folder).glob("backselect-*.json"))
    if not paths:
        raise FileNotFoundError(f"no backselect-*.json in {folder}: run benchmarks/bench_backselect.py")
    data = {p: _read(p) for p in paths}
    smoke = {p: p.stem.endswith("-smoke") or bool(d.get("smoke")) for p, d in data.items()}
    out = {}
    for p in [p for p in paths if not smoke[p]] or paths:
        info, n = data[p]["info"], data[p]["info"].get("threads", "?")
        cpu = re.sub(r"\((R|TM)\)", "", info.get("cpu", "unknown model"))
        label = (info.get("gpu") or str(info["device"]) if str(info["device"]).startswith("cuda") else
                 f"CPU ({cpu}, {n} thread{'' if n == 1 else 's'})") + (" [smoke run]" if smoke[p] else "")
        out[label + (f" [{p.name}]" if label in out else "")] = {**data[p], "file": p.name, "path": str(p),
                                                                  "smoke": smoke[p]}
    return out


def files(results: dict) -> pd.DataFrame:
    """One row per file: what produced it, the dates of the first and last commit that wrote it (None without its
    git history: a shallow clone's one commit would date every file), the 1-min load average at start and end,
    whether its CPU was shared (a note says so, or the load exceeded its threads), the sections it lacks."""
    def git(path, *args):
        try:
            done = subprocess.run(["git", *args], cwd=path.parent, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return []
        return done.stdout.split() if done.returncode == 0 else []
    rows = []
    for label, d in results.items():
        info, path = d["info"], Path(d.get("path", d["file"]))
        dates = (git(path, "rev-parse", "--is-shallow-repository") == ["false"] and
                 git(path, "log", "--follow", "--format=%cs", "--", path.name)) or [None]
        load = max(info.get(k, [0])[0] for k in ("loadavg_start", "loadavg_end"))
        rows.append({"device": label, "file": d["file"], "torch": info.get("torch"), "threads": info.get("threads"),
                     "wall_h": info.get("wall_s", math.nan) / 3600, "first_commit": dates[-1],
                     "last_commit": dates[0], "load_start": info.get("loadavg_start", [math.nan])[0],
                     "load_end": info.get("loadavg_end", [math.nan])[0],
                     "shared_cpu": any(n.get("shared_cpu") for n in d.get("notes", [])) or
                     (info["device"] == "cpu" and load > info.get("threads", math.inf)),
                     "smoke": d["smoke"], "missing": ", ".join(s for s in SECTIONS if s not in d) or MISSING})
    return pd.DataFrame(rows)


@contextmanager
def _parsing(file: str, section: str):
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise ValueError(f"{file}: section '{section}' is malformed ({type(e).__name__}: {e})") from None


def _table(results: dict, section: str, rows_of, columns: str | list[str]) -> pd.DataFrame:
    """The rows ``rows_of(label, file's JSON)`` yields for each file with ``section`` (keys not in ``columns``
    sorted after them); without any, empty numeric ``columns`` (so that sorting and ranges still work)."""
    rows, columns = [], columns.split() if isinstance(columns, str) else columns
    for label, d in results.items():
        if section in d:
            with _parsing(d["file"], section):
                rows += rows_of(label, d)
    df = pd.DataFrame(rows, columns=columns + sorted({k for r in rows for k in r} - set(columns)))
    return df if rows else df.astype({c: float for c in columns if c not in _TEXT})


def setting(run: dict) -> tuple[str, str, float]:
    """(method, setting, parameter) of a run: ``{"method": "pruned", "m": 16}`` -> ('pruned', 'm=16', 16.0)."""
    for name in ("m", "k"):
        if name in run:
            return run["method"], f"{name}={run[name]}", float(run[name])
    return run["method"], "", math.nan


# ----------------------------------------------------------------------------- exact: reference, efficiency, check

def exact_vs_reference(results: dict) -> pd.DataFrame:
    """Exact BackSelect against a per-image implementation shaped like the reference ``sis.py`` on the same model,
    images and steps: same order?, evaluations/s, speedups; ``arch`` and ``shape`` of the model's efficiency row."""
    def rows(label, d):
        known = {e.get("model"): (e.get("arch"), tuple(e.get("shape", ()))) for e in d.get("efficiency", [])}
        for r in d["reference_style_baseline"]:
            arch, shape = known.get(r["model"], (None, None))
            yield {"device": label, "threads": r["threads"], "model": r["model"], "arch": arch, "shape": shape,
                   "images": r["images"], "steps": r["steps_timed"], "same_order": bool(r["same_order"]),
                   "engine_evals_s": r["engine_evals_s"], "reference_evals_s": r["reference_nchw_evals_s"],
                   "reference_cl_evals_s": r["reference_channels_last_evals_s"],
                   "speedup": r["speedup_vs_reference_nchw"], "speedup_cl": r["speedup_vs_reference_channels_last"]}
    return _table(results, "reference_style_baseline", rows, "device threads model arch shape images steps "
                  "same_order engine_evals_s reference_evals_s reference_cl_evals_s speedup speedup_cl")


@functools.lru_cache(maxsize=None)
def macs(arch: str, shape: tuple, width: int | None) -> int:
    """Multiply-adds of one forward pass of ``arch`` (``width`` initial filters) on one (C, H, W) input."""
    return count_macs(build_model(arch, shape[0], 10, width), tuple(shape))


def initial_filters(arch: str, width: int | None) -> int:
    """``width``, or where it is None the paper's initial filters of ``arch`` (the default of its class)."""
    return width if width is not None else inspect.signature(ARCHS[arch]).parameters["width"].default


def efficiency(results: dict) -> pd.DataFrame:
    """Exact BackSelect's evaluations/s over plain inference images/s of the same random model, timed alternately
    per round: the ratio's median (the efficiency), min and max; the two rates' median, min and max; a full exact
    run's seconds of one image at the fastest and slowest round; the benchmark's
    ``ratio_of_bests`` (fastest engine round over the fastest plain rate anywhere in the run)."""
    def rows(label, d):
        for r in d["efficiency"]:
            ratios, engine, plain = ([x[k] for x in r["rounds"]] for k in ("ratio", "engine_evals_s", "plain_img_s"))
            evals = math.comb(r["shape"][1] * r["shape"][2] + 1, 2)  # P(P+1)/2 forwards
            yield {"device": label, "threads": r["threads"], "model": r["model"], "arch": r["arch"],
                   "shape": tuple(r["shape"]), "width": initial_filters(r["arch"], r.get("width")),
                   "folded": bool(r.get("engine_config", {}).get("fuse", FOLDED_WHEN_UNRECORDED["efficiency"])),
                   "plain_median": statistics.median(plain), "plain_min": min(plain), "plain_max": max(plain),
                   "engine_evals_s": max(engine), "engine_median": statistics.median(engine),
                   "engine_min": min(engine), "ratio_median": r["ratio_median"], "ratio_min": min(ratios),
                   "ratio_max": max(ratios), "ratio_of_bests": r["ratio_of_bests"], "rounds": len(ratios),
                   "images": r["images"], "steps": r["steps_timed"], "exact_s_fastest": evals / max(engine),
                   "exact_s_slowest": evals / min(engine)}
    return _table(results, "efficiency", rows, "device threads model arch shape width folded plain_median plain_min "
                  "plain_max engine_evals_s engine_median engine_min ratio_median ratio_min ratio_max ratio_of_bests "
                  "rounds images steps exact_s_fastest exact_s_slowest")


def fusion(results: dict) -> pd.DataFrame:
    """Batch norms folded into the convolutions against the model as trained, per trained model and method: the
    folded engine's speedup per round (the two timed alternately), median, min and max."""
    def rows(label, d):
        for r in d["fusion"]:
            per, (method, set_, _) = r["speedups_per_round"], setting(r)
            yield {"device": label, "arch": r["arch"], "model_key": r.get("model_key"), "method": method,
                   "setting": set_, "images": r["images"], "rounds": len(per), "speedup_median": statistics.median(per),
                   "speedup_min": min(per), "speedup_max": max(per), "speedup_of_bests": r["speedup_of_bests"]}
    return _table(results, "fusion", rows, "device arch model_key method setting images rounds speedup_median "
                  "speedup_min speedup_max speedup_of_bests")


def exact_check(results: dict) -> pd.DataFrame:
    """The fidelity section's exact run (``measured`` s/image) against what each efficiency row of its architecture
    and input shape predicts: a full exact run at the fastest and slowest engine round (``s_*``), scaled by the
    two models' multiply-adds (``scaled_*``) and, where only one engine folded batch norms, by folding's median
    speedup on the fidelity model with ``pruned`` (:func:`fusion`; ``folded_*``, NaN where not measured)."""
    eff, fus, fid, ctx = efficiency(results), fusion(results), fidelity(results), fidelity_context(results)

    def rows(label, d):
        c = ctx[ctx["device"] == label].iloc[0]
        fid_width = initial_filters(c["arch"], get_profile(c["profile"]).width(c["arch"]))
        fid_macs, evals = macs(c["arch"], c["shape"], fid_width), math.comb(c["features"] + 1, 2)
        measured = fid.loc[(fid["device"] == label) & (fid["method"] == "exact"), "s_per_image"].iloc[0]
        f = fus[(fus["device"] == label) & (fus["arch"] == c["arch"]) & (fus["method"] == "pruned")]
        if c["model_key"] is not None and f["model_key"].notna().any():
            f = f[f["model_key"] == c["model_key"]]
        same = eff[(eff["device"] == label) & (eff["arch"] == c["arch"]) &
                   eff["shape"].map(lambda shape: shape == c["shape"]).astype(bool)]
        for _, e in same.iterrows():
            fold = 1.0 if c["folded"] == e["folded"] else math.nan if f.empty else \
                float(f["speedup_median"].iloc[0]) ** (1 if c["folded"] else -1)
            eff_macs = macs(c["arch"], e["shape"], e["width"])
            s_fast, s_slow, ratio = evals / e["engine_evals_s"], evals / e["engine_min"], fid_macs / eff_macs
            yield {"device": label, "threads": e["threads"], "arch": c["arch"], "shape": c["shape"],
                   "eff_width": e["width"], "fid_width": fid_width, "eff_macs": eff_macs, "fid_macs": fid_macs,
                   "macs_ratio": ratio, "eff_folded": e["folded"], "fid_folded": c["folded"], "fold_speedup": fold,
                   "fold_rounds": math.nan if f.empty else float(f["rounds"].iloc[0]),
                   "fold_setting": "" if f.empty else f["setting"].iloc[0], "engine_fast": e["engine_evals_s"],
                   "engine_slow": e["engine_min"], "plain_median": e["plain_median"], "plain_slow": e["plain_min"],
                   "plain_fast": e["plain_max"], "s_fast": s_fast, "s_slow": s_slow, "scaled_fast": s_fast * ratio,
                   "scaled_slow": s_slow * ratio, "folded_fast": s_fast * ratio / fold,
                   "folded_slow": s_slow * ratio / fold, "measured": measured, "evals": evals,
                   "fid_threads": c["threads"], "fid_images": c["images"]}
    return _table(results, "fidelity", rows, "device threads arch shape eff_width fid_width eff_macs fid_macs "
                  "macs_ratio eff_folded fid_folded fold_speedup fold_rounds fold_setting engine_fast engine_slow "
                  "plain_median plain_slow plain_fast s_fast s_slow scaled_fast scaled_slow folded_fast folded_slow "
                  "measured evals fid_threads fid_images")


# ----------------------------------------------------------------------------- the approximations, S5

def fidelity_context(results: dict) -> pd.DataFrame:
    """Per device, what the fidelity section ran on: trained model, images of ``shape`` (C, H, W), ``features``
    per image (blocks of ``block`` pixels), threads, accuracies, the m chosen for ``pruned``, its rule, reason."""
    def rows(label, d):
        sec, info = d["fidelity"], d["info"]
        src, block = sec["source"], sec.get("block", 1)
        yield {"device": label, "dataset": src["dataset"], "arch": src["arch"], "profile": src["profile"],
               "model_key": src.get("key"), "selection": sec.get("selection"), "images": sec["images"],
               "shape": tuple(sec["shape"]), "block": block,
               "features": math.ceil(sec["shape"][1] / block) * math.ceil(sec["shape"][2] / block),
               "threads": info.get("threads_fidelity_projections", info.get("threads")),
               "folded": bool(sec.get("fuse", FOLDED_WHEN_UNRECORDED["fidelity"])), "test_acc": sec.get("test_acc"),
               "full_acc": sec["full_images"]["acc"], "random_5pct_acc": sec.get("random_5pct", {}).get("acc"),
               "chosen_m": sec.get("chosen_m"), "chosen_m_rule": sec.get("chosen_m_rule", ""),
               "chosen_m_reason": sec.get("chosen_m_reason", "")}
    return _table(results, "fidelity", rows, "device dataset arch profile model_key selection images shape block "
                  "features threads folded test_acc full_acc random_5pct_acc chosen_m chosen_m_rule chosen_m_reason")


def fidelity(results: dict) -> pd.DataFrame:
    """``gradient`` (S5) and ``pruned`` against ``exact`` on the same trained model's images: s/image, speedup over
    exact, per tau the mean SIS size over exact's where both find one (``size_ratio_tau<t>``), whether every SIS
    was verified (f >= tau), the 5% subsets' IoU with exact's, accuracy and confidence."""
    def rows(label, d):
        runs = d["fidelity"]["runs"]
        exact_s = [r["s_per_image"] for r in runs if r["method"] == "exact"][0]
        for r in runs:
            method, set_, param = setting(r)
            yield {"device": label, "method": method, "setting": set_, "param": param, "s_per_image": r["s_per_image"],
                   "speedup_vs_exact": exact_s / r["s_per_image"],
                   "verified": all(bool(s["all_verified_f_ge_tau"]) for s in r["sis"]),
                   "iou_5pct": r.get("iou_5pct_with_exact", math.nan), "acc_5pct": r["subset_5pct"]["acc"],
                   "overlap_5pct": r.get("overlap_5pct_with_exact", math.nan),
                   "confidence_5pct": r["subset_5pct"]["confidence"],
                   **{f"size_ratio_tau{s['tau']:g}": math.nan if (x := s.get("mean_size_ratio_vs_exact")) is None
                      else x for s in r["sis"]}}
    return _table(results, "fidelity", rows, "device method setting param s_per_image speedup_vs_exact verified "
                  "iou_5pct acc_5pct overlap_5pct confidence_5pct")


def projections(results: dict) -> pd.DataFrame:
    """Projected hours of a full backward selection of every image of a dataset, per method: exact from its forward
    rate, pruned (an upper bound) and gradient from a few timed lockstep steps of a batch."""
    def rows(label, d):
        for w in d["projections"]:
            for r in w["runs"]:
                method, set_, param = setting(r)
                yield {"device": label, "dataset": w["dataset"], "arch": w["arch"], "shape": tuple(w["shape"]),
                       "images": w["images"], "batch": w["batch"], "method": method, "setting": set_, "param": param,
                       "s_per_image": r["s_per_image"], "hours": r["s_per_image"] * w["images"] / 3600}
    return _table(results, "projections", rows, "device dataset arch shape images batch method setting param "
                  "s_per_image hours")


def s5(results: dict) -> pd.DataFrame:
    """The paper's S5 figure (first row) beside each of our measurements of Batched Gradient BackSelect, scaled to
    its 32 images: Inception-v3 at the paper's size and k, the fidelity section's model, the projections.
    ``closest`` marks per device the row nearest the paper's setting: measured first, then fewest steps apart."""
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
    for label, d in results.items():
        with _parsing(d["file"], "inception_v3_gradient_sis"):
            for r in [d["inception_v3_gradient_sis"]] if "inception_v3_gradient_sis" in d else []:
                ours(label, "Inception-v3 (random weights)", f"random inputs, {r['size']}×{r['size']}",
                     r["size"] ** 2, r["k"], r["images"], r["s_per_image"],
                     f"measured, {r['images']} images, BackSelect only", True)
        for _, r in fid[fid["device"] == label].iterrows():
            ours(label, f"{_arch(r['arch'])} (trained, {r['profile']})",
                 f"{r['dataset']} test, {r['shape'][1]}×{r['shape'][2]}", r["features"], int(r["param"]),
                 r["images"], r["s_per_image"], f"measured, {r['images']} images", True)
        for _, r in proj[(proj["device"] == label) & (proj["method"] == "gradient")].iterrows():
            ours(label, f"{_arch(r['arch'])} (random weights)", f"random inputs, {r['shape'][1]}×{r['shape'][2]}",
                 r["shape"][1] * r["shape"][2], int(r["param"]), r["batch"], r["s_per_image"],
                 f"projected, batch of {r['batch']}", False)
    df = pd.DataFrame(rows)
    dist = (df["steps"] / paper_steps).map(lambda x: abs(math.log(x)))
    df["closest"] = False
    for who, g in df[df["who"] != "paper"].groupby("who", sort=False):
        df.loc[min(g.index, key=lambda i: (not g.at[i, "measured"], dist[i])), "closest"] = True
    return df


# --------------------------------------------------------------- for the chapter "Why it holds or fails here"

def claim_measures(results: dict, tau: float = 0.99) -> pd.DataFrame:
    """C1 and C2 per method of the fidelity section: the mean SIS size at ``tau`` (% of the pixels, over the images
    where the method finds one), accuracy (%) on the full images and on the 5% subsets."""
    def rows(label, d):
        sec = d["fidelity"]
        pixels = sec["shape"][1] * sec["shape"][2] * sec.get("block", 1) ** 2
        for r in sec["runs"]:
            sis = {f"{s['tau']:g}": s for s in r["sis"]}.get(f"{tau:g}", {})
            yield {"device": label, "method": r["method"], "setting": setting(r)[1],
                   "confident images": sis.get("images_with_sis", 0),
                   "SIS size (% of pixels)": 100 * sis.get("mean_size", math.nan) / pixels,
                   "full images (%)": 100 * sec["full_images"]["acc"],
                   "own BS subsets (%)": 100 * r["subset_5pct"]["acc"]}
    return _table(results, "fidelity", rows, ["device", "method", "setting", "confident images",
                                              "SIS size (% of pixels)", "full images (%)", "own BS subsets (%)"])


def exact_facts(results: dict, tau: float = 0.99, bound: float = 5.0, source_key: str | None = None,
                sample: dict | None = None) -> dict[str, str]:
    """What "Why it holds or fails here" says of :func:`claim_measures`: the model and images, exact's measures and
    its coarsest gradient setting's, exact's mean SIS above or below ``bound`` (%), and how the model and images
    relate to the chapter's (artifact key ``source_key``, ``sample``: a Selection's key); else :data:`MISSING`."""
    bench = claim_measures(results, tau)
    if not (bench["method"] == "exact").any():
        return dict.fromkeys("images dataset arch profile acc n exact_sis coarse coarse_sis bound full exact_acc "
                             "coarse_acc relation".split(), MISSING)
    ctx = fidelity_context(results).iloc[0]
    exact, grad = bench[bench["method"] == "exact"].iloc[0], bench[bench["method"] == "gradient"]
    coarse = grad.iloc[-1] if len(grad) else exact
    size = exact["SIS size (% of pixels)"]
    pct = lambda v: MISSING if math.isnan(v) else f"{v:.1f}"  # noqa: E731  (no SIS at this tau: no number)
    sel = ctx["selection"] if isinstance(ctx["selection"], dict) else {}
    same = bool(sample) and all(sel.get(k) == sample.get(k) for k in ("dataset", "set", "n", "seed")) and \
        sel.get("index") is not None and list(sel["index"]) == list(sample.get("index") or [])[:len(sel["index"])]
    return {"images": f"{ctx['images']:.0f}", "dataset": ctx["dataset"], "arch": _arch(ctx["arch"]),
            "profile": ctx["profile"], "acc": f"{100 * ctx['test_acc']:.1f}", "n": f"{exact['confident images']:.0f}",
            "exact_sis": pct(size), "coarse": f"{coarse['method']} {coarse['setting']}".strip(),
            "coarse_sis": pct(coarse["SIS size (% of pixels)"]),
            "bound": MISSING if math.isnan(size) else "above" if size > bound else "below",
            "full": f"{exact['full images (%)']:.1f}", "exact_acc": f"{exact['own BS subsets (%)']:.1f}",
            "coarse_acc": f"{coarse['own BS subsets (%)']:.1f}",
            "relation": "not this chapter's source model (another artifact key), so its numbers sit beside the sweep"
            if not source_key or ctx["model_key"] != source_key else
            "this chapter's source model itself (the same artifact key), on " +
            (f"the first {ctx['images']:.0f} images of its sample" if same else "other images than its sample")}


# ----------------------------------------------------------------------------- numbers and words, tables as shown

def fmt(x, digits: int | str = 2) -> str:
    """``x`` with ``digits`` decimals and thousands separated; "sig3": 3 significant digits (82.1, 8.73, 0.101),
    whole from 1000 on; :data:`MISSING` where :func:`number` writes it."""
    if number(x) == MISSING:
        return MISSING
    x = float(x)
    if digits == "sig3":
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"
    return f"{x:,.{digits}f}"


def span(values, digits: int | str = 2) -> str:
    """'lo–hi' of the finite values as :func:`fmt` writes them ('lo' when both read the same)."""
    v = [x for x in values if fmt(x) != MISSING]
    lo, hi = (fmt(min(v), digits), fmt(max(v), digits)) if v else (MISSING, MISSING)
    return lo if lo == hi else f"{lo}–{hi}"


def listed(values) -> str:
    """The distinct values, in order, comma-separated (:data:`MISSING` if none)."""
    return ", ".join(dict.fromkeys(map(str, values))) or MISSING


def where(x: float, lo: float, hi: float) -> str:
    """'below', 'within' or 'above' the range lo–hi; :data:`MISSING` where a number is missing."""
    if MISSING in (fmt(x), fmt(lo), fmt(hi)):
        return MISSING
    return "below" if x < lo else "above" if x > hi else "within"


def _arch(name: str) -> str:
    return ARCH_NAMES.get(name, name)


def _model(arch: str, shape: tuple) -> str:
    return f"{_arch(arch)}, {shape[1]}×{shape[2]}×{shape[0]}"  # 'ResNet20, 28×28×1' from (C, H, W)


def _display(df: pd.DataFrame, names: dict[str, str], index: list[str] | None = None,
             digits: dict[str, int | str] | None = None, single: tuple = ("device",)) -> pd.DataFrame:
    """The columns of ``names`` renamed and written as text: yes/no, :func:`fmt` with ``digits`` per column (2 for
    the others, 0 for integers); ``index`` columns as the index; a ``single`` column of one value dropped."""
    def cell(v, digits):
        v = v.item() if hasattr(v, "item") else v
        if isinstance(v, bool):
            return "yes" if v else "no"
        return fmt(v, 0 if isinstance(v, int) else digits) if isinstance(v, (int, float)) or v is None else str(v)
    drop = [c for c in single if c in names and df[c].nunique() <= 1 and len(df)]
    names = {c: n for c, n in names.items() if c not in drop}
    out = pd.DataFrame({n: [cell(v, (digits or {}).get(c, 2)) for v in df[c]] for c, n in names.items()},
                       index=df.index)
    index = [names[c] for c in index or [] if c not in drop]
    return out.set_index(index) if index else out


def files_table(files: pd.DataFrame) -> pd.DataFrame:
    return _display(files, {"device": "device", "file": "file", "torch": "torch", "threads": "threads",
                            "wall_h": "hours of benchmarking", "first_commit": "first commit",
                            "last_commit": "last commit", "load_start": "1-min load average at start",
                            "load_end": "1-min load average at end", "shared_cpu": "CPU shared",
                            "smoke": "smoke run", "missing": "sections missing"},
                    index=["device"], digits={"wall_h": 1, "load_start": 1, "load_end": 1}, single=()).T


def paper_values(results: dict) -> dict[str, str]:
    p = PAPER_S5
    return {"n_files": str(len(results)), "paper_images": str(p["images"]), "paper_lo": str(p["minutes"][0]),
            "paper_hi": str(p["minutes"][1]), "paper_k": str(p["k"]), "paper_pixels": fmt(p["pixels"], 0),
            "paper_size": f"{p['size']}×{p['size']}", "paper_steps": str(math.ceil(p["pixels"] / p["k"]))}


def reference_values(ref: pd.DataFrame) -> dict[str, str]:
    return {"ref_steps": span(ref["steps"], 0), "ref_images": span(ref["images"], 0),
            "ref_same": str(int(ref["same_order"].sum())), "ref_n": str(len(ref)), "ref_speed": span(ref["speedup"]),
            "ref_speed_cl": span(ref["speedup_cl"]), "ref_device": listed(ref["device"])}


def reference_table(ref: pd.DataFrame) -> pd.DataFrame:
    ref = ref.assign(model=[_model(a, s) if isinstance(a, str) and isinstance(s, tuple) else m
                            for m, a, s in zip(ref["model"], ref["arch"], ref["shape"])])
    return _display(ref, {"device": "device", "model": "model", "threads": "threads", "same_order": "same order",
                          "engine_evals_s": "engine", "reference_evals_s": "per-image",
                          "reference_cl_evals_s": "per-image, channels_last", "speedup": "speedup",
                          "speedup_cl": "speedup vs channels_last"}, index=["device", "model", "threads"],
                    digits={"engine_evals_s": 0, "reference_evals_s": 0, "reference_cl_evals_s": 0})


def efficiency_values(eff: pd.DataFrame) -> dict[str, str]:
    return {"eff_steps": span(eff["steps"], 0), "eff_images": span(eff["images"], 0),
            "eff_rounds": span(eff["rounds"], 0), "eff_median": span(eff["ratio_median"]),
            "eff_rounds_span": span([*eff["ratio_min"], *eff["ratio_max"]]), "eff_bests": span(eff["ratio_of_bests"]),
            "eff_folded": str(int(eff["folded"].sum())), "eff_rows": str(len(eff)),
            "eff_exact_s": span([*eff["exact_s_fastest"], *eff["exact_s_slowest"]], 0),
            "eff_device": listed(eff["device"])}


def _spans(df: pd.DataFrame, lo: str, hi: str, digits: int | str = 2) -> list[str]:
    return [span([a, b], digits) for a, b in zip(df[lo], df[hi])]


def efficiency_table(eff: pd.DataFrame) -> pd.DataFrame:
    eff = eff.assign(name=[_model(a, s) for a, s in zip(eff["arch"], eff["shape"])],
                     rounds_range=_spans(eff, "ratio_min", "ratio_max"),
                     exact_range=_spans(eff, "exact_s_fastest", "exact_s_slowest", 0))
    return _display(eff, {"device": "device", "name": "model", "threads": "threads", "width": "initial filters",
                          "plain_median": "plain (images/s)", "engine_median": "engine (evals/s)",
                          "ratio_median": "efficiency", "rounds_range": "single rounds",
                          "exact_range": "full exact run (s/image)"}, index=["device", "name", "threads"],
                    digits={"plain_median": 0, "engine_median": 0})


def check_values(chk: pd.DataFrame) -> dict[str, str]:
    """The measured exact run and the range the efficiency rows at its thread count predict for it (``chk_pred``;
    all rows where none has it), where it lies and how far outside (``chk_off``, %); its evaluations/s, worth
    ``chk_rate_eq`` of the efficiency model, and where that lies among the engine's and the plain rounds."""
    if chk.empty:
        return dict.fromkeys(("chk_" + k for k in "arch shape eff_width fid_width eff_macs fid_macs macs_x fold "
                              "fold_rounds fold_setting eff_s measured threads images pred pred_threads where off "
                              "evals rate rate_eq engine rate_where plain plain_where vs_plain eff_folded fid_folded "
                              "device".split()), MISSING)
    c = chk.iloc[0]
    at = chk[chk["threads"] == c["fid_threads"]]
    at = at if len(at) else chk
    lo, hi = at[["folded_fast", "folded_slow"]].min().min(), at[["folded_fast", "folded_slow"]].max().max()
    m, rate = c["measured"], c["evals"] / c["measured"]
    eq = rate * c["macs_ratio"] / c["fold_speedup"]
    plain, engine = [at["plain_slow"].min(), at["plain_fast"].max()], [at["engine_slow"].min(), at["engine_fast"].max()]
    return {"chk_arch": _arch(c["arch"]), "chk_shape": f"{c['shape'][1]}×{c['shape'][2]}",
            "chk_eff_width": fmt(c["eff_width"], 0), "chk_fid_width": fmt(c["fid_width"], 0),
            "chk_eff_macs": fmt(c["eff_macs"] / 1e6, 1), "chk_fid_macs": fmt(c["fid_macs"] / 1e6, 1),
            "chk_macs_x": fmt(c["eff_macs"] / c["fid_macs"]), "chk_fold": fmt(c["fold_speedup"]),
            "chk_fold_rounds": fmt(c["fold_rounds"], 0), "chk_fold_setting": c["fold_setting"] or MISSING,
            "chk_eff_s": span([*chk["s_fast"], *chk["s_slow"]], 0), "chk_measured": fmt(m, "sig3"),
            "chk_threads": fmt(c["fid_threads"], 0), "chk_images": fmt(c["fid_images"], 0),
            "chk_pred": span([lo, hi], 0), "chk_pred_threads": listed(at["threads"]),
            "chk_where": where(m, lo, hi), "chk_off": fmt(100 * max(m / hi - 1, 1 - m / lo, 0), 0),
            "chk_evals": fmt(c["evals"], 0), "chk_rate": fmt(rate, 0), "chk_rate_eq": fmt(eq, 0),
            "chk_engine": span(engine, 0), "chk_rate_where": where(eq, *engine), "chk_plain": span(plain, 0),
            "chk_plain_where": where(eq, *plain), "chk_vs_plain": fmt(rate / chk["plain_median"].max(), 1),
            "chk_eff_folded": "yes" if c["eff_folded"] else "no", "chk_fid_folded": "yes" if c["fid_folded"] else "no",
            "chk_device": listed(chk["device"])}


def check_table(chk: pd.DataFrame) -> pd.DataFrame:
    if chk.empty:
        return _display(chk, {"threads": "threads"})
    c = chk.iloc[0]
    t = chk.assign(timed=_spans(chk, "s_fast", "s_slow", 0), scaled=_spans(chk, "scaled_fast", "scaled_slow", 0),
                   folded=_spans(chk, "folded_fast", "folded_slow", 0))
    return _display(t, {"device": "device", "threads": "threads",
                        "timed": f"as timed: {c['eff_width']:.0f} filters (s)",
                        "scaled": f"× multiply-adds: {c['fid_width']:.0f} filters (s)",
                        "folded": f"÷ folding ({fmt(c['fold_speedup'])}×) (s)"}, index=["device", "threads"])


def _taus(fid: pd.DataFrame) -> dict[str, str]:
    """The ``size_ratio_tau<t>`` columns and their t."""
    return {c: c[len("size_ratio_tau"):] for c in fid if c.startswith("size_ratio_tau")}


def fidelity_values(fid: pd.DataFrame, ctx: pd.DataFrame) -> dict[str, str]:
    """Cost and SIS size ratio of each method, ``pruned`` at the m the benchmark chose (its rule and reason)."""
    exact, approx, grad = fid[fid["method"] == "exact"], fid[fid["method"] != "exact"], fid[fid["method"] == "gradient"]
    ratios = list(_taus(fid))
    chosen = fid.merge(ctx[["device", "chosen_m"]], on="device")
    chosen = chosen[(chosen["method"] == "pruned") & (chosen["param"] == chosen["chosen_m"])]
    return {
        "fid_images": span(ctx["images"], 0), "fid_dataset": listed(ctx["dataset"]),
        "fid_arch": listed(ctx["arch"].map(_arch)), "fid_profile": listed(ctx["profile"]),
        "fid_taus": " and ".join(_taus(fid).values()) or MISSING,
        "fid_exact_s": span(exact["s_per_image"], "sig3"), "fid_grad_s": span(grad["s_per_image"], "sig3"),
        "fid_grad_ratio": span(grad[ratios].stack()), "fid_grad_speedup": span(grad["speedup_vs_exact"], 0),
        "fid_m": span(ctx["chosen_m"], 0), "fid_rule": listed(ctx["chosen_m_rule"].replace("", MISSING)),
        "fid_reason": listed(ctx["chosen_m_reason"].replace("", MISSING)), "fid_device": listed(fid["device"]),
        "fid_pruned_s": span(chosen["s_per_image"], "sig3"), "fid_pruned_ratio": span(chosen[ratios].stack()),
        "fid_pruned_speedup": span(chosen["speedup_vs_exact"], 0),
        "fid_iou": span(approx["iou_5pct"]), "fid_acc_exact": span(100 * exact["acc_5pct"], 1),
        "fid_acc_approx": span(100 * approx["acc_5pct"], 1), "fid_acc_random": span(100 * ctx["random_5pct_acc"], 1),
        "fid_verified": str(int(fid["verified"].sum())), "fid_runs": str(len(fid))}


def _with_run(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(run=(df["method"] + " " + df["setting"]).str.strip())  # 'exact', 'gradient k=4'


def fidelity_table(fid: pd.DataFrame) -> pd.DataFrame:
    names = {"device": "device", "run": "method", "s_per_image": "s/image", "speedup_vs_exact": "× faster than exact",
             **{c: f"SIS size / exact's, τ = {t}" for c, t in _taus(fid).items()},
             "iou_5pct": "5% subsets: IoU with exact's", "acc_5pct": "5% subsets: accuracy (%)"}
    return _display(_with_run(fid).assign(acc_5pct=100 * fid["acc_5pct"]), names, index=["device", "run"],
                    digits={"s_per_image": "sig3", "speedup_vs_exact": 0, "acc_5pct": 1})


def plot_fidelity(fid: pd.DataFrame):
    """Seconds per image (log x) against the mean SIS size over exact's, a panel per tau, a labelled marker per
    method and setting (colour: method, shape: device): lower left is cheap and faithful."""
    import matplotlib.pyplot as plt
    colours, markers, taus = {"exact": "black", "pruned": "tab:blue", "gradient": "tab:orange"}, "osD^v", _taus(fid)
    # 7.8 inches wide at 100 dpi: about the book's content width, so 9-point text stays 9 points
    fig, axes = plt.subplots(1, len(taus) or 1, figsize=(3.9 * (len(taus) or 1), 3.4), squeeze=False, sharey=True)
    devices = list(dict.fromkeys(fid["device"]))
    def label(points):  # each (x, y, text) at the first offset whose text overlaps no earlier label and no point
        renderer, placed = fig.canvas.get_renderer(), []
        dots = [ax.transData.transform((x, y)) for x, y, _ in points]
        offsets = [(5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
                   (-5, -3, "right", "top"), (5, 12, "left", "bottom"), (5, -12, "left", "top")]
        for x, y, text in sorted(points, key=lambda p: (p[0], p[1])):
            for i, (dx, dy, ha, va) in enumerate(offsets):
                a = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=9)
                box = a.get_window_extent(renderer).expanded(1.05, 1.1)
                if i == len(offsets) - 1 or not (any(box.overlaps(b) for b in placed) or
                                                 any(box.contains(*d) for d in dots)):
                    placed.append(box)
                    break
                a.remove()
    for ax, (col, tau) in zip(axes[0], taus.items() or [("size_ratio_tau?", "?")]):
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        shown = fid[fid[col].notna()] if col in fid else fid.iloc[:0]
        for _, r in shown.iterrows():
            ax.scatter(r["s_per_image"], r[col], color=colours.get(r["method"], "tab:green"),
                       marker=markers[devices.index(r["device"]) % len(markers)], s=36, zorder=3)
        if shown.empty:
            ax.text(0.5, 0.5, "no image has an SIS at this τ", transform=ax.transAxes, ha="center", fontsize=9)
        else:
            ax.set_xscale("log")
            ax.margins(x=0.08, y=0.12)
            label([(r["s_per_image"], r[col], r["setting"] or r["method"]) for _, r in shown.iterrows()])
        ax.set_title(f"τ = {tau}", fontsize=10)
        ax.set_xlabel("seconds per image (log scale)", fontsize=10)
        ax.tick_params(labelsize=9)
    axes[0][0].set_ylabel("mean SIS size / exact's", fontsize=10)
    rows = [[plt.Line2D([], [], color=c, marker="o", ls="", label=m) for m, c in colours.items()]]
    if len(devices) > 1:  # a second row: the marker of each device
        rows.append([plt.Line2D([], [], color="grey", marker=markers[i % len(markers)], ls="", label=d)
                     for i, d in enumerate(devices)])
    for i, handles in enumerate(rows):
        fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.06 * (len(rows) - 1 - i)),
                   ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.06 * len(rows) + 0.04, 1, 1))
    return fig


def projection_values(proj: pd.DataFrame) -> dict[str, str]:
    """The batch timed and per dataset (``fm``, ``c10``) its images, model, exact's hours and days, and the
    fastest approximation's hours, name and device."""
    proj, out = _with_run(proj), {"proj_batch": span(proj["batch"], 0), "proj_device": listed(proj["device"])}
    for ds, key in (("fashion-mnist", "fm"), ("cifar10", "c10")):
        p = proj[proj["dataset"] == ds]
        exact, fast = p.loc[p["method"] == "exact", "hours"], p[p["method"] != "exact"].nsmallest(1, "hours")
        out.update({f"proj_{key}_images": span(p["images"], 0), f"proj_{key}_arch": listed(p["arch"].map(_arch)),
                    f"proj_{key}_exact_h": span(exact, 0), f"proj_{key}_exact_days": span(exact / 24, 0),
                    f"proj_{key}_fast_h": span(fast["hours"], "sig3"), f"proj_{key}_fast": listed(fast["run"]),
                    f"proj_{key}_fast_device": listed(fast["device"])})
    return out


def projection_table(proj: pd.DataFrame) -> pd.DataFrame:
    proj = _with_run(proj)
    runs = list(dict.fromkeys(proj["run"]))
    wide = proj.pivot(index=["device", "dataset", "arch", "images"], columns="run", values="hours")[runs].reset_index()
    return _display(wide.assign(arch=wide["arch"].map(_arch)), {"device": "device", "dataset": "dataset",
                    "arch": "model", "images": "images", **{r: r for r in runs}},
                    index=["device", "dataset", "arch", "images"], digits=dict.fromkeys(runs, "sig3"))


def s5_values(t: pd.DataFrame) -> dict[str, str]:
    """Our devices and the closest of our rows to the paper's setting: an Inception-v3 row first, then the fewest
    minutes."""
    best = t[t["closest"]].assign(rank=lambda b: ~b["model"].str.startswith("Inception"))
    best = best.sort_values(["rank", "minutes_32"]).head(1)
    b = best.iloc[0] if len(best) else pd.Series(dtype=object)
    return {"s5_device": listed(t.loc[t["who"] != "paper", "device"]), "s5_model": b.get("model", MISSING),
            "s5_data": b.get("data", MISSING), "s5_k": fmt(b.get("k"), 0), "s5_steps": fmt(b.get("steps"), 0),
            "s5_features": fmt(b.get("features"), 0), "s5_how": b.get("how", MISSING),
            "s5_best_device": b.get("device", MISSING), "s5_minutes": fmt(b.get("minutes_32"))}


def s5_table(t: pd.DataFrame) -> pd.DataFrame:
    minutes = f"minutes for {PAPER_S5['images']} images"
    t = t.assign(**{minutes: [f"{a:g}–{b:g}" if w == "paper" else fmt(m) for w, a, b, m in
                              zip(t["who"], t["minutes_32_low"], t["minutes_32_high"], t["minutes_32"])]},
                 closest=t["closest"].map({True: "◀", False: ""}), who=t["who"].where(t["who"] == "paper", "ours"))
    return _display(t, {"who": "", "device": "device", "model": "model", "data": "inputs", "how": "how",
                        "k": "k", "steps": "steps per image", minutes: minutes, "closest": "◀"}, index=["who"])
