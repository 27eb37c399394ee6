"""What an execution does differently from the paper's protocol (the ``paper`` profile and
:mod:`overinterp.paper.numbers`): every deviation the book lists, one line of text each.

    profile_deviations(run.profile, "models", "backselect")   # the topics a chapter depends on
    imagenet_deviations(cfg, model, spec, "photos")          # the ImageNet chapter's (4.1.1, S5)
    robust_deviations(run, epsilon)                          # the adversarially robust models' (4.5)
"""
from overinterp.config.profiles import PROFILES
from overinterp.paper.formatting import count
from overinterp.paper.numbers import ARCH_NAMES, IMAGENET_FIG4, MADRY_TRAINING, PAPER_S5

#: where the zoo's architectures differ from the paper's code (gifford-lab/overinterpretation): every profile's
CODE_DEVIATIONS = (
    ("resnet20", "ResNet20's downsampling shortcuts are 1x1 convolutions with batch norm (He et al.'s option B) and "
                 "its weights keep PyTorch's default initialisation; the paper's code (model/resnet_cifar.py) uses "
                 "option A, \"F.pad(x[:, :, ::2, ::2], ...)\" (subsampled identity padded with zeros), and "
                 "\"init.kaiming_normal_(m.weight)\" for every convolution and linear layer"),
    ("resnet18", "ResNet18 is the pre-activation network, following the paper's text (3.2: \"a v2 deep residual "
                 "network with depth 18\"); the paper's code trains \"from model.resnet import ResNet18\" "
                 "(model/model_util.py), the standard post-activation ResNet18"),
)


def profile_deviations(p, *topics: str) -> list[str]:
    """How profile ``p`` departs from the ``paper`` profile (3.2, 3.3, 4.1, 4.2, S1) in ``topics``: "models",
    "evaluation", "backselect", "retraining" (default: all). For ``paper``: :data:`CODE_DEVIATIONS` only."""
    ref, out = PROFILES["paper"], []
    topics = set(topics or ("models", "evaluation", "backselect", "retraining"))
    if "models" in topics:
        out += [d for a, d in CODE_DEVIATIONS if a in p.archs]
        if p.dataset != ref.dataset:
            out.append(f"dataset {p.dataset} (the paper: CIFAR-10)")
        if p.widths:
            out.append("initial filters " + ", ".join(f"{a} {w}" for a, w in p.widths) +
                       " (the paper: 16 for ResNet20, 64 for ResNet18 and VGG16)")
        if p.replicates != ref.replicates:
            out.append(f"{p.replicates} replicates per architecture (the paper: {ref.replicates})")
        if p.train_size:
            out.append(f"trained on {p.train_size} training images (the paper: all)")
        if p.train.epochs != ref.train.epochs:
            out.append(f"{p.train.epochs} epochs (the paper: {ref.train.epochs})")
        if p.train.augment != ref.train.augment:
            out.append("no data augmentation (the paper: random crop and horizontal flip)")
    if "evaluation" in topics and p.test_size:
        out.append(f"{p.test_size}-image seeded samples of the test and out-of-distribution sets "
                   "(the paper: all test images)")
    if "backselect" in topics:
        if p.backselect_train and p.backselect_train != p.backselect:
            out.append(f"backward selection differs between test images ({p.backselect.describe()}) and "
                       f"training images ({p.backselect_train.describe()}): retrained models are tested on "
                       "subsets made differently from the ones they learned (the paper: one procedure, 4.2)")
        if p.sis_engine is not None:
            out.append(f"the SIS sizes of 4.1: {p.sis_engine.describe()} on the first {p.sis_images} "
                       "confident test images of each replicate (the paper: exact, on every image)")
        if p is not ref:
            out.append("the mean SIS size of 4.1 is over the test images each replicate classifies correctly with "
                       "confidence >= tau (the paper's code: every image classified with confidence >= tau, correct "
                       "or not)")
        for name, cfg in [("test images", p.backselect)] + (
                [("training images", p.backselect_train)] if p.backselect_train else []):
            if cfg.method != "exact" or cfg.block != 1:
                out.append(f"backward selection of {name}: {cfg.describe()} (the paper: exact, pixel by pixel)")
            if cfg.mask_value != 0:
                out.append(f"masked pixels set to {cfg.mask_value:g} (the paper: the mean pixel)")
    if "retraining" in topics:
        if p.retrain_images:
            out.append(f"backward selection and retraining on {p.retrain_images} training images "
                       "(the paper: all 50,000)")
            out.append(f"4.2's \"nearly as accurate\" compares with a full-image control trained on the same "
                       f"{p.retrain_images} training images with the retraining recipe (the paper: its models of "
                       "the zoo, trained on all images)")
        r = p.retrain or p.train
        if r.epochs != ref.train.epochs:
            out.append(f"retrained models train {r.epochs} epochs (the paper: {ref.train.epochs})")
        if (r.lr, r.batch_size) != (ref.train.lr, ref.train.batch_size):
            out.append(f"retrained models learn at rate {r.lr:g} with batches of {r.batch_size} "
                       f"(the paper: {ref.train.lr:g} and {ref.train.batch_size}, its original models' recipe)")
        if p.retrain_replicates and p.retrain_replicates != ref.replicates:
            out.append(f"{p.retrain_replicates} retrained models per kind (the paper: {ref.replicates})")
        if not p.retrain_augment_rows:
            out.append("no retraining with augmentation (the paper's Table S1)")
    return out


