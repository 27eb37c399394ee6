"""The report page's forest figures: each claim's estimates and 95% intervals against its margin, one figure per
part of the claim registry."""
import math
import re
import textwrap

from overinterp.pages.report import by_claim, group
from overinterp.paper.claims import CLAIMS, CONDITION_TAGS, PARTS
from overinterp.paper.decide import UNTESTABLE
from overinterp.paper.formatting import finite

COLORS = ("#1b4f8a", "#d95f02", "#7570b3")     # one per edition, in the order of ``docs``
MARKERS = ("o", "s", "D")
#: the colour of the margin's shade and edges
MARGIN_COLOR = "#2ca02c"


def _margin(rows: list[dict]) -> tuple[float, float] | None:
    """The region where a claim holds, from its rows' margin ('≤ 5', '≥ 10', '0 to 5'); None without one."""
    for r in rows:
        if x := re.fullmatch(r"≤ (\S+)|≥ (\S+)|(\S+) to (\S+)", str(r.get("margin") or "").strip()):
            below, above, lo, hi = (finite(g) for g in x.groups())
            region = (-math.inf, below) if below is not None else (above, math.inf) if above is not None else (lo, hi)
            if None not in region:
                return region
    return None


def _bounds(claim: str) -> tuple[float, float]:
    """The range ``claim``'s measure can take, from its unit (as the verdicts clip their intervals)."""
    c = CLAIMS[claim]
    name, unit = c.measure, c.unit
    if not unit and (x := re.fullmatch(r"(.+) \(([^()]+)\)", c.measure)):
        name, unit = x.groups()                         # "drop (points)": the unit in parentheses
    change = any(w in name for w in ("drop", "increase", "change", "difference", "excess", "−"))
    if unit == "points":
        return -100.0, 100.0
    if unit == "%":
        return (-100.0, math.inf) if change else (0.0, 100.0)
    if unit in ("probability", "probability of the predicted class", "fraction of the pixels"):
        return (-1.0, 1.0) if change else (0.0, 1.0)
    if unit == "ratio":
        return 0.0, math.inf
    return -math.inf, math.inf


