"""Does section 4.1's reading under counterfactual training depend on how hard the zoo is fine-tuned?
Both claims decided, as chapter 3 decides them (accepted models, and every model with acceptance waived), on
the zoo fine-tuned with Hase et al.'s shares at the book's default rate and with the profile's fine-tuning.

    python scripts/finetuning_strength.py --profile standard --seed 0 --out FILE.json

Every fine-tuned model and backward selection is stored under its own config, so a second run reads them back.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from overinterp.config.context import make_run
from overinterp.config.profiles import MaskedTrainingConfig
from overinterp.experiments import masked
from overinterp.paper.claims import records
from overinterp.store import code_version
from overinterp.zoo.train import device_name


def finetunings(profile_config) -> dict:
    """Hase et al.'s shares at the default rate (the quick profile's fine-tuning) and the profile's own."""
    hase = MaskedTrainingConfig()
    return {"Hase et al.'s shares": replace(profile_config, removed=hase.removed, lr=hase.lr),
            "the profile's": profile_config}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    base = make_run(profile=a.profile, device="cpu", seed=a.seed)
    rows, seconds = [], {}
    for name, cfg in finetunings(base.profile.masked).items():
        t0 = time.perf_counter()
        mk = masked.masked_claims(replace(base, profile=replace(base.profile, masked=cfg)))
        seconds[name] = round(time.perf_counter() - t0, 1)
        models = mk.models.groupby("model", sort=False)["accepted"].agg(["sum", "size"])
        for condition, suffix in (("accepted", ""), ("acceptance waived", "_all")):
            for claim in ("accurate", "kept"):
                rows += [{"fine-tuning": name, "config": asdict(cfg), "condition": condition,
                          "accepted models": int(models.loc[r["model"], "sum"]),
                          "fine-tuned models": int(models.loc[r["model"], "size"]), **r}
                         for r in records(getattr(mk, claim + suffix), claim)]
    a.out.write_text(json.dumps({"profile": a.profile, "seed": a.seed, "device": device_name("cpu"),
                                 "torch": torch.__version__, "commit": code_version(), "seconds": seconds,
                                 "rows": rows}, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
