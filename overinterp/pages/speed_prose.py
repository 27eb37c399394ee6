"""What the chapter "How fast is backward selection?" (``book/13_speed``, paper 3.3 and S5) says of the
benchmark's tables, and how it shows them.

:mod:`overinterp.pages.speed` reads the result files into tidy numeric tables; this module turns
those tables into what a reader sees: the values glued into the prose (one ``*_values`` function per
section, each a ``{glue name: str}`` dict for :func:`overinterp.pages.chapter.glue_all`), the tables
as displayed (``*_table``), the notes about the files (:func:`file_notes`, :func:`show_missing`) and
the fidelity figure (:func:`plot_fidelity`). The paper's numbers come from
:data:`overinterp.paper.numbers.PAPER_S5`.
"""
from __future__ import annotations

import math

import pandas as pd
from IPython.display import Markdown, display

from overinterp.pages import speed as S
from overinterp.pages.chapter import glue_all
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5

__all__ = ["span", "listed", "for_display", "paper_values", "file_notes", "show_missing", "reference_values",
           "reference_table", "efficiency_values", "efficiency_table", "fidelity_values", "fidelity_table",
           "plot_fidelity", "projection_values", "projection_table", "s5_values", "s5_table"]


# ----------------------------------------------------------------------------- formatting

def span(values, fmt: str = "{:.2f}") -> str:
    """'lo–hi' of the finite values as ``fmt`` writes them ('lo' when both read the same; '—' if none)."""
    v = [x for x in values if x is not None and x == x]
    if not v:
        return "—"
    lo, hi = fmt.format(min(v)), fmt.format(max(v))
    return lo if lo == hi else f"{lo}–{hi}"


def listed(values) -> str:
    """The distinct values, in order, for prose ('—' if none)."""
    return ", ".join(dict.fromkeys(map(str, values))) or "—"


def for_display(df: pd.DataFrame, names: dict[str, str], index: list[str] | None = None,
                digits: int | dict[str, int] = 2) -> pd.DataFrame:
    """The columns of ``names`` renamed for a reader, floats rounded (``digits``, or per column with
    2 for the others), ``index`` columns as the index."""
    digits = digits if isinstance(digits, int) else {c: digits.get(c, 2) for c in names}
    out = df[list(names)].round(digits).rename(columns=names)
    return out.set_index([names[c] for c in index]) if index else out


def _arch(name: str) -> str:
    return ARCH_NAMES.get(name, name)


# ----------------------------------------------------------------------------- the files

def paper_values(results: dict) -> dict[str, str]:
    """The number of files read and the paper's S5 figure, as the prose quotes them."""
    p = PAPER_S5
    return {"n_files": str(len(results)), "paper_images": str(p["images"]), "paper_lo": str(p["minutes"][0]),
            "paper_hi": str(p["minutes"][1]), "paper_k": str(p["k"]), "paper_pixels": f"{p['pixels']:,}",
            "paper_size": f"{p['size']}×{p['size']}", "paper_steps": str(math.ceil(p["pixels"] / p["k"]))}


def file_notes(results: dict) -> list[str]:
    """Markdown, in order: one line per file (device, file, torch, hours, load); a warning box with
    :func:`overinterp.pages.speed.caveats` if any; a dropdown with every note of the files."""
    lines = [f"- **{label}**: `{d['file']}`, torch {d['info'].get('torch')}, "
             f"{d['info'].get('wall_s', float('nan')) / 3600:.1f} h of benchmarking"
             + (f"; 1-min load average {d['info']['loadavg_start'][0]:.1f} at the start, "
                f"{d['info']['loadavg_end'][0]:.1f} at the end" if "loadavg_end" in d["info"] else "")
             for label, d in results.items()]
    out = ["\n".join(lines)]
    warn = S.caveats(results)
    if warn:
        out.append(":::{warning}\nWhat the files say about their own numbers:\n"
                   + "\n".join(f"- **{label}**: {n}" for label, notes in warn.items() for n in notes) + "\n:::")
    notes = "\n".join(f"- **{label}**: {n['text']}" for label, d in results.items() for n in d.get("notes", []))
    out.append(":::{dropdown} Every note the files carry (what each section timed, and how)\n" + notes + "\n:::")
    return out


