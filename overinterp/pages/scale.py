"""The scale study (:func:`overinterp.experiments.scale.study`) as JSON (``python -m overinterp scale --json``),
glue values, tables and curves for the chapter "How the claims move with scale".

    doc = document(run, rows, seconds, device); store.write_json(path, doc)
    rows = load(path)                  # the study's rows, with the provenance in rows.attrs
    fig = curves(rows)                 # one panel per measure and curve: estimate, interval, replicates
"""
import json
from dataclasses import asdict
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from overinterp.paper.formatting import MISSING, number
from overinterp.paper.numbers import ARCH_NAMES
from overinterp.store import code_version

#: the measures in the order the chapter discusses them, with the axis label of each
ORDER = {"test accuracy (%)": "test accuracy (%)", "SIS size (%)": "mean SIS size at τ (% of pixels)",
         "accuracy drop (points)": "accuracy drop on own 5% subsets (points)",
         "confidence drop": "confidence drop on own 5% subsets",
         "BS - random (points)": "retrained: BS − random (points)",
         "full - BS (points)": "retrained: full − BS (points)"}


#: the glue names' short form of each measure (:func:`values`)
SHORT = {"test accuracy (%)": "acc", "SIS size (%)": "sis", "accuracy drop (points)": "drop",
         "confidence drop": "conf", "BS - random (points)": "bsrand", "full - BS (points)": "fullbs"}


def document(run, rows: pd.DataFrame, seconds: float, device: str) -> dict:
    """The JSON of one ``scale`` run: its provenance (commit, device, profile, config, seconds) and every row."""
    return {"schema": 1, "dataset": run.dataset, "profile": run.profile.name, "seed": run.seed, "device": device,
            "commit": code_version(), "tau": run.profile.sis_threshold, "recipe": asdict(run.profile.train),
            "config": asdict(run.profile.scale), "seconds": round(seconds, 1),
            "rows": json.loads(rows.to_json(orient="records"))}


def load(path) -> pd.DataFrame:
    """The rows of the :func:`document` at ``path``, the rest in ``.attrs``; an error naming a missing or bad file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no scale study at {path}: run python -m overinterp scale --json {path}")
    doc = json.loads(path.read_text())
    if doc.get("schema") != 1 or "rows" not in doc:
        raise ValueError(f"{path} is not a scale study of python -m overinterp scale (schema 1)")
    rows = pd.DataFrame(doc.pop("rows"))
    rows["paper"] = pd.to_numeric(rows["paper"])       # JSON null: no number of the paper's
    rows.attrs.update(doc)
    return rows


def rows_for(run, study: str | None = None) -> pd.DataFrame:
    """The study a chapter shows: the file ``study``, else the profile's committed one, else computed from the store."""
    from overinterp.config.chapters import ROOT
    from overinterp.experiments import scale
    path = study or run.profile.scale.results
    return load(ROOT / path) if path else scale.study(run, progress=False)


def trend(rows: pd.DataFrame, measure: str, curve: str, setting: str | None = None) -> dict:
    """How ``measure`` moves along ``curve`` (at ``setting``, default the first): end points, change, ``apart``."""
    r = rows[(rows["measure"] == measure) & (rows["curve"] == curve)]
    r = r[r["setting"] == (setting or r["setting"].iloc[0])]
    x = "training images" if curve == "size" else "width"
    r = r.sort_values(x)
    a, b = r.iloc[0], r.iloc[-1]
    return {"from": a["estimate"], "from_low": a["95% low"], "from_high": a["95% high"], "from_x": int(a[x]),
            "to": b["estimate"], "to_low": b["95% low"], "to_high": b["95% high"], "to_x": int(b[x]),
            "change": b["estimate"] - a["estimate"], "apart": bool(b["95% low"] > a["95% high"] or
                                                               b["95% high"] < a["95% low"]),
            "max_sd": float(r["replicate sd"].max()), "paper": a["paper"]}


def toward(t: dict) -> str:
    """A :func:`trend` against the paper's number, in words (see :data:`MOVED`'s keys)."""
    if not t["apart"]:
        return "no move beyond the intervals"
    if not np.isfinite(t["paper"]):
        return "no paper number"
    closer = abs(t["to"] - t["paper"]) < abs(t["from"] - t["paper"])
    return "toward the paper's number" if closer else "away from the paper's number"


def _main_setting(rows: pd.DataFrame, measure: str) -> str:
    """The setting a measure's sentence reads: the pruned engine for SIS size, the mean pixel otherwise."""
    settings = list(dict.fromkeys(rows.loc[rows["measure"] == measure, "setting"]))
    return next((s for s in settings if s.startswith("pruned")), settings[0])


