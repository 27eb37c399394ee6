"""overinterp: an executable reproduction of *Overinterpretation reveals image
classification model pathologies* (Carter, Jain, Mueller, Gifford; NeurIPS 2021)."""
__version__ = "0.1.0"