def show_missing(results: dict, section: str) -> None:
    """Display a note box naming the files that lack ``section``, if any."""
    lines = S.missing(results, section)
    if lines:
        display(Markdown(":::{note}\n" + "\n".join(f"- {line}" for line in lines) + "\n:::"))


# ----------------------------------------------------------------------------- exact vs reference, efficiency

def reference_values(ref: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.exact_vs_reference`: steps, images, agreement, speedups."""
    return {"ref_steps": span(ref["steps"], "{:.0f}"), "ref_images": span(ref["images"], "{:.0f}"),
            "ref_same": f"{int(ref['same_order'].sum())} of {len(ref)}",
            "ref_same_says": "the batching changes the speed, not the result" if ref["same_order"].all()
            else "where they differ, ties were broken differently or the engine is wrong",
            "ref_speed": span(ref["speedup"]), "ref_speed_cl": span(ref["speedup_cl"])}


def reference_table(ref: pd.DataFrame) -> pd.DataFrame:
    return for_display(ref, {"device": "device", "threads": "threads", "model": "model", "same_order": "same order",
                             "engine_evals_s": "engine (evals/s)", "reference_evals_s": "per-image (evals/s)",
                             "reference_cl_evals_s": "per-image, channels_last (evals/s)", "speedup": "speedup",
                             "speedup_cl": "speedup vs channels_last"}, index=["device", "threads", "model"])


def efficiency_values(eff: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.efficiency`: steps, images, rounds, ratios, exact's seconds."""
    return {"eff_steps": span(eff["steps"], "{:.0f}"), "eff_images": span(eff["images"], "{:.0f}"),
            "eff_rounds": span(eff["rounds"], "{:.0f}"), "eff_median": span(eff["ratio_median"]),
            "eff_rounds_span": span(list(eff["ratio_min"]) + list(eff["ratio_max"])),
            "eff_exact_s": span(eff["exact_s_per_image"], "{:,.0f}")}


def efficiency_table(eff: pd.DataFrame) -> pd.DataFrame:
    return for_display(eff, {"device": "device", "threads": "threads", "model": "model",
                             "best_plain": "best plain config", "plain_img_s": "plain (images/s)",
                             "engine_evals_s": "engine (evals/s)", "ratio_median": "ratio (median)",
                             "ratio_min": "ratio (min)", "ratio_max": "ratio (max)", "ratio_of_bests": "ratio of bests",
                             "exact_s_per_image": "full exact run (s/image)"}, index=["device", "threads", "model"])


# ----------------------------------------------------------------------------- fidelity

def _ratio_cols(fid: pd.DataFrame) -> list[str]:
    return [c for c in fid if c.startswith("size_ratio_tau")]


def fidelity_values(fid: pd.DataFrame, ctx: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.fidelity` and its context: images, model, cost and SIS
    size ratio of each method (``pruned`` at the m the benchmark chose), 5% subsets' IoU and accuracy."""
    approx, exact = fid[fid["method"] != "exact"], fid[fid["method"] == "exact"]
    grad, ratio_cols = fid[fid["method"] == "gradient"], _ratio_cols(fid)
    chosen = fid.merge(ctx[["device", "chosen_m"]], on="device")
    chosen = chosen[(chosen["method"] == "pruned") & (chosen["param"] == chosen["chosen_m"])]
    return {
        "fid_images": span(ctx["images"], "{:.0f}"), "fid_dataset": listed(ctx["dataset"]),
        "fid_arch": listed(ctx["arch"].map(_arch)), "fid_profile": listed(ctx["profile"]),
        "fid_taus": " and ".join(c[len("size_ratio_tau"):] for c in ratio_cols) or "—",
        "fid_exact_s": span(exact["s_per_image"], "{:.1f}"),
        "fid_grad_s": span(grad["s_per_image"], "{:.3f}"), "fid_grad_ratio": span(grad[ratio_cols].stack()),
        "fid_grad_speedup": span(grad["speedup_vs_exact"], "{:,.0f}"),
        "fid_m": span(ctx["chosen_m"], "{:.0f}"), "fid_rule": listed(ctx["chosen_m_rule"]),
        "fid_pruned_s": span(chosen["s_per_image"], "{:.2f}"), "fid_pruned_ratio": span(chosen[ratio_cols].stack()),
        "fid_pruned_speedup": span(chosen["speedup_vs_exact"], "{:,.0f}"),
        "fid_iou": span(approx["iou_5pct"]), "fid_acc_exact": span(100 * exact["acc_5pct"], "{:.1f}"),
        "fid_acc_approx": span(100 * approx["acc_5pct"], "{:.1f}"),
        "fid_acc_random": span(100 * ctx["random_5pct_acc"], "{:.1f}"),
        "fid_verified": "Every SIS that any method returned was verified to reach f ≥ τ" if fid["verified"].all()
        else "Not every SIS was verified to reach f ≥ τ (see the table)"}


def fidelity_table(fid: pd.DataFrame) -> pd.DataFrame:
    names = {"device": "device", "method": "method", "setting": "setting", "s_per_image": "s/image",
             "speedup_vs_exact": "× faster than exact",
             **{c: f"SIS size / exact's (τ = {c[len('size_ratio_tau'):]})" for c in _ratio_cols(fid)},
             "verified": "every SIS verified", "iou_5pct": "5% subset IoU with exact's",
             "acc_5pct": "accuracy on 5% subsets (%)", "confidence_5pct": "confidence on 5% subsets"}
    return for_display(fid.assign(acc_5pct=100 * fid["acc_5pct"]), names, index=["device", "method", "setting"],
                       digits={"s_per_image": 3, "speedup_vs_exact": 0, "acc_5pct": 1})


_METHOD_COLOURS = {"exact": "black", "pruned": "tab:blue", "gradient": "tab:orange"}
_MARKERS = "osD^v"


def plot_fidelity(fid: pd.DataFrame):
    """Fidelity against cost (paper S5 and our ``pruned``): seconds per image (log x) against the mean
    SIS size over exact's, one panel per tau, one labelled marker per method and setting (colour:
    method, shape: device); lower left is cheap and faithful. Returns the figure."""
    import matplotlib.pyplot as plt
    cols = _ratio_cols(fid) or ["size_ratio_tau?"]
    fig, axes = plt.subplots(1, len(cols), figsize=(4.6 * len(cols), 3.8), squeeze=False, sharey=True)
    devices = list(dict.fromkeys(fid["device"]))
    for ax, col in zip(axes[0], cols):
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        shown = fid[fid[col].notna()] if col in fid else fid.iloc[:0]
        for _, r in shown.iterrows():
            ax.scatter(r["s_per_image"], r[col], color=_METHOD_COLOURS.get(r["method"], "tab:green"),
                       marker=_MARKERS[devices.index(r["device"]) % len(_MARKERS)], s=36, zorder=3)
            ax.annotate(r["setting"] or r["method"], (r["s_per_image"], r[col]), textcoords="offset points",
                        xytext=(4, 4), fontsize=7)
        if shown.empty:
            ax.text(0.5, 0.5, "no image has an SIS at this τ", transform=ax.transAxes, ha="center")
        else:
            ax.set_xscale("log")
        ax.set_title(f"τ = {col[len('size_ratio_tau'):]}", fontsize=10)
        ax.set_xlabel("seconds per image (log scale)")
    axes[0][0].set_ylabel("mean SIS size / exact's")
    rows = [[plt.Line2D([], [], color=c, marker="o", ls="", label=m) for m, c in _METHOD_COLOURS.items()]]
    if len(devices) > 1:  # a second row: the marker of each device
        rows.append([plt.Line2D([], [], color="grey", marker=_MARKERS[i % len(_MARKERS)], ls="", label=d)
                     for i, d in enumerate(devices)])
    for i, handles in enumerate(rows):
        fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.06 * (len(rows) - 1 - i)),
                   ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 * len(rows) + 0.04, 1, 1))
    return fig


# ----------------------------------------------------------------------------- projections

def _with_run(proj: pd.DataFrame) -> pd.DataFrame:
    """``proj`` with ``run``: 'method' or 'method setting' (e.g. 'gradient k=4')."""
    return proj.assign(run=proj["method"] + (" " + proj["setting"]).where(proj["setting"] != "", ""))


def projection_values(proj: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.projections`: the batch timed and, per dataset
    (``fm``: Fashion-MNIST, ``c10``: CIFAR-10), its images, model, exact's hours and days, and the
    fastest approximation's hours, name and device."""
    proj = _with_run(proj)
    out = {"proj_batch": span(proj["batch"], "{:.0f}")}
    for ds, key in (("fashion-mnist", "fm"), ("cifar10", "c10")):
        p = proj[proj["dataset"] == ds]
        fast = p[p["method"] != "exact"].nsmallest(1, "hours")
        for k, v in {"images": span(p["images"], "{:,.0f}"), "arch": listed(p["arch"].map(_arch)),
                     "exact_h": span(p.loc[p["method"] == "exact", "hours"], "{:,.0f}"),
                     "exact_days": span(p.loc[p["method"] == "exact", "hours"] / 24, "{:,.0f}"),
                     "fast_h": span(fast["hours"], "{:,.1f}"), "fast": listed(fast["run"]),
                     "fast_device": listed(fast["device"])}.items():
            out[f"proj_{key}_{k}"] = v
    return out


def projection_table(proj: pd.DataFrame) -> pd.DataFrame:
    """Projected hours, one row per device and workload, one column per method and setting."""
    proj = _with_run(proj)
    wide = proj.pivot(index=["device", "dataset", "arch", "images"], columns="run", values="hours")
    return wide[list(dict.fromkeys(proj["run"]))].round(1).rename_axis(columns="projected hours")


# ----------------------------------------------------------------------------- S5

def _minutes_column() -> str:
    return f"minutes for {PAPER_S5['images']} images"


def _s5_shown(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`overinterp.pages.speed.s5` with the minutes as text ('lo–hi' for the paper's) and the
    closest rows marked ◀."""
    t = t.copy()
    t[_minutes_column()] = [f"{a:g}–{b:g}" if w == "paper" else f"{m:.2f}" for w, a, b, m in
                            zip(t["who"], t["minutes_32_low"], t["minutes_32_high"], t["minutes_32"])]
    t["closest"] = t["closest"].map({True: "◀", False: ""})
    return t


def s5_values(t: pd.DataFrame) -> dict[str, str]:
    """The closest of our rows to the paper's setting (an Inception-v3 row first, then the fewest
    minutes), in words (``s5_ours``), and how it differs from the paper's (``s5_differs``)."""
    best = t[t["closest"]].copy()
    best["rank"] = best["model"].str.startswith("Inception").map({True: 0, False: 1})
    best = best.sort_values(["rank", "minutes_32"]).head(1)
    if best.empty:
        return {"s5_ours": "no measurement of `gradient` was found in the files", "s5_differs": "—"}
    b = best.iloc[0]
    ours = (f"{b['model']} on {b['data']}, k = {b['k']} ({b['steps']} steps per image), "
            f"{b['how']}, on {b['device']}: {b['minutes_32']:.2f} minutes for {PAPER_S5['images']} images")
    differs = ("the same architecture, image size and k as the paper's, but random weights and random inputs, "
               "and only BackSelect timed" if b["model"].startswith("Inception") else
               f"a different model and dataset: {b['features']:,} features per image instead of the paper's "
               f"{PAPER_S5['pixels']:,} pixels, a small network instead of Inception-v3")
    return {"s5_ours": ours, "s5_differs": differs or "—"}


def s5_table(t: pd.DataFrame) -> pd.DataFrame:
    return for_display(_s5_shown(t), {"who": "who", "model": "model", "data": "data", "features": "pixels", "k": "k",
                                      "steps": "steps per image", "images": "images timed", "how": "how",
                                      _minutes_column(): _minutes_column(),
                                      "closest": "closest to the paper's setting"}, index=["who"])


#: section of the benchmark files -> (its measure from :mod:`overinterp.pages.speed`, its prose values, its table)
SECTIONS = {"reference_style_baseline": (S.exact_vs_reference, reference_values, reference_table),
            "efficiency": (S.efficiency, efficiency_values, efficiency_table),
            "projections": (S.projections, projection_values, projection_table),
            "inception_v3_gradient_sis": (S.s5, s5_values, s5_table)}


def section(results: dict, name: str) -> pd.DataFrame:
    """One section of the chapter: a note naming the files that lack it, its numbers glued for the
    prose, and its table (the cell's output)."""
    measure, values, table = SECTIONS[name]
    df = measure(results)
    show_missing(results, name)
    glue_all(values(df))
    return table(df)
