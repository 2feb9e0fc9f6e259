"""The rows that time the baseline again (``ar@twin``): AR's very loop run as if it were a method, so their cells
differ from 1.00x only by the machine's drift between two timings of the same computation (the run's noise floor,
``specbench.reports.noise_floor``; ``specbench.results.plausibility`` widens its margin by it).

>>> twin_labels(["ar", "pld", "ar@twin", "arx@y"])
['ar@twin']
"""
from __future__ import annotations

from specbench.catalog import BASELINE
from specbench.config.method_labels import split_label


def twin_labels(methods: list[str]) -> list[str]:
    """The labels that time the baseline again (``ar@twin``), in run order."""
    return [m for m in methods if is_twin(m)]


def is_twin(label: str) -> bool:
    """Whether ``label`` is the baseline under a variant name (``ar@twin``)."""
    name, variant = split_label(label)
    return name == BASELINE and variant is not None
