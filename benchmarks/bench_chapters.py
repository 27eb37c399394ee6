"""Each chapter's run time alone, for the instructors' page: from an unpacked pack and
from an empty artifact store, with the pack's size.

From ONE executed book (every chapter of ``_toc.yml`` executed in order by
:func:`overinterp.pages.build.execute`, from an empty store, with the store's access log on:
``$OVERINTERP_STORE_LOG``, :func:`overinterp.store.log_access`), per chapter:

* ``with_store``: its seconds when every artifact it needs is stored -- each chapter executed again,
  alone, against the full store. This is its time from an unpacked pack;
* ``alone_from_empty_upper_bound``: an UPPER BOUND on its seconds alone from an empty store: its own
  seconds in the full build plus those of every earlier chapter whose saved artifacts it loads,
  transitively (read from the log; :func:`loads_from`, :func:`needs`). An upper bound, because an
  earlier chapter's seconds include work the later chapter does not need;

and the pack: the size of ``python -m overinterp store pack`` of the full store, the seconds of
``store unpack`` into an empty store, and chapter 04 executed alone after it. ``--validate`` also
executes chapter 04 alone from an empty store, beside its upper bound. Writes
``benchmarks/results/chapters-<profile>-<device>.json`` (read by ``book/17_instructors``).

    python benchmarks/bench_chapters.py --profile quick              # everything, from an empty store
    python benchmarks/bench_chapters.py --reuse _build/chapters      # its executed book again: the log,
                                                                      # timings.json and DIR/artifacts

``--reuse`` also reads a book executed as ``make book`` runs it (``python -m overinterp book --out DIR`` with
``$OVERINTERP_ARTIFACTS=DIR/artifacts`` and ``$OVERINTERP_STORE_LOG=DIR/store-log.jsonl``): its ``prepare``
stage (chapters 2-5's artifacts in parallel processes) is then a row that the chapters it serves depend on.

Datasets live outside the store (``$OVERINTERP_DATA``): every time here assumes they are in place.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from overinterp import store as store_module
from overinterp.pages import build
from overinterp.pages.instructors import SCHEMA
from overinterp.zoo.train import device_name, resolve_device

ROOT = Path(__file__).resolve().parents[1]
LOG, TIMINGS = "store-log.jsonl", "timings.json"
PACK_CHAPTER = "04_pixel_subsets"     # the case timed: a student runs chapter 4 from the pack


# ---------------------------------------------------------------------------------------- pure functions

def read_log(path: Path) -> list[dict]:
    """The access log's events (one JSON object per line), in the order they were written."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def loads_from(log: list[dict]) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Which chapters each chapter loads artifacts from: ``({chapter: {chapters whose saved file it
    loads}}, {chapter: loads of files no chapter of the log saved})``. A file belongs to the chapter
    that saved it first; loading one's own file is no dependency."""
    saver, deps, unlogged = {}, {}, {}
    for e in log:
        chapter, f = e.get("chapter"), (e["key"], e["name"])
        if chapter is None:
            continue
        deps.setdefault(chapter, set())
        if e["event"] == "save":
            saver.setdefault(f, chapter)
        elif e["event"] == "load":
            if f not in saver:
                unlogged[chapter] = unlogged.get(chapter, 0) + 1
            elif saver[f] != chapter:
                deps[chapter].add(saver[f])
    return deps, unlogged


def needs(deps: dict[str, set[str]], chapter: str) -> set[str]:
    """The chapters ``chapter`` needs run first from an empty store: its dependencies, transitively."""
    seen, todo = set(), list(deps.get(chapter, ()))
    while todo:
        c = todo.pop()
        if c not in seen and c != chapter:
            seen.add(c)
            todo += deps.get(c, ())
    return seen


def upper_bound(seconds: dict[str, float], deps: dict[str, set[str]], chapter: str) -> float:
    """Seconds of ``chapter`` alone from an empty store, at most: its own plus every chapter it needs."""
    return round(seconds[chapter] + sum(seconds[c] for c in needs(deps, chapter)), 1)


def chapter_rows(seconds: dict[str, float], with_store: dict[str, float], log: list[dict],
                 saved_alone: dict[str, int] | None = None) -> dict[str, dict]:
    """Per chapter (in the order of ``seconds``): seconds in the full build, with every artifact
    stored, the upper bound from an empty store, the chapters it loads from and needs (in order),
    and the saves it made when run alone against the full store (0 when the store held everything)."""
    deps, unlogged = loads_from(log)
    order = list(seconds)
    rows = {}
    for c in order:
        rows[c] = {"full_build": seconds[c], "with_store": with_store.get(c),
                   "alone_from_empty_upper_bound": upper_bound(seconds, deps, c),
                   "loads_from": [d for d in order if d in deps.get(c, ())],
                   "needs": [d for d in order if d in needs(deps, c)],
                   "loads_unlogged": unlogged.get(c, 0)}
        if saved_alone is not None:
            rows[c]["saved_when_alone"] = saved_alone.get(c, 0)
    return rows


def result(parameters: dict, device: str, rows: dict, pack: dict | None, validate: dict | None,
           command: str, seconds: float | None = None) -> dict:
    """The JSON this benchmark writes (``"schema"``: :data:`overinterp.pages.instructors.SCHEMA`)."""
    return {
        "what": "each chapter's seconds alone: with every artifact stored (from an unpacked pack), and an upper "
                "bound from an empty store (its own seconds in one full build plus those of every earlier chapter "
                "whose saved artifacts it loads, transitively, from the store's access log); the pack's size and "
                f"chapter {PACK_CHAPTER[:2]} alone after unpacking it",
        "command": command, "schema": SCHEMA, "device": device, "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"), "profile": parameters["profile"], "dataset": parameters["dataset"],
        "parameters": parameters, "full_build_seconds": round(sum(r["full_build"] for r in rows.values()), 1),
        "bench_seconds": seconds, "chapters": rows, "pack": pack, "validate": validate,
        "notes": ["alone_from_empty_upper_bound is an upper bound, not a measurement: the earlier chapters' "
                  "seconds include work this chapter does not need",
                  "datasets are outside the artifact store: every time assumes they are in place"]}


# ---------------------------------------------------------------------------------------- executing

