"""Pack a profile's trained models from an artifact store into one checksummed archive, so that a book or an
edition executes on another machine without training them (the models are its longest computation).

    python scripts/pack_zoo.py --profile standard --seeds 0 5 \
        --artifacts ~/.cache/overinterp/artifacts --out editions/fashion-mnist-standard/zoo.tar.gz
    python -m overinterp store unpack editions/fashion-mnist-standard/zoo.tar.gz --artifacts STORE

Each seed s packs the trained models of a book at seed s (their artifact keys,
:func:`overinterp.experiments.prepare.model_keys`: the zoo, input-dropout and counterfactually fine-tuned
models); ``book`` unpacks ``editions/<dataset>-<profile>/zoo.tar.gz`` before it executes. Models the store lacks are listed and left out (a zoo
still training); the archive is :func:`overinterp.store.pack`'s, with its manifest of SHA-256 sums.
``--also retrained backselect`` adds every stored artifact of those kinds: a machine that stops before an
edition is done hands its finished work on in a pack that is unpacked the same way.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from overinterp.config.context import make_run
from overinterp.experiments.prepare import model_keys
from overinterp.store import VERSIONS, Store, pack


def zoo_keys(profile: str, dataset: str, seeds) -> list[str]:
    """The artifact keys of the trained models of ``profile``'s book for each first seed of ``seeds``."""
    return [k for s in seeds for k in model_keys(make_run(dataset, profile, "cpu", s))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--dataset", default="fashion-mnist")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="first seeds (replicates seed, seed+1, ...)")
    ap.add_argument("--artifacts", required=True, help="the store holding the models")
    ap.add_argument("--out", required=True, help="the archive to write")
    ap.add_argument("--also", nargs="+", default=[], choices=[k for k in VERSIONS if k != "model"],
                    help="also every stored artifact of these kinds, whatever its seed: a hand-off pack of work "
                         "a later machine would otherwise recompute (retrained models, backward selections)")
    args = ap.parse_args(argv)
    source = Path(args.artifacts) / "model"
    keys = zoo_keys(args.profile, args.dataset, args.seeds)
    missing = [k for k in keys if not (source / k / "result.pt").is_file()]
    also = {kind: sorted(p for p in (Path(args.artifacts) / kind).glob("*") if (p / "config.json").is_file())
            for kind in args.also}
    with tempfile.TemporaryDirectory() as tmp:
        for k in keys:
            if k not in missing:
                shutil.copytree(source / k, Path(tmp) / "model" / k)
        for kind, folders in also.items():
            for folder in folders:
                shutil.copytree(folder, Path(tmp) / kind / folder.name)
        if len(missing) == len(keys):
            print(f"pack_zoo: none of the {len(keys)} models is in {source}", file=sys.stderr)
            return 2
        manifest = pack(args.out, Store(tmp), profile=args.profile)
    print(json.dumps({"out": args.out, "models": len(keys) - len(missing), "missing": missing,
                      **{kind: len(folders) for kind, folders in also.items()},
                      "bytes": Path(args.out).stat().st_size, "commit": manifest["commit"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
