"""The verdicts as text and JSON, and the report page's values, tables and figures (overinterp.pages.report*)."""
import json

import pytest

from overinterp.pages import report, report_forest, report_seeds, report_tables, report_values
from overinterp.paper.claims import CLAIMS
from overinterp.paper.formatting import number
from overinterp.store import write_json


def _row(claim, model, estimate, low, high, outcome, to_decide=None, verdict="holds"):
    return {"claim": claim, "model": model, "estimate": estimate, "low": low, "high": high, "margin": "below 5",
            "outcome": outcome, "replicates": 5, "images": 40, "to decide": to_decide, "verdict": verdict}


def test_the_text_keeps_every_row_with_its_interval_sample_and_decision(tmp_path):
    rows = [_row("sis", "ResNet20", 3.2109, 2.5, 4.01, "holds", verdict="inconclusive at this scale"),
            _row("sis", "VGG16", 6.0, 4.2, 7.9, "inconclusive at this scale", 9, "inconclusive at this scale"),
            {**_row("accurate", "ResNet20", None, None, None, None, verdict="cannot be tested"), "images": 1}]
    path = tmp_path / "verdicts.json"
    write_json(path, {"schema": 1, "profile": "standard", "dataset": "fashion-mnist", "rows": rows})
    lines = report.text(report.load(path)["rows"], "tiny").splitlines()
    d, c = CLAIMS["sis"].digits, CLAIMS["sis"]
    assert lines[0] == report.TINY_WARNING and len(lines) == 7                 # a claim named once
    assert lines[2].endswith(f"{c.short} — inconclusive at this scale [paper: {c.paper}; chapter 2 (03_sis)]")
    assert lines[3].endswith(f"ResNet20: mean SIS size (%) {number(3.2109, d)}, 95% interval [{number(2.5, d)}, "
                             f"{number(4.01, d)}], margin below 5, holds (5 replicates, 40 images)")
    assert lines[4].endswith("(5 replicates, 40 images); 9 replicates would decide it")
    assert lines[6].endswith("ResNet20: drop (points) —, no 95% interval, margin below 5 (5 replicates, 1 image)")


def test_merging_replaces_the_later_claims_rows_keeps_the_others_in_registry_order_and_records_the_command():
    head = {"schema": 1, "dataset": "fashion-mnist", "profile": "standard", "seed": 5}
    old = {**head, "commit": "a", "device": "CPU (1 thread)", "seconds": {"sis": 1.0, "road": 9.0},
           "rows": [_row("sis", "ResNet20", 3, 2, 4, "holds"), _row("sis", "VGG16", 6, 5, 7, "holds"),
                    _row("road", "ResNet20", 1, 0, 2, "does not hold"),
                    _row("sis_accuracy", "ResNet20", 1, 0, 2, "holds")],
           "merged": "an earlier merge, described in words"}
    new = {**head, "commit": "b", "device": "CPU (2 threads)", "seconds": {"road": 60.0},
           "rows": [_row("road", "ResNet20, imputed", 18, 15, 21, "holds")]}
    doc = report.merge(old, new)
    assert [(r["claim"], r["model"]) for r in doc["rows"]] == [
        ("sis", "ResNet20"), ("sis", "VGG16"), ("road", "ResNet20, imputed"), ("sis_accuracy", "ResNet20")]
    assert doc["commit"] == "a" and doc["device"] == "CPU (1 thread)" and doc["seconds"] == {"sis": 1.0, "road": 60.0}
    assert doc["merged"] == ["an earlier merge, described in words",
                             {"claims": ["road"], "commit": "b", "device": "CPU (2 threads)", "seconds": {"road": 60.0}}]
    assert report.merge(doc, new)["merged"][-1]["claims"] == ["road"] and len(report.merge(doc, new)["rows"]) == 4
    with pytest.raises(ValueError, match="seed 0 into a file of seed 5"):
        report.merge(old, {**new, "seed": 0})


def test_a_missing_or_foreign_verdicts_file_fails_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="none.json"):
        report.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="x.json"):
        report.load(tmp_path / "x.json")


# ----------------------------------------------------------------------------- bottom line, tables, report page

import re

from overinterp.paper.claims import of_the_paper, quoted
from overinterp.paper.formatting import MISSING


def _doc(profile, verdicts: dict, **extra):
    """A verdicts document with one row per (claim, model) of ``verdicts`` = {claim: (verdict, [row outcome,...])}."""
    rows = []
    for claim, (verdict, outcomes) in verdicts.items():
        for i, o in enumerate(outcomes):
            rows.append({**_row(claim, f"M{i}", 1.0 + i, 0.5, 2.0 + i, o, verdict=verdict), "margin": "≤ 5", **extra})
    return {"schema": 1, "profile": profile, "dataset": "fashion-mnist", "seed": 0, "device": "cpu", "rows": rows}


def test_the_registry_says_which_numbers_are_quoted_and_which_claims_are_the_papers():
    assert quoted("transfer") == ("share 0.21", "derived from 4.1's accuracies")
    assert quoted("sis") == ("mean below 5%", "")
    paper = [c for c in CLAIMS if of_the_paper(c)]
    assert len(paper) == 12 and "road" not in paper and "dilated" not in paper and "background" not in paper
    assert {"sis", "accurate", "kept", "transfer", "beats", "near", "dropout", "borders"} <= set(paper)


