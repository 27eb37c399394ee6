"""Every claim of :data:`overinterp.paper.claims.CLAIMS` computed from a run: ``verdicts(run)``.
Each :data:`MEASURES` entry takes a Run and the chapter's resolved default parameters and returns the
claim's Verdict through the chapter's own experiment functions (artifacts cached, so runs resume).
``python -m overinterp verdicts`` prints them; ``benchmarks/bench_verdicts.py`` compares seeds.

    vs = verdicts(make_run(profile="quick"), only=["accurate", "beats"])
    vs["accurate"].word          # 'does not hold'
"""
import dataclasses
import time
from typing import Callable, Iterable

from tqdm import tqdm

from overinterp.config.chapters import chapter_config, resolve, thresholds
from overinterp.experiments import (bayes_trex, blank, critiques, factors_controls, imagenet, imagenet_chapter,
                                    input_reduction, masked, mitigation, robust as robust_module, runs as runs_module,
                                    shared_interest, sis_accuracy, subsets)
from overinterp.paper import further_verdicts, verdicts as verdicts_module
from overinterp.paper.claims import BLANK_ASIDE, CLAIMS, MASKED_ALL, MASKED_TRAINED, records
from overinterp.zoo import data


def params(run, chapter: str):
    """The resolved default parameters of ``chapter`` for ``run`` (what a plain papermill run uses)."""
    cls = chapter_config(chapter)
    p = cls(**{f.name: v for f, v in ((f, getattr(run, f.name, None)) for f in dataclasses.fields(cls))
               if f.name in ("dataset", "seed")}, profile=run.profile.name)
    return resolve(p, run.profile)


# ----------------------------------------------------------------------------- Part I (4.1, 4.2)

def _subset_correct(run, frac):
    return {a: subsets.subset_correct(run, a, ms, frac) for a, ms in runs_module.zoo(run).items()}


def _accurate(run, p):
    acc = _subset_correct(run, p.frac)
    return verdicts_module.subsets_accurate(full=subsets.by_model(acc, "full"), bs=subsets.by_model(acc, "bs"), seed=run.seed)


def _kept(run, p):
    X, _ = runs_module.selection(run, "test").load()
    return verdicts_module.confidence_kept(subsets.confidence_drops(run, runs_module.zoo(run), X, p.frac), seed=run.seed)


def _transfer(run, p):
    models = runs_module.zoo(run)
    _, Y = runs_module.selection(run, "test").load()
    _, per_image = subsets.transfer(run, models, subsets.own_subsets(run, models, p.frac), Y)
    return subsets.no_transfer(per_image, _subset_correct(run, p.frac), seed=run.seed)


def _retraining(run, p):
    runs, _, _ = subsets.retraining_runs(run, p.frac)
    return subsets.retraining_verdicts(run, runs)


# ----------------------------------------------------------------------------- Part II (4.1.1, 4.4-4.6)

def _robust(run, p):
    cfg = run.profile.robust
    robust = robust_module.robust_models(run, progress=False)
    standard = runs_module.zoo(run, archs=(cfg.arch,), replicates=len(robust))[cfg.arch]
    sel = robust_module.comparison_selection(run, standard[0], robust[0], p.tau)
    sizes = robust_module.sis_table(robust_module.sis_results(run, robust, sel), p.tau)
    name = robust_module.model_name(cfg.arch, True)
    return further_verdicts.robust_sis_sparse({name: robust_module.per_replicate(sizes, name)}, p.tau, seed=run.seed)


def _ensemble_accuracy(run, p):
    _, Ya, out = mitigation.zoo_logits(run)
    return further_verdicts.ensembles_increase_accuracy(mitigation.ensemble_gains(out, mitigation.members(run), Ya, p.n_resamples, seed=run.seed))


def _ensemble_sis(run, p):
    taus = thresholds(p.taus, p.tau)
    inc = mitigation.ensemble_increase(mitigation.sis_table(run, taus, progress=False), mitigation.members(run), taus,
                              n_resamples=p.n_resamples, seed=run.seed)
    return further_verdicts.ensembles_increase_sis(inc.xs(p.tau, level="tau", drop_level=False), min_images=p.min_images)


