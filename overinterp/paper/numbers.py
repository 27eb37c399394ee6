"""Numbers quoted from the paper (Carter et al., NeurIPS 2021) and related methods' papers, in one place:
CIFAR-10 unless said. Accuracies in percent as (mean, std over five runs), std None where not given; the
numbers the claims derive from them (``paper_*``), rounded as the paper rounds.
"""
from decimal import ROUND_HALF_UP, Decimal

ARCH_NAMES = {"resnet20": "ResNet20", "resnet18": "ResNet18", "vgg16": "VGG16", "cnn": "small CNN",
              "wideresnet": "WideResNet"}
SETS = ("CIFAR-10 test", "CIFAR-10.1", "CIFAR-10-C")

#: Table 1: (model, train on, evaluate on) -> accuracy on (CIFAR-10 test, CIFAR-10.1, CIFAR-10-C).
TABLE1 = {
    ("resnet20", "full", "full"): ((92.23, 0.35), (83.85, 0.75), (69.99, 0.67)),
    ("resnet20", "full", "bs"): ((92.48, None), (82.8, None), (70.65, None)),
    ("resnet20", "full", "random"): ((9.99, 0.07), (10.01, 0.02), (10.03, 0.03)),
    ("resnet20", "bs", "bs"): ((92.5, 0.02), (82.74, 0.02), (70.57, 0.08)),
    ("resnet20", "random", "random"): ((50.05, 0.18), (39.53, 0.24), (43.89, 0.15)),
    ("resnet18", "full", "full"): ((95.28, 0.17), (89.07, 0.7), (75.28, 0.51)),
    ("resnet18", "full", "bs"): ((94.76, None), (89.35, None), (75.15, None)),
    ("resnet18", "full", "random"): ((10.01, 0.15), (10.08, 0.12), (10.02, 0.08)),
    ("resnet18", "bs", "bs"): ((94.97, 0.04), (89.57, 0.08), (75.27, 0.08)),
    ("resnet18", "random", "random"): ((51.2, 0.78), (39.79, 1.18), (44.77, 0.56)),
    ("vgg16", "full", "full"): ((93.62, 0.1), (86.07, 0.59), (73.96, 0.59)),
    ("vgg16", "full", "bs"): ((93.27, None), (86.45, None), (73.95, None)),
    ("vgg16", "full", "random"): ((9.97, 0.17), (10.02, 0.24), (10.08, 0.12)),
    ("vgg16", "bs", "bs"): ((92.56, 0.05), (85.65, 0.16), (73.26, 0.22)),
    ("vgg16", "random", "random"): ((53.8, 1.31), (41.32, 1.3), (47.19, 1.02)),
    ("ensemble 5x resnet18", "full", "full"): ((96.15, None), (90.5, None), (77.21, None)),
    ("ensemble 5x resnet18", "full", "random"): ((9.98, None), (10.0, None), (10.0, None)),
}

#: Table S1: retraining on subsets WITH data augmentation (+).
TABLE_S1 = {
    ("resnet20", "bs", "bs"): ((92.23, 0.03), (82.42, 0.12), (70.33, 0.14)),
    ("resnet20", "random", "random"): ((48.85, 0.17), (37.52, 0.3), (42.58, 0.13)),
    ("resnet18", "bs", "bs"): ((94.67, 0.02), (89.11, 0.13), (75.0, 0.06)),
    ("resnet18", "random", "random"): ((48.69, 0.92), (37.74, 0.97), (42.77, 0.52)),
    ("vgg16", "bs", "bs"): ((91.13, 0.12), (84.07, 0.24), (72.16, 0.19)),
    ("vgg16", "random", "random"): ((51.55, 1.14), (39.96, 2.68), (44.93, 1.05)),
}

#: Section 4.1: mean (std) drop in confidence from full image to 5% BS subset, all test images.
CONFIDENCE_DROP = {"resnet20": (-0.035, 0.107), "resnet18": (-0.016, 0.094), "vgg16": (-0.012, 0.074)}

#: Section 4.1: 5% subsets of one ResNet18 (94.8% by itself) classified by other models.
TRANSFER_RESNET18 = {"itself": 94.8, "another resnet18": 27.6, "resnet20": 29.2, "vgg16": 27.5}

#: Table 2: human accuracy (%) on 5/30/50% backward-selection subsets.
TABLE2 = {0.05: (19.2, 4.8), 0.30: (40.0, 2.5), 0.50: (68.2, 3.6)}

#: Section 4.1: "the average SIS size at this threshold [0.99] is < 5% of each image".
SIS_MEAN_SIZE_BELOW = 0.05


def fmt(value: tuple) -> str:
    """'92.23 ± 0.35' for (92.23, 0.35); '92.48' for (92.48, None)."""
    mean, std = value
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def table1(arch: str, train_on: str, evaluate_on: str, table: dict = TABLE1) -> dict:
    """The paper's row for display, {set: 'mean ± std'}, or {} where it has none (e.g. our small CNN)."""
    row = table.get((arch, train_on, evaluate_on))
    return {s: fmt(v) for s, v in zip(SETS, row)} if row else {}


def table1_test(arch: str, train_on: str, evaluate_on: str, table: dict = TABLE1) -> tuple | None:
    """The paper's (mean, std or None) CIFAR-10 test accuracy of a Table 1 / S1 row, or None."""
    row = table.get((arch, train_on, evaluate_on))
    return row[0] if row else None