def values(rows: pd.DataFrame, run=None) -> dict:
    """The chapter's glue values: each measure's :func:`trend` per curve (``<key>_<curve>_*``), engine ratio,
    drop per mask, provenance (from the document, else ``run``) and :func:`_words`' sentences."""
    out, apart = {}, {"size": [], "width": []}
    for m, key in SHORT.items():
        digits = 3 if m == "confidence drop" else 1
        for curve in ("size", "width"):
            k = f"{key}_{curve}"
            if m not in set(rows["measure"]):      # e.g. no confident image at any point: no SIS sizes
                out.update({f"{k}_{f}": MISSING for f in ("from", "to", "from_iv", "to_iv", "apart", "sd",
                                                          "from_x", "to_x", "toward")})
                continue
            t = trend(rows, m, curve, _main_setting(rows, m))
            apart[curve].append(t["apart"])
            out.update({f"{k}_from": number(t["from"], digits), f"{k}_to": number(t["to"], digits),
                        f"{k}_from_iv": f"[{number(t['from_low'], digits)}, {number(t['from_high'], digits)}]",
                        f"{k}_to_iv": f"[{number(t['to_low'], digits)}, {number(t['to_high'], digits)}]",
                        f"{k}_apart": "apart" if t["apart"] else "overlapping", f"{k}_sd": number(t["max_sd"], digits),
                        f"{k}_from_x": f"{t['from_x']:,}", f"{k}_to_x": f"{t['to_x']:,}",
                        f"{k}_toward": toward(t)})
        paper = rows.loc[rows["measure"] == m, "paper"]
        out[f"{key}_paper"] = number(paper.iloc[0] if len(paper) else np.nan, digits)
    out.update({f"{curve}_{k}": n for curve, a in apart.items()
                for k, n in (("apart_n", sum(a)), ("measures_n", len(a)))})
    sis = rows[rows["measure"] == "SIS size (%)"]
    out.update({"engine_ratio_min": MISSING, "engine_ratio_max": MISSING, "sis_grad_width_from": MISSING,
                "sis_grad_width_to": MISSING, "sis_grad_setting": MISSING})
    if len(sis):
        pruned = _main_setting(rows, "SIS size (%)")
        grad = next((g for g in dict.fromkeys(sis["setting"]) if g != pruned and g.endswith(pruned.split(", ")[-1])),
                    None)                      # the other engine with the same mask value
        if grad is not None:
            t = trend(rows, "SIS size (%)", "width", grad)
            out.update({"sis_grad_width_from": number(t["from"], 1), "sis_grad_width_to": number(t["to"], 1),
                        "sis_grad_setting": grad})
        by = sis.pivot_table(index=["curve", "training images", "width"], columns="setting", values="estimate")
        ratio = by.drop(columns=pruned).min(axis=1) / by[pruned]
        out.update({"engine_ratio_min": number(ratio.min(), 2), "engine_ratio_max": number(ratio.max(), 2)})
    last = rows[(rows["measure"] == "accuracy drop (points)") & (rows["curve"] == "size")]
    last = last[last["training images"] == last["training images"].max()].set_index("setting")["estimate"]
    out.update({f"mask_drop_{'mean' if k == 'mean pixel' else k}": number(v, 1) for k, v in last.items()})
    a = rows.attrs
    arch = a.get("config", {}).get("arch") or (run.profile.scale.arch if run else MISSING)
    commit = a.get("commit")
    out.update({"study_arch": ARCH_NAMES.get(arch, arch),"study_profile": a.get("profile", run.profile.name if run else MISSING),
                "study_device": a.get("device", str(run.device) if run else MISSING),
                "study_commit": str(commit)[:12] if commit else "this execution",
                "study_replicates": int(rows["replicates"].max()),
                "study_images": int(rows.loc[rows["measure"] == "accuracy drop (points)", "images per replicate"].max())})
    out.update(_words(rows, out))
    return out



