"""The paper: its numbers (:mod:`.numbers`, Tables 1, 2, S1 and the sections' figures), the verdict
machinery that sets our measures beside its claims (:mod:`.verdicts`), and the one interval estimator
(:mod:`.intervals`). Knows nothing of models or the store."""
