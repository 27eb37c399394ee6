"""The committed results of ``benchmarks/bench_backselect.py`` (``benchmarks/results/backselect-<device>.json``,
schema 2; paper sections 3.3, S5) read into frames: one row per device and case, empty columns where no file has
the section; a file of another schema raises ``ValueError``. :mod:`overinterp.pages.speed` shows them.

    res = load_results()
    eff = efficiency(res)            # seconds per image and speed-up per engine and device
"""
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
from overinterp.paper.formatting import MISSING, count, number
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
