"""The chapter "How fast is backward selection?" (paper sections 3.3, S5): the committed results of
``benchmarks/bench_backselect.py`` (``benchmarks/results/backselect-<device>.json``, schema 2) read into
frames, one row per device and case (empty columns where no file has the section; a file of another schema
raises ``ValueError``), and what the chapter shows of them: ``*_values`` return ``{glue name: str}``
(:data:`MISSING` where absent), ``*_table`` the tables as shown, numbers rounded as the prose rounds them
(:func:`fmt`).

    res = load_results()
    eff = efficiency(res)
    glue_all(efficiency_values(eff))
    efficiency_table(eff)
"""
from __future__ import annotations

import functools
import inspect
import json
import math
import re
import statistics
import subprocess
from pathlib import Path

import pandas as pd

from overinterp.config.profiles import get_profile
from overinterp.paper.formatting import MISSING, and_list, count, number
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5
from overinterp.zoo.models import ARCHS, build_model, count_macs

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
SCHEMA = 2  # the structure of the result files read here (bench_backselect.SCHEMA)
SECTIONS = ("efficiency", "reference_style_baseline", "fidelity", "projections", "inception_v3_gradient_sis")
_LISTS = ("efficiency", "reference_style_baseline", "projections", "fusion")  # the sections that are JSON arrays
#: whether an engine folded batch norms where a file does not say (the committed CPU file: efficiency no, fidelity yes)
FOLDED_WHEN_UNRECORDED = {"efficiency": False, "fidelity": True}
_TEXT = {"device", "model", "method", "setting", "dataset", "arch", "profile", "chosen_m_rule", "chosen_m_reason",
         "shape", "model_key", "fold_setting", "folded", "eff_folded", "fid_folded"}  # not numeric when empty
_RUN = ("method", "setting", "param")  # the columns of :func:`setting`


def arch_name(name: str) -> str:
    return ARCH_NAMES.get(name, name)


def _read(path: Path) -> dict:
    """One result file, checked: readable JSON with ``info.device``, :data:`SCHEMA`, each section's type."""
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
    bad = [s for s in SECTIONS if s in data and not isinstance(data[s], list if s in _LISTS else dict)]
    if bad:
        raise ValueError(f"{path.name}: section '{bad[0]}' is not a JSON {'array' if bad[0] in _LISTS else 'object'}")
    return data


def load_results(folder: str | Path = RESULTS) -> dict[str, dict]:
    """Every ``backselect-*.json`` in ``folder`` by device label (smoke runs only if alone), with
    ``file``, ``path``, ``smoke``."""
    paths = sorted(Path(folder).glob("backselect-*.json"))
    if not paths:
        raise FileNotFoundError(f"no backselect-*.json in {folder}: run benchmarks/bench_backselect.py")
    data = {p: _read(p) for p in paths}
    smoke = {p: p.stem.endswith("-smoke") or bool(d.get("smoke")) for p, d in data.items()}
    out = {}
    for p in [p for p in paths if not smoke[p]] or paths:
        info, cuda = data[p]["info"], str(data[p]["info"]["device"]).startswith("cuda")
        cpu = re.sub(r"\((R|TM)\)", "", info.get("cpu", "unknown model"))
        label = (info.get("gpu") or str(info["device"]) if cuda else
                 f"CPU ({cpu}, {count(info.get('threads', '?'), 'thread')})") + (" [smoke run]" if smoke[p] else "")
        out[label + (f" [{p.name}]" if label in out else "")] = {**data[p], "file": p.name, "path": str(p),
                                                                  "smoke": smoke[p]}
    return out


def files(results: dict) -> pd.DataFrame:
    """Per file: device, first/last commit date (None without git history), load, shared CPU, missing sections."""
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


def _table(results: dict, section: str, rows_of, columns: str | list[str]) -> pd.DataFrame:
    """A row per ``(record, computed)`` of ``rows_of(label, json)``: ``device``, ``columns`` ('name=field'
    renames), computed's other keys; without rows, empty numeric columns; malformed: ``ValueError``."""
    fields = dict((c.split("=") + [c])[:2] for c in (columns.split() if isinstance(columns, str) else columns))
    names, rows = ["device", *fields], []
    for label, d in results.items():
        try:
            rows += [{"device": label, **{c: new[c] if c in new else record[f] for c, f in fields.items()}, **new}
                     for record, new in (rows_of(label, d) if section in d else ())]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise ValueError(f"{d['file']}: section '{section}' is malformed ({type(e).__name__}: {e})") from None
    df = pd.DataFrame(rows, columns=names + sorted({k for r in rows for k in r} - set(names)))
    return df if rows else df.astype({c: float for c in names if c not in _TEXT})


