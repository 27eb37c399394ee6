"""Tests for overinterp.experiments.humans: the human benchmark of paper 3.4 / S4 and its quiz widget."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
import torch

from overinterp.zoo import data as datasets
from overinterp.experiments.humans import TABLE2, build_benchmark, paper_humans, select_images
from overinterp.pages.humans import accuracy_table, summary
from overinterp.pages.quiz import quiz_html
from overinterp.engine.sis import subset_size

PER_CLASS = 3
FRACS = (0.05, 0.30, 0.50)


@pytest.fixture(scope="module")
def run():
    from overinterp.config.context import make_run
    return make_run(profile="tiny", device="cpu")


@pytest.fixture(scope="module")
def bench(run):
    return build_benchmark(run, per_class=PER_CLASS, fracs=FRACS)


@pytest.fixture(scope="module")
def fmnist_test(run):
    return datasets.load(run.dataset, "test")


def _toy_bench(labels, confidence, short, threshold=0.99):
    """A fashion-mnist benchmark of 1x2x2 images, one level, for :func:`summary`."""
    from overinterp.experiments.humans import Benchmark
    n = len(labels)
    return Benchmark(images=torch.zeros(n, 1, 2, 2), labels=labels, pool_index=torch.arange(n), arch=["resnet20"] * n,
                     confidence=torch.tensor(confidence), fracs=(0.5,), keep=torch.ones(1, n, 2, 2, dtype=torch.bool),
                     masked=torch.zeros(1, n, 1, 2, 2), model_pred=labels[None], threshold=threshold, per_class=2,
                     dataset="fashion-mnist", profile="tiny", engine="exact", short=short)


# ----------------------------------------------------------------------------- selection on toy numbers

def _probs(conf_true: list, labels: list, k: int = 2) -> torch.Tensor:
    """(N, k) softmax-like rows giving the true class probability ``conf_true`` (argmax iff > 1/k)."""
    p = torch.full((len(labels), k), 0.0)
    for i, (c, y) in enumerate(zip(conf_true, labels)):
        p[i] = (1 - c) / (k - 1)
        p[i, y] = c
    return p


def test_select_round_robin_over_archs_and_only_confident_images():
    labels = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    probs = {"a": _probs([.995, .999, .5, .999, .999, .999, .999, .2], labels.tolist()),
             "b": _probs([.999, .999, .999, .3, .999, .999, .999, .999], labels.tolist())}
    idx, archs, conf, short = select_images(labels, probs, per_class=2, threshold=0.99, seed=0)
    assert archs == ["a", "b", "a", "b"]                      # slot s -> archs[s % 2]
    assert labels[idx].tolist() == [0, 0, 1, 1]
    for i, a, c in zip(idx.tolist(), archs, conf.tolist()):
        assert c >= 0.99 and probs[a][i].argmax() == labels[i]
    assert len(set(idx.tolist())) == 4 and short == {}


def test_select_falls_back_to_other_arch_then_leaves_class_short():
    labels = torch.tensor([0, 0, 1, 1])
    probs = {"a": _probs([.2, .2, .999, .5], labels.tolist()),   # a is never confident on class 0
             "b": _probs([.999, .3, .6, .6], labels.tolist())}
    idx, archs, conf, short = select_images(labels, probs, per_class=2, threshold=0.99, seed=0)
    # class 0: slot 0 (a's) goes to b, which has the only confident image; slot 1 finds nothing
    assert idx.tolist()[:1] == [0] and archs[0] == "b"
    assert labels[idx].tolist() == [0, 1]                     # one image per class, the rest short
    assert short == {0: 1, 1: 1}


def test_select_fill_takes_most_confident_correct_images():
    labels = torch.tensor([0, 0, 0])
    probs = {"a": _probs([.7, .9, .1], labels.tolist())}   # nothing >= .99; image 2 is wrong
    idx, archs, conf, short = select_images(labels, probs, per_class=3, threshold=0.99, seed=0, fill=True)
    assert idx.tolist() == [1, 0]                            # by confidence, never a misclassified image
    assert (conf < 0.99).all() and short == {0: 2, 1: 0}       # class 1 (of k = 2) has no image at all


def test_select_is_seeded():
    g = torch.Generator().manual_seed(3)
    labels = torch.randint(0, 4, (60,), generator=g)
    probs = {a: torch.softmax(10 * torch.randn(60, 4, generator=g), 1) for a in "xyz"}
    one = select_images(labels, probs, 2, 0.5, seed=1, fill=True)
    assert one[0].tolist() == select_images(labels, probs, 2, 0.5, seed=1, fill=True)[0].tolist()
    assert one[0].tolist() != select_images(labels, probs, 2, 0.5, seed=2, fill=True)[0].tolist()


# ----------------------------------------------------------------------------- the benchmark (tiny profile)

def test_benchmark_has_per_class_images_per_class_where_possible(bench):
    counts = bench.counts("class")
    assert all(n <= PER_CLASS for n in counts.values())
    assert sum(counts.values()) == len(bench) == len(bench.arch)
    assert bench.short == {c: counts.get(c, 0) for c in range(10) if counts.get(c, 0) < PER_CLASS}
    assert len(set(bench.pool_index.tolist())) == len(bench)   # no image twice


def test_images_are_assigned_across_all_archs(run, bench):
    counts = bench.counts()
    assert set(counts) == set(run.profile.archs) and min(counts.values()) > 0
    # the round-robin's balance is tested on hand-made probabilities above: with the tiny profile's
    # 2-epoch models an architecture often has no eligible image of a class, and the next one takes its turn


def test_levels_are_nested_supersets(bench):
    for small, large in zip(bench.keep[:-1], bench.keep[1:]):
        assert not (small & ~large).any()
    # the masked images agree with the keep masks: kept pixels are the original values
    for lvl in range(len(FRACS)):
        k = bench.keep[lvl][:, None].expand_as(bench.images)
        assert torch.equal(bench.masked[lvl][k], bench.images[k])


def test_subset_sizes_match_subset_size(run, bench):
    b, (H, W) = run.profile.backselect.block, bench.keep.shape[2:]
    P = -(-H // b) * -(-W // b)
    assert H % b == 0 and W % b == 0
    for lvl, f in enumerate(FRACS):
        assert (bench.keep[lvl].sum(dim=(1, 2)) == subset_size(P, f) * b * b).all()


def test_model_accuracy_is_the_assigned_models_on_its_own_subsets(run, bench):
    from overinterp.zoo.train import predict
    from overinterp.experiments.runs import trained_model
    lvl, a = 0, bench.arch[0]
    rows = [i for i, x in enumerate(bench.arch) if x == a]
    model = trained_model(run.dataset, a, run.profile.name, seed=run.seed, device="cpu", progress=False)
    pred = predict(model, bench.masked[lvl, rows], device="cpu").argmax(1)
    assert torch.equal(pred, bench.model_pred[lvl, rows])
    assert bench.model_accuracy[FRACS[lvl]] == pytest.approx(100 * bench.model_correct[lvl].float().mean().item())


def test_tiny_fills_below_threshold_and_the_chapter_glues_how_many(bench):
    assert (bench.confidence < bench.threshold).sum() == bench.below_threshold
    values = summary(bench)
    assert values["humans_below"] == bench.below_threshold and values["humans_short_n"] == len(bench.short)
    classes = datasets.CLASSES[bench.dataset]
    found = {c: int((bench.labels == c).sum()) for c in range(len(classes))}
    assert values["humans_n_classes"] == len(classes)
    assert values["humans_class_counts"] == ", ".join(f"{name} {found[c]}" for c, name in enumerate(classes))
    assert bench.short == {c: n for c, n in found.items() if n < PER_CLASS}


def test_summary_glues_counts_not_sentences():
    """What the chapter says of a short benchmark is its Markdown around these counts: zero reads as zero."""
    labels = torch.tensor([0, 0, 1])
    bench = _toy_bench(labels, confidence=[0.995, 0.5, 0.999], short={1: 1})
    values = summary(bench)
    assert values["humans_below"] == 1 and values["humans_short_n"] == 1
    assert values["humans_class_counts"].startswith("T-shirt/top 2, Trouser 1, Pullover 0, ")
    full = summary(_toy_bench(labels, confidence=[0.995, 0.999, 0.999], short={}))
    assert full["humans_below"] == 0 and full["humans_short_n"] == 0
    assert all(isinstance(full[k], int) for k in ("humans_below", "humans_short_n", "humans_n_classes"))


def test_benchmark_is_deterministic(run, bench):
    again = build_benchmark(run, per_class=PER_CLASS, fracs=FRACS)   # second time from the artifact store
    assert torch.equal(again.pool_index, bench.pool_index) and again.arch == bench.arch
    assert torch.equal(again.keep, bench.keep)


def test_bad_fracs_are_rejected(run):
    with pytest.raises(ValueError, match="increasing"):
        build_benchmark(run, fracs=(0.3, 0.05))


def test_accuracy_table_labels_paper_and_ours(bench):
    t = accuracy_table(bench)
    assert "paper: humans, CIFAR-10 (%)" in t.columns and t.iloc[0, 0] == "19.2 ± 4.8"
    assert any("fashion-mnist/tiny" in c for c in t.columns)


# ----------------------------------------------------------------------------- the quiz widget

class _Collect(HTMLParser):
    """Tags with their attributes, script text, and unclosed-tag errors."""
    VOID = {"img", "br", "meta", "input", "hr", "link"}

    def __init__(self):
        super().__init__()
        self.tags, self.stack, self.scripts, self.errors, self._in_script = [], [], [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


@pytest.fixture(scope="module")
def quiz(bench, fmnist_test):
    return quiz_html(bench, fmnist_test.classes, fmnist_test.mean, fmnist_test.std, seed=0)


def test_quiz_html_structure(bench, fmnist_test, quiz):
    p = _Collect()
    p.feed(quiz)
    p.close()
    assert p.errors == [] and p.stack == []                    # every element closed, in order
    ids = [a["id"] for _, a in p.tags if "id" in a]
    assert len(ids) == len(set(ids))
    root = p.tags[0][1]["id"]
    assert all(i.startswith(root) for i in ids)                # one prefix for every id
    assert len(p.scripts) == 1 and "addEventListener" in p.scripts[0]
    assert "http" not in quiz.replace("http-equiv", "")        # no external assets


def test_quiz_has_one_image_per_item_per_level(bench, quiz):
    p = _Collect()
    p.feed(quiz)
    imgs = [a for t, a in p.tags if t == "img" and re.search(r"-L\d+-\d+$", a.get("id", ""))]
    assert len(imgs) == len(FRACS) * len(bench)
    for lvl in range(len(FRACS)):
        items = sorted(int(a["data-item"]) for a in imgs if f"-L{lvl}-" in a["id"])
        assert items == list(range(len(bench)))               # a permutation of the items
        assert all("hidden" in a and a["src"].startswith("data:image/png;base64,") for a in imgs)
    key = [a for t, a in p.tags if t == "img" and a.get("alt", "").startswith("answer")]
    assert len(key) == len(bench)


def test_quiz_has_class_buttons_and_paper_numbers(fmnist_test, quiz):
    p = _Collect()
    p.feed(quiz)
    buttons = [a for t, a in p.tags if t == "button" and "data-class" in a]
    assert [int(a["data-class"]) for a in buttons] == list(range(len(fmnist_test.classes)))
    for c in fmnist_test.classes:
        assert f">{c}</button>" in quiz
    for m, s in TABLE2.values():
        assert str(m) in quiz and str(s) in quiz
    cfg = json.loads(re.search(r"const cfg = (\{.*?\});", quiz).group(1))
    assert cfg["paper"] == [19.2, 40.0, 68.2] and cfg["paperStd"] == [4.8, 2.5, 3.6]


def test_quiz_answer_key_and_model_accuracy_come_from_the_benchmark(bench, quiz):
    cfg = json.loads(re.search(r"const cfg = (\{.*?\});", quiz).group(1))
    assert cfg["labels"] == bench.labels.tolist()
    assert cfg["model"] == pytest.approx([bench.model_correct[i].float().mean().item() for i in range(len(FRACS))])


def test_quiz_is_deterministic_and_seeded(bench, fmnist_test, quiz):
    args = (bench, fmnist_test.classes, fmnist_test.mean, fmnist_test.std)
    assert quiz_html(*args, seed=0) == quiz
    other = quiz_html(*args, seed=1)
    assert other != quiz and re.search(r'id="(oiq-\w+)"', other).group(1) != re.search(r'id="(oiq-\w+)"', quiz).group(1)
    assert 'id="mine-L0-0"' in quiz_html(*args, uid="mine")


def test_paper_humans_aligns_table2_with_levels():
    assert paper_humans((0.05, 0.3, 0.5)) == {"paper": (19.2, 40.0, 68.2), "paper_std": (4.8, 2.5, 3.6)}
    assert paper_humans((0.1, 0.5)) == {"paper": (None, 68.2), "paper_std": (None, 3.6)}


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
def test_quiz_plays_through_in_a_browser(bench, fmnist_test, tmp_path):
    """Answer every image (each click twice: the second must be ignored), go through all levels."""
    html = quiz_html(bench, fmnist_test.classes, fmnist_test.mean, fmnist_test.std, uid="q")
    driver = """<script>(async () => {
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms)), $ = (s) => document.getElementById("q" + s);
      const b = document.querySelectorAll("#q-buttons button");
      for (let lvl = 0; lvl < %d; lvl++) {
        for (let i = 0; i < %d; i++) { b[1].click(); b[0].click(); await sleep(200); }
        $("-next").click(); $("-next").click(); await sleep(20);
      }
      const o = document.createElement("pre"); o.id = "log";
      o.textContent = JSON.stringify({rows: $("-rows").rows.length, key: !$("-key").hidden,
                                       you: $("-you-0").textContent});
      document.body.appendChild(o);
    })();</script>""" % (len(FRACS), len(bench))
    page = tmp_path / "quiz.html"
    page.write_text(f'<!doctype html><html><head><meta charset="utf-8"></head><body>{html}{driver}</body></html>')
    out = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--virtual-time-budget=100000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    log = json.loads(re.search(r'<pre id="log">(.*?)</pre>', out).group(1).replace("&quot;", '"'))
    assert log["rows"] == len(FRACS) and log["key"]
    assert log["you"].count("/") == len(FRACS) - 1            # one answer per level, not two


def test_reuses_a_stored_backselection_of_the_whole_test_sample(run):
    """After the pixel-subsets chapter backselected the test sample, the benchmark cuts its subsets from it."""
    from overinterp.experiments.runs import backselect_set, selection
    from overinterp.engine.sis import pixel_subset
    a = run.profile.archs[0]
    full = backselect_set(run, a, selection(run, "test"), progress=False)
    again = build_benchmark(run, per_class=PER_CLASS, fracs=FRACS)
    rows = torch.tensor([i for i, x in enumerate(again.arch) if x == a])
    _, keep = pixel_subset(full[again.pool_index[rows]], again.images[rows], FRACS[0])
    assert torch.equal(again.keep[0, rows], keep)


def test_defaults_and_the_paper_split_come_from_the_papers_numbers():
    import inspect
    from overinterp.paper import numbers
    sig = inspect.signature(build_benchmark).parameters
    assert (sig["per_class"].default, sig["fracs"].default, sig["threshold"].default) == (10, (0.05, 0.3, 0.5), 0.99)
    assert sig["fracs"].default == tuple(TABLE2)
    assert sum(numbers.HUMANS_SPLIT.values()) == 10 * numbers.HUMANS_PER_CLASS


def test_summary_glues_the_papers_split_in_words(bench):
    assert summary(bench)["humans_paper_split"] == "35 ResNet20, 35 ResNet18, 30 VGG16"
