"""Backward-selection engine benchmark: efficiency, speedup, fidelity, dataset-scale projections.

    python benchmarks/bench_backselect.py [--device cuda] [--smoke] [--images 8]
    python benchmarks/bench_backselect.py --only fidelity --arch resnet20 --images 8   # one section, merged

Writes ``benchmarks/results/backselect-<device>.json`` (``-smoke`` for ``--smoke``), structured
records (``"schema": 2``): every measured case a record whose fields say what it is (``threads``,
``method`` with ``m`` or ``k``, ``tau``, the fidelity model's ``source``), never a name to parse back;
every note ``{"sections": [...], "text": ..., "shared_cpu": bool}``. Its sections:

1. efficiency -- exact BackSelect forward evaluations/s divided by the same model's
   best plain batched inference images/s (best over batch sizes and layouts), in the
   same run, alternating the two ``--rounds`` times (the CPU may be shared);
2. speedup over a per-image implementation structured like the reference SIS code
   (one image at a time, candidate masks built in NumPy on the host, batches of 128,
   a host round trip per step), on the same images and steps;
3. fidelity of ``gradient`` and ``pruned`` versus ``exact`` with the zoo model ``--arch`` of
   ``--profile`` on the first ``--images`` of that profile's seeded test sample (default: ResNet20,
   the source model of the chapter "Why it holds or fails here", whose first images these are;
   exact costs P(P+1)/2 = 307k forwards per 28x28 image):
   SIS size ratio at tau 0.9 and 0.99, IoU of the 5% subsets with exact's, accuracy and
   confidence on them, seconds per image; and the share of test images whose float32
   softmax is exactly 1.0 (where ranking by p would tie);
4. projected wall time for the 5% subsets of all of Fashion-MNIST (70k) and CIFAR-10 (60k);
5. fusion: batch norms folded into the convolutions (the engine's default) against the model
   as trained, gradient and pruned on the quick ResNet20 and VGG16, alternating;
6. the CUDA path: ResNet18 at 32x32x3 and Batched Gradient SIS on torchvision's
   inception_v3 (32 images of 299x299, k=100); on CPU only with ``--smoke`` at tiny size.
Fixed numbers of steps are timed where full runs are too long; the JSON says so.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from overinterp.engine.backselect import DEFAULT_CHUNK, DEFAULT_M, _n_evals, apply_keep, backselect
from overinterp.zoo.models import fuse_conv_bn, build_model
from overinterp.engine.sis import class_probability, find_sis, pixel_subset, random_subset

OUT = Path(__file__).resolve().parent / "results"
SCHEMA = 2  # the structure of the result file (overinterp.pages.speed reads this one)


def note(sections, text: str, shared_cpu: bool = False) -> dict:
    """A note of the result file: the sections it is about (emptied: the whole file), its sentence,
    and whether it says the CPU was shared (the chapter lists those as caveats)."""
    return {"sections": list(sections), "text": text, "shared_cpu": shared_cpu}


def device_info(device: torch.device) -> dict:
    info = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "python": platform.python_version(), "loadavg_start": os.getloadavg()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    try:
        info["cpu"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu"] = platform.processor() or platform.machine()
    return info


def timed(fn, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- 1. efficiency

@torch.inference_mode()
def plain_rate(model, shape, batch, channels_last, device, seconds) -> float:
    """Images/s of plain batched inference (softmax included) on random inputs."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model.to(memory_format=fmt)
    x = torch.randn(batch, *shape, device=device).contiguous(memory_format=fmt)
    for _ in range(3):
        model(x).softmax(-1)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model(x).softmax(-1)
        n += batch
    if device.type == "cuda":
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def engine_rate(model, images, steps, device, **kw) -> float:
    """Forward evaluations/s of exact BackSelect over ``steps`` lockstep steps (default engine config)."""
    backselect(model, images, max_steps=1, progress=False, **kw)  # warm-up
    P = images.shape[2] * images.shape[3]
    evals = _n_evals(torch.full((len(images),), P), steps, None)
    return evals / timed(lambda: backselect(model, images, max_steps=steps, progress=False, **kw), device)