def setting(run: dict) -> tuple[str, str, float]:
    """(method, setting, parameter) of a run: ``{"method": "pruned", "m": 16}`` -> ('pruned', 'm=16', 16.0)."""
    name = next((n for n in ("m", "k") if n in run), None)
    return (run["method"], f"{name}={run[name]}", float(run[name])) if name else (run["method"], "", math.nan)


def exact_vs_reference(results: dict) -> pd.DataFrame:
    """Exact BackSelect against a per-image reference-style ``sis.py``: same order?, evaluations/s."""
    def rows(label, d):
        known = {e.get("model"): (e.get("arch"), tuple(e.get("shape", ()))) for e in d.get("efficiency", [])}
        for r in d["reference_style_baseline"]:
            arch, shape = known.get(r["model"], (None, None))
            yield r, {"arch": arch, "shape": shape, "same_order": bool(r["same_order"])}
    return _table(results, "reference_style_baseline", rows, "threads model arch shape images steps=steps_timed "
                  "same_order engine_evals_s reference_evals_s=reference_nchw_evals_s "
                  "reference_cl_evals_s=reference_channels_last_evals_s speedup=speedup_vs_reference_nchw "
                  "speedup_cl=speedup_vs_reference_channels_last")


@functools.lru_cache(maxsize=None)
def macs(arch: str, shape: tuple, width: int | None) -> int:
    """Multiply-adds of one forward pass of ``arch`` (``width`` initial filters) on one (C, H, W) input."""
    return count_macs(build_model(arch, shape[0], 10, width), tuple(shape))


def initial_filters(arch: str, width: int | None) -> int:
    """``width``, or if None the paper's initial filters of ``arch``."""
    return width if width is not None else inspect.signature(ARCHS[arch]).parameters["width"].default


def efficiency(results: dict) -> pd.DataFrame:
    """Exact BackSelect's evaluations/s over plain images/s, timed alternately per round: ratio median (the
    efficiency), min, max; both rates; a full exact run's s/image at fastest and slowest."""
    def rows(label, d):
        for r in d["efficiency"]:
            ratios, engine, plain = ([x[k] for x in r["rounds"]] for k in ("ratio", "engine_evals_s", "plain_img_s"))
            evals = math.comb(r["shape"][1] * r["shape"][2] + 1, 2)  # P(P+1)/2 forwards
            yield r, {"shape": tuple(r["shape"]), "width": initial_filters(r["arch"], r.get("width")),
                      "folded": bool(r.get("engine_config", {}).get("fuse", FOLDED_WHEN_UNRECORDED["efficiency"])),
                      "plain_median": statistics.median(plain), "plain_min": min(plain), "plain_max": max(plain),
                      "engine_evals_s": max(engine), "engine_median": statistics.median(engine),
                      "engine_min": min(engine), "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "rounds": len(ratios), "exact_s_fastest": evals / max(engine),
                      "exact_s_slowest": evals / min(engine)}
    return _table(results, "efficiency", rows, "threads model arch shape width folded plain_median plain_min plain_max "
                  "engine_evals_s engine_median engine_min ratio_median ratio_min ratio_max ratio_of_bests rounds "
                  "images steps=steps_timed exact_s_fastest exact_s_slowest")


def fusion(results: dict) -> pd.DataFrame:
    """Speedup of batch norms folded into convolutions, per model and method: per-round median, min, max."""
    def rows(label, d):
        for r in d["fusion"]:
            per, (method, set_, _) = r["speedups_per_round"], setting(r)
            yield r, {"model_key": r.get("model_key"), "method": method, "setting": set_, "rounds": len(per),
                      "speedup_median": statistics.median(per), "speedup_min": min(per), "speedup_max": max(per)}
    return _table(results, "fusion", rows, "arch model_key method setting images rounds speedup_median speedup_min "
                  "speedup_max speedup_of_bests")


