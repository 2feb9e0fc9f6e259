"""The properties ``check-method`` runs, in order, and the one function that runs them on a method.

Each property module has a ``NAME`` and a ``check(subject) -> Outcome``. A property whose run raises fails with
the exception in one line (a ``DrafterError`` from the engine's proposal check says what ``propose`` returned);
a method that cannot be built on the tiny models is a ``UserError`` before any property runs.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import torch

from specbench.conformance import (batched, best_first, exact, hidden, read_only, repeats, resume, sampled,
                                   skips)
from specbench.conformance.outcome import Outcome, failed
from specbench.conformance.world import CheckLimits, Subject
from specbench.errors import DrafterError, UserError

PROPERTIES = (exact, skips, batched, sampled, repeats, resume, hidden, best_first, read_only)
NAMES = tuple(p.NAME for p in PROPERTIES)


def run_property(prop, subject: Subject) -> Outcome:  # noqa: ANN001 (a module of PROPERTIES)
    """``prop.check(subject)``; anything it raises (a build error aside) is that property's failure."""
    try:
        return prop.check(subject)
    except DrafterError as e:
        return failed(prop.NAME, str(e))
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 (a drafter's own code raising is a finding, in one line)
        return failed(prop.NAME, f"raised {type(e).__name__}: {e}")


def check_method(name: str, options: dict[str, str], limits: CheckLimits = CheckLimits(),
                 emit: Callable[[Outcome], None] = lambda outcome: None,
                 only: tuple[str, ...] = NAMES) -> list[Outcome]:
    """Every property of ``only`` on method ``name`` built with ``options``, each ``emit``ted as it ends.

    The tiny models run on one thread (faster on them than several, and the other cores stay free); datastores
    are built in a temporary cache, removed at the end."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory(prefix="specbench-check-") as cache:
            subject = Subject(name, options, limits, Path(cache))
            for family in subject.families:
                subject.fresh(family)  # (a method that cannot be built: one line before any property)
            outcomes = []
            for prop in PROPERTIES:
                if prop.NAME in only:
                    outcomes.append(run_property(prop, subject))
                    emit(outcomes[-1])
            return outcomes
    finally:
        torch.set_num_threads(threads)
