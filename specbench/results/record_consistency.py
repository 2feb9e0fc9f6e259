"""A record's counts and times checked against each other when it is read: a record whose parts disagree was
edited, corrupted or written by a broken tool, and would otherwise become a figure (``new_tokens`` 1600 over 16
output ids read 559x at tau 100; every time scaled by 1e-6 read 23,455,954x; an imported wall time of 1e-9 s,
10,000,000,000x).

Relations checked (``specbench.results.record`` documents the conventions):

- ``new_tokens == len(output_ids)`` where the record has output ids (Spec-Bench imports have none: their
  ``new_tokens`` is Spec-Bench's count, and their ``accept_lengths`` its own convention, so the next two relations
  are not asserted for them);
- ``forward_passes == len(accept_lengths)`` and ``sum(accept_lengths) == new_tokens``: every pass, the prefill
  included, records the tokens it emitted, accepted draft tokens + the bonus token (AR: all ones); each is >= 1;
- a generation decoded alone: the sum of its step times (``step_times_s``, the prefill's entry its time to first
  token) fits in its ``wall_time_s`` (``SLACK`` per pass for their 0.1 us rounding), and ``wall_time_s`` exceeds
  that sum by at most ``UNTIMED_FACTOR`` times it plus ``UNTIMED_S``: outside its steps a generation only hands
  its result back (the cache allocation and the drafter's start are in the prefill's entry); an engine's request
  adds the stream's last event. Generous on purpose: a wall time of 1e9 s beside steps summing to seconds is
  refused, a slow tail never is. A batched record's steps fit in its batch's wall time;
- a forward pass takes at least ``MIN_PASS_S``: no framework runs a network's forward in under a microsecond
  (a kernel launch alone takes several; a 2-layer, 16-wide test model's pass takes about 1 ms on a CPU), so a
  record whose wall time (its batch's, when batched) is below ``MIN_PASS_S`` per forward pass (at least one) had
  its times scaled or forged. A rate that is possible but not from this run (tokens per second beyond tau's
  ceiling against AR) is ``specbench.results.plausibility``'s to flag.

A record that breaks one is refused where it is read, in one line naming the file, line and relation
(``run_folder.parse_record_line``: ``report``, ``check``, ``compare``, ``leaderboard``, ``merge``, a resume: exit 2):
nothing is pooled from a file that holds it.

>>> from specbench.results.record import Record
>>> r = Record("pld", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 1600, 0.1, 2, 0.0, 0.1, [1, 1], [0, 0], [0.0, 0.0],
...            [7, 8])
>>> consistency_problem(r)
"field 'new_tokens' (1600) differs from the number of output ids (2)"
>>> r.new_tokens, r.wall_time_s = 2, 1e-9
>>> consistency_problem(r)
"field 'wall_time_s' (1e-09 s) is below 1 us per forward pass (2 passes): times scaled or forged"
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from specbench.results.record_timings import timing_problem

if TYPE_CHECKING:
    from specbench.results.record import Record

MIN_PASS_S = 1e-6  # seconds: the least any forward pass of a network takes (see the module docstring)
SLACK = 1e-7  # seconds per pass: step times are rounded to 0.1 us each, their sum is compared unrounded
UNTIMED_FACTOR = 1.0  # wall time outside the steps: at most the steps' own sum again ...
UNTIMED_S = 5.0  # ... plus this many seconds


def record_problem(rec: "Record") -> str | None:
    """Everything a reader asserts of one record's times and counts, the first problem found, or None: its times'
    signs and sizes (``record_timings``), then how its parts agree (``consistency_problem``). The one test for
    every way a record enters a run: read from ``records.jsonl``, or built from an imported Spec-Bench answer."""
    return timing_problem(rec) or consistency_problem(rec)


def consistency_problem(rec: "Record") -> str | None:
    """What in ``rec`` disagrees with the rest of it (the first relation broken, naming the field), or None.

    Types and signs are checked before this (``run_folder``, ``record_timings``)."""
    return _count_problem(rec) or _time_problem(rec)


def _count_problem(rec: "Record") -> str | None:
    if not rec.output_ids:  # (a Spec-Bench import: its own token count and accept-length convention)
        return None
    if rec.new_tokens != len(rec.output_ids):
        return f"field 'new_tokens' ({rec.new_tokens}) differs from the number of output ids ({len(rec.output_ids)})"
    if not rec.accept_lengths:  # (schema 1 left them optional)
        return None
    if rec.forward_passes != len(rec.accept_lengths):
        return (f"field 'forward_passes' ({rec.forward_passes}) differs from the number of 'accept_lengths' "
                f"({len(rec.accept_lengths)}, one per forward pass)")
    short = [(i, a) for i, a in enumerate(rec.accept_lengths) if a < 1]
    if short:
        i, a = short[0]
        return f"field 'accept_lengths' holds {a} at forward pass {i}: every pass emits at least its bonus token"
    if sum(rec.accept_lengths) != rec.new_tokens:
        return (f"field 'accept_lengths' sums to {sum(rec.accept_lengths)} tokens, but the record emitted "
                f"{rec.new_tokens} (each pass's accepted draft tokens + 1, the prefill's 1 included)")
    return None


def _time_problem(rec: "Record") -> str | None:
    batched = (rec.batch_size or 1) != 1
    wall = rec.batch_wall_time_s if batched and rec.batch_wall_time_s is not None else rec.wall_time_s
    passes = max(rec.forward_passes, len(rec.accept_lengths), 1)
    if wall < MIN_PASS_S * passes:
        name = "batch_wall_time_s" if batched and rec.batch_wall_time_s is not None else "wall_time_s"
        return (f"field {name!r} ({wall:g} s) is below {MIN_PASS_S * 1e6:g} us per forward pass ({passes} "
                f"pass{'es' if passes != 1 else ''}): times scaled or forged")
    steps = rec.step_times_s
    if not steps:
        return None
    total = sum(steps)
    if total > wall + SLACK * (len(steps) + 1):
        what = "its batch's wall time (field 'batch_wall_time_s'" if batched else "its wall time (field 'wall_time_s'"
        return f"field 'step_times_s' sums to {total:.7g} s, more than {what}, {wall:.7g} s), which holds every step"
    if not batched and rec.wall_time_s > total * (1 + UNTIMED_FACTOR) + UNTIMED_S:
        return (f"field 'wall_time_s' ({rec.wall_time_s:.7g} s) is far above the sum of its steps "
                f"(field 'step_times_s', {total:.7g} s, the prefill's included): times edited or scaled")
    return None
