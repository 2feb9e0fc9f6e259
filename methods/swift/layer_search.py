"""SWIFT's on-the-fly search for the layer set to skip: random candidates, every ``bayes_interval``-th one from
Bayesian optimisation, each scored by its matchness (``method.py``), the best kept.

The search space is every decoder layer's attention and MLP but the first and last layer's: ``2 (L - 2)``
sub-layers, of which a candidate skips ``int(2 (L - 2) skip_ratio)``. A candidate is a point of ``[0, 1]^(2 (L-2))``
(one coordinate per sub-layer, attention first); a random candidate is a 0/1 point, a Bayesian one the optimiser's
suggestion, whose largest coordinates name the skipped sub-layers. Every candidate's point and score are registered
with the optimiser. The search starts from the reference's set (every odd layer's attention and MLP) with score 0
and stops for good when a score exceeds ``max_score``, after ``max_tolerance_iter`` candidates without a better
one, or after ``max_opt_iter`` candidates; the state lasts across generations, as the reference's.

Example: 30 layers, ``skip_ratio=0.45`` -> 56 sub-layers searched, 25 skipped per candidate; the initial set skips
the attention and MLP of layers 1, 3, ..., 27 (28 sub-layers).

>>> s = LayerSearch(6, skip_ratio=0.5, bayes_interval=0, seed=0)
>>> s.slots, s.count, s.best
(4, 4, SkipSet(attention=(1, 3), mlp=(1, 3)))
>>> s.report(SkipSet((1, 2), (3, 4)), 0.5); s.best, s.best_score, s.active
(SkipSet(attention=(1, 2), mlp=(3, 4)), 0.5, True)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from specbench.api import ConfigError, SkipSet

BAYES_RANDOM_STATE = 1  # the reference's BayesianOptimization(random_state=1)
GP_ALPHA = 1e-2  # its set_gp_params(alpha=1e-2)
UCB_KAPPA = 2.5  # its UtilityFunction(kind="ucb", kappa=2.5)


def parse_skip(text: str, num_layers: int) -> SkipSet:
    """A fixed layer set written ``attn:1,3,5/mlp:2,4`` (either part may be left out); one-line errors.

    >>> parse_skip("attn:1,3/mlp:2", 6), parse_skip("mlp:4", 6).attention
    (SkipSet(attention=(1, 3), mlp=(2,)), ())
    """
    parts: dict[str, tuple[int, ...]] = {"attn": (), "mlp": ()}
    for part in filter(None, text.split("/")):
        kind, sep, layers = part.partition(":")
        if not sep or kind.strip() not in parts:
            raise ConfigError(f"swift: skip takes attn:LAYERS/mlp:LAYERS (e.g. attn:1,3/mlp:2), got {text!r}")
        try:
            parts[kind.strip()] = tuple(int(i) for i in layers.split(",") if i.strip())
        except ValueError:
            raise ConfigError(f"swift: skip's layers must be integers, got {part!r}") from None
    bad = [i for i in parts["attn"] + parts["mlp"] if not 0 < i < num_layers - 1]
    if bad:
        raise ConfigError(f"swift: skip names layers {bad}: only 1..{num_layers - 2} may be skipped (the first and "
                          f"last layer are always kept)")
    return SkipSet(parts["attn"], parts["mlp"])


def skip_text(skip: SkipSet) -> str:
    """The ``skip`` option's text of a layer set (``parse_skip``'s inverse).

    >>> skip_text(SkipSet((1, 3), (2,)))
    'attn:1,3/mlp:2'
    """
    return f"attn:{','.join(map(str, skip.attention))}/mlp:{','.join(map(str, skip.mlp))}"


def require_bayes_opt() -> None:
    """One-line ``ConfigError`` unless the optional extra ``specbench[swift]`` (bayesian-optimization) is installed."""
    try:
        import bayes_opt  # noqa: F401
    except ImportError:
        raise ConfigError("swift: Bayesian layer search needs the optional extra specbench[swift] "
                          "(pip install 'specbench[swift]'), or set swift.bayes_interval=0 (random search only)") from None


class LayerSearch:
    """The layer set SWIFT drafts with, and the search that improves it (module docstring)."""

    def __init__(self, num_layers: int, skip_ratio: float = 0.45, bayes_interval: int = 25, max_opt_iter: int = 1000,
                 max_tolerance_iter: int = 300, max_score: float = 0.93, seed: int = 0, optimize: bool = True,
                 fixed: SkipSet | None = None) -> None:
        self.slots = max(0, num_layers - 2)  # per kind: layers 1..L-2 (the first and last are always kept)
        self.count = int(self.slots * 2 * skip_ratio)
        odd = tuple(range(1, num_layers - 1, 2))
        self.best = SkipSet(odd, odd) if fixed is None else fixed  # (fixed: the reference's cached set, no search)
        self.best_score = 0.0
        self.iterations = 0
        self.tolerance = 0
        self.bayes_interval = bayes_interval
        self.max_opt_iter, self.max_tolerance_iter, self.max_score = max_opt_iter, max_tolerance_iter, max_score
        self.active = optimize and fixed is None and self.slots > 0 and self.count > 0
        self.stopped = "" if self.active else "fixed" if fixed is not None else "off"
        self.rng = np.random.default_rng(seed)
        self._optimizer: Any = None
        self._point: dict[str, float] | None = None  # the last candidate's point, registered with its score

    def candidate(self) -> SkipSet:
        """The next layer set to score: the optimiser's suggestion every ``bayes_interval``-th time, else random."""
        bayes = self.bayes_interval > 0 and (self.iterations + 1) % self.bayes_interval == 0
        if bayes:
            point = self.optimizer().suggest()
            ranked = sorted(point, key=lambda k: -point[k])  # (stable: ties keep the coordinates' order)
            chosen = {int(k[1:]) for k in ranked[: self.count]}
        else:
            chosen = set(self.rng.choice(2 * self.slots, self.count, replace=False).tolist())
            point = {f"x{i}": 1.0 if i in chosen else 0.0 for i in range(2 * self.slots)}
        self._point = {k: float(v) for k, v in point.items()}
        return self.skip_set(chosen)

    def skip_set(self, chosen: set[int]) -> SkipSet:
        """Coordinates -> layers: ``i < L - 2`` is layer ``i + 1``'s attention, the rest the MLPs in order."""
        return SkipSet(tuple(i + 1 for i in chosen if i < self.slots),
                       tuple(i - self.slots + 1 for i in chosen if i >= self.slots))

    def report(self, skip: SkipSet, score: float) -> None:
        """The matchness ``score`` of candidate ``skip``: keep it if best so far; count toward the stop rules."""
        if self._point is not None and self.bayes_interval > 0:
            self.optimizer().register(params=self._point, target=float(score))
        self._point = None
        if score > self.best_score:
            self.best, self.best_score, self.tolerance = skip, float(score), 0
            if score > self.max_score:
                self._stop("score")
        else:
            self.tolerance += 1
        self.iterations += 1
        if self.active and self.tolerance > self.max_tolerance_iter:
            self._stop("tolerance")
        if self.active and self.iterations > self.max_opt_iter:
            self._stop("iterations")

    def state(self) -> dict[str, Any]:
        """What a record keeps of the search after a generation (``swift``'s ``drafter_state``)."""
        return {"skip": skip_text(self.best), "skipped": self.best.count, "matchness": round(self.best_score, 4),
                "search_iterations": self.iterations, "searching": self.active, "stopped": self.stopped or None}

    def optimizer(self) -> Any:
        """The Bayesian optimiser over the candidates' points (built on first use: the extra is optional)."""
        if self._optimizer is None:
            require_bayes_opt()
            from bayes_opt import BayesianOptimization, acquisition

            bounds = {f"x{i}": (0.0, 1.0) for i in range(2 * self.slots)}
            self._optimizer = BayesianOptimization(
                f=None, pbounds=bounds, acquisition_function=acquisition.UpperConfidenceBound(kappa=UCB_KAPPA),
                random_state=BAYES_RANDOM_STATE, verbose=0, allow_duplicate_points=True)
            self._optimizer.set_gp_params(alpha=GP_ALPHA)
        return self._optimizer

    def _stop(self, why: str) -> None:
        self.active, self.stopped = False, why
