"""Bayes-TrEx presented (:mod:`overinterp.experiments.bayes_trex`; chapter 16): the chains' confidence beside Booth
et al.'s Table 2, their diagnostics as a table, and the glued values of the prose.
"""
import pandas as pd
import torch

from overinterp.experiments.bayes_trex import AMB_COL, APART, HIGH_COL, MIS_COL
from overinterp.methods.bayes_trex import (AMBIGUOUS, BAND, HIGH_LEVEL, MISCLASSIFIED_LEVEL, MIXING, Chains,
                                           MixingCriteria, Target, nearest_start)
from overinterp.paper.formatting import MISSING, count, number
from overinterp.paper.numbers import ARCH_NAMES, BOOTH_TABLE2


def setup_values(run, p, names) -> dict:
    """The chapter's settings for the prose."""
    cfg = run.profile.bayes_trex
    out = {"arch": ARCH_NAMES.get(cfg.arch, cfg.arch), "vae_epochs": count(cfg.vae_epochs, "epoch")}
    out.update({k: getattr(cfg, k) for k in ("latent", "hidden", "sigma", "chains", "warmup", "samples",
                                             "max_tree_depth", "init_pool", "sis_images")})
    out.update({"vae_train": "all" if cfg.vae_train_size is None else f"{cfg.vae_train_size:,}",
                "held_out": names[cfg.held_out], "leapfrog": 2 ** cfg.max_tree_depth, "tau": f"{p.tau:g}",
                "high_level": f"{HIGH_LEVEL:g}", "band": f"{BAND[0]:g}–{BAND[1]:g}",
                "mis_level": f"{MISCLASSIFIED_LEVEL:g}"})      # written as the tables' headers write them
    return out


def quality_values(run, quality: pd.DataFrame, names) -> dict:
    """:func:`overinterp.experiments.bayes_trex.vae_quality`'s numbers the prose quotes."""
    held = names[run.profile.bayes_trex.held_out]
    col = f"prior samples called {held} (%)"
    return {"run_seed": run.seed, "acc_orig": number(quality.loc["all classes", "accuracy on test images (%)"]),
            "acc_rec": number(quality.loc["all classes", "accuracy on reconstructions (%)"]),
            "prior_held_all": number(quality.loc["all classes", col]),
            "prior_held_out": number(quality.loc["without " + held, col])}


def diagnostics_values(table: pd.DataFrame, chains: dict[str, Chains], n_show: int,
                       criteria: MixingCriteria = MIXING, apart: float = APART) -> dict:
    """Sampling summary for the prose: seconds, mixing, largest R̂, unmixed targets whose chains sit
    ``apart`` (each nearest its start), largest separation."""
    worst = table["max r_hat"].max()
    unmixed = [k for k in table.index if not table.loc[k, "mixed"]]

    def own(ch: Chains) -> bool:
        init = ch.info.get("init")
        return init is not None and bool((nearest_start(ch.z, init) == torch.arange(len(init))).all())
    stuck = [k for k in unmixed if table.loc[k, "separation"] >= apart and own(chains[k])]
    far = table["separation"].idxmax() if table["separation"].notna().any() else None
    n_chains = max(ch.z.shape[0] for ch in chains.values())
    return {"chain_seconds": number(table["seconds"].sum(), 0), "n_shown": min(n_show, int(table["samples"].min())),
            "worst_rhat": _fmt(worst, 2),
            "n_mixed": int(table["mixed"].sum()), "n_targets": len(table), "n_unmixed": len(unmixed),
            "mix_rhat": f"{criteria.max_r_hat:g}", "mix_ess_chain": f"{criteria.min_ess_per_chain:g}",
            "mix_ess": f"{criteria.min_ess_per_chain * n_chains:g}",
            "mix_div": f"{100 * criteria.max_divergent_share:g}", "apart": f"{apart:g}",
            "n_apart": len(stuck), "n_overlap": len(unmixed) - len(stuck),
            "apart_names": ", ".join(stuck) or "none",
            "sep_max": "n/a" if far is None else _fmt(table.loc[far, "separation"], 1),
            "sep_max_name": far or "n/a"}


