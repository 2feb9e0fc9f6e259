"""Each record looked at for a stall before it is written (``specbench.results.stalls``): a stalled generation is
said on stderr as it happens and flagged in the report and by ``check``; under ``--require-quiet`` it is refused.

``--require-quiet`` refuses rather than re-times: the stalled record is not written and the run stops in one line
(exit 2) naming it; re-running the same command resumes the run and times that generation again, on a machine the
user has had the chance to quiet (a re-time inside the run would meet the same stop or load again unseen).

Every batch size alike: a batch's records are written one after another once it finishes, so a stalled batch is
refused at its first record, none of it is written, and a resumed run times the whole batch again (a job is redone
whole when any of its records is missing, ``batch_runner.py``). A record's CPU rate is judged against the run's
records written before it (``seen``: those of earlier invocations, on a resume; ``check`` and the report judge
each against all of them).

>>> from types import SimpleNamespace as R
>>> class Writer:
...     def write(self, rec): print("written", rec.method)
>>> rec = R(method="ar", unit="gsm8k/1 turn 1 repeat 0", cpu_time_s=0.2, wall_time_s=20.3, batch_size=None,
...         batch_wall_time_s=None, step_times_s=None)
>>> StallWatch(Writer(), refuse=True).write(rec)
Traceback (most recent call last):
specbench.errors.UserError: ar gsm8k/1 turn 1 repeat 0 stalled: its process ran 0.20 CPU s in 20.30 wall s (20.10 s not running); --require-quiet refuses a stalled measurement (not written: run the same command again to time it again)
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

from specbench.errors import UserError
from specbench.results.cpu_rates import RunRates
from specbench.results.stalls import stall_reason


class StallWatch:
    """A record writer's stand-in: ``write`` checks the record for a stall, then writes it (``refuse``: raises a
    one-line ``UserError`` instead of writing a stalled one); ``seen``: the run's records already written."""

    def __init__(self, writer: Any, refuse: bool, seen: Iterable[Any] = ()) -> None:
        self.writer, self.refuse = writer, refuse
        self.rates = RunRates(seen)

    def write(self, rec: Any) -> None:
        reason = stall_reason(rec, self.rates)
        if reason and self.refuse:
            raise UserError(f"{rec.method} {rec.unit} stalled: {reason}; --require-quiet refuses a stalled measurement "
                            "(not written: run the same command again to time it again)")
        if reason:
            print(f"warning: {rec.method} {rec.unit} stalled: {reason}; the report and check flag it", file=sys.stderr)
        self.writer.write(rec)
        self.rates.add(rec)