def _dropout(run, p):
    taus = thresholds(p.taus, p.tau)
    inc = mitigation.dropout_increase(mitigation.sis_table(run, taus, dropout=True, progress=False), taus,
                             n_resamples=p.n_resamples, seed=run.seed)
    return further_verdicts.dropout_increases_sis(inc.xs(p.tau, level="tau", drop_level=False), min_images=p.min_images)


def _borders(run, p):
    cfg, spec, taus = run.profile.imagenet, imagenet.MODELS[p.model], thresholds(p.taus, p.tau)
    net, model_key = imagenet.load_classifier(p.model)
    sample = imagenet_chapter.sample(net.to(run.device), p.model, p.imagenet_dir, cfg, run.seed)
    sel = imagenet_chapter.select(run, net, model_key, sample, cfg, taus, p.border)
    area = float(imagenet.border_band((spec["size"], spec["size"]), p.border).double().mean())
    return further_verdicts.borders_verdict(imagenet_chapter.border_shares(sel.table, float(p.tau)), area, float(p.tau), p.min_images)


# ----------------------------------------------------------------------------- Part III (related methods)

def _background(run, p):
    cfg = shared_interest.chapter_config(run, p)
    tau = shared_interest.sis_tau(run, cfg)
    table, G, _ = shared_interest.image_table(run, cfg, progress=False)
    return further_verdicts.sis_on_background(shared_interest.background_coverage(table, shared_interest.sis_name(tau), pixels=G[0].numel()), tau)


def _reduction(run, p):
    images = input_reduction.experiment(run, progress=False)["images"]
    return further_verdicts.size_verdict(images, p.min_images), further_verdicts.sis_verdict(images, p.min_images)


def _sparse_pixels(run, p):
    names = data.load(run.dataset, "test").classes
    vaes = bayes_trex.vaes(run, progress=False)
    targets, _ = bayes_trex.chapter_targets(run, names)
    chains, _ = bayes_trex.run_targets(run, targets, vaes)
    cmp = bayes_trex.sis_comparison(run, targets, chains, vaes["all"], p.tau)
    return further_verdicts.sparse_pixels(cmp["generated"], cmp["real"], p.tau)


# ----------------------------------------------------------------------------- Part I: the paper against its critiques

def _dilated_retraining(run, p):
    k = critiques.check_kernels(p.kernels)[0]
    return critiques.retraining_verdicts(run, critiques.dilated_retraining(run, k, p.frac), k)


def _calibration(run, p):
    images = critiques.calibration_images(run, p.frac)
    return critiques.calibration_verdict(critiques.calibration_errors(images, p.bins, p.tau), images["image"].nunique(), p.bins,
                                  seed=run.seed)


#: claim id(s) -> f(run, chapter parameters) returning their verdicts, in the order of the ids
MEASURES: dict[tuple, Callable] = {
    # replicates' confident images overlap: matched by id so their shared image error enters the interval
    ("sis",): lambda run, p: verdicts_module.sis_size(runs_module.sis_sizes_by_replicate(run, p.tau), p.tau,
                                                      seed=run.seed, ids=runs_module.sis_ids_by_replicate(run, p.tau)),
    ("accurate",): _accurate, ("kept",): _kept, ("transfer",): _transfer, ("beats", "near"): _retraining,
    ("road",): lambda run, p: further_verdicts.imputed_verdict(
        **factors_controls.imputed_correct(run, factors_controls.retrain_controls(run))),
    ("sis_accuracy",): lambda run, p: verdicts_module.sis_predicts_accuracy(
        sis_accuracy.verdict_input(run, p.n_resamples, run.seed), min_images=p.min_images),
    ("robust",): _robust, ("ensemble_accuracy",): _ensemble_accuracy,
    ("ensemble_sis",): _ensemble_sis, ("dropout",): _dropout, ("borders",): _borders,
    ("background",): _background, ("reduction_size", "reduction_sis"): _reduction,
    ("sparse_pixels",): _sparse_pixels,
    ("dilated", "dilated_sis"): lambda run, p: critiques.dilation_verdicts(
        critiques.dilation(run, p.kernels, p.frac, p.tau), critiques.check_kernels(p.kernels)[0], seed=run.seed),
    ("dilated_beats", "dilated_near"): _dilated_retraining,
    ("boundary",): lambda run, p: critiques.boundary_verdict(critiques.saliency_shares(
        run, p.frac, p.saliency_images, p.smoothgrad_samples, p.smoothgrad_sigma), seed=run.seed),
    ("blank",): lambda run, p: critiques.blank_verdict(run, critiques.blank_inputs(run, p.frac)),
    ("mask_shape",): lambda run, p: critiques.mask_shape_verdict(critiques.mask_shape(run, p.frac), seed=run.seed),
    ("calibration",): _calibration,
    ("insertion",): lambda run, p: critiques.insertion_verdict(
        critiques.insertion(run, p.fractions, p.frac), p.frac, seed=run.seed),
}