def _xlim(claim: str, rows: list[dict]) -> tuple[float, float]:
    """The x range of ``claim``'s panel: estimates, margin edges and interval ends, padded, within :func:`_bounds`.
    Interval ends far outside the rest are left out (drawn as arrows) so one wide interval cannot squash the others."""
    b_lo, b_hi = _bounds(claim)
    margin = _margin(rows)
    core = [v for r in rows if (v := finite(r.get("estimate"))) is not None]
    core += [e for e in (margin or ()) if math.isfinite(e)]
    ends, widths = [], []
    for r in rows:
        est, lo, hi = (finite(r.get(k)) for k in ("estimate", "low", "high"))
        lo, hi = (None if v is None else min(max(v, b_lo), b_hi) for v in (lo, hi))
        ends += [v for v in (lo, hi) if v is not None]
        if lo is not None and (hi if hi is not None else est) is not None:
            widths.append((hi if hi is not None else est) - lo)
    core = core or ends
    if not core:
        return (max(-1.0, b_lo), min(1.0, b_hi)) if b_lo < 0 else (b_lo, b_lo + 1.0)
    widths.sort()
    w = max(max(core) - min(core), widths[len(widths) // 2] if widths else 0.0)
    lo_x = min(core + [e for e in ends if e >= min(core) - 2 * w])
    hi_x = max(core + [e for e in ends if e <= max(core) + 2 * w])
    pad = 0.06 * (hi_x - lo_x) or 0.1 * abs(hi_x) or 1.0
    left, right = max(lo_x - pad, b_lo), min(hi_x + pad, b_hi)
    return (left, right) if right > left else (left - 1.0, right + 1.0)   # a single value at a bound: no empty axis


def forest_part(claim: str) -> str:
    """The figure key of ``claim``: its part ("I", "II", "III"), or "I_critiques" for Part I's critique tests."""
    c = CLAIMS[claim]
    return c.part if group(claim) == PARTS[c.part] else f"{c.part}_critiques"


#: the keys of :func:`forest_figures`' figures (:func:`forest_part`), in the verdict table's order
FOREST_PARTS = tuple(dict.fromkeys(forest_part(c) for c in CLAIMS))


def forest_figures(docs: dict, columns: int = 2, width: float = 9.0) -> dict:
    """``{key of FOREST_PARTS: figure}`` from ``docs`` (``{edition label: verdicts document or None}``): a panel per
    claim, a line per model and edition, the margin shaded with dashed edges, one-sided intervals dotted, and an
    arrow where an interval runs past the axis."""
    return {k: _forest(docs, [c for c in CLAIMS if forest_part(c) == k], columns, width) for k in FOREST_PARTS}


def _model(name: str) -> str:
    model, _, condition = name.partition(" · ")
    return textwrap.fill(f"{model} · {CONDITION_TAGS.get(condition, condition)}" if condition else model, 26)


def _forest_title(claim: str) -> str:
    """A panel's title: the claim's section and short text, wrapped at 44 characters."""
    c = CLAIMS[claim]
    return textwrap.fill(f"{c.section.split(',')[0]}: {c.short}", 44)


def _forest(docs: dict, claims: list[str], columns: int, width: float):
    """The forest figure of ``claims`` (those with an estimate in some edition of ``docs``)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    claims = [c for c in claims if any(finite(r.get("estimate")) is not None for per in rows.values()
                                       for r in per.get(c, []))]
    if not claims:
        fig, ax = plt.subplots(figsize=(width, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no edition has an estimate", ha="center", va="center", fontsize=10)
        return fig
    models = {c: list(dict.fromkeys(_model(r["model"]) for per in rows.values() for r in per.get(c, [])))
              for c in claims}
    grid = [claims[i:i + columns] for i in range(0, len(claims), columns)]
    # inches per row of panels: the model labels' lines, the title's lines, the axis' ticks and label
    heights = [max(0.28 * max(sum(m.count("\n") + 1 for m in models[c]), 2)
                   + 0.17 * (_forest_title(c).count("\n") + 1) for c in row) + 0.55 for row in grid]
    fig = plt.figure(figsize=(width, sum(heights) + 0.4), dpi=100, layout="constrained")
    fig.get_layout_engine().set(h_pad=0.06, hspace=0.04, wspace=0.06)
    gs = fig.add_gridspec(len(grid), columns, height_ratios=heights)
    beyond = hollow = False
    for i, row in enumerate(grid):
        for j, c in enumerate(row):
            drawn = _forest_panel(fig.add_subplot(gs[i, j]), c, models[c],
                                  {label: per.get(c, []) for label, per in rows.items()})
            beyond, hollow = beyond or drawn[0], hollow or drawn[1]
    handles = [Line2D([], [], color=COLORS[k % 3], marker=MARKERS[k % 3], lw=1.6, label=label)
               for k, label in enumerate(docs) if any(rows[label].get(c) for c in claims)]   # the editions drawn
    handles.append(Patch(color=MARGIN_COLOR, alpha=0.15, label="margin: where the claim holds"))
    if beyond:
        handles.append(Line2D([], [], color="0.25", marker=">", lw=1.6, label="interval runs past the axis"))
    if hollow:
        handles.append(Line2D([], [], color="0.25", marker="o", markerfacecolor="white", lw=0,
                              label="hollow: cannot be tested"))
    # one row of entries where their labels fit the figure's width (about 13 characters an inch at 9 pt), else two
    wide = sum(len(h.get_label()) + 6 for h in handles) > 12 * width
    fig.legend(handles=handles, loc="outside upper center", ncol=-(-len(handles) // 2) if wide else len(handles),
               fontsize=9, frameon=False)
    return fig


def _forest_panel(ax, claim: str, models: list[str], rows: dict) -> tuple[bool, bool]:
    """Draw one claim's panel (``rows``: {edition label: its rows}); whether anything ran past the axis (an arrow)
    and whether an estimate that cannot be tested was drawn (hollow, whatever side of the margin it lies on)."""
    c = CLAIMS[claim]
    y = {m: -k for k, m in enumerate(models)}
    every = [r for per in rows.values() for r in per]
    left, right = _xlim(claim, every)
    ax.set_xlim(left, right)
    editions = [label for label in rows if rows[label]]
    shift = {label: 0.0 if len(editions) < 2 else 0.15 - 0.3 * i / (len(editions) - 1)
             for i, label in enumerate(editions)}
    beyond = hollow = False
    for k, label in enumerate(rows):
        color, marker = COLORS[k % 3], MARKERS[k % 3]
        for r in rows[label]:
            yy = y[_model(r["model"])] + shift[label]
            face = "white" if r.get("outcome") == UNTESTABLE else color
            est, lo, hi = (finite(r.get(key)) for key in ("estimate", "low", "high"))
            if lo is not None and (hi is not None or est is not None):
                a, b = lo, hi if hi is not None else est
                ax.plot([min(max(a, left), right), max(min(b, right), left)], [yy, yy], color=color, lw=1.6,
                        ls="-" if hi is not None else ":")
                for end, edge, arrow in ((a, left, "<"), (b, right, ">")):
                    if (end < left) if arrow == "<" else (end > right):
                        ax.plot([edge], [yy], marker=arrow, color=color, ms=6, lw=0, clip_on=False)
                        beyond = True
            if est is not None and left <= est <= right:
                ax.plot([est], [yy], marker=marker, color=color, markerfacecolor=face, ms=5, lw=0)
                hollow |= face == "white"
            elif est is not None:
                ax.plot([left if est < left else right], [yy], marker="<" if est < left else ">", color=color,
                        ms=6, lw=0, clip_on=False)
                beyond = True
    margin = _margin(every)
    if margin and margin[0] < right and margin[1] > left:
        ax.axvspan(max(margin[0], left), min(margin[1], right), color=MARGIN_COLOR, alpha=0.15, lw=0)
    for e in (margin or ()):
        if left <= e <= right:
            ax.axvline(e, color=MARGIN_COLOR, ls="--", lw=1)
    ax.set_yticks(list(y.values()), list(y.keys()), fontsize=8)
    ax.set_ylim(min(y.values()) - 0.6, 0.6)
    ax.tick_params(axis="x", labelsize=8)
    ax.locator_params(axis="x", nbins=6)
    ax.set_xlabel(f"{c.measure} ({c.unit})" if c.unit and c.unit not in c.measure else c.measure, fontsize=8)
    ax.set_title(_forest_title(claim), fontsize=9, loc="left")
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    return beyond, hollow
