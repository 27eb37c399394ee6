"""What the chapter "How fast is backward selection?" (``book/13_speed``, paper 3.3 and S5) says of the
benchmark's tables, and how it shows them.

:mod:`overinterp.pages.speed` reads the result files into tidy numeric tables; this module turns
those tables into what a reader sees: the values glued into the prose (one ``*_values`` function per
section, each a ``{glue name: str}`` dict for :func:`overinterp.pages.chapter.glue_all`), the tables
as displayed (``*_table``: a few short columns, numbers rounded as the prose rounds them, "—" for a
missing number, the device said once in the section's caption where the section has one), what the
files are (:func:`file_notes`, :func:`show_missing`) and the fidelity figure (:func:`plot_fidelity`).
The benchmark's own notes (what it did, written for its authors) stay in the files. The paper's
numbers come from :data:`overinterp.paper.numbers.PAPER_S5`.
"""
from __future__ import annotations

import math

import pandas as pd
from IPython.display import Markdown, display

from overinterp.pages import speed as S
from overinterp.pages.chapter import glue_all
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5

__all__ = ["span", "listed", "for_display", "paper_values", "file_notes", "show_missing", "reference_values",
           "reference_table", "efficiency_values", "efficiency_table", "check_values", "check_table",
           "fidelity_values", "fidelity_table", "plot_fidelity", "projection_values", "projection_table", "s5_values",
           "s5_table"]


# ----------------------------------------------------------------------------- formatting

def span(values, fmt: str = "{:.2f}") -> str:
    """'lo–hi' of the finite values as ``fmt`` writes them ('lo' when both read the same; '—' if none)."""
    v = [x for x in values if x is not None and x == x]
    if not v:
        return "—"
    lo, hi = fmt.format(min(v)), fmt.format(max(v))
    return lo if lo == hi else f"{lo}–{hi}"


def _span_sig3(values) -> str:
    """'lo–hi' of the finite values in :func:`sig3` ('—' if none)."""
    v = [x for x in values if x is not None and x == x]
    return "—" if not v else sig3(min(v)) if sig3(min(v)) == sig3(max(v)) else f"{sig3(min(v))}–{sig3(max(v))}"


def listed(values) -> str:
    """The distinct values, in order, for prose ('—' if none)."""
    return ", ".join(dict.fromkeys(map(str, values))) or "—"


def sig3(v: float) -> str:
    """Seconds as the chapter writes them: 3 significant digits (82.1, 8.73, 0.101), whole from 1000 on."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _cell(v, digits: int | str) -> str:
    """One table cell as the prose writes it: '—' for a missing number, yes/no, thousands separated;
    ``digits`` "sig3": :func:`sig3`."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return sig3(v) if digits == "sig3" else f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def for_display(df: pd.DataFrame, names: dict[str, str], index: list[str] | None = None,
                digits: int | dict[str, int | str] = 2, single: tuple = ("device",)) -> pd.DataFrame:
    """The columns of ``names`` renamed for a reader and written as text: floats with ``digits``
    decimals (or per column, 2 for the others; "sig3": 3 significant digits), '—' for a missing
    number, yes/no for booleans;
    ``index`` columns as the index. A column of ``single`` that holds one value is dropped (the
    section's caption names it once, e.g. the device)."""
    digits = digits if isinstance(digits, int) else {c: digits.get(c, 2) for c in names}
    drop = [c for c in single if c in names and df[c].nunique() <= 1 and len(df)]
    names = {c: n for c, n in names.items() if c not in drop}
    out = pd.DataFrame({n: [_cell(v.item() if hasattr(v, "item") else v,
                                  digits if isinstance(digits, int) else digits[c]) for v in df[c]]
                        for c, n in names.items()}, index=df.index)
    index = [c for c in index or [] if c not in drop]
    return out.set_index([names[c] for c in index]) if index else out