def _full_exact(shape) -> int:
    """Forward passes of a full exact BackSelect of one image: P(P+1)/2."""
    P = shape[1] * shape[2]
    return P * (P + 1) // 2


def efficiency(cases, device, a) -> dict:
    """Per case name: exact BackSelect's evaluations/s against plain inference (section 1)."""
    out = {}
    for name, arch, shape, width in cases:
        torch.manual_seed(0)
        model = build_model(arch, shape[0], 10, width).to(device).eval()
        folded = fuse_conv_bn(model)   # plain inference of the same folded model the engine evaluates (its default)
        sweep = {f"{'cl' if cl else 'nchw'}-{b}": plain_rate(folded, shape, b, cl, device, a.seconds / 2)
                 for b in a.batches for cl in (False, True)}
        best = max(sweep, key=sweep.get)
        cl, bs = best.startswith("cl"), int(best.split("-")[1])
        images = torch.randn(a.eff_images, *shape, device=device)
        rounds = []
        for _ in range(a.rounds):  # alternate, so both see the same contention
            plain = plain_rate(folded, shape, bs, cl, device, a.seconds)
            eng = engine_rate(model, images, a.steps, device)
            rounds.append({"plain_img_s": round(plain, 1), "engine_evals_s": round(eng, 1), "ratio": round(eng / plain, 3)})
        out[name] = {"arch": arch, "shape": list(shape), "width": width, "plain_sweep_img_s": {k: round(v, 1) for k, v in sweep.items()},
                     "best_plain_config": best, "engine_config": {"chunk_size": DEFAULT_CHUNK[device.type], "channels_last": True,
                                                                      "fuse": True},
                     "plain_model": "batch norms folded into the convolutions, as the engine's",
                     "images": a.eff_images, "steps_timed": a.steps, "rounds": rounds,
                     "ratio_median": statistics.median(r["ratio"] for r in rounds),
                     "ratio_of_bests": round(max(r["engine_evals_s"] for r in rounds) / max(max(r["plain_img_s"] for r in rounds), sweep[best]), 3),
                     "exact_s_per_image": round(_full_exact(shape) / max(r["engine_evals_s"] for r in rounds), 1)}
        print(name, json.dumps(out[name]["rounds"]), flush=True)
    return out


# ----------------------------------------------------------------------------- 2. reference-style baseline

def reference_style_backselect(model, image: np.ndarray, steps: int, batch: int = 128, channels_last=False):
    """BackSelect of ONE image shaped like the reference sis.py: the current mask and every
    candidate mask in NumPy on the host, inputs by ``np.where``, f on batches of 128, argmax on the host."""
    C, H, W = image.shape

    @torch.inference_mode()
    def f(batch_np, cls):
        x = torch.from_numpy(batch_np)
        x = x.contiguous(memory_format=torch.channels_last) if channels_last else x
        return model(x).softmax(-1)[:, cls].numpy()

    cls = int(np.argmax(f(image[None], slice(None))[0]))
    current_mask = np.ones((H, W), dtype=bool)
    order = []
    for _ in range(steps):
        idxs = np.transpose(np.nonzero(current_mask))                        # (n, 2) remaining pixels
        next_masks = np.repeat(current_mask[None], len(idxs), axis=0)          # (n, H, W)
        next_masks[np.arange(len(idxs)), idxs[:, 0], idxs[:, 1]] = False
        inputs = np.where(next_masks[:, None], image[None], np.float32(0))    # (n, C, H, W)
        values = np.concatenate([f(inputs[i:i + batch], cls) for i in range(0, len(inputs), batch)])
        best = int(np.argmax(values))
        order.append(tuple(idxs[best]))
        current_mask = next_masks[best]
    return order