def edition_values(rows: pd.DataFrame, edition: dict | None) -> dict:
    """Glue values of the study's SIS size at its largest training set (``pt_*``) beside the verdicts document
    ``edition``'s (``ed_*``), and the sentence ``ed_beside``; :data:`MISSING` where either is absent."""
    keys = ("pt_sis", "pt_sis_iv", "pt_x", "pt_models", "pt_images", "ed_sis", "ed_sis_iv", "ed_models", "ed_images",
            "ed_overlap")
    out = dict.fromkeys(keys, MISSING)
    arch = ARCH_NAMES.get(rows.attrs.get("config", {}).get("arch", "resnet20"), "ResNet20")
    setting = _main_setting(rows, "SIS size (%)") if "SIS size (%)" in set(rows["measure"]) else None
    pt = rows[(rows["measure"] == "SIS size (%)") & (rows["curve"] == "size") & (rows["setting"] == setting)]
    if pt.empty:
        return {**out, "ed_beside": "This study measured no SIS size (no test image was confident enough at its "
                                    "points), so it has none to set beside the standard edition's SIS verdict."}
    ed = next((r for r in (edition or {}).get("rows", []) if r["claim"] == "sis" and r["model"] == arch), None)
    pt = pt.sort_values("training images").iloc[-1]
    out.update({"pt_sis": number(pt["estimate"], 1), "pt_x": f"{int(pt['training images']):,}",
                "pt_sis_iv": f"[{number(pt['95% low'], 1)}, {number(pt['95% high'], 1)}]",
                "pt_models": int(pt["replicates"]), "pt_images": int(pt["images per replicate"])})
    study = (f"At its largest training set, {out['pt_x']} images, the study measures the mean SIS size (pruned) of "
             f"{out['pt_models']} {arch} models, {out['pt_images']} SIS each: {out['pt_sis']}% {out['pt_sis_iv']}.")
    if ed is None or ed.get("low") is None:
        return {**out, "ed_beside": f"{study} No committed standard edition holds an SIS verdict with an interval "
                                    f"for {arch} to set beside it."}
    apart = pt["95% low"] > ed["high"] or pt["95% high"] < ed["low"]
    out.update({"ed_sis": number(ed["estimate"], 1), "ed_sis_iv": f"[{number(ed['low'], 1)}, {number(ed['high'], 1)}]",
                "ed_models": int(ed["replicates"]), "ed_images": int(ed["images"]),
                "ed_overlap": "do not overlap" if apart else "overlap"})
    return {**out, "ed_beside": f"{study} The standard edition's verdict on section 4.1's bound (chapter 2) measures "
                                f"{out['ed_models']} {arch} models of that recipe on {out['ed_images']} test images: "
                                f"{out['ed_sis']}% {out['ed_sis_iv']}. The two intervals {out['ed_overlap']}."}

#: each measure's unit after a number in a sentence, and how the chapter names the paper's number
UNIT = {"acc": "%", "sis": "%", "drop": " points", "conf": "", "bsrand": " points", "fullbs": " points"}
PAPER_NOTE = {"acc": "the paper's {arch} on CIFAR-10: {v}%", "sis": "the paper, 4.1: below {v}%",
              "drop": "the paper's {arch}, Table 1: {v} points", "conf": "the paper, 4.1: {v}",
              "bsrand": "the paper's {arch}: {v} points", "fullbs": "the paper's {arch}: {v} points"}
AT = {"size": lambda x: f"{x:,} training images", "width": lambda x: f"width {x}"}
MOVED = {"toward the paper's number": "moved toward the paper's number",
         "away from the paper's number": "moved away from the paper's number",
         "no move beyond the intervals": "did not move beyond its intervals",
         "no paper number": "moved beyond its intervals"}