def exact_check(results: dict) -> pd.DataFrame:
    """The fidelity section's exact s/image (``measured``) against each efficiency row's prediction: raw,
    by multiply-adds (``scaled_*``), and by folding's speedup (``folded_*``; NaN: unmeasured)."""
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
            yield e, {"arch": c["arch"], "shape": c["shape"], "fid_width": fid_width, "eff_macs": eff_macs,
                      "fid_macs": fid_macs, "macs_ratio": ratio, "fid_folded": c["folded"], "fold_speedup": fold,
                      "fold_rounds": math.nan if f.empty else float(f["rounds"].iloc[0]),
                      "fold_setting": "" if f.empty else f["setting"].iloc[0], "s_fast": s_fast, "s_slow": s_slow,
                      "scaled_fast": s_fast * ratio, "scaled_slow": s_slow * ratio,
                      "folded_fast": s_fast * ratio / fold, "folded_slow": s_slow * ratio / fold,
                      "measured": measured, "evals": evals, "fid_threads": c["threads"], "fid_images": c["images"]}
    return _table(results, "fidelity", rows, "threads arch shape eff_width=width fid_width eff_macs fid_macs "
                  "macs_ratio eff_folded=folded fid_folded fold_speedup fold_rounds fold_setting "
                  "engine_fast=engine_evals_s engine_slow=engine_min plain_median plain_slow=plain_min "
                  "plain_fast=plain_max s_fast s_slow scaled_fast scaled_slow folded_fast folded_slow measured evals "
                  "fid_threads fid_images")


def fidelity_context(results: dict) -> pd.DataFrame:
    """Per device, the fidelity section's model, shape, features, threads, accuracies, chosen m."""
    def rows(label, d):
        sec, info = d["fidelity"], d["info"]
        block = sec.get("block", 1)
        yield {**sec, **sec["source"]}, {
            "model_key": sec["source"].get("key"), "selection": sec.get("selection"), "shape": tuple(sec["shape"]),
            "features": math.ceil(sec["shape"][1] / block) * math.ceil(sec["shape"][2] / block),
            "threads": info.get("threads_fidelity_projections", info.get("threads")),
            "folded": bool(sec.get("fuse", FOLDED_WHEN_UNRECORDED["fidelity"])), "test_acc": sec.get("test_acc"),
            "random_5pct_acc": sec.get("random_5pct", {}).get("acc"),
            "chosen_m": sec.get("chosen_m"), "chosen_m_rule": sec.get("chosen_m_rule", ""),
            "chosen_m_reason": sec.get("chosen_m_reason", "")}
    return _table(results, "fidelity", rows, "dataset arch profile model_key selection images shape features "
                  "threads folded test_acc random_5pct_acc chosen_m chosen_m_rule chosen_m_reason")


def fidelity(results: dict) -> pd.DataFrame:
    """``gradient`` (S5) and ``pruned`` against ``exact``: s/image, speedup, SIS size ratio per tau,
    verified, 5% subsets' IoU, accuracy, confidence."""
    def rows(label, d):
        runs = d["fidelity"]["runs"]
        exact_s = [r["s_per_image"] for r in runs if r["method"] == "exact"][0]
        for r in runs:
            yield r, {**dict(zip(_RUN, setting(r))), "speedup_vs_exact": exact_s / r["s_per_image"],
                      "verified": all(bool(s["all_verified_f_ge_tau"]) for s in r["sis"]),
                      "iou_5pct": r.get("iou_5pct_with_exact", math.nan), "acc_5pct": r["subset_5pct"]["acc"],
                      **{f"size_ratio_tau{s['tau']:g}": math.nan if (x := s.get("mean_size_ratio_vs_exact")) is None
                         else x for s in r["sis"]}}
    return _table(results, "fidelity", rows, "method setting param s_per_image speedup_vs_exact verified iou_5pct "
                  "acc_5pct")