def devices(df: pd.DataFrame) -> str:
    """The device a section's rows were measured on, for its caption ('each row's device' if several)."""
    names = list(dict.fromkeys(df["device"])) if "device" in df else []
    return names[0] if len(names) == 1 else "each row's device" if names else "—"


def _arch(name: str) -> str:
    return ARCH_NAMES.get(name, name)


# ----------------------------------------------------------------------------- the files

def paper_values(results: dict) -> dict[str, str]:
    """The number of files read and the paper's S5 figure, as the prose quotes them."""
    p = PAPER_S5
    n = len(results)
    return {"n_files": f"{n} file" if n == 1 else f"{n} files", "paper_images": str(p["images"]),
            "paper_lo": str(p["minutes"][0]),
            "paper_hi": str(p["minutes"][1]), "paper_k": str(p["k"]), "paper_pixels": f"{p['pixels']:,}",
            "paper_size": f"{p['size']}×{p['size']}", "paper_steps": str(math.ceil(p["pixels"] / p["k"]))}


def file_notes(results: dict) -> list[str]:
    """Markdown, one paragraph per file: its device, name and torch version, hours of benchmarking, the
    dates of the commits that wrote it (:func:`overinterp.pages.speed.file_dates`), the 1-min load
    average at its start and end, and what a shared CPU (:func:`overinterp.pages.speed.shared_cpu`) or
    a smoke run does to its numbers. The files' own notes are not shown."""
    dates, out = S.file_dates(results), []
    for label, d in results.items():
        info = d["info"]
        text = f"**{label}**, `{d['file']}` (torch {info.get('torch')}): " \
               f"{info.get('wall_s', math.nan) / 3600:.1f} hours of benchmarking"
        when = dates.get(label)
        if when:
            text += f", committed on {when[0]}" if when[0] == when[1] else \
                f", committed from {when[0]} to {when[1]} (some sections were re-run after the first run)"
        text += f". The benchmark used {info.get('threads', '?')} threads"
        if "loadavg_start" in info and "loadavg_end" in info:
            text += f"; the machine's 1-minute load average was {info['loadavg_start'][0]:.1f} at its start and " \
                    f"{info['loadavg_end'][0]:.1f} at its end"
        text += "."
        if S.shared_cpu(d):
            text += (" Other jobs shared the CPU: absolute rates are lower than on an idle machine and vary "
                     "from one timing to the next, so where two rates are compared they were timed back to "
                     "back, in alternating rounds, and the chapter reads the median over rounds.")
        if d["smoke"]:
            text += (" This is a **smoke run** (`--smoke`): tiny models and sizes that check the benchmark's "
                     "wiring; its times are not speed measurements.")
        out.append(text)
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
            "ref_speed": span(ref["speedup"]), "ref_speed_cl": span(ref["speedup_cl"]), "ref_device": devices(ref)}


def reference_table(ref: pd.DataFrame) -> pd.DataFrame:
    ref = ref.assign(model=[_model(a, sh) if isinstance(a, str) and isinstance(sh, tuple) else m
                            for m, a, sh in zip(ref["model"], ref["arch"], ref["shape"])])
    return for_display(ref, {"device": "device", "model": "model", "threads": "threads", "same_order": "same order",
                             "engine_evals_s": "engine", "reference_evals_s": "per-image",
                             "reference_cl_evals_s": "per-image, channels_last", "speedup": "speedup",
                             "speedup_cl": "speedup vs channels_last"}, index=["device", "model", "threads"],
                       digits={"engine_evals_s": 0, "reference_evals_s": 0, "reference_cl_evals_s": 0})


def _model(arch: str, shape) -> str:
    """'ResNet20, 28×28×1' from an arch and a (C, H, W) shape."""
    return f"{_arch(arch)}, {shape[1]}×{shape[2]}×{shape[0]}"


