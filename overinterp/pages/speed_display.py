"""What the chapter "How fast is backward selection?" (``book/13_speed``, paper 3.3 and S5) shows of the
benchmark's tables (:mod:`overinterp.pages.speed`): glue values and display tables, and the fidelity figure.

Per section, ``*_values`` is a ``{glue name: str}`` dict of numbers and short words for
:func:`overinterp.pages.chapter.glue_all` (the sentences around them are the notebook's Markdown), and
``*_table`` the table as displayed: a few short columns, numbers rounded as the prose rounds them
(:func:`fmt`), :data:`overinterp.paper.formatting.MISSING` for a missing number, the device column
dropped where it holds one device (the caption names it). Outcome words are ``yes``/``no`` and
:func:`where` (``below``, ``within``, ``above``).

    ref = speed.exact_vs_reference(res); glue_all(reference_values(ref)); reference_table(ref)
"""
from __future__ import annotations

import math

import pandas as pd

from overinterp.paper.formatting import MISSING, number
from overinterp.paper.numbers import ARCH_NAMES, PAPER_S5

__all__ = ["fmt", "span", "listed", "where", "for_display", "files_table", "paper_values", "reference_values",
           "reference_table", "efficiency_values", "efficiency_table", "check_values", "check_table",
           "fidelity_values", "fidelity_table", "plot_fidelity", "projection_values", "projection_table",
           "s5_values", "s5_table"]


# ----------------------------------------------------------------------------- numbers and words

def fmt(x, digits: int | str = 2) -> str:
    """``x`` with ``digits`` decimals and thousands separated; ``digits`` "sig3": 3 significant digits
    (82.1, 8.73, 0.101), whole from 1000 on; :data:`MISSING` where :func:`number` writes it."""
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


def _yes(flag) -> str:
    return "yes" if flag else "no"


def _arch(name: str) -> str:
    return ARCH_NAMES.get(name, name)


def _model(arch: str, shape) -> str:
    """'ResNet20, 28×28×1' from an arch and a (C, H, W) shape."""
    return f"{_arch(arch)}, {shape[1]}×{shape[2]}×{shape[0]}"


def _cell(v, digits: int | str) -> str:
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, bool):
        return _yes(v)
    if isinstance(v, (int, float)) or v is None:
        return fmt(v, 0 if isinstance(v, int) else digits)
    return str(v)


def for_display(df: pd.DataFrame, names: dict[str, str], index: list[str] | None = None,
                digits: dict[str, int | str] | None = None, single: tuple = ("device",)) -> pd.DataFrame:
    """The columns of ``names`` renamed for a reader and written as text (:func:`fmt`, ``digits`` per
    column, 2 for the others; yes/no for booleans), ``index`` columns as the index. A column of
    ``single`` that holds one value is dropped (the section's caption names it, e.g. the device)."""
    drop = [c for c in single if c in names and df[c].nunique() <= 1 and len(df)]
    names = {c: n for c, n in names.items() if c not in drop}
    out = pd.DataFrame({n: [_cell(v, (digits or {}).get(c, 2)) for v in df[c]] for c, n in names.items()},
                       index=df.index)
    index = [names[c] for c in index or [] if c not in drop]
    return out.set_index(index) if index else out


# ----------------------------------------------------------------------------- the files, the paper

def files_table(files: pd.DataFrame) -> pd.DataFrame:
    """:func:`overinterp.pages.speed.files` as displayed, one column per file (narrow for a few files)."""
    return for_display(files, {"device": "device", "file": "file", "torch": "torch", "threads": "threads",
                               "wall_h": "hours of benchmarking", "first_commit": "first commit",
                               "last_commit": "last commit", "load_start": "1-min load average at start",
                               "load_end": "1-min load average at end", "shared_cpu": "CPU shared",
                               "smoke": "smoke run", "missing": "sections missing"},
                       index=["device"], digits={"wall_h": 1, "load_start": 1, "load_end": 1}, single=()).T


def paper_values(results: dict) -> dict[str, str]:
    """The number of files read and the paper's S5 figure (:data:`overinterp.paper.numbers.PAPER_S5`)."""
    p = PAPER_S5
    return {"n_files": str(len(results)), "paper_images": str(p["images"]), "paper_lo": str(p["minutes"][0]),
            "paper_hi": str(p["minutes"][1]), "paper_k": str(p["k"]), "paper_pixels": fmt(p["pixels"], 0),
            "paper_size": f"{p['size']}×{p['size']}", "paper_steps": str(math.ceil(p["pixels"] / p["k"]))}