def projections(results: dict) -> pd.DataFrame:
    """Projected hours of a full backward selection of a whole dataset, per method (pruned: an upper bound)."""
    def rows(label, d):
        for w in d["projections"]:
            for r in w["runs"]:
                yield {**w, **r}, {**dict(zip(_RUN, setting(r))), "shape": tuple(w["shape"]),
                                   "hours": r["s_per_image"] * w["images"] / 3600}
    return _table(results, "projections", rows, "dataset arch shape images batch method setting param s_per_image "
                  "hours")


def s5(results: dict) -> pd.DataFrame:
    """The paper's S5 figure beside our Batched Gradient BackSelect, scaled to 32 images; ``closest``: per device
    the row nearest the paper's setting."""
    p = PAPER_S5
    paper_steps = math.ceil(p["pixels"] / p["k"])
    rows = [{"who": "paper", "device": None, "model": p["model"], "data": p["data"], "features": p["pixels"],
             "k": p["k"], "steps": paper_steps, "images": p["images"], "how": f"quoted ({p['section']})",
             "measured": True, "minutes_32": math.nan, "minutes_32_low": p["minutes"][0],
             "minutes_32_high": p["minutes"][1]}]

    def ours(label, model, data, features, k, images, s_per_image, how):  # how: 'measured, …' or 'projected, …'
        rows.append({"who": f"ours ({label})", "device": label, "model": model, "data": data, "features": features,
                     "k": k, "steps": math.ceil(features / k), "images": images, "how": how,
                     "measured": how.startswith("measured"), **dict.fromkeys(
                         ("minutes_32", "minutes_32_low", "minutes_32_high"), s_per_image * p["images"] / 60)})

    inc = _table(results, "inception_v3_gradient_sis", lambda label, d: [(d["inception_v3_gradient_sis"], {})],
                 "size k images s_per_image")
    fid = fidelity(results).merge(fidelity_context(results), on="device")
    fid, proj = fid[fid["method"] == "gradient"], projections(results)
    for label in results:
        for _, r in inc[inc["device"] == label].iterrows():
            ours(label, "Inception-v3 (random weights)", f"random inputs, {r['size']}×{r['size']}", r["size"] ** 2,
                 r["k"], r["images"], r["s_per_image"], f"measured, {r['images']} images, BackSelect only")
        for _, r in fid[fid["device"] == label].iterrows():
            ours(label, f"{arch_name(r['arch'])} (trained, {r['profile']})",
                 f"{r['dataset']} test, {r['shape'][1]}×{r['shape'][2]}", r["features"], int(r["param"]),
                 r["images"], r["s_per_image"], f"measured, {r['images']} images")
        for _, r in proj[(proj["device"] == label) & (proj["method"] == "gradient")].iterrows():
            ours(label, f"{arch_name(r['arch'])} (random weights)", f"random inputs, {r['shape'][1]}×{r['shape'][2]}",
                 r["shape"][1] * r["shape"][2], int(r["param"]), r["batch"], r["s_per_image"],
                 f"projected, batch of {r['batch']}")
    df = pd.DataFrame(rows)
    dist = (df["steps"] / paper_steps).map(lambda x: abs(math.log(x)))
    df["closest"] = False
    for who, g in df[df["who"] != "paper"].groupby("who", sort=False):
        df.loc[min(g.index, key=lambda i: (not g.at[i, "measured"], dist[i])), "closest"] = True
    return df


def claim_measures(results: dict, tau: float = 0.99) -> pd.DataFrame:
    """C1, C2 per fidelity method: mean SIS size at ``tau`` (% of the features: pixels at block 1), accuracy (%) full and 5% subsets."""
    def rows(label, d):
        sec = d["fidelity"]
        block = sec.get("block", 1)   # an SIS size counts features: blocks of block x block pixels
        features = math.ceil(sec["shape"][1] / block) * math.ceil(sec["shape"][2] / block)
        for r in sec["runs"]:
            sis = {f"{s['tau']:g}": s for s in r["sis"]}.get(f"{tau:g}", {})
            yield r, {"setting": setting(r)[1], "confident images": sis.get("images_with_sis", 0),
                      "SIS size (% of pixels)": 100 * sis.get("mean_size", math.nan) / features,
                      "full images (%)": 100 * sec["full_images"]["acc"],
                      "own BS subsets (%)": 100 * r["subset_5pct"]["acc"]}
    return _table(results, "fidelity", rows, ["method", "setting", "confident images", "SIS size (% of pixels)",
                                              "full images (%)", "own BS subsets (%)"])