def efficiency_values(eff: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.efficiency`: steps, images, rounds, the efficiency (median
    ratio over rounds) and the spread of single rounds, the benchmark's ratio of bests (quoted only to
    say why it is not the efficiency), the models' initial filters, and a full exact run's seconds at the
    fastest and the slowest round."""
    widths = dict.fromkeys(f"{w} for the {_arch(a)}" for a, w in zip(eff["arch"], eff["width"]))  # in row order
    return {"eff_steps": span(eff["steps"], "{:.0f}"), "eff_images": span(eff["images"], "{:.0f}"),
            "eff_rounds": span(eff["rounds"], "{:.0f}"), "eff_median": span(eff["ratio_median"]),
            "eff_rounds_span": span(list(eff["ratio_min"]) + list(eff["ratio_max"])),
            "eff_bests": span(eff["ratio_of_bests"]), "eff_widths": ", ".join(widths) or "—",
            "eff_folded": "folded into the convolutions" if eff["folded"].all() and len(eff) else
            "as separate layers" if not eff["folded"].any() else "folded in some rows (see the table)",
            "eff_exact_s": span(list(eff["exact_s_fastest"]) + list(eff["exact_s_slowest"]), "{:,.0f}"),
            "eff_device": devices(eff)}


def efficiency_table(eff: pd.DataFrame) -> pd.DataFrame:
    """Per model and thread count: initial filters, median plain and engine rates, the efficiency (median
    ratio) and the range of single rounds, a full exact run's seconds at the fastest–slowest round."""
    eff = eff.assign(name=[_model(a, sh) for a, sh in zip(eff["arch"], eff["shape"])],
                     rounds_range=[span([lo, hi]) for lo, hi in zip(eff["ratio_min"], eff["ratio_max"])],
                     exact_range=[span([a, b], "{:,.0f}") for a, b in zip(eff["exact_s_fastest"],
                                                                          eff["exact_s_slowest"])])
    return for_display(eff, {"device": "device", "name": "model", "threads": "threads", "width": "initial filters",
                             "plain_median": "plain (images/s)", "engine_median": "engine (evals/s)",
                             "ratio_median": "efficiency", "rounds_range": "single rounds",
                             "exact_range": "full exact run (s/image)"}, index=["device", "name", "threads"],
                       digits={"plain_median": 0, "engine_median": 0})


def check_values(chk: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.exact_check`: the two models' initial filters,
    batch norms and multiply-adds, folding's speedup, the measured exact run and the range predicted
    at its thread count (``chk_verdict``: inside, or how far above or below), the forward evaluations
    per second the measured run implies (over the fastest median plain rate: ``chk_vs_plain``), and the
    same in evaluations of the efficiency section's model (``chk_rate_eq``), within, above or below
    the engine's rounds at that thread count (``chk_rate_where``, ``chk_engine``), and whether that is
    still faster than every plain round there (``chk_plain``; ``chk_reading``, a sentence)."""
    keys = ("chk_arch", "chk_shape", "chk_eff_width", "chk_fid_width", "chk_eff_macs", "chk_fid_macs", "chk_macs_x",
            "chk_fold", "chk_fold_rounds", "chk_fold_setting", "chk_eff_s", "chk_measured", "chk_threads",
            "chk_images", "chk_pred", "chk_verdict", "chk_evals", "chk_rate", "chk_rate_eq", "chk_engine",
            "chk_rate_where", "chk_plain", "chk_vs_plain", "chk_reading", "chk_eff_folded", "chk_fid_folded",
            "chk_device")
    if chk.empty:
        return dict.fromkeys(keys, "—")
    c = chk.iloc[0]
    at = chk[chk["threads"] == c["fid_threads"]]
    at = at if len(at) else chk
    lo, hi = at[["folded_fast", "folded_slow"]].min().min(), at[["folded_fast", "folded_slow"]].max().max()
    m = c["measured"]
    where = f"at {c['fid_threads']:.0f} threads, the thread count of the measured run" if len(
        chk[chk["threads"] == c["fid_threads"]]) else "at the thread counts measured"
    if math.isnan(lo):
        verdict = "not predicted: the file does not measure folding on this model"
    elif lo <= m <= hi:
        verdict = f"inside the range predicted from the rounds {where} ({span([lo, hi], '{:,.0f}')} s)"
    else:
        off = m / hi - 1 if m > hi else 1 - m / lo
        verdict = (f"{100 * off:.0f}% {'above' if m > hi else 'below'} the range predicted from the rounds {where} "
                   f"({span([lo, hi], '{:,.0f}')} s)")
    rate = c["evals"] / m
    eq = rate * c["macs_ratio"] / c["fold_speedup"]
    eng_lo, eng_hi = at["engine_slow"].min(), at["engine_fast"].max()
    folded = lambda f: "folded into the convolutions" if f else "as separate layers"  # noqa: E731
    return {"chk_arch": _arch(c["arch"]), "chk_shape": f"{c['shape'][1]}×{c['shape'][2]}",
            "chk_eff_width": f"{c['eff_width']:.0f}", "chk_fid_width": f"{c['fid_width']:.0f}",
            "chk_eff_macs": f"{c['eff_macs'] / 1e6:.1f}", "chk_fid_macs": f"{c['fid_macs'] / 1e6:.1f}",
            "chk_macs_x": f"{c['eff_macs'] / c['fid_macs']:.2f}", "chk_fold": span([c["fold_speedup"]]),
            "chk_fold_rounds": span([c["fold_rounds"]], "{:.0f}"), "chk_fold_setting": c["fold_setting"] or "—",
            "chk_eff_s": span(list(chk["s_fast"]) + list(chk["s_slow"]), "{:,.0f}"), "chk_measured": sig3(m),
            "chk_threads": f"{c['fid_threads']:.0f}", "chk_images": f"{c['fid_images']:.0f}",
            "chk_pred": span([lo, hi], "{:,.0f}"), "chk_verdict": verdict, "chk_evals": f"{c['evals']:,.0f}",
            "chk_rate": f"{rate:,.0f}", "chk_rate_eq": span([eq], "{:,.0f}"),
            "chk_engine": span([eng_lo, eng_hi], "{:,.0f}"),
            "chk_rate_where": "—" if math.isnan(eq) else "within" if eng_lo <= eq <= eng_hi else
            "above" if eq > eng_hi else "below",
            "chk_vs_plain": f"{rate / chk['plain_median'].max():.1f}",
            "chk_plain": span([at["plain_slow"].min(), at["plain_fast"].max()], "{:,.0f}"),
            "chk_reading": "—" if math.isnan(eq) else
            "The fidelity run did not outpace plain inference; it ran a smaller model" if eq <= at["plain_fast"].max()
            else "Even so scaled, the fidelity run outpaced every plain round of Table 2's model at that thread count",
            "chk_eff_folded": folded(c["eff_folded"]), "chk_fid_folded": folded(c["fid_folded"]),
            "chk_device": devices(chk)}


def check_table(chk: pd.DataFrame) -> pd.DataFrame:
    """Per thread count, a full exact run's seconds at the fastest–slowest efficiency round: as timed,
    scaled by multiply-adds, and divided by folding's speedup."""
    if chk.empty:
        return for_display(chk, {"threads": "threads"})
    c = chk.iloc[0]
    rng = lambda a, b: [span([x, y], "{:,.0f}") for x, y in zip(chk[a], chk[b])]  # noqa: E731
    t = chk.assign(timed=rng("s_fast", "s_slow"), scaled=rng("scaled_fast", "scaled_slow"),
                   folded=rng("folded_fast", "folded_slow"))
    return for_display(t, {"device": "device", "threads": "threads",
                           "timed": f"as timed: {c['eff_width']:.0f} filters (s)",
                           "scaled": f"× multiply-adds: {c['fid_width']:.0f} filters (s)",
                           "folded": f"÷ folding ({span([c['fold_speedup']])}×) (s)"}, index=["device", "threads"])


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
        "fid_exact_s": _span_sig3(exact["s_per_image"]),
        "fid_grad_s": _span_sig3(grad["s_per_image"]), "fid_grad_ratio": span(grad[ratio_cols].stack()),
        "fid_grad_speedup": span(grad["speedup_vs_exact"], "{:,.0f}"),
        "fid_m": span(ctx["chosen_m"], "{:.0f}"),
        "fid_rule": listed(r if len(w) > 60 or not w else f"{r}, {w}"
                           for r, w in zip(ctx["chosen_m_rule"], ctx["chosen_m_reason"])),
        "fid_device": devices(fid),
        "fid_pruned_s": _span_sig3(chosen["s_per_image"]), "fid_pruned_ratio": span(chosen[ratio_cols].stack()),
        "fid_pruned_speedup": span(chosen["speedup_vs_exact"], "{:,.0f}"),
        "fid_iou": span(approx["iou_5pct"]), "fid_acc_exact": span(100 * exact["acc_5pct"], "{:.1f}"),
        "fid_acc_approx": span(100 * approx["acc_5pct"], "{:.1f}"),
        "fid_acc_random": span(100 * ctx["random_5pct_acc"], "{:.1f}"),
        "fid_verified": "Every SIS that any method returned was verified to reach f ≥ τ" if fid["verified"].all()
        else "Not every SIS was verified to reach f ≥ τ (see the table)"}


