"""The report page's verdict tables: by claim and edition, at a glance, results, scope and the profiles'
deviations. ``docs`` is ``{label: verdicts document or None}``, the largest scale first."""
from html import escape

import pandas as pd
from IPython.display import HTML

from overinterp.pages.chapter import TOPICS, chapter_number
from overinterp.pages.report import READING, by_claim, causes, claim_label, counts, group, stale
from overinterp.paper.claims import CLAIMS, of_the_paper, quoted
from overinterp.paper.deviations import profile_deviations
from overinterp.paper.formatting import MISSING, finite, number
from overinterp.paper.verdicts import MARKS

#: claims whose verdict also depends on: the backward-selection engine, the control's strength, class
#: information leaking through the mask's shape, the blank image (the page's notes explain each)
NOTES = {"engine": tuple(c for c, claim in CLAIMS.items() if claim.engine),
         "control": ("transfer", "beats", "road", "dilated_beats", "insertion"),
         "leakage": ("beats", "near", "road", "dilated_beats", "dilated_near", "mask_shape"),
         "blank": tuple(c for c, claim in CLAIMS.items() if claim.blank)}
MARK = {"engine": "a", "control": "b", "leakage": "c", "blank": "d"}


def _unbroken(text: str) -> str:
    return text.replace(" ", "\u00a0")


def _html(text) -> str:
    """``text`` safe inside an HTML cell (``<``, ``>`` and ``&`` escaped; quotes kept)."""
    return escape(str(text), quote=False)


def _value(r: dict, digits: int) -> str:
    """'8.0 [5.2, 10.8] (5 replicates, 200 images)': a row's estimate, 95% interval (one-sided: lowest end), counts."""
    est, lo, hi = (finite(r.get(k)) for k in ("estimate", "low", "high"))
    parts = [number(est, digits)]
    if lo is not None and hi is not None:
        parts.append(f"[{number(lo, digits)}, {number(hi, digits)}]")
    elif lo is not None:
        parts.append(f"(lowest 95% end {number(lo, digits)})")
    n = counts(r)
    return " ".join(map(_unbroken, parts)) + (f" ({', '.join(map(_unbroken, n))})" if n else "")


def _cell(rows: list[dict] | None, digits: int) -> str:
    """One edition's cell of a claim: its verdict, then each model's value with the mark of its outcome."""
    if not rows:
        return MISSING
    lines = [f"<b>{MARKS.get(rows[0]['verdict'], '')}{rows[0]['verdict']}</b>"]
    lines += [f"{MARKS.get(r.get('outcome') or '', '')}{_html(r['model'])}: {_value(r, digits)}" for r in rows]
    return "<br>".join(lines)


def _chapter_link(stem: str) -> str:
    """'<a href="03_sis.html">chapter 2</a>': a link to the chapter, by its sidebar number."""
    n = chapter_number(stem)
    text = f"chapter\u00a0{n}" if n else stem
    return f'<a href="{stem}.html">{text}</a>'


def _quoted(claim: str) -> str:
    """The source's number as quoted, one we derive marked †."""
    said, derived = quoted(claim)
    return said + ("†" if derived else "")


def verdict_frame(docs: dict) -> pd.DataFrame:
    """A row per claim (HTML cells): group, claim, source's number, margin, each edition's verdict, chapter."""
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    out = []
    for c, claim in CLAIMS.items():
        margins = list(dict.fromkeys(r["margin"] for per in rows.values() for r in per.get(c, []) if r.get("margin")))
        notes = ",".join(MARK[k] for k, claims in NOTES.items() if c in claims)
        out.append({"group": group(c),
                    "claim": f"{_html(claim.short)}{f'<sup>{notes}</sup>' if notes else ''}<br><small>"
                             f"{_html(claim.section)}; ours: "
                             f"{_html(claim.measure)}</small>",
                    "the source's number": _html(_quoted(c)),
                    "margin": " / ".join(map(_unbroken, margins)) or MISSING,
                    **{label: _cell(per.get(c), claim.digits) for label, per in rows.items()},
                    "chapter": _chapter_link(claim.chapter)})
    return pd.DataFrame(out)


