"""``sps.min_confidence=adaptive``: the draft's confidence threshold re-fitted after every step.

transformers' assisted generation (``AssistedCandidateGenerator.update_candidate_strategy``, when
scikit-learn is installed) keeps the draft probability of every drafted token and whether the target
accepted it, and after each step picks the threshold on the ROC curve of (accepted, probability) that
minimises ``fpr + 3 * fnr``: a wrongly drafted token costs a quarter as much as a wrongly stopped draft.
It starts from 0.4 (``assistant_confidence_threshold``) and re-fits once it has more than 5 tokens with
both outcomes among them.

Example: drafted probabilities ``[0.9, 0.8, 0.3]`` of which the first two were accepted, then
``[0.95, 0.2]`` with the first accepted: ``update`` re-fits to a threshold between 0.3 and 0.8.
"""
from __future__ import annotations

from specbench.api import ConfigError

START = 0.4  # transformers' default assistant_confidence_threshold
EXTRA = "adaptive"  # pip install 'specbench[adaptive]'


def require_sklearn() -> None:
    """One line naming the extra when scikit-learn is missing."""
    try:
        import sklearn.metrics  # noqa: F401
    except ImportError:
        raise ConfigError(f"sps: min_confidence=adaptive needs scikit-learn: pip install 'specbench[{EXTRA}]'") from None


class AdaptiveThreshold:
    """Per generation: the probabilities of drafted tokens, their outcomes, and the fitted threshold."""

    def __init__(self, start: float = START) -> None:
        require_sklearn()
        self.threshold = start
        self.probs: list[float] = []
        self.matches: list[int] = []

    def drafted(self, probs: list[float]) -> None:
        """The draft probability of each token proposed this step."""
        self.probs.extend(probs)

    def update(self, accepted: int) -> None:
        """``accepted`` of this step's drafted tokens were accepted: record outcomes, then re-fit.

        As transformers: the accepted ones count 1, the first rejected one 0, any drafted after it is
        forgotten (the target never judged it).
        """
        self.matches.extend([1] * accepted)
        if len(self.probs) > len(self.matches):
            self.matches.append(0)
        del self.probs[len(self.matches):]
        if len(self.probs) > 5 and {0, 1} <= set(self.matches):
            from sklearn.metrics import roc_curve

            fpr, tpr, thresholds = roc_curve(self.matches, self.probs)
            costs = fpr + 3 * (1 - tpr)
            self.threshold = float(thresholds[int(costs.argmin())])
