"""A ``propose`` that never returns is named after a deadline, not waited on forever.

A drafter is plugin code (an outside author's, ``--plugins``): a loop that never ends would hang the run with no
word of which method is at fault. Each ``propose`` call runs under a timer (``setitimer``: two system calls a
step, a few microseconds); when it fires, the call is interrupted with a one-line ``DrafterError`` that the
runner prefixes with the method's label (exit 2; the records written before stay).

Only where a timer can interrupt: the main thread of a POSIX process. Elsewhere (a worker thread, Windows) the
call runs without a deadline. A hang inside one C call that never returns to Python is not interrupted by this.

>>> deadline_seconds({"SPECBENCH_PROPOSE_DEADLINE_S": "2.5"}), deadline_seconds({})
(2.5, 600.0)
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator, Mapping

from specbench.errors import ConfigError, DrafterError

DEADLINE_ENV = "SPECBENCH_PROPOSE_DEADLINE_S"
DEFAULT_DEADLINE_S = 600.0  # a 7B drafter's step on a CPU takes seconds; ten minutes in one call is a hang


class ProposeOverdue(DrafterError):
    """``propose`` ran past the deadline."""


def deadline_seconds(env: Mapping[str, str] = os.environ) -> float:
    """The deadline from ``SPECBENCH_PROPOSE_DEADLINE_S`` (seconds; 0 turns it off)."""
    try:
        return float(env.get(DEADLINE_ENV, DEFAULT_DEADLINE_S))
    except ValueError:
        raise ConfigError(f"{DEADLINE_ENV} must be a number of seconds, not {env[DEADLINE_ENV]!r}") from None


_current: list[float] = []  # the deadline of the call under way; empty until the handler is installed (once)


def _overdue(signum: int, frame: object) -> None:
    raise ProposeOverdue(f"its propose did not return within {_current[0]:g} s ({DEADLINE_ENV} sets the deadline)")


@contextlib.contextmanager
def propose_deadline() -> Iterator[None]:
    """Inside the block, a ``propose`` running past the deadline raises ``ProposeOverdue``."""
    seconds = deadline_seconds()
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    if not _current:
        signal.signal(signal.SIGALRM, _overdue)
        _current.append(seconds)
    _current[0] = seconds
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
