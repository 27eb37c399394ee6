"""The paper: its numbers (:mod:`.numbers`, Tables 1, 2, S1 and the sections' figures), the verdict
machinery that sets our measures beside its claims (:mod:`.verdicts`), the one interval estimator
(:mod:`.intervals`) and what an execution does differently from its protocol (:mod:`.deviations`).
Knows nothing of models or the store."""
