"""What a run is: the named profiles (:mod:`.profiles`), the run context every experiment takes
(:mod:`.context`), and one dataclass of parameters per chapter (:mod:`.chapters`), from which the
notebooks' papermill parameters and the command line's flags are derived."""