def fidelity_table(fid: pd.DataFrame) -> pd.DataFrame:
    """Per method and setting: s/image, speedup over exact, SIS size over exact's per tau, IoU of the 5%
    subsets with exact's and accuracy on them (whether every SIS was verified is said in the prose)."""
    fid = fid.assign(run=(fid["method"] + " " + fid["setting"]).str.strip(), acc_5pct=100 * fid["acc_5pct"])
    names = {"device": "device", "run": "method", "s_per_image": "s/image", "speedup_vs_exact": "× faster than exact",
             **{c: f"SIS size / exact's, τ = {c[len('size_ratio_tau'):]}" for c in _ratio_cols(fid)},
             "iou_5pct": "5% subsets: IoU with exact's", "acc_5pct": "5% subsets: accuracy (%)"}
    return for_display(fid, names, index=["device", "run"],
                       digits={"s_per_image": "sig3", "speedup_vs_exact": 0, "acc_5pct": 1})


_METHOD_COLOURS = {"exact": "black", "pruned": "tab:blue", "gradient": "tab:orange"}
_MARKERS = "osD^v"


def _label_points(ax, points: list[tuple[float, float, str]]) -> None:
    """Label each (x, y, text) point at the first of a few offsets (right above, right below, left
    above, left below, further out) whose text overlaps no label placed before it and no point."""
    renderer = ax.figure.canvas.get_renderer()
    dots = [ax.transData.transform((x, y)) for x, y, _ in points]
    placed = []
    offsets = [(5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
               (-5, -3, "right", "top"), (5, 12, "left", "bottom"), (5, -12, "left", "top")]
    for x, y, text in sorted(points, key=lambda p: (p[0], p[1])):
        for i, (dx, dy, ha, va) in enumerate(offsets):
            a = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=9)
            box = a.get_window_extent(renderer).expanded(1.05, 1.1)
            clash = any(box.overlaps(b) for b in placed) or any(box.contains(*d) for d in dots)
            if not clash or i == len(offsets) - 1:
                placed.append(box)
                break
            a.remove()


