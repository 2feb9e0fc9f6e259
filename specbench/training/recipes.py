"""The two recipes of every trained drafter, and how long one takes.

``quick``: the first-use default (about 20k positions, minutes on 2 CPU cores). ``full``: more positions
(300k to start with) and epochs sized to at most about an hour and a half on 2 CPU cores, resumable
(``resume.py``). A method keeps its recipes as a dict ``name -> train config`` and its measured training
cost per example position and epoch; ``eta_minutes`` adds the target pass when its features are new.

>>> round(eta_minutes(300_000, 20, 0.0005, collect=True))
70
>>> check_recipe("eagle", "full", ("quick", "full"))
>>> check_recipe("eagle", "slow", ("quick", "full"))
Traceback (most recent call last):
...
specbench.errors.ConfigError: eagle: recipe must be one of quick, full, got 'slow'
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from specbench.errors import ConfigError

QUICK, FULL = "quick", "full"
RECIPE_NAMES = (QUICK, FULL)
# the batched fp32 target pass of the embedded 135M model on 2 cores: response positions per second
# (measured 303/s at load ~1.7 and 77-99/s at load ~3; docs/training.md)
COLLECT_POSITIONS_PER_S = 250.0


def check_recipe(method: str, recipe: str, known: Iterable[str] = RECIPE_NAMES) -> None:
    """A one-line ``ConfigError`` unless ``recipe`` is one of ``known``."""
    names = tuple(known)
    if recipe not in names:
        raise ConfigError(f"{method}: recipe must be one of {', '.join(names)}, got {recipe!r}")


def eta_minutes(positions: int, epochs: int, train_s_per_position: float, collect: bool = True) -> float:
    """Rough minutes on 2 CPU cores: the training (``epochs`` passes at the measured cost per position)
    plus, when ``collect``, the target pass over the positions (the feature store's, once per target)."""
    seconds = positions * epochs * train_s_per_position + (positions / COLLECT_POSITIONS_PER_S if collect else 0.0)
    return seconds / 60


def recipe_prefix(recipe: str) -> str:
    """The cache folder prefix of a recipe's default: ``default`` for quick (the folders trained before
    recipes existed stay valid), else the recipe's name."""
    return "default" if recipe == QUICK else recipe


ADDED_LATER = "added_later"  # dataclass field metadata: see ``added_field``


def added_field(default: Any) -> Any:
    """A recipe field added after cache folders were keyed by the recipe: ``recipe_key`` leaves it out while it
    holds ``default``, so the defaults trained before it existed stay found (``tests/test_default_dirs.py``)."""
    return dataclasses.field(default=default, metadata={ADDED_LATER: True})


def recipe_key(recipe: Any) -> dict[str, Any]:
    """The recipe's fields as they key its cache folder: ``dataclasses.asdict`` without the ``added_field`` ones
    at their default.

    >>> @dataclasses.dataclass(frozen=True)
    ... class R:
    ...     tokens: int = 10
    ...     steps: int = added_field(1)
    >>> recipe_key(R()), recipe_key(R(steps=3))
    ({'tokens': 10}, {'tokens': 10, 'steps': 3})
    """
    out = dataclasses.asdict(recipe)
    for f in dataclasses.fields(recipe):
        if f.metadata.get(ADDED_LATER) and getattr(recipe, f.name) == f.default:
            del out[f.name]
    return out
