"""The blank check presented (:mod:`overinterp.experiments.blank`): its table, its figure and its glued values."""
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from overinterp.config.chapters import ROOT
from overinterp.config.profiles import MaskedTrainingConfig
from overinterp.experiments.blank import LEVELS, PAPER_FILL, BlankCheck, Restricted, annotate
from overinterp.pages.subsets import result_words
from overinterp.paper.claims import CLAIMS, record_text, result_text
from overinterp.paper.decide import MARKS, UNTESTABLE, combine
from overinterp.paper.formatting import and_list, count, number, rate, span
from overinterp.pages.plots import outside_legend


def blank_table(check: BlankCheck, fills=(PAPER_FILL, "grey 0.0")) -> pd.DataFrame:
    """Per architecture and fill: the blank's class and probability range, subset entropy, share called the
    blank's class beside its prior, and replicates passing."""
    s = check.summary()
    s = s[s.index.get_level_values("fill").isin(fills)].copy()
    s["probability"] = [span([lo, hi], 3) for lo, hi in zip(s["lowest probability"], s["highest probability"])]
    s["passes"] = [f"{int(a)} of {int(b)}" for a, b in zip(s["replicates passing"], s["replicates"])]
    return s[["class", "probability", "subset entropy (bits)", "called the blank's class (%)", "class prior (%)",
              "passes"]]


