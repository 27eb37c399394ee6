"""The methods around overinterpretation as tensors-in, tensors-out functions (Shared Interest, input
reduction, Bayes-TrEx): a model and images in, tensors out; no artifact store, no run context."""

import importlib
import warnings


def optional(module: str, package: str, purpose: str):
    """Import ``module`` when a method first needs it, so a machine without Pyro or Captum still runs the
    rest; a missing package is a one-line error naming it and what needs it."""
    with warnings.catch_warnings():  # Pyro and Captum import tqdm.auto, which warns in a notebook without ipywidgets
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(f"{purpose} needs the package {package} (pip install {package}); "
                                      f"{e.name} cannot be imported") from None
