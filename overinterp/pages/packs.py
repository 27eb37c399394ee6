"""The committed packs of trained models (``editions/<dataset>-<profile>/zoo.tar.gz``, written by
``scripts/pack_zoo.py``): unpacked into the store before a book executes, so that it need not train them,
and named in the zoo chapter, which says whether its models came from the pack or were trained here.
"""
from pathlib import Path

from overinterp.config.chapters import ROOT

EDITIONS = ROOT / "editions"         # the committed editions and packs


def models_pack(dataset: str, profile: str) -> Path:
    """The committed pack of a profile's trained models (``scripts/pack_zoo.py`` writes it)."""
    return EDITIONS / f"{dataset}-{profile}" / "zoo.tar.gz"


def _pack_models(run, pack: Path) -> tuple[dict, dict]:
    """(the pack's manifest, {key: SHA-256} of the run's trained models it holds)."""
    from overinterp.experiments.prepare import model_keys
    from overinterp.store import pack_manifest
    manifest = pack_manifest(pack)
    files = manifest.get("files", {})
    return manifest, {k: files[f"model/{k}/result.pt"]["sha256"] for k in model_keys(run)
                      if f"model/{k}/result.pt" in files}


def unpack_models(run, pack: Path | None = None) -> str | None:
    """Unpack the committed pack of ``run``'s trained models (zoo, input-dropout and counterfactually
    fine-tuned) into the store where it lacks some the pack holds; the line to print, None where there is
    nothing to unpack. A pack this code cannot read is reported and left alone: the models train instead."""
    from overinterp.store import PackError, Store, unpack
    pack = Path(pack or models_pack(run.dataset, run.profile.name))
    if not pack.is_file():
        return None
    store = Store()
    try:
        manifest, held = _pack_models(run, pack)
        lacking = [k for k in held if not (store.root / "model" / k / "result.pt").is_file()]
        if not lacking:
            return None
        unpack(pack, store)
    except PackError as e:
        return f"[book] not unpacking the trained models: {e}; they train here instead"
    return (f"[book] unpacked {len(lacking)} trained models from {_shown(pack)} (packed at commit "
            f"{manifest.get('commit')}, {manifest.get('created')}); --train trains them here instead")


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def models_origin(run, pack: Path | None = None) -> dict:
    """Glue for the zoo chapter: where this execution's stored trained models come from, decided by each
    model's SHA-256 against the committed pack's manifest (``zoo_origin``, a sentence of plain text)."""
    from overinterp.experiments.prepare import model_keys
    from overinterp.paper.formatting import count
    from overinterp.store import PackError, Store, sha256
    pack = Path(pack or models_pack(run.dataset, run.profile.name))
    store = Store()
    stored = [k for k in model_keys(run) if (store.root / "model" / k / "result.pt").is_file()]
    try:
        manifest, held = _pack_models(run, pack) if pack.is_file() else ({}, {})
    except PackError:
        manifest, held = {}, {}
    same = [k for k in stored if k in held and sha256(store.root / "model" / k / "result.pt") == held[k]]
    models = count(len(stored), "trained model")
    if not stored:
        return {"zoo_origin": "The store holds none of this execution's trained models yet."}
    if not same:
        return {"zoo_origin": f"This execution trained its {count(len(stored), 'model')} itself."}
    # plain text: glue:text shows no Markdown
    source = (f"the committed pack {_shown(pack)} (packed by this code at commit {manifest.get('commit')}, "
              f"{manifest.get('created')}), so that the book need not train them")
    if len(same) == len(stored):
        head = f"This execution's {models} (the zoo, and the input-dropout and counterfactually fine-tuned models of later chapters) were unpacked from {source}"
    else:
        here = len(stored) - len(same)
        head = (f"{len(same)} of this execution's {models} were unpacked from {source}; "
                f"{here} {'was' if here == 1 else 'were'} trained here")
    return {"zoo_origin": f"{head}."}