def fill_search_plot(check: BlankCheck):
    """Each replicate's blank top-class probability against the fill's grey level (mean pixel and mean image on
    the right), a colour per architecture, the uninformative bound dashed."""
    rows = check.rows
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    models = list(dict.fromkeys(rows["model"]))
    colours = dict(zip(models, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    extra = {PAPER_FILL: 1.25, "training-mean image": 1.45}
    for i, m in enumerate(models):
        g = rows[rows["model"] == m]
        greys = g[g["fill"].str.startswith("grey ")]
        x = greys["fill"].str.slice(5).astype(float) + (i - 1) * 0.012
        ax.scatter(x, greys["probability"], s=14, color=colours[m], label=m, alpha=0.8)
        for f, pos in extra.items():
            e = g[g["fill"] == f]
            ax.scatter(np.full(len(e), pos + (i - 1) * 0.02), e["probability"], s=14, color=colours[m], alpha=0.8)
    ax.axhline(check.bound, color="0.3", ls="--", lw=1)
    ax.text(1.02, check.bound, " bound", va="bottom", fontsize=9, color="0.3")
    ax.set_xticks(list(LEVELS[::2]) + list(extra.values()))
    ax.set_xticklabels([number(g) for g in LEVELS[::2]] + ["mean\npixel", "mean\nimage"], fontsize=9)
    ax.set_xlabel("grey level of the fill (0 black, 1 white)")
    ax.set_ylabel("blank's top-class probability")
    ax.set_ylim(0, 1.02)
    outside_legend(ax)
    fig.tight_layout()
    return fig


def restricted_table(called: pd.DataFrame) -> pd.DataFrame:
    """:attr:`overinterp.experiments.blank.Restricted.called` as the chapter shows it."""
    return called.rename(columns={"images kept": "images without a blank class", "images": "test images"})


def blank_values(check: BlankCheck) -> dict:
    """Glue values ``blank_*``: the paper's mask (classes, probabilities, entropy, passes), bound, fills accepted."""
    paper = check.rows[check.rows["fill"] == PAPER_FILL]
    passes = check.passes(PAPER_FILL)
    accepted = check.accepted()
    greys = check.rows[check.rows["fill"].str.startswith("grey ")]
    worst = greys.groupby("fill")["probability"].max()      # per grey, its least uninformative model
    classes = list(dict.fromkeys(paper["class"]))
    return {"blank_bound": number(check.bound, 2), "blank_classes": and_list(classes),
            "blank_p_range": span(paper["probability"], 2),
            "blank_entropy_range": span(paper["subset entropy (bits)"], 2),
            "blank_entropy_max": number(np.log2(check.classes), 2),
            "blank_called_range": span(paper["called the blank's class (%)"], 0),
            "blank_prior_range": span(paper["class prior (%)"], 0),
            "blank_n_models": str(len(paper)), "blank_n_pass": str(int(paper["passes"].sum())),
            "blank_archs_pass": str(sum(passes.values())), "blank_n_archs": str(len(passes)),
            "blank_n_fills": str(check.rows["fill"].nunique()), "blank_n_accepted": str(len(accepted)),
            # how the verdict of the paper's mask moves with the bound: models passing at 1.5 and 3 times a prior
            "blank_pass_low": str(int((paper["probability"] <= 1.5 / check.classes).sum())),
            "blank_pass_high": str(int((paper["probability"] <= 3 / check.classes).sum())),
            "blank_accepted": and_list(accepted),
            "blank_grey_floor": number(worst.min(), 2)}


def restricted_values(r: Restricted) -> dict:
    """Glue values ``ctl_*``: section 4.1's claims with the blank's classes set aside."""
    c = r.called
    return {"ctl_accurate": r.accurate.word, "ctl_accurate_ours": result_text(r.accurate, "accurate"),
            "ctl_kept": r.kept.word, "ctl_kept_ours": result_text(r.kept, "kept"),
            "ctl_accurate_words": result_words(r.accurate, "accurate"), "ctl_kept_words": result_words(r.kept, "kept"),
            "ctl_images": span(c["images kept"], 0), "ctl_n_images": span(c["images"], 0),
            "ctl_called_range": span(c["BS subsets called the blank's class (%)"], 0),
            "ctl_prior_range": span(c["its prior (%)"], 0)}


def controlled(run, claim: str, verdict, condition: str):
    """``verdict`` annotated with engine and blank check (its own ``blank_passes`` kept) and ``condition``
    (its box then refers to the paper's protocol's box for claim and criterion); returns it."""
    own = verdict.blank_passes
    annotate(run, claim, verdict)
    verdict.blank_passes = own or verdict.blank_passes
    verdict.condition = condition[:1].upper() + condition[1:]
    return verdict


def departures(config) -> str:
    """How ``config`` (a MaskedTrainingConfig) departs from Hase et al.'s shares and the book's default rate, as
    a sentence."""
    hase = MaskedTrainingConfig()
    parts = []
    if 1.0 in config.removed:
        parts.append("its shares include 100%, so a copy may be the fully masked input itself, labelled as its "
                     "image: over a batch its loss is least at the class prior, which is what an uninformative "
                     "blank means (Hase et al.'s shares stop at 95%)")
    if config.lr != hase.lr:
        parts.append(f"its learning rate is {rate(config.lr)}, against {rate(hase.lr)} at the other profiles")
    if not parts:
        return "These are Hase et al.'s shares."
    return "This profile departs from them: " + "; and ".join(parts) + "."


def _committed_rows(path) -> list[dict] | None:
    """The rows of a committed measurement's JSON, ``path`` relative to the repository root; None if absent."""
    path = ROOT / path
    return json.loads(path.read_text())["rows"] if path.exists() else None


def variants_table(path):
    """The counterfactual fine-tuning variants measured by ``scripts/masked_variants.py`` (its JSON ``path``):
    one row per variant and model, a relative ``path`` read from the repository root; None where it is absent."""
    rows = _committed_rows(path)
    if rows is None:
        return None
    return pd.DataFrame([{"variant": r["variant"], "model": r["model"], "shares removed (%)": and_list(
        [f"{100 * x:g}" for x in r["config"]["removed"]]), "learning rate": rate(r["config"]["lr"]),
        "drop (points)": r["drop (points)"], "blank probability": r["blank probability"],
        "blank uninformative": r["blank passes"], "accepted": r["accepted"]} for r in rows]).set_index(
        ["variant", "model"])


def strength_table(path):
    """Section 4.1's two claims under two counterfactual fine-tunings (``scripts/finetuning_strength.py``, its
    JSON ``path`` from the repository root): per fine-tuning and model, the models accepted and each claim's
    estimate [95% interval] and outcome mark, on the accepted models and with acceptance waived; None if absent."""
    rows = _committed_rows(path)
    if rows is None:
        return None
    cells = {}
    for r in rows:
        key = (r["fine-tuning"], r["model"])
        cells.setdefault(key, {("", "models accepted"): f"{r['accepted models']} of {r['fine-tuned models']}"})
        cells[key][(CLAIMS[r["claim"]].short, r["condition"])] = (
            MARKS[r["outcome"]] + record_text(r, r["claim"]) if r["estimate"] is not None else r["outcome"])
    table = pd.DataFrame.from_dict(cells, orient="index").rename_axis(["fine-tuning", "model"])
    claims = list(dict.fromkeys(c[0] for c in table.columns))
    table = table[sorted(table.columns, key=lambda c: claims.index(c[0]))]   # stable: a claim's conditions together
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


def masked_values(m, config) -> dict:
    """Glue values ``mk_*`` of the counterfactually trained models (``m``: MaskedClaims, ``config`` their config)."""
    t = m.models
    return {"mk_removed": and_list([f"{100 * x:g}%" for x in config.removed]), "mk_departures": departures(config),
            "mk_epochs": count(config.epochs, "epoch"),
            "mk_max_drop": f"{config.max_drop:g} point{'' if config.max_drop == 1 else 's'}", "mk_lr": rate(config.lr),
            "mk_own_range": span(t["own BS subsets (%)"], 1), "mk_random_range": span(t["random subsets (%)"], 1),
            "mk_n": str(len(t)), "mk_archs": and_list(list(dict.fromkeys(t["model"]))),
            "mk_accepted": str(int(t["accepted"].sum())), "mk_blank_pass": str(int(t["blank uninformative"].sum())),
            "mk_acc_range": span(t["clean accuracy (%)"], 1), "mk_drop_range": span(t["drop (points)"], 1),
            "mk_blank_p_range": span(m.blank.rows["probability"], 2),
            "mk_entropy_range": span(m.blank.rows["subset entropy (bits)"], 2),
            "mk_accurate": m.accurate.word, "mk_accurate_ours": result_text(m.accurate, "accurate"),
            "mk_kept": m.kept.word, "mk_kept_ours": result_text(m.kept, "kept"),
            "mk_accurate_words": result_words(m.accurate, "accurate"), "mk_kept_words": result_words(m.kept, "kept"),
            "mk_tested": str(int(np.isfinite(t["own BS subsets (%)"]).sum())),
            "mk_all_accurate": m.accurate_all.word, "mk_all_kept": m.kept_all.word,
            "mk_all_accurate_words": result_words(m.accurate_all, "accurate"),
            "mk_all_kept_words": result_words(m.kept_all, "kept")}


def strength_words(path) -> str:
    """Which claim verdicts (all models combined) the two fine-tunings of ``path`` decide differently where both
    test them, as a sentence; empty where the file is absent."""
    rows = _committed_rows(path)
    if rows is None:
        return ""
    outcomes = {}
    for r in rows:
        outcomes.setdefault((r["claim"], r["condition"]), {}).setdefault(r["fine-tuning"], []).append(r["outcome"])
    differ = [f"“{CLAIMS[claim].short}” ({condition}) reads "
              + and_list([f"“{combine(o)}” with {f}" for f, o in by.items()])
              for (claim, condition), by in outcomes.items()
              if len(read := {combine(o) for o in by.values()}) > 1 and UNTESTABLE not in read]
    if not differ:
        return "The two fine-tunings decide every claim alike."
    return f"The two fine-tunings decide {count(len(differ), 'verdict')} differently: " + "; ".join(differ) + "."