def test_the_bottom_line_lists_the_papers_claims_per_outcome_and_counts_what_an_edition_did_not_compute():
    doc = _doc("standard", {"sis": ("does not hold", ["does not hold"]), "beats": ("holds", ["holds", "holds"]),
                            "near": ("inconclusive at this scale", ["holds", "inconclusive at this scale"]),
                            "road": ("holds", ["holds"])})
    v = report.bottom_line(doc, "std")
    assert v["std_paper"] == 12 and v["std_tested"] == 3 and v["std_missing"] == 9
    assert v["std_reproduced"] == f"{CLAIMS['beats'].short} (4.2)" and v["std_reproduced_n"] == 1
    assert v["std_not"] == f"{CLAIMS['sis'].short} (4.1)" and v["std_inconclusive_n"] == 1
    assert v["std_untestable"] == "none" and v["std_added"] == 1 and v["std_added_holds"] == 1   # road: the book's
    assert v["std_decided"] == 3
    untestable = _doc("tiny", {"sis": ("does not hold", ["does not hold"]),
                               "beats": ("cannot be tested", ["cannot be tested"])})
    assert report.bottom_line(untestable, "x")["x_tested"] == 2 and report.bottom_line(untestable, "x")["x_decided"] == 1
    empty = report.bottom_line(None, "x")
    assert empty["x_tested"] == 0 and empty["x_reproduced"] == "none"


def test_the_bottom_line_names_an_informative_blank_and_each_controlled_condition_that_reads_otherwise():
    doc = _doc("standard", {"accurate": ("does not hold", ["does not hold"]), "beats": ("holds", ["holds"]),
                            "blank": ("does not hold", ["does not hold"])})
    doc["rows"][-1].update(model="ResNet20, mean pixel", **{"blank passes": False})
    doc["rows"].insert(1, {**doc["rows"][0], "model": "M0 · sensitivity", "condition": "sensitivity",
                           "verdict": "holds"})
    doc["rows"].insert(1, {**doc["rows"][0], "model": "M0 · set aside", "condition": "set aside"})
    why = report.causes(doc)
    assert why["accurate"] == "models' blank informative; sensitivity: reproduced"   # the same verdict: not named
    assert "beats" not in why                                 # trained on the subsets, not on masked inputs
    assert "(models' blank informative; sensitivity: reproduced)" in report.bottom_line(doc, "x")["x_not"]
    assert report.bottom_line(doc, "x")["x_blank_archs"] == "ResNet20"
    doc["rows"].append({**doc["rows"][-1], "model": "VGG16, mean pixel"})
    assert report.bottom_line(doc, "x")["x_blank_archs"] == "ResNet20 and VGG16"    # a list in a sentence
    assert report.causes(_doc("standard", {"accurate": ("does not hold", ["does not hold"])})) == {}
    # failing on the accepted masked-trained models too, the blank is not the whole cause, and the line says so
    from overinterp.paper.claims import MASKED_TRAINED
    both = _doc("standard", {"kept": ("does not hold", ["does not hold"])})
    both["rows"].append({**both["rows"][0], "model": "M0 · masked", "condition": MASKED_TRAINED})
    assert report.causes(both)["kept"] == "not reproduced on masked-trained models either, whose blank is uninformative"
    both["rows"][-1]["verdict"] = "holds"
    assert report.causes(both)["kept"] == f"{MASKED_TRAINED}: reproduced"
    from overinterp.paper.claims import MASKED_ALL      # the same reading with acceptance waived is said once
    both["rows"].append({**both["rows"][-1], "model": "M0 · all masked", "condition": MASKED_ALL})
    assert report.causes(both)["kept"] == f"{MASKED_TRAINED} (acceptance waived too): reproduced"
    both["rows"][-1]["verdict"] = "inconclusive at this scale"
    assert report.causes(both)["kept"].endswith(f"{MASKED_ALL}: inconclusive")


def test_the_counterfactually_trained_models_read_as_one_sentence_at_every_count_and_outcome():
    from overinterp.paper.claims import MASKED_ALL, MASKED_TRAINED

    def doc(accepted, verdicts):
        d = _doc("standard", {"accurate": ("does not hold", ["does not hold"]), "kept": ("does not hold", ["does not hold"])})
        for c, (v_acc, v_all) in verdicts.items():
            base = next(r for r in d["rows"] if r["claim"] == c)
            d["rows"] += [{**base, "condition": MASKED_TRAINED, "verdict": v_acc, "replicates": accepted},
                          {**base, "condition": MASKED_ALL, "verdict": v_all, "replicates": 5.0}]
        return d
    none = report.masked_sentence(doc(0, {"accurate": ("cannot be tested", "holds"), "kept": ("cannot be tested", "holds")}))
    assert none.startswith("Of 5 models fine-tuned") and "none passed the acceptance check" in none
    assert none.endswith(f"“{CLAIMS['accurate'].short}” and “{CLAIMS['kept'].short}” are reproduced.")
    some = report.masked_sentence(doc(2, {"accurate": ("holds", "holds"), "kept": ("does not hold", "holds")}))
    assert "2 passed the acceptance check, and on them" in some
    assert f"“{CLAIMS['accurate'].short}” is reproduced and “{CLAIMS['kept'].short}” is not reproduced;" in some
    same = report.masked_sentence(doc(2, {"accurate": ("holds", "holds"), "kept": ("does not hold", "does not hold")}))
    assert same.endswith("with acceptance waived (a sensitivity analysis), the readings are the same.")
    assert "has not computed" in report.masked_sentence(doc(0, {})) and "No edition" in report.masked_sentence(None)