def imagenet_deviations(cfg, model: str, spec: dict, source: str) -> list[str]:
    """How the ImageNet chapter departs from 4.1.1 / S5 (:data:`~overinterp.paper.numbers.IMAGENET_FIG4`):
    ``cfg`` an ImageNetConfig, ``spec`` the classifier's entry of ``experiments.imagenet.MODELS``,
    ``source`` "photos" (shipped) or "imagenet" (a folder)."""
    paper, size = IMAGENET_FIG4, PAPER_S5["size"]
    out = []
    if model != paper["model"]:
        out.append(f"{spec['name']} (ImageNet weights, {spec['size']}×{spec['size']} "
                   f"inputs) instead of the paper's pre-trained Inception-v3 ({size}×{size})")
    if source == "photos":
        out.append("the photographs that scikit-image and scikit-learn ship, each resized whole, instead of "
                   "ImageNet validation images")
    b = cfg.backselect
    if b.method != paper["method"] or b.k != paper["k"] or b.block != paper["block"]:
        out.append(f"backward selection {b.describe()} (the paper: Batched Gradient, k = {paper['k']} pixels per step)")
    if cfg.min_confidence < paper["min_confidence"]:
        out.append(f"images classified with confidence >= {cfg.min_confidence:g} are backselected (the paper: "
                   f">= {paper['min_confidence']:g}), so SIS can also be found at thresholds below the paper's "
                   f"{paper['tau']:g}")
    if cfg.images < paper["images"]:
        out.append(f"at most {count(cfg.images, 'image')} (the paper's Figure 4: {paper['images']})")
    return out


def robust_deviations(run, epsilon: float) -> list[str]:
    """How ``run``'s robust models and attacks depart from Madry et al.'s model, the paper's (4.5);
    ``epsilon``: the radius the models are trained at."""
    cfg, p = run.profile.robust, run.profile
    n = cfg.train_size or p.train_size
    out = [f"our {ARCH_NAMES.get(cfg.arch, cfg.arch)} ({p.width(cfg.arch) or 'paper'} initial filters), adversarially "
           "trained with the zoo's recipe (the paper: Madry et al.'s pre-trained wide ResNet)"]
    m = MADRY_TRAINING
    if run.dataset != "cifar10":
        out.append(f"{run.dataset}, epsilon = {epsilon:g} in [0, 1] pixels (CIFAR-10: {255 * m['epsilon']:.0f}/255)")
    if (cfg.steps, cfg.step_size) != (m["steps"], m["step_size"]):
        out.append(f"training attack: {cfg.steps} PGD steps of {cfg.step_size:g} epsilon (Madry's: {m['steps']} steps "
                   f"of epsilon / {1 / m['step_size']:g})")
    if n:
        out.append(f"trained on {n} training images for {cfg.epochs or p.train.epochs} epochs "
                   f"(Madry's: all {m['images']:,} images, {m['iterations']:,} steps of {m['batch']})")
    out.append(f"evaluation attack: {cfg.eval_steps} PGD steps of {cfg.step_size:g} epsilon, {cfg.eval_restarts} "
               f"random starts, on {cfg.eval_images or p.test_size or 'all'} test images")
    return out