def exact_facts(results: dict, tau: float = 0.99, bound: float = 5.0, source_key: str | None = None,
                sample: dict | None = None) -> dict[str, str]:
    """Glue facts of :func:`claim_measures` for "Why it holds or fails here" (exact's and the coarsest gradient
    run's measures, SIS against ``bound`` %, relation to ``source_key``/``sample``); :data:`MISSING` without exact."""
    bench = claim_measures(results, tau)
    if not (bench["method"] == "exact").any():
        return dict.fromkeys("images dataset arch profile acc n exact_sis coarse coarse_sis bound full exact_acc "
                             "coarse_acc relation".split(), MISSING)
    ctx = fidelity_context(results).iloc[0]
    exact, grad = bench[bench["method"] == "exact"].iloc[0], bench[bench["method"] == "gradient"]
    coarse = grad.iloc[-1] if len(grad) else exact
    size = exact["SIS size (% of pixels)"]
    sel = ctx["selection"] if isinstance(ctx["selection"], dict) else {}
    same = bool(sample) and all(sel.get(k) == sample.get(k) for k in ("dataset", "set", "n", "seed")) and \
        sel.get("index") is not None and list(sel["index"]) == list(sample.get("index") or [])[:len(sel["index"])]
    return {"images": number(ctx["images"], 0), "dataset": ctx["dataset"], "arch": arch_name(ctx["arch"]),
            "profile": ctx["profile"], "acc": number(100 * ctx["test_acc"]), "n": number(exact["confident images"], 0),
            "exact_sis": number(size), "coarse": f"{coarse['method']} {coarse['setting']}".strip(),
            "coarse_sis": number(coarse["SIS size (% of pixels)"]),
            "bound": MISSING if math.isnan(size) else "above" if size > bound else "below",
            "full": number(exact["full images (%)"]), "exact_acc": number(exact["own BS subsets (%)"]),
            "coarse_acc": number(coarse["own BS subsets (%)"]),
            "relation": "not this chapter's source model (another artifact key), so its numbers sit beside the sweep"
            if not source_key or ctx["model_key"] != source_key else
            "this chapter's source model itself (the same artifact key), on " +
            (f"the first {ctx['images']:.0f} images of its sample" if same else "other images than its sample")}


# ----------------------------------------------------------------------------- what the chapter shows

def fmt(x, digits: int | str = 2) -> str:
    """:func:`number` with thousands separators: ``digits`` decimals, or "sig3" (3 significant digits below 1000)."""
    if number(x) == MISSING:
        return MISSING
    x, sig3 = float(x), digits == "sig3"
    return f"{x:.3g}" if sig3 and abs(x) < 1000 else f"{x:,.{0 if sig3 else digits}f}"


def span(values, digits: int | str = 2) -> str:
    """'lo–hi' of the finite values as :func:`fmt` writes them ('lo' when both read the same)."""
    v = [x for x in values if number(x) != MISSING]
    lo, hi = (fmt(min(v), digits), fmt(max(v), digits)) if v else (MISSING, MISSING)
    return lo if lo == hi else f"{lo}–{hi}"


def listed(values) -> str:
    """The distinct values, in order, comma-separated (:data:`MISSING` if none)."""
    return ", ".join(dict.fromkeys(map(str, values))) or MISSING


def where(x: float, lo: float, hi: float) -> str:
    """'below', 'within' or 'above' the range lo–hi; :data:`MISSING` where a number is missing."""
    return MISSING if MISSING in map(number, (x, lo, hi)) else "below" if x < lo else "above" if x > hi else "within"


def _model(arch: str, shape: tuple) -> str:
    return f"{arch_name(arch)}, {shape[1]}×{shape[2]}×{shape[0]}"  # 'ResNet20, 28×28×1' from (C, H, W)