def test_the_smaller_scale_is_read_against_the_larger_one():
    big = _doc("standard", {"sis": ("does not hold", ["does not hold"]), "beats": ("holds", ["holds"])})
    small = _doc("quick", {"sis": ("does not hold", ["does not hold"]), "beats": ("does not hold", ["does not hold"]),
                           "robust": ("cannot be tested", ["cannot be tested"])})
    v = report.agreement(big, small, "cmp")
    assert (v["cmp_both"], v["cmp_agree"], v["cmp_only"]) == (2, 1, 1)
    assert v["cmp_differ"] == f"{CLAIMS['beats'].short} (4.2): reproduced → not reproduced"
    assert v["cmp_only_words"] == f"Of the 1 that only it computed, {CLAIMS['robust'].short} (4.5) is not testable here."
    assert report.agreement(big, big, "cmp")["cmp_only_words"] == "It computed no claim that the other did not."


def test_every_verdict_is_one_table_grouped_by_part_with_a_dash_where_an_edition_did_not_compute_it():
    from overinterp.pages.chapter import chapter_number
    docs = {"standard edition": _doc("standard", {"sis": ("does not hold", ["does not hold", "does not hold"])}),
            "this execution (quick)": None}
    frame = report_tables.verdict_frame(docs)
    assert list(frame.index) == list(range(len(CLAIMS))) and len(frame) == len(CLAIMS)
    assert list(dict.fromkeys(frame["group"]))[0].startswith("Part I") and frame["group"].iloc[-1].startswith("Part III")
    sis = frame.iloc[list(CLAIMS).index("sis")]
    assert sis["standard edition"].startswith("<b>✘ does not hold</b><br>✘ M0: 1.0 [0.5,\u00a02.0] (5\u00a0replicates, ")
    assert sis["this execution (quick)"] == MISSING and sis["margin"] == "≤\u00a05"
    assert "<sup>a,d</sup>" in sis["claim"]                     # the engine's note and the blank image's
    ensemble = frame.iloc[list(CLAIMS).index("ensemble_accuracy")]["claim"]
    assert "<sup>" not in ensemble                                # no subsets, no mask: no note
    assert frame.iloc[list(CLAIMS).index("transfer")]["the source's number"] == "share 0.21†"
    assert (frame["standard edition"] == MISSING).sum() == len(CLAIMS) - 1
    n = chapter_number("03_sis")
    assert sis["chapter"] == f'<a href="03_sis.html">chapter\u00a0{n}</a>'
    html = report_tables.verdict_table(docs).data
    assert html.count('class="group"') == frame["group"].nunique() and html.count("<tr>") == len(CLAIMS) + 1 + 4
    assert not re.search(r"\bnan\b|None|<caption", html)                # no caption unless asked for
    titled = report_tables.verdict_table(docs, "Table 19.5. Every verdict & more.").data
    assert "<caption>Table 19.5. Every verdict &amp; more.</caption><thead>" in titled


def test_a_one_sided_interval_and_a_missing_estimate_are_written_as_such():
    value = report_tables._value
    assert value({"estimate": -25.4, "low": -50.2, "high": None}, 1) == "-25.4 (lowest\u00a095%\u00a0end\u00a0-50.2)"
    assert value({"estimate": None, "low": None, "high": None, "images": 64}, 1) == "— (64\u00a0images)"


def test_the_forest_plot_draws_every_claim_with_an_estimate_against_its_margin_in_legible_text():
    import matplotlib
    matplotlib.use("Agg")
    from overinterp.pages.plots import text_sizes
    docs = {"standard edition": _doc("standard", {"sis": ("does not hold", ["does not hold"] * 3)}),
            "this execution (tiny)": _doc("tiny", {"sis": ("does not hold", ["does not hold"]),
                                                   "beats": ("holds", ["holds"]),
                                                   "robust": ("cannot be tested", ["cannot be tested"])})}
    docs["this execution (tiny)"]["rows"][-1].update(estimate=None, low=None, high=None)   # robust: no estimate
    fig = report_forest.forest_figures(docs)["I"]
    axes = [ax for ax in fig.axes]
    assert len(axes) == 2                                                  # sis and beats; robust has no number
    assert axes[0].get_title(loc="left").startswith("4.1: mean SIS size")
    assert min(text_sizes(fig)) >= 8
    assert report_forest._margin([{"margin": "≥ 10"}]) == (10.0, float("inf"))
    assert report_forest._margin([{"margin": ""}]) is None


