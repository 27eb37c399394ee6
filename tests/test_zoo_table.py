"""Chapter 1's Table 1.2: the paper's full-image accuracies (Table 1) beside ours, each number under its own
model's label (overinterp.pages.runs.zoo_paper_rows, beside_paper)."""
import numpy as np
import pandas as pd

from overinterp.pages import runs as pages_runs
from overinterp.pages import plots
from overinterp.paper import numbers as paper


def _ours(names):
    cols = pd.MultiIndex.from_tuples([(s, k) for s in ("test", "fashion-mnist-c") for k in ("mean", "std")])
    return plots.mean_std(pd.DataFrame(np.arange(4 * len(names), dtype=float).reshape(len(names), 4) + 50,
                                       index=names, columns=cols))


def test_the_papers_ensemble_of_five_has_its_own_row_and_ours_of_three_no_paper_number():
    models = {"resnet20": [0, 1, 2], "resnet18": [0, 1, 2], "vgg16": [0, 1, 2], "cnn": [0, 1, 2]}
    names = ["ResNet20", "ResNet18", "VGG16", "CNN", "ensemble 3× ResNet20", "ensemble 3× ResNet18",
             "ensemble 3× VGG16", "ensemble 3× CNN", "ensemble of all 12"]
    t = pages_runs.beside_paper(_ours(names), pages_runs.zoo_paper_rows(models), "ours (standard)")
    paper_test, ours_test = t[("paper (CIFAR-10)", "CIFAR-10 test")], t[("ours (standard)", "test")]
    assert list(t.index) == names + [pages_runs.PAPER_ENSEMBLE] and pages_runs.PAPER_ENSEMBLE == "5× ResNet18 ensemble (paper)"
    assert paper_test[pages_runs.PAPER_ENSEMBLE] == "96.15" and ours_test[pages_runs.PAPER_ENSEMBLE] == "—"
    assert paper_test["ensemble 3× ResNet18"] == "—" and ours_test["ensemble 3× ResNet18"] != "—"
    assert "96.15" not in set(paper_test[names])                     # no number of five under a label of three
    assert paper_test["ResNet18"] == paper.table1("resnet18", "full", "full")["CIFAR-10 test"]
    assert (paper_test["CNN"], ours_test["CNN"]) == ("—", "62.00 ± 63.00")   # the paper has no CNN
    # without a ResNet18 ensemble of ours the paper's is not set beside the table
    assert pages_runs.PAPER_ENSEMBLE not in pages_runs.zoo_paper_rows({"resnet18": [0], "vgg16": [0, 1]})


def test_a_row_only_the_paper_has_follows_ours_and_an_empty_one_is_left_out():
    ours = _ours(["a", "b"])
    t = pages_runs.beside_paper(ours, {"b": {"x": "1"}, "a": {}, "the paper's c": {"x": "2"}, "d": {}}, "ours")
    assert list(t.index) == ["a", "b", "the paper's c"]
    assert list(t.loc["the paper's c"]) == ["2", "—", "—"] and t.loc["a", ("paper (CIFAR-10)", "x")] == "—"
