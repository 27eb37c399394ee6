"""The model zoo's foundations (paper 3.1, 3.2, S1): data sets as tensors (:mod:`.data`), the
architectures and batch-norm folding (:mod:`.models`), and training with its one "train once, keep
in the store" helper (:mod:`.train`). Imports only :mod:`overinterp.store`."""
