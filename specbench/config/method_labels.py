"""Method labels: how a run names each setting of a method, and which options each label gets.

A run names each method by a **label**: the method's name, or ``NAME@VARIANT`` for a second setting of
the same method in one run (``rest@auto``, ``dresd@5x5``). A variant's options are the method's own
(``--method-opt rest.c=16``) overlaid with the variant's (``--method-opt rest@small.c=8``); the variant
``auto`` implies ``budget=auto``.

Every drafting method also takes the generic option ``budget``: ``default`` verifies the whole draft,
``auto`` lets the engine keep the part worth its cost on this machine (``specbench/budget/auto.py``), an
integer ``K >= 1`` cuts every draft to depth K (``budget=2``: the root plus at most two draft tokens on a
path). A fixed budget needs no label of its own: a run names a variant (``--methods pld,pld@k2
--method-opt pld@k2.budget=2``) and a sweep names its points by their values (``budget=2``).

>>> split_label("rest@auto")
('rest', 'auto')
>>> label_options("rest@auto", {"rest": {"c": "16"}})
{'c': '16', 'budget': 'auto'}
"""
from __future__ import annotations

import re
from typing import Any

from specbench.catalog import BASELINE
from specbench.budget.names import AUTO, DEFAULT_BUDGET, RUN_BUDGETS
from specbench.budget.registry import budget_names
from specbench.errors import ConfigError
from specbench.files.safe_names import is_safe_variant

BUDGET_KEY = "budget"


def split_label(label: str) -> tuple[str, str | None]:
    """``"rest@auto"`` -> ``("rest", "auto")``; ``"rest"`` -> ``("rest", None)``."""
    name, sep, variant = label.partition("@")
    if sep and not is_safe_variant(variant):
        raise ConfigError(f"method label {label!r}: expected NAME@VARIANT, the variant made of letters, digits, '_', '-'")
    return name, (variant if sep else None)


def label_options(label: str, all_options: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The options of ``label``: its method's, overlaid with the variant's own (``auto`` adds budget=auto)."""
    name, variant = split_label(label)
    opts = dict(all_options.get(name) or {})
    if variant is not None:
        if variant == AUTO:
            opts[BUDGET_KEY] = AUTO
        opts.update(all_options.get(label) or {})
    return opts


def budget_of(label: str, options: dict[str, Any] | None) -> str | int:
    """``default``, ``auto``, a fixed draft depth ``K >= 1`` as an int or the name of a budget registered
    (``budget/registry.register_budget``); a one-line error otherwise, or for anything but ``default`` on the
    baseline.

    >>> budget_of("pld", {"budget": "4"}), budget_of("pld", {})
    (4, 'default')
    """
    value = str((options or {}).get(BUDGET_KEY, DEFAULT_BUDGET))
    fixed = re.fullmatch(r"[0-9]+", value) is not None and int(value) >= 1  # (YAML's ints arrive as ints)
    names = budget_names()
    if value not in names and not fixed:
        raise ConfigError(f"{label}.budget must be one of {', '.join(names)} or a draft depth K >= 1, got {value!r}")
    if value != DEFAULT_BUDGET and split_label(label)[0] == BASELINE:
        raise ConfigError(f"{label}: budget={value} needs a drafting method (the baseline drafts nothing)")
    return int(value) if fixed else value


def expand_budget(labels: list[str], budget: str) -> list[str]:
    """The run's labels under ``--budget``: ``default`` keeps them; ``auto`` turns each drafting method
    without a variant into ``NAME@auto``; ``both`` adds ``NAME@auto`` right after ``NAME``.

    >>> expand_budget(["ar", "rest", "pld@x"], "both")
    ['ar', 'rest', 'rest@auto', 'pld@x']
    """
    if budget not in RUN_BUDGETS:
        raise ConfigError(f"--budget must be one of {', '.join(RUN_BUDGETS)}, got {budget!r}")
    out: list[str] = []
    for label in labels:
        plain = split_label(label)[1] is None and label != BASELINE
        if budget != "auto" or not plain:
            out.append(label)
        if budget != "default" and plain:
            out.append(f"{label}@{AUTO}")
    return out
