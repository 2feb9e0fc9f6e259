"""A drafter's fault as the run reports it: the engine's one-line ``DrafterError`` with the method's label.

The engine checks every proposal at its boundary (``engine/proposal_check.py``) but never asks a method's name;
the runner knows which method it is timing, so each generation it runs is wrapped in ``method_faults(label)``.
The run then stops on that line (exit 2); the records written before it stay, each fsynced as it was written,
and re-running the command resumes once the drafter is fixed.

>>> from specbench.errors import DrafterError
>>> with method_faults("pld@auto"):  # doctest: +ELLIPSIS
...     raise DrafterError("its propose returned accept_depth=-5; it must be None or an integer >= 0")
Traceback (most recent call last):
...
specbench.errors.DrafterError: method pld@auto: its propose returned accept_depth=-5; it must be None or an integer >= 0
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from specbench.errors import DrafterError


@contextlib.contextmanager
def method_faults(method: str) -> Iterator[None]:
    """Inside the block, a ``DrafterError`` is re-raised with ``method {label}: `` in front."""
    try:
        yield
    except DrafterError as e:
        raise DrafterError(f"method {method}: {e}") from (e.__cause__ or e)