#: 4.1's masked-input claims under controlled conditions: blank's classes set aside (:func:`blank.restricted`),
#: counterfactually trained models (:func:`masked.masked_claims`), and those models with acceptance waived
CONTROLLED = ("accurate", "kept")


def _controlled(run, p) -> dict[str, dict[str, verdicts_module.Verdict]]:
    r, m = blank.restricted(run, frac=p.frac), masked.masked_claims(run, p.frac, progress=False)
    out = {c: {BLANK_ASIDE: blank.annotate(run, c, getattr(r, c)), MASKED_TRAINED: blank.annotate(run, c, getattr(m, c)),
               MASKED_ALL: blank.annotate(run, c, getattr(m, f"{c}_all"))} for c in CONTROLLED}
    for c in CONTROLLED:                      # the fine-tuned models' own blanks, not the zoo's
        out[c][MASKED_TRAINED].blank_passes = out[c][MASKED_ALL].blank_passes = m.blank.passes()
    return out


def verdicts(run, only: Iterable[str] | None = None, progress: bool = True, controls: bool = False) -> dict:
    """{claim id: Verdict} for all claims (or ``only``), with ``.seconds`` and, if ``controls`` (costly),
    ``.controlled`` = {claim: {condition: Verdict}}."""
    only = list(only) if only else list(CLAIMS)
    unknown = [c for c in only if c not in CLAIMS]
    if unknown:
        raise ValueError(f"unknown claim {unknown[0]!r}; valid claims: {', '.join(CLAIMS)}")
    todo = [ids for ids in MEASURES if any(i in only for i in ids)]
    out, seconds = {}, {}
    for ids in tqdm(todo, desc=f"verdicts {run.profile.name} seed {run.seed}", unit="claim", disable=not progress):
        t0 = time.perf_counter()
        got = MEASURES[ids](run, params(run, CLAIMS[ids[0]].chapter))
        got = got if isinstance(got, tuple) else (got,)
        seconds[", ".join(ids)] = round(time.perf_counter() - t0, 1)
        out.update({i: blank.annotate(run, i, v) for i, v in zip(ids, got) if i in only})
    ordered = _Verdicts({c: out[c] for c in CLAIMS if c in out})
    ordered.seconds, ordered.controlled = seconds, {}
    if controls and any(c in out for c in CONTROLLED):
        t0 = time.perf_counter()
        got = _controlled(run, params(run, CLAIMS[CONTROLLED[0]].chapter))
        ordered.controlled = {c: got[c] for c in CONTROLLED if c in out}
        seconds["controlled conditions"] = round(time.perf_counter() - t0, 1)
    return ordered


class _Verdicts(dict):
    seconds: dict
    controlled: dict


def table(vs: dict) -> list[dict]:
    """Every verdict's rows (JSON-ready) with part, chapter, outcome, then its controlled conditions' rows."""
    out = []
    for c, v in vs.items():
        out += [{**r, "part": CLAIMS[c].part, "chapter": CLAIMS[c].chapter, "verdict": v.word} for r in records(v, c)]
        for condition, cv in getattr(vs, "controlled", {}).get(c, {}).items():
            out += [{**r, "model": f"{r['model']} · {condition}", "condition": condition, "part": CLAIMS[c].part,
                     "chapter": CLAIMS[c].chapter, "verdict": cv.word} for r in records(cv, c)]
    return out