def test_an_estimate_that_cannot_be_tested_is_drawn_hollow_whatever_side_of_the_margin_it_lies_on():
    import matplotlib
    matplotlib.use("Agg")
    docs = {"this execution (tiny)": _doc("tiny", {"sis": ("does not hold", ["does not hold"]),
                                                   "near": ("cannot be tested", ["cannot be tested"])})}
    fig = report_forest.forest_figures(docs)["I"]
    faces = {ax.get_title(loc="left")[:4]: [line.get_markerfacecolor() for line in ax.lines if line.get_marker() != "None"]
             for ax in fig.axes}
    assert faces["4.2:"] and all(f == "white" for f in faces["4.2:"])
    assert faces["4.1:"] and "white" not in faces["4.1:"]
    assert "hollow: cannot be tested" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_the_results_are_decided_by_the_largest_scale_that_computed_each_claim():
    docs = {"standard edition": _doc("standard", {"sis": ("does not hold", ["does not hold"])}),
            "this execution (quick)": _doc("quick", {"sis": ("holds", ["holds"]), "road": ("holds", ["holds"])})}
    t = report_tables.results_table(docs)
    sis = t.iloc[list(CLAIMS).index("sis")]
    assert (sis["result"], sis["decided by"], sis["this execution (quick)"]) == ("not reproduced", "standard edition",
                                                                                "✔ holds")
    road = t.iloc[list(CLAIMS).index("road")]
    assert (road["stated by"], road["result"], road["decided by"]) == ("the book", "holds", "this execution (quick)")
    assert t.iloc[list(CLAIMS).index("near")]["result"] == MISSING


def test_the_compute_budget_counts_every_run_and_those_not_kept(tmp_path):
    std = {"device": "machine A", "stages": {"model zoo": {"units": 3, "process_seconds": 7200.0}},
           "edition_chapters_seconds": {"02": 1800.0}, "verdicts_seconds": 360,
           "seeds": {"5": {"stages": {"model zoo": {"units": 3, "process_seconds": 3600.0}}, "verdicts_seconds": 720}},
           "not_recorded": "a first run was stopped; its units were resumed"}
    book = {"profile": "quick", "device": "machine B", "total_minutes": 48.0}
    (tmp_path / "c.json").write_text(json.dumps(std))
    (tmp_path / "b.json").write_text(json.dumps(book))
    f = report_values.compute_frame(tmp_path / "c.json", tmp_path / "b.json", tmp_path / "none.json")
    assert list(f["kept"]) == ["yes", "yes", "yes", "yes", "yes", "no: stopped", "yes"]
    assert list(f["run"])[3:5] == ["prepare at seed 5: model zoo (3 units)", "python -m overinterp verdicts --seed 5"]
    assert list(f["run"])[5] == "a first run was stopped"
    assert list(f.index)[0] == "standard: machine A" and list(f.index)[1] == ""
    v = report_values.compute_values(f)
    assert (v["standard_process_hours"], v["standard_wall_hours"], v["standard_discarded"]) == ("3.00", "0.80", 1)
    assert (v["quick_wall_hours"], v["quick_process_hours"], v["quick_discarded"]) == ("0.80", MISSING, 0)


def test_the_engines_are_read_from_the_fidelity_benchmark(tmp_path):
    from overinterp.engine.backselect import BackSelectConfig
    runs = [{"method": "exact", "s_per_image": 80.4, "sis": [{"tau": 0.99, "mean_size_ratio_vs_exact": 1.0}]},
            {"method": "pruned", "m": 16, "sis": [{"tau": 0.99, "mean_size_ratio_vs_exact": 1.06}]},
            {"method": "gradient", "k": 4, "sis": [{"tau": 0.99, "mean_size_ratio_vs_exact": 1.44}]},
            {"method": "gradient", "k": 16, "sis": [{"tau": 0.99, "mean_size_ratio_vs_exact": 1.97}]}]
    (tmp_path / "b.json").write_text(json.dumps({"fidelity": {"images": 8, "runs": runs}}))
    v = report_values.engine_values({"std": BackSelectConfig("pruned", m=16), "q": BackSelectConfig("gradient", k=8)},
                             path=tmp_path / "b.json")
    assert (v["std_engine"], v["std_ratio"], v["q_ratio"]) == ("pruned (m=16)", "1.06", MISSING)
    assert (v["gradient_ratios"], v["gradient_ks"], v["fidelity_images"], v["exact_seconds"]) == ("1.44–1.97", "4, 16",
                                                                                                  8, "80")
    assert report_values.engine_values({}, path=tmp_path / "none.json")["gradient_ratios"] == MISSING


def test_citation_cff_is_valid_citation_file_format_and_names_the_paper_it_reproduces():
    import importlib.resources
    import jsonschema
    import yaml
    schema = json.loads(importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
                        .joinpath("citation-file-format.json").read_text())
    cff = report_values.citation()
    jsonschema.validate(cff, schema)
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    paper = cff["references"][0]
    bib = (report_values.ROOT / "book" / "references.bib").read_text()
    assert paper["title"] in bib and f"pages     = {{{paper['start']}--{paper['end']}}}" in bib
    assert any(r.get("repository-code") == "https://github.com/gifford-lab/overinterpretation" for r in cff["references"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in cff.items() if k != "authors"}, schema)
    v = report_values.citation_values(cff)
    assert v["bibtex_book"].startswith("@software{overinterp,") and "{{the overinterp authors}}" in v["bibtex_book"]
    assert v["bibtex_paper"].startswith("@inproceedings{carter2021overinterpretation,")
    assert max(len(line) for line in (v["bibtex_book"] + "\n" + v["bibtex_paper"]).splitlines()) <= 76
    assert yaml.safe_load((report_values.ROOT / "CITATION.cff").read_text()) == cff