def baseline(cases, device, a) -> dict:
    """Per case name: exact BackSelect against the reference-style implementation (section 2)."""
    out = {}
    for name, arch, shape, width in cases:
        torch.manual_seed(0)
        model = build_model(arch, shape[0], 10, width).eval()
        images = torch.randn(a.base_images, *shape)
        evals = _n_evals(torch.full((len(images),), shape[1] * shape[2]), a.steps, None)
        res = {}
        for cl in (False, True):
            ref_model = copy.deepcopy(model).to(memory_format=torch.channels_last if cl else torch.contiguous_format)
            reference_style_backselect(ref_model, images[0].numpy(), 1, channels_last=cl)  # warm-up
            t = timed(lambda: [reference_style_backselect(ref_model, im.numpy(), a.steps, channels_last=cl) for im in images],
                      torch.device("cpu"))
            res["reference_nchw" if not cl else "reference_channels_last"] = evals / t
        eng_model = copy.deepcopy(model).to(device)
        res["engine"] = engine_rate(eng_model, images.to(device), a.steps, device)
        ours = backselect(eng_model, images.to(device), max_steps=a.steps, progress=False).order.cpu()
        theirs = [reference_style_backselect(model, im.numpy(), a.steps) for im in images]
        same = all([r * shape[2] + c for r, c in t] == o.tolist()[:a.steps] for t, o in zip(theirs, ours))
        out[name] = {"images": a.base_images, "steps_timed": a.steps, "same_order": same,
                     **{f"{k}_evals_s": round(v, 1) for k, v in res.items()},
                     "speedup_vs_reference_nchw": round(res["engine"] / res["reference_nchw"], 2),
                     "speedup_vs_reference_channels_last": round(res["engine"] / res["reference_channels_last"], 2)}
        print(name, json.dumps(out[name]), flush=True)
    return out


# ----------------------------------------------------------------------------- 3. fidelity

def subset_stats(model, images, labels, keep, x, pred) -> dict:
    f, p = class_probability(model, x, pred)
    return {"acc": (p == labels).float().mean().item(), "kept_prediction": (p == pred).float().mean().item(),
            "confidence": f.mean().item()}