def _words(rows: pd.DataFrame, v: dict) -> dict:
    """Sentences ``*_text``, ``*_moved``, ``*_paper_note``, ``study_code`` from :func:`values`' numbers ``v``."""
    out, measured = {}, set(rows["measure"])
    arch = v["study_arch"]
    for m, key in SHORT.items():
        digits, unit = (3 if m == "confidence drop" else 1), UNIT[key]
        paper = rows.loc[rows["measure"] == m, "paper"]
        paper = paper.iloc[0] if len(paper) else np.nan
        if m not in measured:
            out[f"{key}_paper_note"] = "not measured in this study"
        elif not np.isfinite(paper):
            out[f"{key}_paper_note"] = f"the paper gives no number for its {arch}"
        else:
            out[f"{key}_paper_note"] = PAPER_NOTE[key].format(arch=arch, v=number(paper, digits))
        for curve in ("size", "width"):
            k = f"{key}_{curve}"
            if m not in measured:
                out[f"{k}_text"] = ("not measured (no point has an image classified confidently enough for an SIS)"
                                    if key == "sis" else "not measured")
                continue
            t = trend(rows, m, curve, _main_setting(rows, m))
            ends = [number(t[f], digits) for f in ("from", "from_low", "from_high", "to", "to_low", "to_high", "max_sd")]
            pct, after = ("%", "") if unit == "%" else ("", unit)    # 82.9% [80.0, 85.7]; 56.1 [49.6, 62.5] points
            out[f"{k}_text"] = (
                f"from {ends[0]}{pct} [{ends[1]}, {ends[2]}]{after} at {AT[curve](t['from_x'])} to {ends[3]}{pct} "
                f"[{ends[4]}, {ends[5]}]{after} at {AT[curve](t['to_x'])} (intervals "
                f"{'apart' if t['apart'] else 'overlapping'}{': ' + toward(t) if t['apart'] else ''}; replicate sd up "
                f"to {ends[6]})")
        if m not in measured:
            out[f"{key}_size_moved"] = "was not measured"
            continue
        t = trend(rows, m, "size", _main_setting(rows, m))
        against = ("the paper's bound" if key == "sis" else "the paper's") + f" {number(paper, digits)}{unit}" \
            if np.isfinite(paper) else "no number of the paper's"
        out[f"{key}_size_moved"] = (f"{MOVED[toward(t)]} ({number(t['from'], digits)}{unit} → "
                                    f"{number(t['to'], digits)}{unit}, {against})")
    commit = rows.attrs.get("commit")
    out["study_code"] = f"code {str(commit)[:12]}" if commit else "the code of this execution"
    if v["engine_ratio_min"] == MISSING:
        out["engine_text"] = "With no SIS at any point, the two engines cannot be compared."
        return out
    ratio = (v["engine_ratio_min"] if v["engine_ratio_min"] == v["engine_ratio_max"] else
             f"{v['engine_ratio_min']}–{v['engine_ratio_max']}")
    grad = v["sis_grad_setting"] != MISSING
    out["engine_text"] = f"The gradient engine's mean SIS is {ratio} times pruned's across the points" + (
        f"; with the setting “{v['sis_grad_setting']}” it goes from {v['sis_grad_width_from']}% to "
        f"{v['sis_grad_width_to']}% along the width curve." if grad else ".")
    return out


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """Estimate [95% interval] per measure and setting (rows) and point (columns), with the paper's number."""
    r = rows.assign(cell=[f"{v:.3g} [{lo:.3g}, {hi:.3g}]" for v, lo, hi in
                          zip(rows["estimate"], rows["95% low"], rows["95% high"])],
                    point=[f"{n:,} images, width {w}" for n, w in zip(rows["training images"], rows["width"])])
    out = r.pivot_table(index=["measure", "setting"], columns="point", values="cell", aggfunc="first", sort=False)
    paper = r.groupby(["measure", "setting"], sort=False)["paper"].first()
    out.insert(0, "paper (CIFAR-10)", [number(v, 3) for v in paper.reindex(out.index)])
    return out.reset_index()


def curves(rows: pd.DataFrame, measures=None):
    """A panel per measure and curve: estimate, 95% interval and replicates per setting, paper's number dashed."""
    measures = [m for m in (measures or ORDER) if m in set(rows["measure"])]
    fig, axes = plt.subplots(len(measures), 2, figsize=(8.4, 2.1 * len(measures)), squeeze=False, sharex="col")
    colors = {}
    for i, m in enumerate(measures):
        for j, (curve, x) in enumerate([("size", "training images"), ("width", "width")]):
            ax, d = axes[i, j], rows[(rows["measure"] == m) & (rows["curve"] == curve)]
            for k, (setting, g) in enumerate(d.groupby("setting", sort=False)):
                g = g.sort_values(x)
                c = colors.setdefault(setting, f"C{len(colors)}")
                shift = 1 + 0.04 * (k - 0.5)      # settings side by side at a point
                xs = g[x].to_numpy(float) * shift
                ax.errorbar(xs, g["estimate"], yerr=[g["estimate"] - g["95% low"], g["95% high"] - g["estimate"]],
                            color=c, marker="o", ms=4, lw=1, capsize=2, label=setting)
                for xv, vals in zip(xs, g["values"]):
                    ax.scatter(np.full(len(vals), xv), vals, s=6, color=c, alpha=0.45, lw=0)
            if len(d) and np.isfinite(d["paper"].iloc[0]):
                ax.axhline(d["paper"].iloc[0], color="k", ls="--", lw=0.8, label="paper (CIFAR-10)")
            ax.set_xscale("log", base=10 if curve == "size" else 2)
            ax.set_xticks(sorted(d[x].unique()), [f"{v:,}" for v in sorted(d[x].unique())])
            ax.minorticks_off()
            ax.tick_params(labelsize=7)
            ax.set_title(ORDER[m], fontsize=8)
            if i == len(measures) - 1:
                ax.set_xlabel("training images" if curve == "size" else "initial filters (width)", fontsize=8)
    handles = {lab: h for ax in axes.flat for h, lab in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(len(handles), 3), fontsize=7,
               frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig
