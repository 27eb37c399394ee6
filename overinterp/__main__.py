"""Command line: ``python -m overinterp COMMAND`` (:func:`commands` lists them).

Commands compute with the same functions and config dataclasses as the chapters, so their results are the
artifacts a chapter loads. A bad parameter, missing data or a damaged artifact ends with one line and exit code 2.
"""
import argparse
import json
import os
import sys
import time
from dataclasses import asdict, fields, replace

from overinterp.config.chapters import (RunConfig, add_arguments, chapter_label, chapter_number, chapter_parameters,
                                        chapter_stem, from_arguments, toc_chapters)

PROG = "python -m overinterp"
DESCRIPTION = ("The command line of the overinterp book, a reproduction of Carter et al., NeurIPS 2021: it trains "
               "the model zoo, runs backward selection, decides the claims and builds the book with the functions "
               "and parameters the chapters use, storing every result in the artifact store (--artifacts). Run "
               f"'{PROG} COMMAND --help' for a command's options.")


def _chapters(first: str, last: str) -> str:
    """'chapters 1-4': the sidebar numbers of notebooks ``first`` to ``last``."""
    return f"chapters {chapter_number(first)}-{chapter_number(last)}"


def commands() -> dict[str, str]:
    """``{command: one-line description}``."""
    return {
        "train": "train one model of the zoo (cached in the artifact store)",
        "backselect": "backward selection of a set's images, in resumable shards",
        "prepare": f"precompute the models, selections and retraining of {_chapters('02_model_zoo', '05_retraining')}",
        "verdicts": "every claim's verdict from the artifact store, without a notebook",
        "scale": "the scale study: Part I's measures over training size and width",
        "book": "execute the chapters with papermill and render the book",
        "chapters": "list each chapter's parameters, or --write them to the notebooks",
        "store": "pack, unpack or verify the artifact store (a class-ready archive)",
    }


def _parser(required: bool) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The top-level parser, listing :func:`commands`, and its subparsers action."""
    import textwrap
    width = max(map(len, commands()))
    table = "\n".join(f"  {name:<{width}}  {line}" for name, line in commands().items())
    parser = argparse.ArgumentParser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=f"{textwrap.fill(DESCRIPTION, 78)}\n\ncommands:\n{table}")
    sub = parser.add_subparsers(dest="command", required=required, metavar="COMMAND",
                                help=f"one of the commands above ('{PROG} COMMAND --help' describes it)")
    return parser, sub


def positive(name: str):
    """argparse type: an integer >= 1."""
    def check(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{name} must be an integer >= 1, got {value!r}")
        return n
    return check


def parse_shards(text: str) -> slice:
    """"a:b" -> slice(a, b); "a" -> slice(a, a+1); "a:" -> slice(a, None) (to the end). Non-empty."""
    try:
        lo, colon, hi = text.partition(":")
        lo = int(lo) if lo else 0
        hi = (int(hi) if hi else None) if colon else lo + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shards must look like 0:10, 3 or 5:, got {text!r}") from None
    if lo < 0 or (hi is not None and hi <= lo):
        raise argparse.ArgumentTypeError(f"--shards {text!r} is empty: it needs 0 <= start < stop")
    return slice(lo, hi)


RUN_FIELDS = {f.name for f in fields(RunConfig)}


def _run(args, local_rank: int | None = None):
    """The chapters' ``Run`` for ``args``; with ``local_rank`` (torchrun), an unindexed cuda device is its GPU."""
    import torch

    from overinterp.config.context import make_run
    c = from_arguments(RunConfig, args)
    run = make_run(c.dataset, c.profile, c.device, c.seed)
    if run.device.type == "cuda" and run.device.index is None and local_rank is not None:
        run = replace(run, device=torch.device("cuda", local_rank % torch.cuda.device_count()))
    return run


def cmd_train(args) -> int:
    from overinterp.experiments import runs
    from overinterp.zoo import data
    from overinterp.zoo.train import accuracy
    run = _run(args)
    model = runs.trained_model(run.dataset, args.arch, run.profile.name, run.seed, device=run.device)
    info, test = model.info, data.load(run.dataset, "test")     # the whole test set: training does not score it
    acc = accuracy(model, test.images, test.labels, device=run.device)
    print(json.dumps({"dataset": run.dataset, "arch": args.arch, "profile": run.profile.name, "seed": run.seed,
                      "test_acc": acc, "train_seconds": info["seconds"], "device": info["device"],
                      "seconds_per_epoch": [round(h["seconds"], 2) for h in info["history"]]}, indent=2))
    return 0


def cmd_backselect(args) -> int:
    from overinterp.engine.backselect import BackSelectConfig
    from overinterp.engine.runner import n_shards
    from overinterp.experiments import runs
    run = _run(args)
    sel = runs.selection(run, args.set, args.n)
    overrides = {f.name: getattr(args, f.name) for f in fields(BackSelectConfig) if getattr(args, f.name) is not None}
    config = replace(run.profile.engine(sel.set), **overrides)
    total = n_shards(len(sel.load()[1]), run.profile.shard_size)
    sl = args.shards or slice(0, None)
    shards = range(sl.start, total if sl.stop is None else sl.stop)
    t0 = time.perf_counter()
    res = runs.backselect_set(run, args.arch, sel, config=config, shards=shards, chunk_size=args.chunk_size)
    print(json.dumps({**sel.key(), "arch": args.arch, "profile": run.profile.name, "model_seed": run.seed,
                      **config.key(), "shards": f"{shards.start}:{shards.stop} of {total}",
                      "seconds": round(time.perf_counter() - t0, 1), "complete": res is not None,
                      "reused_by_the_book": config == run.profile.engine(sel.set) and args.n is None}, indent=2))
    return 0


def cmd_prepare(args) -> int:
    from overinterp.experiments.prepare import plans, prepare, worker
    rank, world, local_rank = worker()
    run = _run(args, local_rank)
    units, todo = args.shards or slice(0, None), plans()[args.study](run)
    if args.list:
        for i, u in enumerate(todo):
            print(f"{i:4d}  {u.kind:10s} {u.name}")
        return 0
    n = len(todo)
    if units.start >= n:
        raise ValueError(f"--shards {units.start}:{units.stop or ''} is outside the plan's 0:{n} units")
    t0 = time.perf_counter()
    seconds = prepare(run, units, rank, world, study=args.study, log=args.log)
    print(json.dumps({"profile": run.profile.name, "study": args.study, "dataset": run.dataset,
                      "device": str(run.device),
                      "units": f"{units.start}:{min(n, units.stop or n)} of {n}", "process": f"{rank} of {world}",
                      "seconds": seconds,
                      "total_seconds": round(time.perf_counter() - t0, 1)}, indent=2))
    return 0


def cmd_verdicts(args) -> int:
    from overinterp.experiments import claims
    from overinterp.pages import report
    from overinterp.store import write_json
    from overinterp.zoo.train import device_name
    run = _run(args)
    if args.merge:   # a missing or foreign file, or one of another run, fails before anything is computed
        earlier = report.load(args.json)
        report.same_run(earlier, {"dataset": run.dataset, "profile": run.profile.name, "seed": run.seed})
    if run.profile.name == "tiny":  # said before the minutes of computing, and again atop the rows
        print(report.TINY_WARNING, file=sys.stderr, flush=True)
    vs = claims.verdicts(run, args.only, controls=args.controls)
    rows = claims.table(vs)
    print(report.text(rows, run.profile.name))
    if args.json:
        doc = report.document(run, rows, vs.seconds, device_name(run.device))
        if args.merge:
            doc = report.merge(earlier, doc)
        write_json(args.json, doc)
        print(f"{'merged these rows into' if args.merge else 'wrote'} {args.json}")
    return 0