def table2(table: pd.DataFrame, targets: dict[str, Target], misclassification: str | None,
           ours_label: str = "ours") -> pd.DataFrame:
    """:func:`overinterp.experiments.bayes_trex.confidence_table` like Booth et al.'s Table 2: theirs ("—" if
    none), ours where mixed, shares."""
    shares = [c for c in (HIGH_COL, MIS_COL, AMB_COL) if c in table]
    rows = {}
    for name, t in targets.items():
        r = table.loc[name]
        k = len(t.classes)
        theirs = BOOTH_TABLE2.get((t.kind, t.classes)) if (t.kind == AMBIGUOUS or name == misclassification) else None
        if r["mixed"]:
            ours = " ± ".join(", ".join(number(r[f"{stat} f (class {i + 1})"], 2) for i in range(k))
                              for stat in ("mean", "std"))
        else:
            ours = "not mixed: not comparable" if theirs else "not mixed"
        row = {("Booth et al.", "mean ± std"): theirs or MISSING, (ours_label, "mean ± std"): ours}
        for c in shares:
            row[(ours_label, f"{c} (%)")] = "" if pd.isna(r[c]) else number(r[c], 0)
        rows[name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.columns = pd.MultiIndex.from_tuples(out.columns)
    return out


def _fmt(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals as the table shows it (a negative ESS keeps its sign), "n/a" where more
    samples are needed."""
    return "n/a" if pd.isna(x) else f"{x:.{digits}f}"


def diagnostics(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`overinterp.experiments.bayes_trex.confidence_table`'s chain diagnostics for display."""
    return pd.DataFrame({
        "samples": table["samples"].astype(int), "accept.": [_fmt(x, 2) for x in table["acceptance"]],
        "divergent": table["divergences"].astype(int), "max R̂": [_fmt(x, 2) for x in table["max r_hat"]],
        "min ESS": [_fmt(x, 0) for x in table["min ESS"]],
        "chains apart (sd)": [_fmt(x, 1) for x in table["separation"]],
        "mixed": ["yes" if m else "no" for m in table["mixed"]],
        "seconds": [_fmt(x, 0) for x in table["seconds"]]}, index=table.index)


def near_black_values(summary: dict, names) -> dict:
    """:func:`~overinterp.experiments.bayes_trex.near_black_summary` for the prose: counts, plurals, class names."""
    counts = {k: summary[k] for k in ("shown_confident", "shown_dark", "kept_confident", "kept_dark")}
    plural = {k: f"{counts[k]} sample{'' if counts[k] == 1 else 's'}" for k in ("shown_confident", "kept_confident")}
    return {**{f"nb_{k}": v for k, v in counts.items()}, "nb_shown_samples": plural["shown_confident"],
            "nb_kept_samples": plural["kept_confident"], "dark_level": f"{summary['level']:g}",
            "test_mean": number(summary["test_mean"], 2),
            "dark_test": summary["dark_test"], "n_test_images": f"{summary['n_test_images']:,}",
            "dark_test_cls": summary["dark_test_cls"], "n_test_cls": f"{summary['n_test_cls']:,}",
            "dark_cls_names": ", ".join(names[c] for c in summary["classes"])}


def comparison_table(counts: pd.DataFrame) -> pd.DataFrame:
    """:func:`~overinterp.experiments.bayes_trex.test_comparison`'s counts for display: shares to 1 and 0 decimals."""
    shown = counts.drop(columns="test images").rename(columns={"meet it": "test images meeting it"})
    shown["meet it (%)"] = shown["meet it (%)"].map(number)
    shown["chain samples meeting it (%)"] = shown["chain samples meeting it (%)"].map(lambda x: number(x, 0))
    return shown.rename(columns={"meet it (%)": "test images (%)"})


def comparison_values(counts: dict) -> dict:
    """:func:`~overinterp.experiments.bayes_trex.test_comparison`'s test-set counts for the prose."""
    return {**counts, "n_test": f"{counts['n_test']:,}"}
