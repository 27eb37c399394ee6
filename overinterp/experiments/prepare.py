"""Precompute chapters 2-5's artifacts for a profile (zoo, SIS, 5% subsets, retraining: paper 3.2, 4.1,
4.2), resumably and in shards, so they render from the store. :func:`plan` is a fixed ordered list of units:
the zoo, the backward selections (one unit per shard), the retrained models and controls; each calls the
chapter's own library function, so it writes exactly what the chapter loads, and a stored unit costs
nothing. ``--shards a:b`` runs part of the list; each process takes every N-th unit (a model another process
has not finished is trained again: same key, same result):

    python -m overinterp prepare --profile quick --list       # the plan
    python -m overinterp prepare --profile paper --shards 0:15 --device cuda
    torchrun --nproc-per-node 8 -m overinterp prepare --profile gpu     # rank r: units r, r+8, ...
    sbatch --array=0-15 --wrap "python -m overinterp prepare --profile gpu"   # one task each

Under torchrun each rank uses the GPU of its ``LOCAL_RANK``. On a multi-core CPU :func:`prepare_parallel`
runs the plan in one-thread processes (``python -m overinterp book`` does so with :func:`book_plan`).
"""
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable

import torch

from tqdm import tqdm

from overinterp.experiments import runs, subsets
from overinterp.engine.runner import n_shards
from overinterp.paper.formatting import pct
from overinterp.paper.numbers import SUBSET_FRAC
from overinterp.experiments.runs import trained_model
from overinterp.store import Store


@dataclass(frozen=True)
class Unit:
    """One resumable piece of work; ``run()`` computes its artifact unless stored."""
    kind: str                  # model | backselect | retrained
    name: str                  # what a reader of --list sees
    run: Callable[[], object]


def plan(run) -> list[Unit]:
    """Every unit chapters 2-5 need for ``run`` (a :class:`overinterp.config.context.Run`), in order."""
    p, units = run.profile, []
    for a in p.archs:
        for r in range(p.replicates):
            units.append(Unit("model", f"{a} seed {run.seed + r}",
                              lambda a=a, s=run.seed + r: trained_model(run.dataset, a, p.name, seed=s,
                                                                        device=run.device, progress=False)))
    for a in p.archs:
        for name, sel in runs.eval_selections(run, train=True).items():
            total = n_shards(len(sel.load()[1]), p.shard_size)
            # every replicate's subsets of the test and OOD images (4.1); seed run.seed's of training images (4.2)
            for r in range(1 if name == "train" else p.replicates):
                for i in range(total):
                    units.append(Unit("backselect", f"{a} seed {run.seed + r} {name} shard {i + 1}/{total}",
                                      lambda a=a, sel=sel, i=i, s=run.seed + r: runs.backselect_set(
                                          run, a, sel, s, shards=range(i, i + 1), progress=False)))
        units.append(Unit("backselect", f"{a} SIS images (tau {p.sis_threshold})",
                          lambda a=a: runs.backselect_set(run, a, runs.confident_selection(run, p.sis_threshold),
                                                       progress=False)))
        if p.sis_engine is not None:     # 4.1's SIS sizes by their own engine, every replicate
            for r in range(p.replicates):
                units.append(Unit("backselect", f"{a} seed {run.seed + r} SIS sizes ({p.sis_engine.describe()})",
                                  lambda a=a, s=run.seed + r: runs.sis_result(run, a, s, p.sis_threshold)))
    for a in p.archs:
        for kind in subsets.RETRAIN_KINDS:
            for augment in (False, True) if p.retrain_augment_rows and kind != "full" else (False,):
                what = "full images (control)" if kind == "full" else f"{pct(SUBSET_FRAC)}% {kind} subsets"
                units.append(Unit("retrained", f"{a} on {what}{' (+aug)' if augment else ''}",
                                  lambda a=a, k=kind, g=augment: subsets.retrain_on_subsets(run, a, k, g)))
    return units


def book_plan(run) -> list[Unit]:
    """:func:`plan` plus what ``book --jobs N`` computes first: input-dropout and counterfactually trained
    models, and last (kind "chapter") C4's retraining controls and Springer's dilated retraining."""
    from overinterp.config.chapters import Critiques
    from overinterp.experiments import critiques, factors_controls
    from overinterp.experiments import masked as masked_module
    from overinterp.experiments import mitigation
    units = plan(run)
    models = [u for u in units if u.kind == "model"]
    drop = [Unit("model", f"{run.profile.mitigation.dropout_arch} seed {run.seed + r} input dropout",
                 lambda s=run.seed + r: mitigation.dropout_model(run, s, progress=False))
            for r in range(mitigation.dropout_count(run))]
    mc = run.profile.masked           # chapter 3's counterfactually trained models (fine-tuned from the zoo's)
    masked = [Unit("model", f"{a} seed {run.seed + r} masked training",
                   lambda a=a, s=run.seed + r: masked_module.masked_model(run, a, s, progress=False))
              for a in (mc.archs or run.profile.archs) for r in range(mc.replicates or run.profile.replicates)]
    c = Critiques()
    later = [Unit("chapter", "retraining controls (chapter 'Why it holds or fails here')",
                  lambda: factors_controls.retrain_controls(run)),
             Unit("chapter", f"dilated retraining, kernel {c.kernels[0]} (chapter 'The critiques')",
                  lambda: critiques.dilated_retraining(run, c.kernels[0], c.frac))]
    return models + drop + masked + units[len(models):] + later


