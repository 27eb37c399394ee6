"""The chapter "How fast is backward selection?" (paper sections 3.3, S5): what it shows of the benchmark
frames of :mod:`overinterp.pages.bench_results`. ``*_values`` return ``{glue name: str}`` (:data:`MISSING` where
absent), ``*_table`` the tables as shown, numbers rounded as the prose rounds them (:func:`fmt`).

    eff = bench_results.efficiency(bench_results.load_results())
    glue_all(efficiency_values(eff))
    efficiency_table(eff)
"""
import math

import pandas as pd

from overinterp.pages.bench_results import arch_name
from overinterp.paper import formatting
from overinterp.paper.formatting import MISSING, and_list, finite, number
from overinterp.paper.numbers import PAPER_S5


def fmt(x, digits: int | str = 2) -> str:
    """:func:`number` with thousands separators: ``digits`` decimals, or "sig3" (3 significant digits below 1000)."""
    if finite(x) is None:
        return MISSING
    x, sig3 = float(x), digits == "sig3"
    return f"{x:.3g}" if sig3 and abs(x) < 1000 else f"{x:,.{0 if sig3 else digits}f}"


def span(values, digits: int | str = 2) -> str:
    """'lo–hi' of the finite values as :func:`fmt` writes them ('lo' when both read the same)."""
    return formatting.span(values, digits, fmt=fmt)


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