def fidelity(device, a) -> dict:
    from overinterp.zoo import data
    from overinterp.zoo.data import Selection
    from overinterp.config.profiles import get_profile
    from overinterp.experiments.runs import model_key, trained_model
    model = trained_model("fashion-mnist", a.arch, a.profile, device=device, progress=False)
    split = data.load("fashion-mnist", "test")
    # the first images of the profile's seeded test sample: the first images of the "why" chapter's sample
    sel = Selection("fashion-mnist", "test", get_profile(a.profile).test_size).narrow(range(a.images))
    images, labels = (t.to(device) for t in sel.load())
    conf, pred = class_probability(model, images)
    all_conf, _ = class_probability(model, split.images.to(device))
    variants = [{"method": "exact"}] + [{"method": "pruned", "m": m} for m in a.ms] + \
        [{"method": "gradient", "k": k} for k in a.ks]
    runs = []
    for v in variants:
        t0 = time.perf_counter()
        res = backselect(model, images, v["method"], block=a.block, progress=False,
                         **{p: v[p] for p in ("m", "k") if p in v})
        runs.append((v, res, timed(lambda: None, device) + time.perf_counter() - t0))
        print(f"{v}: {runs[-1][2] / len(images):.2f} s/image", flush=True)
    ex = runs[0][1]
    _, keep_ex = pixel_subset(ex, images, 0.05)
    # the model's source, and its artifact key: a chapter that reads this file can tell whether it is its own model
    out = {"source": {"dataset": "fashion-mnist", "arch": a.arch, "profile": a.profile, "seed": 0,
                      "key": model_key("fashion-mnist", a.arch, a.profile, 0)},
           "shape": list(images.shape[1:]), "block": a.block, "fuse": True, "selection": sel.key(),
           "test_acc": getattr(model, "info", {}).get("test_acc"), "images": a.images,
           "full_images": {"acc": (pred == labels).float().mean().item(), "confidence": conf.mean().item()},
           "test_share_float32_softmax_exactly_1": (all_conf == 1.0).float().mean().item(),
           "test_share_confidence_ge_0.99": (all_conf >= 0.99).float().mean().item()}
    xr, keep_r = random_subset(images, 0.05, seed=0)
    out["random_5pct"] = subset_stats(model, images, labels, keep_r, xr, pred)
    out["runs"] = []
    for v, res, sec in runs:
        x5, keep5 = pixel_subset(res, images, 0.05)
        row = {**v, "s_per_image": round(sec / len(images), 3), "subset_5pct": subset_stats(model, images, labels, keep5, x5, pred),
               "overlap_5pct_with_exact": ((keep5 & keep_ex).flatten(1).sum(1) / keep_ex.flatten(1).sum(1)).mean().item(),
               "iou_5pct_with_exact": ((keep5 & keep_ex).flatten(1).sum(1) / (keep5 | keep_ex).flatten(1).sum(1)).mean().item(),
               "sis": []}
        for tau in a.taus:
            s, e = find_sis(res, tau), find_sis(ex, tau)
            both = (s.size > 0) & (e.size > 0)
            fs, _ = class_probability(model, apply_keep(images, s.mask), pred)
            row["sis"].append({"tau": tau, "images_with_sis": int((s.size >= 0).sum()), "mean_size": s.size[s.size >= 0].float().mean().item(),
                               "mean_size_ratio_vs_exact": (s.size[both] / e.size[both]).float().mean().item() if both.any() else None,
                               "all_verified_f_ge_tau": bool((fs[s.size >= 0] >= tau).all())})
        out["runs"].append(row)
    out["chosen_m"], out["chosen_m_rule"], out["chosen_m_reason"] = choose_m_rule(out, a)
    return out


def fusion(device, a) -> dict:
    """Batch norms folded into the convolutions (backselect's ``fuse``, the default) against the
    model as trained, on the zoo models of ``--profile`` and the first images of its test sample:
    gradient (the profile's k) and pruned (m = DEFAULT_M) alternating ``a.rounds`` times."""
    from overinterp.zoo.data import Selection
    from overinterp.config.profiles import get_profile
    from overinterp.experiments.runs import model_key, trained_model
    prof = get_profile(a.profile)
    out = []
    for arch in a.fusion_archs:
        model = trained_model("fashion-mnist", arch, a.profile, device=device, progress=False)
        for method, kw, n in [("gradient", {"k": prof.backselect.k}, a.fusion_images),
                              ("pruned", {"m": DEFAULT_M}, a.fusion_pruned_images)]:
            sel = Selection("fashion-mnist", "test", prof.test_size).narrow(range(n))
            images = sel.load()[0].to(device)
            secs, res = {False: [], True: []}, {}
            for _ in range(a.rounds):
                for fuse in (False, True):
                    t0 = time.perf_counter()
                    res[fuse] = backselect(model, images, method, block=a.block, progress=False, fuse=fuse, **kw)
                    secs[fuse].append(timed(lambda: None, device) + time.perf_counter() - t0)
            keep = {f: pixel_subset(r, images, 0.05)[1].flatten(1) for f, r in res.items()}
            best = {f: min(v) / n for f, v in secs.items()}
            out.append({
                "arch": arch, "method": method, "model_key": model_key("fashion-mnist", arch, a.profile), "images": n, **kw,
                "s_per_image_plain": round(best[False], 4), "s_per_image_fused": round(best[True], 4),
                "speedup_of_bests": round(best[False] / best[True], 2),
                "speedups_per_round": [round(p / f, 2) for p, f in zip(secs[False], secs[True])],
                "same_order_share": (res[False].order == res[True].order).all(1).float().mean().item(),
                "iou_5pct_fused_vs_plain": ((keep[False] & keep[True]).sum(1) / (keep[False] | keep[True]).sum(1)).mean().item()})
            print(f"fusion {arch} {method}: {out[-1]['speedup_of_bests']}x", flush=True)
    return out