def _display(df: pd.DataFrame, names: dict, index: list[str] | None = None, digits: dict | int | None = None,
             single: tuple = ("device",)) -> pd.DataFrame:
    """``names``' columns renamed and as text (:func:`fmt`), indexed by ``index``; one-valued ``single`` dropped."""
    def cell(v, digits):
        v = v.item() if hasattr(v, "item") else v
        if isinstance(v, bool):
            return "yes" if v else "no"
        return fmt(v, 0 if isinstance(v, int) else digits) if isinstance(v, (int, float)) or v is None else str(v)
    drop = [c for c in single if c in names and df[c].nunique() <= 1 and len(df)]
    names = {c: n for c, n in names.items() if c not in drop}
    per, default = (digits, 2) if isinstance(digits, dict) else ({}, 2 if digits is None else digits)
    out = pd.DataFrame({n: [span(v, per.get(c, default)) for v in zip(df[c[0]], df[c[1]])] if isinstance(c, tuple)
                        else [cell(v, per.get(c, default)) for v in df[c]] for c, n in names.items()}, index=df.index)
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


def efficiency_table(eff: pd.DataFrame) -> pd.DataFrame:
    exact = ("exact_s_fastest", "exact_s_slowest")
    return _display(eff.assign(name=[_model(a, s) for a, s in zip(eff["arch"], eff["shape"])]),
                    {"device": "device", "name": "model", "threads": "threads", "width": "initial filters",
                     "plain_median": "plain (images/s)", "engine_median": "engine (evals/s)",
                     "ratio_median": "efficiency", ("ratio_min", "ratio_max"): "single rounds",
                     exact: "full exact run (s/image)"}, index=["device", "name", "threads"],
                    digits={"plain_median": 0, "engine_median": 0, exact: 0})


def check_values(chk: pd.DataFrame) -> dict[str, str]:
    """Glue values ``chk_*``: the measured exact run against the efficiency rows' prediction and rounds."""
    if chk.empty:
        return dict.fromkeys(("chk_" + k for k in "arch shape eff_width fid_width eff_macs fid_macs macs_x fold "
                              "fold_rounds fold_setting eff_s measured threads images pred pred_threads where off "
                              "evals rate rate_eq engine rate_where plain plain_where vs_plain eff_folded fid_folded "
                              "device outpaced".split()), MISSING)
    c = chk.iloc[0]
    at = chk[chk["threads"] == c["fid_threads"]]
    at = at if len(at) else chk
    lo, hi = at[["folded_fast", "folded_slow"]].min().min(), at[["folded_fast", "folded_slow"]].max().max()
    m, rate = c["measured"], c["evals"] / c["measured"]
    eq = rate * c["macs_ratio"] / c["fold_speedup"]
    plain, engine = [at["plain_slow"].min(), at["plain_fast"].max()], [at["engine_slow"].min(), at["engine_fast"].max()]
    place = where(eq, *plain)      # of the fidelity run's rate, scaled to the benchmark's model, among plain inference's
    return {"chk_arch": arch_name(c["arch"]), "chk_shape": f"{c['shape'][1]}×{c['shape'][2]}",
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
            "chk_plain_where": place, "chk_vs_plain": fmt(rate / chk["plain_median"].max(), 1),
            "chk_eff_folded": "yes" if c["eff_folded"] else "no", "chk_fid_folded": "yes" if c["fid_folded"] else "no",
            "chk_device": listed(chk["device"]), "chk_outpaced": MISSING if place == MISSING else
            "So scaled, the fidelity run would have outpaced plain inference." if place == "above" else
            "So scaled, it would not have outpaced plain inference, and its raw rate reflects the smaller model it ran."}


def check_table(chk: pd.DataFrame) -> pd.DataFrame:
    if chk.empty:
        return _display(chk, {"threads": "threads"})
    c = chk.iloc[0]
    return _display(chk, {"device": "device", "threads": "threads",
                          ("s_fast", "s_slow"): f"as timed: {c['eff_width']:.0f} filters (s)",
                          ("scaled_fast", "scaled_slow"): f"× multiply-adds: {c['fid_width']:.0f} filters (s)",
                          ("folded_fast", "folded_slow"): f"÷ folding ({fmt(c['fold_speedup'])}×) (s)"},
                    index=["device", "threads"], digits=0)


def _taus(fid: pd.DataFrame) -> dict[str, str]:
    """The ``size_ratio_tau<t>`` columns and their t."""
    return {c: c[len("size_ratio_tau"):] for c in fid if c.startswith("size_ratio_tau")}