def _glue_keys(text: str, doc: str | None = None) -> set[str]:
    """The glue keys a Markdown cell pastes: its own ({glue:text}`key`) or another document's."""
    if doc:
        return set(re.findall(rf"\{{glue(?::\w+)?\}}`{re.escape(doc)}::(\w+)(?::\w*)?`", text)) | \
            set(re.findall(rf"```\{{glue(?::any)?\}} (\w+)\n:doc: {re.escape(doc)}", text))
    return set(re.findall(r"\{glue(?::\w+)?\}`(\w+)(?::\w*)?`", text)) | set(re.findall(r"```\{glue:figure\} (\w+)", text))


def _markdown(stem: str) -> str:
    cells = json.loads((report_values.ROOT / "book" / f"{stem}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _page_values(monkeypatch, standard: dict | None = None) -> dict:
    """:func:`report.values` of a tiny execution without a store: no verdicts, the zoo's accuracies stubbed."""
    from types import SimpleNamespace
    from overinterp.config.profiles import get_profile
    monkeypatch.setattr(report, "zoo_accuracies", lambda run: ([], None))
    run = SimpleNamespace(dataset="fashion-mnist", profile=get_profile("tiny"))
    here = {"seed": 0, "rows": [], "seconds": {"sis": 1.5}, "verdicts": {}}
    return report.values(run, SimpleNamespace(standard=report_values.STANDARD, results=report_values.RESULTS), standard, here)


def _report_keys(monkeypatch) -> set[str]:
    """Every key the report page glues (its functions run on empty inputs, and the few glued by name)."""
    keys = {**_page_values(monkeypatch), **report_values.compute_values(report_values.compute_frame()),
            **report_seeds.seed_values(None, "std2"), **report_values.citation_values(report_values.citation())}
    return set(keys) | {"n_code_deviations", "tolerance", "verdict_table", "run_dataset", "run_profile",
                        "run_device"} | {f"fig_forest_{k}" for k in report_forest.FOREST_PARTS}


def test_the_page_values_hold_both_editions_bottom_lines_their_agreement_and_the_glance(monkeypatch):
    from overinterp.config.profiles import get_profile
    standard = report.edition_verdicts(report_values.STANDARD)
    second = report.second_seed(report_values.STANDARD / f"verdicts-seed{standard['seed']}.json")
    v = _page_values(monkeypatch, standard)
    for part in (report.bottom_line(standard, "std", second), report.agreement(standard, None, "cmp"),
                 report_values.scale_values(get_profile("standard"), "fashion-mnist", "std")):
        assert part.items() <= v.items()
    assert (v["exec_tested"], v["exec_verdict_seconds"], v["exec_acc"]) == (0, "2", MISSING)
    glance = v["glance_table"].data
    assert "overinterp-glance" in glance and f"standard, seed {second['seed']}" in glance


def test_every_glue_key_the_report_and_the_introduction_paste_is_one_the_report_or_the_introduction_glues(monkeypatch):
    """The sentences are the notebooks'; the values are glued by pages.report: a renamed value would leave a
    hole in a sentence that no execution at the tiny profile shows (the introduction pastes the report's values
    across pages, resolved only when the whole book renders)."""
    made = _report_keys(monkeypatch)
    assert _glue_keys(_markdown("18_report")) - made == set()
    intro = _markdown("01_introduction")
    pasted = _glue_keys(intro, "18_report.ipynb")
    assert {"glance_table", "exec_acc", "cmp_differ"} <= pasted and pasted - made == set()
    from types import SimpleNamespace
    from overinterp.config.profiles import get_profile
    run = SimpleNamespace(dataset="fashion-mnist", profile=get_profile("tiny"))   # what the introduction glues
    intro_made = {"std_headline": None, **report.edition_values(run, None, None)}
    own = _glue_keys(re.sub(r"\{glue(?::\w+)?\}`[\w.]+::\w+(?::\w*)?`", "", intro))
    assert own - set(intro_made) - {"run_dataset", "run_profile", "run_device"} == set()


def test_the_introduction_opens_with_the_answer_the_scale_its_confounds_and_the_rule_above_the_glance():
    cells = json.loads((report_values.ROOT / "book" / "01_introduction.ipynb").read_text())["cells"]
    first = "".join(cells[0]["source"])
    assert first.startswith("# Overinterpretation, executed\n\n")
    items = ["**The answer.** {glue:text}`std_headline`", "**The scale.**", "**What decides the verdicts.**",
             "**CIFAR-10.**", "**How a verdict is decided.**", "```{glue:any} glance_table"]
    at = [first.index(i) for i in items]
    assert at == sorted(at)
    for word in ("blank", "positions", "engine"):
        assert word in first[at[2]:at[3]]
    assert "verdict_table" not in first                 # per-model intervals live in the report
    params = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    assert "remove-cell" in params["metadata"]["tags"]      # in the notebook, not on the page


def _edition(seed, outcomes, revision=None):
    rows = [{"claim": c, "model": "ResNet20", "verdict": o, "estimate": 1.0, "low": 0.5, "high": 1.5,
             "revision": revision or CLAIMS[c].revision} for c, o in outcomes.items()]
    return {"seed": seed, "rows": rows}


def test_the_headline_reads_as_english_at_every_count_and_answers_from_both_seeds():
    from overinterp.paper.claims import of_the_paper
    paper = [c for c in CLAIMS if of_the_paper(c)]
    everything = {c: "holds" for c in paper}
    assert "? Yes: of its" in report.headline(_edition(0, everything), _edition(5, everything))
    one = report.headline(_edition(0, {paper[0]: "holds", paper[1]: "does not hold"}),
                          _edition(5, {paper[0]: "holds", paper[1]: "holds"}))
    assert "? In part:" in one and "1 is reproduced at both seeds" in one
    assert "1 is decided differently at the two seeds" in one and f"{len(paper) - 2} were not computed" in one
    # a claim the second seed has not computed is neither agreement nor disagreement
    alone = report.headline(_edition(0, {paper[0]: "holds", paper[1]: "holds"}), _edition(5, {paper[0]: "holds"}))
    assert "1 is reproduced at both seeds" in alone and "differently" not in alone
    assert "1 is decided at seed 0 alone (seed 5's rows await recomputation)" in alone
    v = report.bottom_line(_edition(0, {paper[0]: "holds", paper[1]: "holds"}), "x", _edition(5, {paper[0]: "holds"}))
    assert v["x_one_seed_n"] == 1 and v["x_differ_n"] == 0 and v["x_reproduced_n"] == 1
    assert v["x_one_seed"].endswith(": reproduced")
    none = report.headline(_edition(0, {paper[0]: "does not hold", paper[1]: "does not hold"}))
    assert "? No:" in none and "2 are not reproduced and" in none and "at either" not in none
    assert " 0 " not in none.replace(" 10 ", " ") and "no claim" not in none
    assert "earlier criterion" in report.headline(_edition(0, {paper[0]: "holds"}, revision=99))
    assert report.headline(None).startswith("No standard edition")


def test_the_glance_shows_each_seed_and_this_execution_with_a_reason_where_the_seeds_disagree():
    from overinterp.paper.claims import of_the_paper
    paper = [c for c in CLAIMS if of_the_paper(c)]
    frame = report_tables.glance_frame(_edition(0, {paper[0]: "holds", paper[1]: "does not hold"}),
                                _edition(5, {paper[0]: "inconclusive at this scale", paper[1]: "does not hold"}),
                                _edition(0, {paper[0]: "holds"}), "this execution (tiny)")
    assert list(frame.columns) == ["claim", "paper (CIFAR-10)", "standard, seed 0", "standard, seed 5",
                                   "this execution (tiny)", "why"]
    assert len(frame) == len(paper)
    assert frame.iloc[0, 2:5].tolist() == ["✔", "≈", "✔"] and frame.iloc[0]["why"] == "the two seeds disagree"
    assert frame.iloc[1, 2:5].tolist() == ["✘", "✘", "not computed"]


def test_gpu_values_name_the_gpu_editions_and_the_measured_cost(tmp_path):
    none = report_values.gpu_values(folder=tmp_path, cost=tmp_path / "absent.json")
    assert none == {"gpu_editions": "none yet", "gpu_hours": MISSING, "gpu_device": MISSING}
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "manifest.json").write_text(json.dumps({"name": "fashion-mnist-gpu", "device": "NVIDIA H100"}))
    (tmp_path / "c.json").write_text(json.dumps({"info": {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"},
                                                 "projection": {"total_s": {"models_s": 36000, "x_s": 12960}}}))
    v = report_values.gpu_values(folder=tmp_path, cost=tmp_path / "c.json")
    assert v == {"gpu_editions": "fashion-mnist-gpu", "gpu_hours": "14", "gpu_device": "NVIDIA H100 80GB HBM3"}


def test_seed_values_count_changes_and_flips_between_the_two_seeds():
    """A flip is "holds" at one seed and "does not hold" at the other; a move to "inconclusive" is a change
    that is not a flip; a row one seed lacks is not compared."""
    def rec(claim, model, outcome):
        return {"claim": claim, "model": model, "estimate": 1.0, "low": 0.5, "high": 1.5, "outcome": outcome}
    rows = report_seeds.seed_rows({0: [rec("sis", "ResNet20", "does not hold"), rec("sis", "VGG16", "holds"),
                            rec("kept", "ResNet20", "holds"), rec("accurate", "ResNet20", "holds")],
                        5: [rec("sis", "ResNet20", "holds"), rec("sis", "VGG16", "inconclusive at this scale"),
                            rec("kept", "ResNet20", "holds")]})
    v = report_seeds.seed_values({"seeds": [0, 5], "replicates": 5, "rows": rows}, "s")
    assert (v["s_seeds"], v["s_replicates"], v["s_rows"], v["s_changed"], v["s_flips"]) == ("0 and 5", "0–4 and 5–9", 3, 2, 1)
    assert v["s_flips_which"].endswith("ResNet20: “does not hold” then “holds”") and v["s_flips_which"].count(";") == 0
    assert "VGG16: “holds” then “inconclusive at this scale”" in v["s_changed_which"]
    assert set(report_seeds.seed_values(None, "s").values()) == {"—"}
    assert report_seeds.seed_values({"seeds": [0, 5], "replicates": 5, "rows": rows[2:3]}, "s")["s_flips_which"] \
        == "none"


def test_the_seed_table_marks_overlapping_replicates_and_dashes_a_check_not_committed(tmp_path):
    rows = report_seeds.seed_rows({0: [{"claim": "sis", "model": "ResNet20", "outcome": "holds"}],
                             1: [{"claim": "sis", "model": "ResNet20", "outcome": "does not hold"}]})
    (tmp_path / "q.json").write_text(json.dumps({"seeds": [0, 1], "replicates": 3, "rows": rows,
                                                 "device": "CPU", "date": "2026-11-25"}))
    t = report_seeds.seed_table({"standard edition": tmp_path / report_seeds.SEEDS, "quick": tmp_path / "q.json"})
    assert list(t.columns) == ["standard edition", "quick"]                   # an edition per column
    assert t.loc["replicates", "quick"] == "0–2 and 1–3 (overlapping: not independent)"
    assert (t.loc["outcomes compared", "quick"], t.loc["flipped", "quick"]) == (1, 1)
    assert set(t["standard edition"]) == {"—"}


def _words(text) -> list[str]:
    """The runs of a cell a browser will not break (its spaces break lines, its no-break spaces do not)."""
    return [w for w in str(text).split(" ") if w]


def test_the_seed_tables_fit_the_page_column_with_short_cells_and_every_change_listed(tmp_path):
    """A long cell squeezes its column's header letter by letter: the check is a column per edition of short
    facts, and the changed outcomes a table of their own, one row each."""
    outcomes = ["holds", "does not hold", "inconclusive at this scale"]
    by_seed = {0: [], 5: []}
    for k, c in enumerate(list(CLAIMS)[:20]):                         # 20 changes, a list of > 1000 characters
        for s, o in ((0, outcomes[k % 3]), (5, outcomes[(k + 1) % 3])):
            by_seed[s].append({"claim": c, "model": f"ensemble 5× ResNet20 / 0.99 #{k}", "outcome": o})
    rows = report_seeds.seed_rows(by_seed)
    (tmp_path / "s.json").write_text(json.dumps({"seeds": [0, 5], "replicates": 5, "rows": rows,
                                                "device": "CPU (AMD EPYC, 1 thread)", "date": "2026-11-27"}))
    files = {"standard edition": tmp_path / "s.json", "quick": report_values.RESULTS / "verdicts-quick-cpu.json",
             "gpu": tmp_path / "none.json"}
    t, changes = report_seeds.seed_table(files), report_seeds.seed_changes(files)
    assert len(report_seeds.seed_values(report_seeds.seed_doc(tmp_path / "s.json"), "s")["s_changed_which"]) > 1000
    for frame in (t, changes):
        assert max(len(str(v)) for v in frame.to_numpy().ravel()) <= 200
    # the facts fit beside each other on one line at a 720 px column (about 100 characters at the tables' size)
    widths = [max(len(str(v)) for v in t.index)] + [max(len(c), *(len(str(v)) for v in t[c])) for c in t]
    assert sum(widths) <= 100, widths
    # a column of the changes is never narrower than a word of its header (the layout keeps a cell's longest word)
    for c in changes:
        assert max(map(len, _words(c))) <= max(len(w) for v in changes[c] for w in _words(v)), c
    assert set(changes.index) == {""}                                  # no column of row labels to squeeze
    std = changes[changes["edition"] == "standard edition"]
    assert len(std) == 20 and t.loc["changed", "standard edition"] == 20
    flips = std[std["2nd seed"].str.endswith("(flip)")]
    assert len(flips) == t.loc["flipped", "standard edition"] and len(flips) > 0
    first = std.iloc[0]
    assert (first["claim"], first["1st seed"]) == (CLAIMS[list(CLAIMS)[0]].short, "holds")
    assert first["2nd seed"] == "does\u00a0not\u00a0hold (flip)"
    assert list(changes[changes["edition"] == "gpu"].iloc[0]) == ["gpu"] + ["—"] * 4
    (tmp_path / "same.json").write_text(json.dumps({"seeds": [0, 1], "replicates": 1,
                                                   "rows": report_seeds.seed_rows({0: by_seed[0], 1: by_seed[0]})}))
    assert report_seeds.seed_changes({"e": tmp_path / "same.json"})["claim"].tolist() == ["no outcome changed"]


def test_the_committed_seed_checks_fit_the_page_column():
    files = {"standard edition": report_values.STANDARD / report_seeds.SEEDS,
             "quick": report_values.RESULTS / "verdicts-quick-cpu.json"}
    t, changes = report_seeds.seed_table(files), report_seeds.seed_changes(files)
    widths = [max(len(str(v)) for v in t.index)] + [max(len(c), *(len(str(v)) for v in t[c])) for c in t]
    assert sum(widths) <= 100 and max(len(str(v)) for v in changes.to_numpy().ravel()) <= 200
    assert len(changes) == sum(t.loc["changed", e] for e in files)


def _forest_doc(rows):
    return {"schema": 1, "profile": "standard", "dataset": "fashion-mnist", "seed": 0, "device": "cpu",
            "rows": [{"claim": c, "model": m, "estimate": e, "low": lo, "high": hi, "margin": margin,
                      "outcome": "holds", "verdict": "holds", "revision": CLAIMS[c].revision}
                     for c, m, e, lo, hi, margin in rows]}


def _panels(fig) -> dict:
    """{claim: axes} of a forest figure, by the panels' titles."""
    titles = {report_forest._forest_title(c): c for c in CLAIMS}
    return {titles[ax.get_title(loc="left")]: ax for ax in fig.axes if ax.get_title(loc="left") in titles}


def test_the_forest_is_one_figure_per_part_with_each_axis_inside_its_measures_bounds():
    """An interval past its measure's range (a mean size below 0%, a relative increase below -100%, a
    probability above 1) or far wider than the others does not stretch its panel: the axis stops at the
    bound, or near the estimates, and an arrow marks the interval running on."""
    import matplotlib
    matplotlib.use("Agg")
    from overinterp.pages.plots import text_sizes
    standard = _forest_doc([("sis", "ResNet20", 50.0, -20.0, 140.0, "≤ 5"), ("sis", "VGG16", 8.0, 6.0, 10.0, "≤ 5"),
                            ("transfer", "ResNet20", 0.2, 0.15, 0.25, "≤ 0.5"),
                            ("transfer", "ResNet18", 0.25, 0.2, 0.3, "≤ 0.5"),
                            ("transfer", "VGG16", 0.3, -40.0, 40.0, "≤ 0.5"),
                            ("blank", "VGG16, mean pixel", 0.96, 0.88, 1.035, "≤ 0.2")])
    here = _forest_doc([("sis_accuracy", "ResNet20 / fashion-mnist-c", 171.3, -3886.2, None, "≥ 10"),
                        ("sis_accuracy", "ResNet20 / test", -25.4, -50.2, None, "≥ 10"),
                        ("ensemble_accuracy", "ensemble 3× ResNet18", 0.8, 0.47, 1.1, "≥ 0")])
    figs = report_forest.forest_figures({"standard edition": standard, "this execution (quick)": here})
    assert list(figs) == list(report_forest.FOREST_PARTS) == ["I", "I_critiques", "II", "III"]
    drawn = {k: set(_panels(f)) for k, f in figs.items()}
    assert drawn == {"I": {"sis", "transfer"}, "I_critiques": {"blank"}, "II": {"sis_accuracy", "ensemble_accuracy"},
                     "III": set()}                                       # Part III: a figure that says it has none
    assert report_forest._bounds("sis") == (0, 100) and report_forest._bounds("sis_accuracy") == (-100, float("inf"))
    assert report_forest._bounds("blank") == (0, 1) and report_forest._bounds("ensemble_accuracy") == (-100, 100)
    for k, fig in figs.items():
        assert fig.get_size_inches()[1] * fig.dpi <= 1400
        for c, ax in _panels(fig).items():
            lo, hi = report_forest._bounds(c)
            left, right = ax.get_xlim()
            assert lo <= left < right <= hi, (c, left, right)
        if drawn[k]:                                 # every figure here has an interval past its axis
            assert min(text_sizes(fig)) >= 8
            assert "interval runs past the axis" in [t.get_text() for t in fig.legends[0].get_texts()]
    sis, transfer = _panels(figs["I"])["sis"], _panels(figs["I"])["transfer"]
    assert sis.get_xlim() == (0, 100)
    assert transfer.get_xlim()[1] - transfer.get_xlim()[0] < 2          # not stretched to -40..40 by one model
    acc = _panels(figs["II"])["sis_accuracy"]
    assert acc.get_xlim()[0] == -100
    arrows = [ln for ln in acc.get_lines() if ln.get_marker() == "<"]
    assert len(arrows) == 1 and arrows[0].get_xdata()[0] == -100        # the one-sided interval runs on past -100
    # what the docstring names is drawn: the one-sided interval dotted, the margin shaded with its edge dashed
    assert sum(ln.get_linestyle() == ":" for ln in acc.get_lines()) == 2
    assert [ln.get_xdata()[0] for ln in acc.get_lines() if ln.get_linestyle() == "--"] == [10]
    assert len(acc.patches) == 1
    assert "dashed" in report_forest.forest_figures.__doc__ and "arrow" in report_forest.forest_figures.__doc__
    legend = [t.get_text() for t in figs["I"].legends[0].get_texts()]
    assert legend[0] == "standard edition" and "this execution (quick)" not in legend   # only the editions drawn


def test_the_committed_standard_editions_forest_fits_the_page_per_part():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figs = report_forest.forest_figures({"standard edition": report.edition_verdicts(report_values.STANDARD)})
    try:
        for fig in figs.values():
            assert fig.get_size_inches()[1] * fig.dpi <= 1400
            for c, ax in _panels(fig).items():
                lo, hi = report_forest._bounds(c)
                assert lo <= ax.get_xlim()[0] < ax.get_xlim()[1] <= hi
    finally:
        for fig in figs.values():
            plt.close(fig)