def model_keys(run) -> list[str]:
    """The artifact keys of :func:`book_plan`'s trained models (the zoo, input-dropout and counterfactually
    fine-tuned models): what a models pack holds, so that a book unpacks them instead of training."""
    from overinterp.experiments import masked as masked_module
    from overinterp.experiments import mitigation
    from overinterp.store import Store, config_key
    p, m = run.profile, run.profile.mitigation
    zoo = [runs.model_key(run.dataset, a, p.name, run.seed + r) for a in p.archs for r in range(p.replicates)]
    drop = [runs.model_key(run.dataset, m.dropout_arch, p.name, run.seed + r, keep_prob=m.keep_prob,
                           dropout_samples=m.dropout_samples) for r in range(mitigation.dropout_count(run))]
    masked = [config_key(Store.versioned("model", masked_module.masked_config(run, a, run.seed + r)))
              for a in (p.masked.archs or p.archs) for r in range(p.masked.replicates or p.replicates)]
    return zoo + drop + masked


def worker(env=os.environ) -> tuple[int, int, int | None]:
    """(rank, processes, local rank) from torchrun or a SLURM job array (local rank None), else (0, 1, None)."""
    if "WORLD_SIZE" in env and "RANK" in env:
        return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0))
    if "SLURM_ARRAY_TASK_COUNT" in env and "SLURM_ARRAY_TASK_ID" in env:
        task = int(env["SLURM_ARRAY_TASK_ID"]) - int(env.get("SLURM_ARRAY_TASK_MIN", 0))
        return task, int(env["SLURM_ARRAY_TASK_COUNT"]), None
    return 0, 1, None


def plans() -> dict[str, Callable]:
    """The studies ``prepare`` computes: "chapters", "book", "scale"."""
    from overinterp.experiments import scale     # it builds on this module's Unit
    return {"chapters": plan, "book": book_plan, "scale": scale.plan}


def prepare(run, units: slice | None = None, rank: int = 0, world: int = 1, progress: bool = True,
            study: str = "chapters", log: str | None = None) -> dict:
    """Run units ``rank``, ``rank + world``, ... of the study's plan; seconds per unit. ``log``: a JSON line
    per finished unit."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is outside 0:{world}")
    todo = plans()[study](run)[units or slice(None)][rank::world]
    seconds = {}
    for u in tqdm(todo, desc=f"prepare {run.profile.name} [{rank}/{world}]", unit="unit", disable=not progress):
        name, seconds[name] = _timed(u)
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"profile": run.profile.name, "study": study, "unit": u.name, "kind": u.kind,
                                    "seconds": seconds[name], "rank": rank, "world": world,
                                    "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
    return seconds


def _timed(u: Unit) -> tuple[str, float]:
    """("kind: name", seconds) of running ``u``."""
    t0 = time.perf_counter()
    u.run()
    return f"{u.kind}: {u.name}", round(time.perf_counter() - t0, 1)


def _one_thread(root: str, repair: bool | None) -> None:
    """A pool process: one thread, the parent's artifact store."""
    torch.set_num_threads(1)
    Store.default_root, Store.default_repair = root, repair


def _run_unit(run, study: str, i: int) -> tuple[str, float]:
    return _timed(plans()[study](run)[i])


def prepare_parallel(run, workers: int = 2, study: str = "chapters", progress: bool = True) -> dict:
    """:func:`prepare` of the plan in ``workers`` one-thread processes, one kind of unit after another
    (each needs only earlier kinds, so no artifact is computed twice). Returns seconds per unit."""
    units = plans()[study](run)
    seconds = {}
    store = Store()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread,
                             initargs=(str(store.root.resolve()), store.repair)) as pool:
        for kind in dict.fromkeys(u.kind for u in units):
            todo = [pool.submit(_run_unit, run, study, i) for i, u in enumerate(units) if u.kind == kind]
            for f in tqdm(as_completed(todo), total=len(todo), unit="unit", disable=not progress,
                          desc=f"prepare {run.profile.name}: {kind} units in {workers} processes"):
                name, seconds[name] = f.result()
    return seconds