def choose_m_rule(fid: dict, a) -> tuple:
    """(m, the rule that chose it, why): the smallest m whose mean SIS size is within 1.1x of exact's at
    every tau; else the largest m tried."""
    taus = a.taus if hasattr(a, "taus") else a

    pruned = {r["m"]: r for r in fid["runs"] if r["method"] == "pruned"}

    def ok(m):
        ratios = [s["mean_size_ratio_vs_exact"] for s in pruned[m]["sis"] if s["tau"] in taus]
        return all(r is None or r <= 1.1 for r in ratios)
    ms = sorted(pruned)
    good = [m for m in ms if ok(m)]
    why = ("pruned costs ~(3 + m) forward-equivalents per step against exact's P - t, so the smallest such m wins. "
           "The 5% subsets' accuracy, confidence and pixel IoU with exact's are reported beside it, not used: no "
           "approximate order beats exact's greedy confidence, and near-ties among the last pixels keep every IoU low")
    if good:
        return good[0], "smallest m whose mean SIS size is <= 1.1x exact's at every tau", why
    return max(ms), "no m met the rule", "the largest tried"


def choose_m(fid: dict) -> int:
    return fid["chosen_m"]


# ----------------------------------------------------------------------------- 4. projections

def per_image_cost(arch, shape, width, method, device, a, **kw) -> float:
    """Seconds per image of a full run, from ``a.proj_steps`` timed lockstep steps on a dataset-sized batch."""
    torch.manual_seed(0)
    model = build_model(arch, shape[0], 10, width).to(device).eval()
    images = torch.randn(a.proj_batch, *shape, device=device)
    P = shape[1] * shape[2]
    steps = a.proj_steps * kw.get("k", 1)
    backselect(model, images[:2], method, max_steps=kw.get("k", 1), progress=False, **kw)  # warm-up
    t = timed(lambda: backselect(model, images, method, max_steps=steps, progress=False, **kw), device)
    # timed steps are the most expensive ones (most candidates left): an upper bound for pruned
    return t / a.proj_steps * -(-P // kw.get("k", 1)) / len(images)


def per_threads(fn, a) -> list[dict]:
    """Run ``fn`` (case name -> record) at each of ``a.thread_counts`` intra-op thread counts: one
    record per thread count and case, with ``threads`` and ``model`` (the case's name). The CPU may be shared:
    with another busy process on a 2-core machine every OpenMP parallel region of a 2-thread
    forward waits for a descheduled thread (~0.1 s per CNN forward whatever the batch size,
    measured), while 1 thread keeps running."""
    out, default = [], torch.get_num_threads()
    for t in a.thread_counts:
        torch.set_num_threads(t)
        print(f"threads={t}", flush=True)
        out += [{"threads": t, "model": name, **r} for name, r in fn().items()]
    torch.set_num_threads(default)
    return out


def projections(efficiency_rows, device, a, m_default) -> list[dict]:
    """Per workload (dataset, arch, input shape, images): each method's seconds per image and hours."""
    threads = [r["threads"] for r in efficiency_rows]
    now = torch.get_num_threads() if torch.get_num_threads() in threads else threads[0]
    eff = {r["model"]: r for r in efficiency_rows if r["threads"] == now}
    out = []
    for dataset, arch, shape, width, n, key in [("fashion-mnist", "cnn", (1, 28, 28), None, 70000, "cnn-28x28x1"),
                                                ("cifar10", "resnet20", (3, 32, 32), None, 60000, "resnet20-32x32x3")]:
        costs = [({"method": "exact"}, _full_exact(shape) / max(r["engine_evals_s"] for r in eff[key]["rounds"])),
                 ({"method": "pruned", "m": m_default},
                  per_image_cost(arch, shape, width, "pruned", device, a, m=m_default))]
        for k in a.ks:
            costs.append(({"method": "gradient", "k": k}, per_image_cost(arch, shape, width, "gradient", device, a, k=k)))
        out.append({"dataset": dataset, "arch": arch, "shape": list(shape), "images": n, "batch": a.proj_batch,
                    "runs": [{**v, "s_per_image": round(c, 3), "projected_hours": round(c * n / 3600, 1)}
                             for v, c in costs]})
        print(json.dumps(out[-1]), flush=True)
    return out


# ----------------------------------------------------------------------------- 5. CUDA path

def inception_sis(device, a) -> dict:
    """Batched Gradient SIS (paper S5) on torchvision's inception_v3 with random weights."""
    from torchvision.models import inception_v3
    torch.manual_seed(0)
    model = inception_v3(weights=None, aux_logits=False, init_weights=False).to(device).eval()
    images = torch.randn(a.inc_images, 3, a.inc_size, a.inc_size, device=device)
    res = None

    def go():
        nonlocal res
        res = backselect(model, images, "gradient", k=a.inc_k, progress=not a.smoke)
    sec = timed(go, device)
    tau = float(res.confidence.min())  # random weights: the highest threshold every image reaches
    sis = find_sis(res, tau)
    f, _ = class_probability(model, apply_keep(images, sis.mask), res.pred, batch_size=32)
    return {"images": a.inc_images, "size": a.inc_size, "k": a.inc_k, "seconds": round(sec, 2),
            "s_per_image": round(sec / a.inc_images, 3), "tau": tau, "sis_sizes": sis.size.tolist(),
            "all_verified_f_ge_tau": bool((f >= tau).all())}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--smoke", action="store_true", help="everything at tiny size (checks the wiring, incl. the CUDA path)")
    p.add_argument("--images", type=int, default=32, help="trained-model images for the fidelity section")
    p.add_argument("--profile", default="quick", help="training profile of the fidelity model")
    p.add_argument("--arch", default="resnet20",
                   help="architecture of the fidelity model (default: the source model of the chapter \"Why it holds or fails here\")")
    p.add_argument("--only", nargs="*", choices=["efficiency", "reference_style_baseline", "fidelity", "projections", "fusion"],
                   help="run only these sections and merge them into the existing output file (its other sections kept)")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads for fidelity and projections (default torch's); efficiency and "
                        "baseline are measured at torch's default and at 1")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    device = torch.device(a.device)
    smoke = a.smoke
    a.rounds, a.seconds, a.steps, a.eff_images = (1, 0.3, 2, 2) if smoke else (3, 3.0, 4, 4)
    a.batches = (32, 128) if smoke else ((64, 128, 256, 512) if device.type == "cpu" else (512, 1024, 2048, 4096, 8192))
    a.base_images, a.ms, a.ks, a.taus = (1, (2,), (4,), (0.5,)) if smoke else (2, (2, 4, 8, 16, 32), (1, 4, 16), (0.9, 0.99))
    a.proj_batch, a.proj_steps = (4, 2) if smoke else (64, 5)
    a.inc_images, a.inc_size, a.inc_k = (2, 80, 1000) if smoke else (32, 299, 100)
    a.block = 1
    a.fusion_archs, a.fusion_images, a.fusion_pruned_images = (("cnn",), 2, 1) if smoke else (("resnet20", "vgg16"), 64, 4)
    a.thread_counts = [torch.get_num_threads()] + ([1] if device.type == "cpu" and torch.get_num_threads() > 1 else [])
    if a.threads:
        torch.set_num_threads(a.threads)
    if smoke:
        a.images, a.profile, a.block = 2, "tiny", 4
    cases = [("cnn-28x28x1", "cnn", (1, 28, 28), 8 if smoke else None),
             ("resnet20-28x28x1", "resnet20", (1, 28, 28), 4 if smoke else None),
             ("resnet20-32x32x3", "resnet20", (3, 32, 32), 4 if smoke else None)]
    if device.type == "cuda" or smoke:
        cases.append(("resnet18-32x32x3", "resnet18", (3, 32, 32), 8 if smoke else None))
    t0 = time.time()
    result = {"schema": SCHEMA, "info": {**device_info(device), "threads_fidelity_projections": torch.get_num_threads()},
              "smoke": smoke, "section_seconds": {}, "notes": [
        note(["efficiency"], f"efficiency: exact BackSelect timed over its first {a.steps} lockstep steps of "
             f"{a.eff_images} images (the most expensive steps; full runs take P steps), {a.rounds} rounds "
             "alternating with plain inference"),
        note(["reference_style_baseline"], f"baseline: {a.base_images} images x {a.steps} steps with each "
             "implementation, same random model and images"),
        note(["fidelity"], f"fidelity: only {a.images} test images (exact = P(P+1)/2 forwards per image), "
             f"block={a.block}"),
        note(["projections"], f"projections: {a.proj_steps} steps of a batch of {a.proj_batch} images timed and "
             "scaled to a full run; for pruned the timed first steps are the most expensive, so its projection "
             "is an upper bound")]}
    sections = [("efficiency", lambda: per_threads(lambda: efficiency(cases, device, a), a)),
                ("reference_style_baseline", lambda: per_threads(lambda: baseline(cases[:2], device, a), a)),
                ("fidelity", lambda: fidelity(device, a)),
                ("projections", lambda: projections(result["efficiency"], device, a, choose_m(result["fidelity"]))),
                ("fusion", lambda: fusion(device, a))]
    if device.type == "cuda" or smoke:
        sections.append(("inception_v3_gradient_sis", lambda: inception_sis(device, a)))
    path = Path(a.out) if a.out else OUT / f"backselect-{device.type}{'-smoke' if smoke else ''}.json"
    old = json.loads(path.read_text()) if a.only and path.exists() else {}
    if old and old.get("schema") != SCHEMA:
        raise SystemExit(f"{path}: not a schema-{SCHEMA} result file; --only merges only into one")
    if a.only:
        sections = [(n, r) for n, r in sections if n in a.only]
        result.update({k: old[k] for k in ("efficiency", "fidelity") if k in old and k not in a.only})
    for name, run in sections:
        ts = time.time()
        result[name] = run()
        result["section_seconds"][name] = round(time.time() - ts, 1)
    result["default_m_in_code"] = DEFAULT_M
    if a.only:  # merged into the file, whose info describes its first, full run
        redone = lambda n: bool(set(n["sections"]) & set(a.only))
        merged = {**old, **{n: result[n] for n in a.only},
                  "section_seconds": {**old.get("section_seconds", {}), **result["section_seconds"]},
                  "notes": [n for n in old.get("notes", []) if not redone(n)]
                  + [n for n in result["notes"] if redone(n)]
                  + [note(a.only, f"{', '.join(a.only)}: re-run alone on {time.strftime('%Y-%m-%d')} with --only "
                                  f"({result['info']['cpu']}, {torch.get_num_threads()} threads, 1-min load average "
                                  f"{result['info']['loadavg_start'][0]:.1f} at its start)")]}
        path.write_text(json.dumps(merged, indent=2))
        print("merged", ", ".join(a.only), "into", path)
        return
    result["info"]["loadavg_end"] = os.getloadavg()
    load = max(result["info"]["loadavg_start"][0], result["info"]["loadavg_end"][0])
    if device.type == "cpu" and load > (os.cpu_count() or 1):
        result["notes"].append(note([], f"CPU shared with other jobs: 1-min load average up to {load:.1f} on "
                                    f"{os.cpu_count()} cores; absolute rates are depressed and noisy; each ratio is "
                                    "measured alternating within one run so both sides see similar contention",
                                    shared_cpu=True))
    result["info"]["wall_s"] = round(time.time() - t0, 1)
    OUT.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print("wrote", path)


if __name__ == "__main__":
    main()