def cmd_scale(args) -> int:
    from overinterp.experiments import scale
    from overinterp.pages import scale as scale_pages
    from overinterp.store import write_json
    from overinterp.zoo.train import device_name
    run = _run(args)
    t0 = time.perf_counter()
    rows = scale.study(run)
    show = rows.assign(**{"95% interval": [f"[{a:.3g}, {b:.3g}]" for a, b in zip(rows["95% low"], rows["95% high"])]})
    print(show[["curve", "training images", "width", "epochs", "measure", "setting", "estimate", "95% interval",
                "replicate sd", "paper"]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if args.json:
        write_json(args.json, scale_pages.document(run, rows, time.perf_counter() - t0, device_name(run.device)))
        print(f"wrote {args.json}")
    return 0


def only_chapters(names) -> list[str] | None:
    """``book --only``'s names as notebook stems ('book/03_sis.ipynb' -> '03_sis'); ValueError if not in _toc.yml."""
    if names is None:
        return None
    valid, out = toc_chapters(), []
    for name in names:
        stem = chapter_stem(name)
        if stem not in valid:
            raise ValueError(f"--only: unknown chapter {name!r}; valid chapters (notebook stems, in the order of "
                             f"_toc.yml): {', '.join(valid)}")
        out.append(stem)
    return out


def cmd_book(args) -> int:
    from overinterp.config.context import make_run
    from overinterp.pages import build as book
    from overinterp.store import Store
    only = only_chapters(args.only)                                     # before anything executes
    c = from_arguments(RunConfig, args)
    make_run(c.dataset, c.profile, c.device, c.seed)                  # checks the parameters before any chapter
    run = make_run(c.dataset, c.profile)
    parameters = {**asdict(c), "profile": c.profile or run.profile.name,
                  **chapter_parameters(only or toc_chapters(), args.parameter or [], run.profile)}
    t0 = time.perf_counter()
    # the chapters' kernels are other processes; the book repairs damaged artifacts unless --no-repair
    kernels = {"OVERINTERP_ARTIFACTS": str(Store().root.resolve()),
               "OVERINTERP_REPAIR": "0" if args.repair is False else "1"}
    from unittest import mock
    with mock.patch.dict(os.environ, kernels):
        book.build(parameters, out=args.out, only=only, edition=args.edition, jobs=args.jobs, train=args.train)
    print(f"[book] total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


def cmd_chapters(args) -> int:
    from overinterp.config.chapters import CHAPTERS
    if args.write:
        from overinterp.pages import build as book
        changed = book.write_parameters()
        print(f"rewrote the parameters cell of {', '.join(changed)}" if changed else "every parameters cell is up to date")
        return 0
    for stem, cls in CHAPTERS.items():
        own = ", ".join(f"{f.name}={f.default!r}" for f in fields(cls) if f.name not in RUN_FIELDS)
        shared = ", ".join(f.name for f in fields(RunConfig))
        print(f"{chapter_label(stem)}: {own or f'(only the parameters every chapter takes: {shared})'}")
    return 0


def cmd_store(args) -> int:
    from overinterp import store as artifact_store
    from overinterp.config.profiles import default_profile, get_profile
    from overinterp.store import Store
    store = Store()
    if args.action != "unpack" and not store.root.is_dir():   # an empty folder is not a healthy store or a pack
        raise FileNotFoundError(f"no artifact store at {store.root}: "
                                f"{'not a folder' if store.root.exists() else 'no such folder'} "
                                "(--artifacts or $OVERINTERP_ARTIFACTS names the store)")
    if args.action == "pack":
        profile = get_profile(args.profile or default_profile()).name       # ValueError names a bad one
        t0 = time.perf_counter()
        m = artifact_store.pack(args.file, store, profile=profile)
        size = os.path.getsize(args.file)
        print(json.dumps({"pack": args.file, "store": str(store.root), "profile": profile, "files": len(m["files"]),
                          "store_bytes": sum(e["bytes"] for e in m["files"].values()), "pack_bytes": size,
                          "left_out_stale_entries": m["left_out_stale_entries"], "commit": m["commit"],
                          "artifact_versions": m["artifact_versions"],
                          "seconds": round(time.perf_counter() - t0, 1)}, indent=2))
    elif args.action == "unpack":
        summary = artifact_store.unpack(args.file, store)
        for w in summary.pop("warnings"):
            print(f"{PROG} store unpack: warning: {w}", file=sys.stderr)
        print(json.dumps(summary, indent=2))
    else:
        n = sum(1 for f in store.files() if f.suffix != ".sha256")
        bad = store.verify_all()
        if bad and not store.repair:    # every damaged file, one line each, then the count
            for f, why in bad:
                print(f"{PROG} store verify: damaged: {f} ({' '.join(why.split())})", file=sys.stderr)
            print(f"{PROG} store: error: {len(bad)} of the {n} files of {store.root} "
                  f"{'is' if len(bad) == 1 else 'are'} damaged; run again with --repair to move "
                  f"{'it' if len(bad) == 1 else 'them'} aside (recomputed when a chapter next needs "
                  f"{'it' if len(bad) == 1 else 'them'})", file=sys.stderr)
            return 2
        print(json.dumps({"store": str(store.root), "files": n,
                          "damaged": [str(f) for f, _ in bad], "moved_aside": bool(bad and store.repair)}, indent=2))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    add_arguments(p, RunConfig)
    p.add_argument("--artifacts", default=None, help="artifact store folder (default $OVERINTERP_ARTIFACTS or ./artifacts)")
    p.add_argument("--repair", action=argparse.BooleanOptionalAction, default=None,
                   help="move a stored result that fails its checksum aside (<file>.corrupt-<time>) and recompute "
                        "it, instead of stopping with its path (default: stop; the book command repairs "
                        "unless --no-repair)")


def _command(sub, name: str, func, description: str, common: bool = True) -> argparse.ArgumentParser:
    """A subcommand running ``func``, with the flags every command shares unless ``common`` is False."""
    p = sub.add_parser(name, description=description)
    if common:
        _common(p)
    p.set_defaults(func=func)
    return p


def top_parser() -> argparse.ArgumentParser:
    """The top-level parser, without command options, so ``--help`` imports neither torch nor the library."""
    parser, sub = _parser(required=False)
    for name in commands():
        sub.add_parser(name, add_help=False)
    return parser


def build_parser() -> argparse.ArgumentParser:
    from overinterp.engine.backselect import BackSelectConfig
    from overinterp.experiments import claims
    from overinterp.paper.claims import CLAIMS
    from overinterp.zoo.models import ARCHS
    parser, sub = _parser(required=True)
    part_one = _chapters("02_model_zoo", "05_retraining")

    t = _command(sub, "train", cmd_train,
                 "Train ARCH on DATASET with the PROFILE recipe and seed; the model is saved in the artifact store "
                 "keyed by its config and reused when present.")
    t.add_argument("--arch", choices=ARCHS, default="cnn")

    b = _command(sub, "backselect", cmd_backselect,
                 "Backward selection (paper 3.3; S5 for --method gradient) of a trained model on the images a "
                 "chapter uses (the profile's seeded sample of --set). Shards are saved to the artifact store as "
                 "they finish; re-running skips finished shards, and --shards splits the work across processes. "
                 "With the profile's engine and sample size the result is the one the book loads.")
    b.add_argument("--arch", choices=ARCHS, default="resnet20")
    b.add_argument("--set", default="test", help="train, test or an OOD set of the dataset (default test)")
    b.add_argument("--n", type=positive("--n"), default=None,
                   help="images sampled from the set (default: the profile's test_size, or retrain_images for train)")
    add_arguments(b, BackSelectConfig, inherit="the profile's engine for --set")
    b.add_argument("--shards", type=parse_shards, default=None,
                   help="shard range this process computes, e.g. 0:10, 3 or 10: (default all)")
    b.add_argument("--chunk-size", type=positive("--chunk-size"), default=None,
                   help="forward passes per batch (default by device)")

    p = _command(sub, "prepare", cmd_prepare,
                 f"Train the model zoo, run the backward selections and retrain the models that {part_one} need "
                 "for PROFILE (the later chapters compute the rest when they run), skipping what the artifact "
                 "store holds. --list shows the numbered units; --shards a:b runs units a to b-1 (e.g. one range "
                 "per process or machine). Under torchrun (RANK, WORLD_SIZE) or a SLURM job array "
                 "(SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) each process takes every N-th unit of the range.")
    p.add_argument("--shards", type=parse_shards, default=None, help="unit range, e.g. 0:10 (default all)")
    p.add_argument("--list", action="store_true", help="print the units and exit")
    p.add_argument("--log", default=None, metavar="FILE",
                   help="append one JSON line per finished unit (its seconds) to FILE, as it finishes")
    p.add_argument("--study", choices=("chapters", "book", "scale"), default="chapters",
                   help="what to compute: the chapters' artifacts (default); 'book': those plus the input-dropout "
                        "and counterfactually fine-tuned models, the retraining controls and the dilated retraining "
                        "that the book and verdicts --controls compute; or the scale study's (the profile's "
                        "ScaleConfig: models of more training images and widths, their selections, retraining)")

    v = _command(sub, "verdicts", cmd_verdicts,
                 "Compute the verdict of every claim the book tests (overinterp.paper.claims) for PROFILE and SEED "
                 "with the chapters' own functions and default parameters, reading models, backward selections and "
                 "retrained models from the artifact store and computing (and storing) what it lacks, so a run "
                 "resumes where the last stopped. Prints one line per claim and model (the measure and its unit, "
                 "the estimate, its 95% interval, the margin and the outcome); --json writes them. The tiny "
                 "profile's numbers are a smoke test, not findings: its rows are marked so.")
    v.add_argument("--only", nargs="*", default=None, metavar="CLAIM",
                   help="only these claims (default all): " + ", ".join(CLAIMS))
    v.add_argument("--json", default=None, metavar="FILE", help="also write the verdicts as JSON to FILE")
    v.add_argument("--merge", action="store_true",
                   help="with --json: add these claims' rows to the verdicts already in FILE (same profile and "
                        "seed), replacing their earlier rows and listing the command under 'merged'")
    v.add_argument("--controls", action="store_true",
                   help="also decide " + " and ".join(claims.CONTROLLED) + " under the controlled conditions of "
                        f"{chapter_label(CLAIMS[claims.CONTROLLED[0]].chapter)} "
                        "(the blank's class set aside; counterfactually trained models, fine-tuned and backselected "
                        "where the store lacks them): rows named 'MODEL · CONDITION'")

    g = _command(sub, "scale", cmd_scale,
                 "Compute the scale study of PROFILE (its ScaleConfig: models of one architecture trained on more "
                 "images and made wider, several replicates per point) from the artifact store, computing and "
                 "storing what it lacks (prepare --study scale computes the same artifacts in shards). Prints one "
                 "line per point, measure and setting; --json writes the rows the chapter reads.")
    g.add_argument("--json", default=None, metavar="FILE", help="also write the study as JSON to FILE")

    k = _command(sub, "book", cmd_book,
                 "Execute the chapters of _toc.yml in order with papermill (the same parameters as each chapter's "
                 "parameters cell), then render _build/html with Jupyter Book; or save the executed chapters as "
                 "an edition.")
    k.add_argument("--only", nargs="*", metavar="CHAPTER",
                   help="execute only these chapters, named by notebook stem: " + ", ".join(toc_chapters()))
    k.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="a chapter parameter, as papermill's -p (python -m overinterp chapters lists them), checked "
                        "before anything executes: e.g. --only 03_sis -p tau 0.9")
    k.add_argument("--out", default=None, help="build folder (default _build)")
    k.add_argument("--edition", action="store_true",
                   help="save the executed chapters as an edition (editions/<dataset>-<profile>/) instead of rendering")
    k.add_argument("--train", action="store_true",
                   help="train the models here instead of unpacking the committed pack of the profile's trained "
                        "models (editions/<dataset>-<profile>/zoo.tar.gz, where there is one)")
    k.add_argument("--jobs", type=int, default=2,
                   help="processes of one thread that compute the models, backward selections and retrained models "
                        f"of {part_one} and the input-dropout models, then execute the chapters (the report last, "
                        "with every thread); default 2: faster than one process of two threads on a 2-core CPU, "
                        "and models that do not depend on the core count. 1: the chapters one after another, "
                        "computing what they lack with the machine's threads")

    c = _command(sub, "chapters", cmd_chapters,
                 "Each chapter's papermill parameters are the fields of its dataclass in "
                 "overinterp/config/chapters.py; --write regenerates the notebooks' parameters cells from them.",
                 common=False)
    c.add_argument("--write", action="store_true", help="rewrite the parameters cell of every chapter")
    c.add_argument("--artifacts", default=None, help=argparse.SUPPRESS)
    c.set_defaults(repair=None)

    s = _command(sub, "store", cmd_store,
                 "pack FILE writes the artifact store into one .tar.gz with a manifest (each file's SHA-256, the "
                 "profile, the library and artifact versions, the commit); unpack FILE checks all of it before "
                 "moving any file into the store, and keeps the files the store already holds; verify checks "
                 "every stored file against its checksum and lists every damaged one (--repair moves them aside).",
                 common=False)
    s.add_argument("action", choices=["pack", "unpack", "verify"])
    s.add_argument("file", nargs="?", help="the archive (pack, unpack)")
    s.add_argument("--profile", default=None,
                   help="the profile the store was prepared for, recorded in the manifest (default "
                        "$OVERINTERP_PROFILE or quick); the whole store is packed")
    s.add_argument("--artifacts", default=None, help="artifact store folder (default $OVERINTERP_ARTIFACTS or ./artifacts)")
    s.add_argument("--repair", action=argparse.BooleanOptionalAction, default=None,
                   help="verify: move damaged files aside, to be recomputed when a chapter next needs them")
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = top_parser()      # --help, no command or an unknown one: answered here, before the library is imported
    if top.parse_known_args(argv)[0].command is None:
        top.print_help(sys.stderr)
        print(f"{PROG}: error: name a command: {', '.join(commands())}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "store" and args.action != "verify" and not args.file:
        parser.error(f"store {args.action} needs a FILE")
    if args.command == "verdicts" and args.merge and not args.json:
        parser.error("verdicts --merge needs --json FILE, the verdicts to merge into")
    from overinterp.store import ArtifactMismatch, CorruptArtifact, PackError, Store
    from overinterp.zoo.data import DataUnavailable
    try:
        with Store.using(args.artifacts, repair=args.repair):
            return args.func(args) or 0
    except (ValueError, DataUnavailable, ArtifactMismatch, FileNotFoundError, CorruptArtifact, PackError) as e:
        message = " ".join(str(e).split())  # one line
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