# ----------------------------------------------------------------------------- exact: reference, efficiency, check

def reference_values(ref: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.exact_vs_reference`: steps, images, how many of the ``ref_n``
    comparisons kept the same order (``ref_same``), the speedups, the devices."""
    return {"ref_steps": span(ref["steps"], 0), "ref_images": span(ref["images"], 0),
            "ref_same": str(int(ref["same_order"].sum())), "ref_n": str(len(ref)), "ref_speed": span(ref["speedup"]),
            "ref_speed_cl": span(ref["speedup_cl"]), "ref_device": listed(ref["device"])}


def reference_table(ref: pd.DataFrame) -> pd.DataFrame:
    ref = ref.assign(model=[_model(a, sh) if isinstance(a, str) and isinstance(sh, tuple) else m
                            for m, a, sh in zip(ref["model"], ref["arch"], ref["shape"])])
    return for_display(ref, {"device": "device", "model": "model", "threads": "threads", "same_order": "same order",
                             "engine_evals_s": "engine", "reference_evals_s": "per-image",
                             "reference_cl_evals_s": "per-image, channels_last", "speedup": "speedup",
                             "speedup_cl": "speedup vs channels_last"}, index=["device", "model", "threads"],
                       digits={"engine_evals_s": 0, "reference_evals_s": 0, "reference_cl_evals_s": 0})


def efficiency_values(eff: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.efficiency`: steps, images, rounds, the efficiency (median ratio over
    rounds) and the spread of single rounds, the ratio of bests, how many of the ``eff_rows`` rows folded
    batch norms (``eff_folded``), a full exact run's seconds at the fastest and the slowest round."""
    return {"eff_steps": span(eff["steps"], 0), "eff_images": span(eff["images"], 0),
            "eff_rounds": span(eff["rounds"], 0), "eff_median": span(eff["ratio_median"]),
            "eff_rounds_span": span([*eff["ratio_min"], *eff["ratio_max"]]), "eff_bests": span(eff["ratio_of_bests"]),
            "eff_folded": str(int(eff["folded"].sum())), "eff_rows": str(len(eff)),
            "eff_exact_s": span([*eff["exact_s_fastest"], *eff["exact_s_slowest"]], 0),
            "eff_device": listed(eff["device"])}


def efficiency_table(eff: pd.DataFrame) -> pd.DataFrame:
    """Per model and thread count: initial filters, median plain and engine rates, the efficiency and the
    range of single rounds, a full exact run's seconds at the fastest–slowest round."""
    eff = eff.assign(name=[_model(a, sh) for a, sh in zip(eff["arch"], eff["shape"])],
                     rounds_range=[span([lo, hi]) for lo, hi in zip(eff["ratio_min"], eff["ratio_max"])],
                     exact_range=[span([a, b], 0) for a, b in zip(eff["exact_s_fastest"], eff["exact_s_slowest"])])
    return for_display(eff, {"device": "device", "name": "model", "threads": "threads", "width": "initial filters",
                             "plain_median": "plain (images/s)", "engine_median": "engine (evals/s)",
                             "ratio_median": "efficiency", "rounds_range": "single rounds",
                             "exact_range": "full exact run (s/image)"}, index=["device", "name", "threads"],
                       digits={"plain_median": 0, "engine_median": 0})


def check_values(chk: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.exact_check`: the two models (initial filters, batch norms folded
    yes/no, millions of multiply-adds), folding's speedup, the measured exact run and the range the
    engine rounds predict for it at its thread count (``chk_pred``; ``chk_pred_threads``: the rows used,
    all where none has its thread count), :func:`where` it lies (``chk_where``) and how far outside
    (``chk_off``, %); its forward evaluations per second (``chk_rate``, over the fastest median plain
    rate: ``chk_vs_plain``), worth ``chk_rate_eq`` of the efficiency section's model, :func:`where`
    that lies among the engine's rounds (``chk_rate_where``) and the plain rounds (``chk_plain_where``)."""
    keys = ("chk_arch", "chk_shape", "chk_eff_width", "chk_fid_width", "chk_eff_macs", "chk_fid_macs", "chk_macs_x",
            "chk_fold", "chk_fold_rounds", "chk_fold_setting", "chk_eff_s", "chk_measured", "chk_threads",
            "chk_images", "chk_pred", "chk_pred_threads", "chk_where", "chk_off", "chk_evals", "chk_rate",
            "chk_rate_eq", "chk_engine", "chk_rate_where", "chk_plain", "chk_plain_where", "chk_vs_plain",
            "chk_eff_folded", "chk_fid_folded", "chk_device")
    if chk.empty:
        return dict.fromkeys(keys, MISSING)
    c = chk.iloc[0]
    at = chk[chk["threads"] == c["fid_threads"]]
    at = at if len(at) else chk
    lo, hi = at[["folded_fast", "folded_slow"]].min().min(), at[["folded_fast", "folded_slow"]].max().max()
    m, rate = c["measured"], c["evals"] / c["measured"]
    eq = rate * c["macs_ratio"] / c["fold_speedup"]
    plain = [at["plain_slow"].min(), at["plain_fast"].max()]
    engine = [at["engine_slow"].min(), at["engine_fast"].max()]
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
            "chk_engine": span(engine, 0), "chk_rate_where": where(eq, *engine),
            "chk_plain": span(plain, 0), "chk_plain_where": where(eq, *plain),
            "chk_vs_plain": fmt(rate / chk["plain_median"].max(), 1),
            "chk_eff_folded": _yes(c["eff_folded"]), "chk_fid_folded": _yes(c["fid_folded"]),
            "chk_device": listed(chk["device"])}


def check_table(chk: pd.DataFrame) -> pd.DataFrame:
    """Per thread count, a full exact run's seconds at the fastest–slowest efficiency round: as timed,
    scaled by multiply-adds, and divided by folding's speedup."""
    if chk.empty:
        return for_display(chk, {"threads": "threads"})
    c = chk.iloc[0]
    rng = lambda a, b: [span([x, y], 0) for x, y in zip(chk[a], chk[b])]  # noqa: E731
    t = chk.assign(timed=rng("s_fast", "s_slow"), scaled=rng("scaled_fast", "scaled_slow"),
                   folded=rng("folded_fast", "folded_slow"))
    return for_display(t, {"device": "device", "threads": "threads",
                           "timed": f"as timed: {c['eff_width']:.0f} filters (s)",
                           "scaled": f"× multiply-adds: {c['fid_width']:.0f} filters (s)",
                           "folded": f"÷ folding ({fmt(c['fold_speedup'])}×) (s)"}, index=["device", "threads"])


# ----------------------------------------------------------------------------- fidelity

def _ratio_cols(fid: pd.DataFrame) -> list[str]:
    return [c for c in fid if c.startswith("size_ratio_tau")]


def fidelity_values(fid: pd.DataFrame, ctx: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.fidelity` and its context: images, model, cost and SIS size ratio
    of each method (``pruned`` at the m the benchmark chose, its rule and reason), how many of the
    ``fid_runs`` runs verified every SIS (``fid_verified``), the 5% subsets' IoU and accuracy."""
    approx, exact = fid[fid["method"] != "exact"], fid[fid["method"] == "exact"]
    grad, ratio_cols = fid[fid["method"] == "gradient"], _ratio_cols(fid)
    chosen = fid.merge(ctx[["device", "chosen_m"]], on="device")
    chosen = chosen[(chosen["method"] == "pruned") & (chosen["param"] == chosen["chosen_m"])]
    return {
        "fid_images": span(ctx["images"], 0), "fid_dataset": listed(ctx["dataset"]),
        "fid_arch": listed(ctx["arch"].map(_arch)), "fid_profile": listed(ctx["profile"]),
        "fid_taus": " and ".join(c[len("size_ratio_tau"):] for c in ratio_cols) or MISSING,
        "fid_exact_s": span(exact["s_per_image"], "sig3"), "fid_grad_s": span(grad["s_per_image"], "sig3"),
        "fid_grad_ratio": span(grad[ratio_cols].stack()), "fid_grad_speedup": span(grad["speedup_vs_exact"], 0),
        "fid_m": span(ctx["chosen_m"], 0), "fid_rule": listed(ctx["chosen_m_rule"].replace("", MISSING)),
        "fid_reason": listed(ctx["chosen_m_reason"].replace("", MISSING)), "fid_device": listed(fid["device"]),
        "fid_pruned_s": span(chosen["s_per_image"], "sig3"), "fid_pruned_ratio": span(chosen[ratio_cols].stack()),
        "fid_pruned_speedup": span(chosen["speedup_vs_exact"], 0),
        "fid_iou": span(approx["iou_5pct"]), "fid_acc_exact": span(100 * exact["acc_5pct"], 1),
        "fid_acc_approx": span(100 * approx["acc_5pct"], 1), "fid_acc_random": span(100 * ctx["random_5pct_acc"], 1),
        "fid_verified": str(int(fid["verified"].sum())), "fid_runs": str(len(fid))}


def fidelity_table(fid: pd.DataFrame) -> pd.DataFrame:
    """Per method and setting: s/image, speedup over exact, SIS size over exact's per tau, IoU of the 5%
    subsets with exact's and accuracy on them."""
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


# ----------------------------------------------------------------------------- projections, S5

def _with_run(proj: pd.DataFrame) -> pd.DataFrame:
    """``proj`` with ``run``: 'method' or 'method setting' (e.g. 'gradient k=4')."""
    return proj.assign(run=(proj["method"] + " " + proj["setting"]).str.strip())


def projection_values(proj: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.projections`: the batch timed and, per dataset (``fm``:
    Fashion-MNIST, ``c10``: CIFAR-10), its images, model, exact's hours and days, and the fastest
    approximation's hours, name and device."""
    proj = _with_run(proj)
    out = {"proj_batch": span(proj["batch"], 0), "proj_device": listed(proj["device"])}
    for ds, key in (("fashion-mnist", "fm"), ("cifar10", "c10")):
        p = proj[proj["dataset"] == ds]
        exact, fast = p.loc[p["method"] == "exact", "hours"], p[p["method"] != "exact"].nsmallest(1, "hours")
        out.update({f"proj_{key}_images": span(p["images"], 0), f"proj_{key}_arch": listed(p["arch"].map(_arch)),
                    f"proj_{key}_exact_h": span(exact, 0), f"proj_{key}_exact_days": span(exact / 24, 0),
                    f"proj_{key}_fast_h": span(fast["hours"], "sig3"), f"proj_{key}_fast": listed(fast["run"]),
                    f"proj_{key}_fast_device": listed(fast["device"])})
    return out


def projection_table(proj: pd.DataFrame) -> pd.DataFrame:
    """Projected hours (3 significant digits, like the prose), one row per device (dropped if one) and
    workload, one column per method and setting."""
    proj = _with_run(proj)
    runs = list(dict.fromkeys(proj["run"]))
    wide = proj.pivot(index=["device", "dataset", "arch", "images"], columns="run", values="hours")[runs].reset_index()
    wide["arch"] = wide["arch"].map(_arch)
    return for_display(wide, {"device": "device", "dataset": "dataset", "arch": "model", "images": "images",
                              **{r: r for r in runs}}, index=["device", "dataset", "arch", "images"],
                       digits=dict.fromkeys(runs, "sig3"))


def s5_values(t: pd.DataFrame) -> dict[str, str]:
    """Of :func:`overinterp.pages.speed.s5`: the devices of our rows (``s5_device``) and the closest of
    our rows to the paper's setting (an Inception-v3 row first, then the fewest minutes): its model,
    inputs, k, steps and features per image, how it was obtained, device and minutes for 32 images."""
    ours = t[t["who"] != "paper"]
    best = t[t["closest"]].assign(rank=lambda b: ~b["model"].str.startswith("Inception"))
    best = best.sort_values(["rank", "minutes_32"]).head(1)
    b = best.iloc[0] if len(best) else pd.Series(dtype=object)
    return {"s5_device": listed(ours["device"]), "s5_model": b.get("model", MISSING),
            "s5_data": b.get("data", MISSING), "s5_k": fmt(b.get("k"), 0), "s5_steps": fmt(b.get("steps"), 0),
            "s5_features": fmt(b.get("features"), 0), "s5_how": b.get("how", MISSING),
            "s5_best_device": b.get("device", MISSING), "s5_minutes": fmt(b.get("minutes_32"))}


def s5_table(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`overinterp.pages.speed.s5` as displayed: the minutes as text ('lo–hi' for the paper's), the
    closest rows marked ◀, ``who`` as 'paper' or 'ours' (the device is its own column)."""
    minutes = f"minutes for {PAPER_S5['images']} images"
    t = t.assign(**{minutes: [f"{a:g}–{b:g}" if w == "paper" else fmt(m) for w, a, b, m in
                              zip(t["who"], t["minutes_32_low"], t["minutes_32_high"], t["minutes_32"])]},
                 closest=t["closest"].map({True: "◀", False: ""}), who=t["who"].where(t["who"] == "paper", "ours"))
    return for_display(t, {"who": "", "device": "device", "model": "model", "data": "inputs", "how": "how",
                           "k": "k", "steps": "steps per image", minutes: minutes, "closest": "◀"}, index=["who"])
