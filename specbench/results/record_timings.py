"""The timing fields of a record, checked when it is read: each is a duration or an offset, so it is >= 0, and
the parts of one generation fit inside it. A record that breaks this was edited or corrupted: a negative
``wall_time_s`` would otherwise turn into a speedup (pld "2.17x +-42" where it ran at 1.00x).

Relations checked (``SLACK`` allows the 0.1 us rounding of per-pass times):

- a generation decoded alone (batch size 1): its time to first token (``prefill_time_s``), drafting
  (``draft_time_s``) and verification (``verify_time_s``) each fit in its ``wall_time_s``; a batched record's
  ``wall_time_s`` is an equal share of its batch's time, so these do not apply to it;
- a batched record: admitted no later than it finished, and finished within its batch's wall time.

>>> from specbench.results.record import Record
>>> r = Record("pld", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 1, -0.5, 1, 0.0, 0.1, [1], [0], [0.0], [7])
>>> timing_problem(r)
"field 'wall_time_s' must be >= 0 seconds, got -0.5"
>>> r.wall_time_s = 0.05
>>> timing_problem(r)
"field 'verify_time_s' (0.1 s) exceeds field 'wall_time_s' (0.05 s), the whole generation's time"
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specbench.results.record import Record

TIME_FIELDS = ("wall_time_s", "draft_time_s", "verify_time_s", "prefill_time_s", "batch_wall_time_s", "admitted_s",
               "finished_s")
TIME_LISTS = ("draft_times_s", "verify_times_s", "step_times_s")  # per forward pass
PARTS_OF_WALL = ("prefill_time_s", "draft_time_s", "verify_time_s")  # each within wall_time_s (batch size 1)
SLACK = 1e-6  # seconds: per-pass times are rounded to 0.1 us, their sums are not


def timing_problem(rec: "Record") -> str | None:
    """What is wrong with ``rec``'s times (the first problem, naming the field), or None.

    Types are checked before this (``run_folder``): every value here is a finite number or None."""
    for name in TIME_FIELDS:
        value = getattr(rec, name)
        if value is not None and value < 0:
            return f"field {name!r} must be >= 0 seconds, got {value}"
    for name in TIME_LISTS:
        negative = [(i, t) for i, t in enumerate(getattr(rec, name) or []) if t < 0]
        if negative:
            i, t = negative[0]
            return f"field {name!r} must hold times >= 0 seconds, got {t} at forward pass {i}"
    if (rec.batch_size or 1) == 1:
        for name in PARTS_OF_WALL:
            part = getattr(rec, name)
            if part is not None and part > rec.wall_time_s + SLACK:
                return (f"field {name!r} ({part} s) exceeds field 'wall_time_s' ({rec.wall_time_s} s), the whole "
                        "generation's time")
        return None
    if rec.admitted_s is not None and rec.finished_s is not None and rec.admitted_s > rec.finished_s + SLACK:
        return f"field 'admitted_s' ({rec.admitted_s} s) is after field 'finished_s' ({rec.finished_s} s)"
    if rec.finished_s is not None and rec.batch_wall_time_s is not None and \
            rec.finished_s > rec.batch_wall_time_s + SLACK:
        return (f"field 'finished_s' ({rec.finished_s} s) is after the batch's end (field 'batch_wall_time_s', "
                f"{rec.batch_wall_time_s} s)")
    return None