def paper_tests(train_on: str, evaluate_on: str) -> list[float]:
    """The CIFAR-10 test accuracies (%) of a Table 1 row for ResNet20, ResNet18 and VGG16."""
    return [table1_test(a, train_on, evaluate_on)[0] for a in ("resnet20", "resnet18", "vgg16")]


def paper_gap(train_on: str, evaluate_on: str) -> float:
    """The largest Table 1 test-accuracy drop (points, >= 0) from full to (train_on, evaluate_on)."""
    return max(0.0, *(f - x for f, x in zip(paper_tests("full", "full"), paper_tests(train_on, evaluate_on))))


def paper_transfer_share() -> float:
    """4.1's transfer as ``verdicts.no_transfer`` measures it: the share of ResNet18's lift that others recover
    (~0.21)."""
    others = [v for name, v in TRANSFER_RESNET18.items() if name != "itself"]
    random = table1_test("resnet18", "full", "random")[0]
    return (sum(others) / len(others) - random) / (TRANSFER_RESNET18["itself"] - random)


def paper_round(value: float, places: int = 1) -> str:
    """A number of the paper rounded as the paper rounds, half up on its decimal digits (50.05 -> '50.1')."""
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def paper_span(values) -> str:
    """'92.5–95.0': the range of the paper's ``values``, rounded as the paper rounds."""
    return f"{paper_round(min(values))}–{paper_round(max(values))}"


#: Section 4.1: the SIS threshold tau of the paper's CIFAR-10 results ("confidence >= 0.99").
SIS_THRESHOLD = 0.99

#: Sections 4.1, 4.2 (Table 1): the pixel subsets keep 5% of the pixels.
SUBSET_FRAC = 0.05

# ----------------------------------------------------------------------------- related methods' papers
#: Feng et al. 2018 (input reduction), 2.2: "beam size five ... comparable results to larger beam sizes".
FENG_BEAM = 5
#: Feng et al. 2018, Table 2: accuracy (%) and mean reduced length (words) before / after fine-tuning.
FENG_TABLE2 = {"SQuAD": (77.41, 78.03, 2.27, 4.97), "SNLI": (85.71, 85.72, 1.50, 2.20),
               "VQA": (61.61, 61.54, 2.30, 2.87)}
#: Feng et al. 2018, Figure 3: mean length (words) of the original and the reduced inputs.
FENG_MEAN_LENGTH = {"SQuAD": (11.5, 2.3), "SNLI": (7.5, 1.5), "VQA": (6.2, 2.3)}
#: Booth et al. 2021 (Bayes-TrEx), 4.10: ambiguous = two classes' confidence both within this band.
BOOTH_BAND = (0.4, 0.6)
#: Booth et al. 2021, 4.10: a confident misclassification has confidence >= 85%.
BOOTH_MISCLASSIFIED_LEVEL = 0.85
#: Booth et al. 2021, Table 2, the Fashion-MNIST rows matching a target of chapter 16: (kind, classes) -> text.
BOOTH_TABLE2 = {("ambiguous", (0, 3)): "0.48, 0.48 ± .02, .02", ("high", (8,)): "0.97 ± .03 (held out)"}

#: S5: "k = 100 ... one SIS for each of 32 ImageNet images (i.e., a mini-batch) in ~1-2 minutes"; no GPU named.
PAPER_S5 = {"images": 32, "minutes": (1, 2), "k": 100, "pixels": 299 * 299, "size": 299,
            "model": "Inception-v3 (pre-trained, PyTorch)", "data": "ImageNet images, 299×299",
            "what": "one SIS per image with Batched Gradient BackSelect + FindSIS (k = 100)",
            "hardware": "not stated", "section": "S5"}
#: 4.1.1, Figures 3 and 4: SIS at tau = 0.9 of ImageNet validation images that torchvision's pre-trained
#: Inception-v3 classifies with confidence >= 0.9; Figure 4 averages 1000 of them.
IMAGENET_FIG4 = {"model": "inception_v3", "tau": 0.9, "min_confidence": 0.9, "images": 1000, "method": "gradient",
                 "k": 100, "block": 1}

# ----------------------------------------------------------------------------- humans (3.4, S4) and robust models (4.5)
#: 3.4, S4: the human benchmark takes 10 test images per class (100 CIFAR-10 images) ...
HUMANS_PER_CLASS = 10
#: ... whose subsets "are sampled across our three models": images per architecture.
HUMANS_SPLIT = {"resnet20": 35, "resnet18": 35, "vgg16": 30}
#: 4.5: Madry et al. (2018)'s robust CIFAR-10 model, the paper's: l-inf PGD training, epsilon in [0, 1] pixel
#: units, step_size in units of epsilon.
MADRY_TRAINING = {"epsilon": 8 / 255, "steps": 7, "step_size": 0.25, "images": 50000, "iterations": 80000,
                  "batch": 128}
#: 4.5: that model's clean accuracy and white-box leaderboard (github.com/MadryLab/cifar10_challenge).
MADRY_ACCURACY = {"clean accuracy (%)": 87.3, "PGD-20 accuracy (%)": 47.04, "PGD-20, 10 restarts accuracy (%)": 45.21}