def fidelity_values(fid: pd.DataFrame, ctx: pd.DataFrame) -> dict[str, str]:
    """Glue values ``fid_*``: cost and SIS size ratio per method, ``pruned`` at the benchmark's chosen m."""
    exact, approx, grad = fid[fid["method"] == "exact"], fid[fid["method"] != "exact"], fid[fid["method"] == "gradient"]
    ratios = list(_taus(fid))
    chosen = fid.merge(ctx[["device", "chosen_m"]], on="device")
    chosen = chosen[(chosen["method"] == "pruned") & (chosen["param"] == chosen["chosen_m"])]
    return {
        "fid_images": span(ctx["images"], 0), "fid_dataset": listed(ctx["dataset"]),
        "fid_arch": listed(ctx["arch"].map(arch_name)), "fid_profile": listed(ctx["profile"]),
        "fid_taus": and_list(_taus(fid).values(), MISSING),
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
    """Seconds per image (log) against SIS size over exact's, a panel per τ, a marker per method and setting."""
    import matplotlib.pyplot as plt
    colours, markers, taus = {"exact": "black", "pruned": "tab:blue", "gradient": "tab:orange"}, "osD^v", _taus(fid)
    # 7.8 in at 100 dpi is about the page's width, so 9 pt text stays 9 pt
    fig, axes = plt.subplots(1, len(taus) or 1, figsize=(3.9 * (len(taus) or 1), 3.4), squeeze=False, sharey=True)
    devices = list(dict.fromkeys(fid["device"]))
    # each label at the first offset where it overlaps no earlier label and no point (else at the last)
    offsets = [(dx, dy, "left" if dx > 0 else "right", "bottom" if dy > 0 else "top")
               for dx, dy in ((5, 3), (5, -3), (-5, 3), (-5, -3), (5, 12), (5, -12))]
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
            points = [(r["s_per_image"], r[col], r["setting"] or r["method"]) for _, r in shown.iterrows()]
            renderer, placed = fig.canvas.get_renderer(), []
            dots = [ax.transData.transform(p[:2]) for p in points]
            for x, y, text in sorted(points, key=lambda p: p[:2]):
                for i, (dx, dy, ha, va) in enumerate(offsets):
                    a = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=9)
                    box = a.get_window_extent(renderer).expanded(1.05, 1.1)
                    if i == len(offsets) - 1 or not (any(box.overlaps(b) for b in placed) or
                                                     any(box.contains(*d) for d in dots)):
                        placed.append(box)
                        break
                    a.remove()
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
    """Glue values ``proj_*``: per dataset (``fm``, ``c10``) the projected hours of exact and the fastest method."""
    proj, out = _with_run(proj), {"proj_batch": span(proj["batch"], 0), "proj_device": listed(proj["device"])}
    for ds, key in (("fashion-mnist", "fm"), ("cifar10", "c10")):
        p = proj[proj["dataset"] == ds]
        exact, fast = p.loc[p["method"] == "exact", "hours"], p[p["method"] != "exact"].nsmallest(1, "hours")
        out.update({f"proj_{key}_images": span(p["images"], 0), f"proj_{key}_arch": listed(p["arch"].map(arch_name)),
                    f"proj_{key}_exact_h": span(exact, 0), f"proj_{key}_exact_days": span(exact / 24, 0),
                    f"proj_{key}_fast_h": span(fast["hours"], "sig3"), f"proj_{key}_fast": listed(fast["run"]),
                    f"proj_{key}_fast_device": listed(fast["device"])})
    return out


def projection_table(proj: pd.DataFrame) -> pd.DataFrame:
    proj = _with_run(proj)
    runs = list(dict.fromkeys(proj["run"]))
    wide = proj.pivot(index=["device", "dataset", "arch", "images"], columns="run", values="hours")[runs].reset_index()
    return _display(wide.assign(arch=wide["arch"].map(arch_name)), {"device": "device", "dataset": "dataset",
                    "arch": "model", "images": "images", **{r: r for r in runs}},
                    index=["device", "dataset", "arch", "images"], digits=dict.fromkeys(runs, "sig3"))


def s5_values(t: pd.DataFrame) -> dict[str, str]:
    """Glue values ``s5_*``: our devices and our row closest to the paper's S5 setting (Inception-v3 first)."""
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