@contextmanager
def environ(values: dict):
    """``os.environ`` updated with ``values`` within the block (the chapters' kernels inherit it)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def execute(parameters: dict, stage: Path, store: Path, log: Path, only: list[str] | None = None) -> dict:
    """:func:`overinterp.pages.build.execute` against the store ``store``, logging to ``log``."""
    with environ({"OVERINTERP_ARTIFACTS": store.resolve(), store_module.LOG_ENV: log.resolve()}):
        return build.execute(parameters, stage, only=only)


def saves(log: Path) -> dict[str, int]:
    """Saves per chapter in a log (missing log: none)."""
    out = {}
    for e in read_log(log) if log.exists() else []:
        if e["event"] == "save":
            out[e["chapter"]] = out.get(e["chapter"], 0) + 1
    return out


def fresh(folder: Path) -> Path:
    """``folder``, emptied."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def pack_and_run(parameters: dict, work: Path, store: Path) -> dict:
    """Pack ``store``, unpack it into an empty store and execute :data:`PACK_CHAPTER` alone there."""
    file = work / f"overinterp-{parameters['profile']}.tar.gz"
    t0 = time.perf_counter()
    manifest = store_module.pack(file, store_module.Store(store), profile=parameters["profile"])
    packed = time.perf_counter() - t0
    target = work / "unpacked"
    shutil.rmtree(target, ignore_errors=True)
    t0 = time.perf_counter()
    store_module.unpack(file, store_module.Store(target))
    unpacked = time.perf_counter() - t0
    log = work / "unpacked-log.jsonl"
    log.unlink(missing_ok=True)
    ran = execute(parameters, fresh(work / "after-unpack"), target, log, only=[PACK_CHAPTER])
    return {"bytes": file.stat().st_size, "store_bytes": sum(e["bytes"] for e in manifest["files"].values()),
            "files": len(manifest["files"]), "pack_seconds": round(packed, 1), "unpack_seconds": round(unpacked, 1),
            "chapter": PACK_CHAPTER, "chapter_seconds_after_unpack": ran[PACK_CHAPTER],
            "chapter_saved_after_unpack": saves(log).get(PACK_CHAPTER, 0)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="quick")
    p.add_argument("--dataset", default="fashion-mnist")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", default="_build/chapters",
                   help="working folder: the executed book (stage/), its store (artifacts/), the log, the pack")
    p.add_argument("--reuse", metavar="DIR", default=None,
                   help=f"read DIR/{TIMINGS} and DIR/{LOG} of a book this script executed, instead of executing it")
    p.add_argument("--artifacts", default=None, help="the full store (default DIR/artifacts)")
    p.add_argument("--validate", action="store_true", help=f"also execute {PACK_CHAPTER} alone from an empty store")
    p.add_argument("--out", default=None, help="default benchmarks/results/chapters-<profile>-<device>.json")
    a = p.parse_args(argv)
    t_start = time.perf_counter()
    work = Path(a.reuse or a.dir)
    store = Path(a.artifacts or work / "artifacts")
    parameters = {"dataset": a.dataset, "profile": a.profile, "device": a.device, "seed": a.seed}
    if a.reuse:
        timings = json.loads((work / TIMINGS).read_text())
        parameters, seconds = timings["parameters"], timings["seconds"]
    else:
        if store.exists() and any(store.iterdir()):
            raise SystemExit(f"{store} is not empty: this benchmark starts from an empty store "
                             f"(remove it, or read the book it executed with --reuse {work})")
        work.mkdir(parents=True, exist_ok=True)
        (work / LOG).unlink(missing_ok=True)
        seconds = execute(parameters, fresh(work / "stage"), store, work / LOG)
        (work / TIMINGS).write_text(json.dumps({"parameters": parameters, "seconds": seconds}, indent=2))
    log = read_log(work / LOG)
    with_store, alone_log = {}, work / "alone-log.jsonl"
    alone_log.unlink(missing_ok=True)
    for chapter in [c for c in seconds if c != "prepare"]:      # each chapter again, alone, on the full store
        with_store.update(execute(parameters, fresh(work / "alone"), store, alone_log, only=[chapter]))
    rows = chapter_rows(seconds, with_store, log, saves(alone_log))
    pack = pack_and_run(parameters, work, store)
    validate = None
    if a.validate:
        empty = fresh(work / "empty-store")
        ran = execute(parameters, fresh(work / "validate"), empty, work / "validate-log.jsonl", only=[PACK_CHAPTER])
        validate = {"chapter": PACK_CHAPTER, "seconds_from_empty": ran[PACK_CHAPTER],
                    "upper_bound": rows[PACK_CHAPTER]["alone_from_empty_upper_bound"]}
    command = "python benchmarks/bench_chapters.py " + " ".join(sys.argv[1:] if argv is None else argv)
    out = Path(a.out or ROOT / "benchmarks" / "results" / f"chapters-{parameters['profile']}-"
               f"{resolve_device(parameters['device']).type}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result(parameters, device_name(parameters["device"]), rows, pack, validate, command.strip(),
                                     round(time.perf_counter() - t_start, 1)), indent=1) + "\n")
    for c, r in rows.items():
        print(f"{c:<20} full build {r['full_build']:7.1f} s   with store {r['with_store']:7.1f} s   "
              f"alone from empty <= {r['alone_from_empty_upper_bound']:7.1f} s   needs {', '.join(r['needs']) or '-'}")
    print(f"pack {pack['bytes'] / 2**20:.1f} MiB; {PACK_CHAPTER} after unpack {pack['chapter_seconds_after_unpack']} s")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