def plot_fidelity(fid: pd.DataFrame):
    """Fidelity against cost (paper S5 and our ``pruned``): seconds per image (log x) against the mean
    SIS size over exact's, one panel per tau, one labelled marker per method and setting (colour:
    method, shape: device); lower left is cheap and faithful. Returns the figure."""
    import matplotlib.pyplot as plt
    cols = _ratio_cols(fid) or ["size_ratio_tau?"]
    # 7.8 inches wide at 100 dpi: about the book's content width, so 9-point text stays 9 points
    fig, axes = plt.subplots(1, len(cols), figsize=(3.9 * len(cols), 3.4), squeeze=False, sharey=True)
    devices = list(dict.fromkeys(fid["device"]))
    for ax, col in zip(axes[0], cols):
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        shown = fid[fid[col].notna()] if col in fid else fid.iloc[:0]
        for _, r in shown.iterrows():
            ax.scatter(r["s_per_image"], r[col], color=_METHOD_COLOURS.get(r["method"], "tab:green"),
                       marker=_MARKERS[devices.index(r["device"]) % len(_MARKERS)], s=36, zorder=3)
        if shown.empty:
            ax.text(0.5, 0.5, "no image has an SIS at this τ", transform=ax.transAxes, ha="center", fontsize=9)
        else:
            ax.set_xscale("log")
            ax.margins(x=0.08, y=0.12)
            _label_points(ax, [(r["s_per_image"], r[col], r["setting"] or r["method"]) for _, r in shown.iterrows()])
        ax.set_title(f"τ = {col[len('size_ratio_tau'):]}", fontsize=10)
        ax.set_xlabel("seconds per image (log scale)", fontsize=10)
        ax.tick_params(labelsize=9)
    axes[0][0].set_ylabel("mean SIS size / exact's", fontsize=10)
    rows = [[plt.Line2D([], [], color=c, marker="o", ls="", label=m) for m, c in _METHOD_COLOURS.items()]]
    if len(devices) > 1:  # a second row: the marker of each device
        rows.append([plt.Line2D([], [], color="grey", marker=_MARKERS[i % len(_MARKERS)], ls="", label=d)
                     for i, d in enumerate(devices)])
    for i, handles in enumerate(rows):
        fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.06 * (len(rows) - 1 - i)),
                   ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.06 * len(rows) + 0.04, 1, 1))
    return fig