def verdict_table(docs: dict, caption: str = ""):
    """:func:`verdict_frame` as one HTML table, a body per group, with ``caption`` (none if empty)."""
    frame = verdict_frame(docs)
    columns = [c for c in frame.columns if c != "group"]
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    bodies = []
    for name, part in frame.groupby("group", sort=False):
        rows = "".join("<tr>" + "".join(f"<td>{r[c]}</td>" for c in columns) + "</tr>" for _, r in part.iterrows())
        bodies.append(f'<tbody><tr><th colspan="{len(columns)}" class="group">{escape(name)}</th></tr>{rows}</tbody>')
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    return HTML(f'<table class="dataframe overinterp-verdicts">{title}<thead><tr>{head}</tr></thead>'
                f'{"".join(bodies)}</table>')


def glance_frame(first: dict | None, second: dict | None, here: dict | None, here_label: str) -> pd.DataFrame:
    """The paper's claims at a glance: outcome marks at seeds ``first``, ``second`` and in ``here``, and why."""
    docs = [first, second, here]
    rows, stale_ids, why, why_here = [by_claim(d) for d in docs], [stale(d) for d in docs], causes(first), causes(here)

    def seed(d, default):
        return f"standard, seed {d['seed']}" if d and d.get("seed") is not None else default
    out = []
    for c in (c for c in CLAIMS if of_the_paper(c)):
        marks = [MARKS[r[c][0]["verdict"]].strip() if c in r else "earlier criterion" if c in s else "not computed"
                 for r, s in zip(rows, stale_ids)]    # each edition's outcome mark ('✔' ...), or why it has none
        if marks[0] in "✔✘≈–" and marks[1] in "✔✘≈–" and marks[0] != marks[1]:
            reason = "the two seeds disagree"
        elif c in why:
            reason = why[c]
        elif marks[0] == "earlier criterion":
            reason = "standard recomputation under way" + (f"; this execution: {why_here[c]}" if c in why_here else "")
        else:
            reason = why_here.get(c, "")
        out.append({"claim": claim_label(c), "paper (CIFAR-10)": _quoted(c),
                    seed(first, "standard, seed 0"): marks[0], seed(second, "standard, second seed"): marks[1],
                    here_label: marks[2], "why": reason})
    return pd.DataFrame(out)


def glance_table(first: dict | None, second: dict | None, here: dict | None, here_label: str):
    """:func:`glance_frame` as an HTML table without index, for the introduction's first screen."""
    frame = glance_frame(first, second, here, here_label)
    return HTML(frame.to_html(index=False, classes="dataframe overinterp-glance", border=0))


def results_table(docs: dict):
    """Per claim: who states it, its result, the first edition that computed it, each edition's verdict."""
    rows = {label: by_claim(doc) for label, doc in docs.items()}
    index, out = [], []
    for c, claim in CLAIMS.items():
        have = [(label, per[c][0]["verdict"]) for label, per in rows.items() if c in per]
        word = have[0][1] if have else None
        index.append((group(c), f"{claim.short} ({claim.section})"))
        out.append({"stated by": "the paper" if of_the_paper(c) else "the book",
                    "result": MISSING if word is None else READING[word] if of_the_paper(c) else word,
                    "decided by": have[0][0] if have else MISSING,
                    **{label: f"{MARKS.get(per[c][0]['verdict'], '')}{per[c][0]['verdict']}" if c in per else MISSING
                       for label, per in rows.items()},
                    "chapter": _chapter_link(claim.chapter)})
    return pd.DataFrame(out, index=pd.MultiIndex.from_tuples(index))


def scope_table():
    """The paper's claims the book tests: section, claim, the paper's number and our measure."""
    out = [{"section": CLAIMS[c].section, "claim": CLAIMS[c].short, "the paper's number": _quoted(c),
            "our measure": CLAIMS[c].measure, "chapter": _chapter_link(CLAIMS[c].chapter)}
           for c in CLAIMS if of_the_paper(c)]
    return pd.DataFrame(out).set_index("section").rename_axis(None)


def deviations_frame(profiles: list) -> pd.DataFrame:
    """Every deviation of ``profiles`` from the paper's protocol, by topic, with the profiles that make it."""
    seen: dict[tuple, dict] = {}             # {(topic, deviation): {profile name: None}}, in order
    for t, name in TOPICS.items():
        for p in profiles:
            for d in profile_deviations(p, t):
                seen.setdefault((name, d), {})[p.name] = None
    topics = [t for t, _ in seen]
    return pd.DataFrame({"deviation": [d for _, d in seen], "profiles": [", ".join(v) for v in seen.values()]},
                        index=[t if i == 0 or topics[i - 1] != t else "" for i, t in enumerate(topics)])