# ----------------------------------------------------------------------------- projections

def _with_run(proj: pd.DataFrame) -> pd.DataFrame:
    """``proj`` with ``run``: 'method' or 'method setting' (e.g. 'gradient k=4')."""
    return proj.assign(run=proj["method"] + (" " + proj["setting"]).where(proj["setting"] != "", ""))


def projection_values(proj: pd.DataFrame) -> dict[str, str]:
    """The prose of :func:`overinterp.pages.speed.projections`: the batch timed and, per dataset
    (``fm``: Fashion-MNIST, ``c10``: CIFAR-10), its images, model, exact's hours and days, and the
    fastest approximation's hours, name and device (``fast_run``: its name, with ' on <device>' where
    the section has several devices: the caption names the one)."""
    proj = _with_run(proj)
    out = {"proj_batch": span(proj["batch"], "{:.0f}"), "proj_device": devices(proj)}
    several = proj["device"].nunique() > 1
    for ds, key in (("fashion-mnist", "fm"), ("cifar10", "c10")):
        p = proj[proj["dataset"] == ds]
        fast = p[p["method"] != "exact"].nsmallest(1, "hours")
        for k, v in {"images": span(p["images"], "{:,.0f}"), "arch": listed(p["arch"].map(_arch)),
                     "exact_h": span(p.loc[p["method"] == "exact", "hours"], "{:,.0f}"),
                     "exact_days": span(p.loc[p["method"] == "exact", "hours"] / 24, "{:,.0f}"),
                     "fast_h": _span_sig3(fast["hours"]), "fast": listed(fast["run"]),
                     "fast_device": listed(fast["device"]),
                     "fast_run": listed(fast["run"]) + (f" on {listed(fast['device'])}" if several and len(fast)
                                                        else "")}.items():
            out[f"proj_{key}_{k}"] = v
    return out


def projection_table(proj: pd.DataFrame) -> pd.DataFrame:
    """Projected hours (as :func:`sig3` writes them, like the prose), one row per device (said once if
    one) and workload, one column per method and setting."""
    proj = _with_run(proj)
    runs = list(dict.fromkeys(proj["run"]))
    wide = proj.pivot(index=["device", "dataset", "arch", "images"], columns="run", values="hours")[runs].reset_index()
    wide["arch"] = wide["arch"].map(_arch)
    return for_display(wide, {"device": "device", "dataset": "dataset", "arch": "model", "images": "images",
                              **{r: r for r in runs}}, index=["device", "dataset", "arch", "images"],
                       digits={r: "sig3" for r in runs})


# ----------------------------------------------------------------------------- S5

def _minutes_column() -> str:
    return f"minutes for {PAPER_S5['images']} images"


def _s5_shown(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`overinterp.pages.speed.s5` with the minutes as text ('lo–hi' for the paper's), the
    closest rows marked ◀ and ``who`` as 'paper' or 'ours' (the device is its own column)."""
    t = t.copy()
    t[_minutes_column()] = [f"{a:g}–{b:g}" if w == "paper" else f"{m:.2f}" for w, a, b, m in
                            zip(t["who"], t["minutes_32_low"], t["minutes_32_high"], t["minutes_32"])]
    t["closest"] = t["closest"].map({True: "◀", False: ""})
    t["who"] = t["who"].where(t["who"] == "paper", "ours")
    return t


def s5_values(t: pd.DataFrame) -> dict[str, str]:
    """The closest of our rows to the paper's setting (an Inception-v3 row first, then the fewest
    minutes), in words (``s5_ours``), how it differs from the paper's (``s5_differs``), and the device
    of our rows (``s5_device``)."""
    best = t[t["closest"]].copy()
    best["rank"] = best["model"].str.startswith("Inception").map({True: 0, False: 1})
    best = best.sort_values(["rank", "minutes_32"]).head(1)
    device = devices(t[t["who"] != "paper"])
    if best.empty:
        return {"s5_ours": "no measurement of `gradient` was found in the files", "s5_differs": "—",
                "s5_device": device}
    b = best.iloc[0]
    on = f", on {b['device']}" if t.loc[t["who"] != "paper", "device"].nunique() > 1 else ""  # else: the caption's
    ours = (f"{b['model']} on {b['data']}, k = {b['k']} ({b['steps']} steps per image), "
            f"{b['how']}{on}: {b['minutes_32']:.2f} minutes for {PAPER_S5['images']} images")
    differs = ("the same architecture, image size and k as the paper's, but random weights and random inputs, "
               "and only BackSelect timed" if b["model"].startswith("Inception") else
               f"a different model and dataset: {b['features']:,} features per image instead of the paper's "
               f"{PAPER_S5['pixels']:,} pixels, a small network instead of Inception-v3")
    return {"s5_ours": ours, "s5_differs": differs or "—", "s5_device": device}


def s5_table(t: pd.DataFrame) -> pd.DataFrame:
    return for_display(_s5_shown(t), {"who": "", "device": "device", "model": "model", "data": "inputs",
                                      "how": "how", "k": "k", "steps": "steps per image",
                                      _minutes_column(): _minutes_column(), "closest": "◀"}, index=["who"],
                       single=("device",))


#: section of the benchmark files -> (its measure from :mod:`overinterp.pages.speed`, its prose values, its table)
SECTIONS = {"reference_style_baseline": (S.exact_vs_reference, reference_values, reference_table),
            "efficiency": (S.efficiency, efficiency_values, efficiency_table),
            "exact_check": (S.exact_check, check_values, check_table),
            "projections": (S.projections, projection_values, projection_table),
            "inception_v3_gradient_sis": (S.s5, s5_values, s5_table)}


def section(results: dict, name: str) -> pd.DataFrame:
    """One section of the chapter: a note naming the files that lack it, its numbers glued for the
    prose, and its table (the cell's output)."""
    measure, values, table = SECTIONS[name]
    df = measure(results)
    if name in S.SECTIONS:
        show_missing(results, name)
    glue_all(values(df))
    return table(df)
