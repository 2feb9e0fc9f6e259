"""A run's records grouped by input length: one group per long-input task and length (``long_low@2k``).

Each group is one report column (its ``subtask``, ``Long-low 2k``), so its per-method statistics are the
``run_stats`` cells of that column; a group adds what the length tables show beside them: its tier, the
length asked for, the mean prompt length built (less than asked when cut to fit the model) and the share
of AR's time spent in the prefill (which grows with the length and dominates on a CPU).

>>> from specbench.results.record import Record
>>> r = Record("ar", "long_low@2k", "Long-low 2k", "1", "00", "", 1, 0, 2048, 4, 2.0, 4, 0.0, 2.0,
...            [1, 1, 1, 1], prefill_time_s=1.5, context_length=2048)
>>> g, = length_groups([r])
>>> g.tier, g.length, g.subtask, g.prompt_tokens, g.ar_prefill_share
('Long-low', 2048, 'Long-low 2k', 2048.0, 0.75)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from specbench.catalog import BASELINE, order_subtasks, task_label
from specbench.results.record import Record


@dataclass
class LengthGroup:
    """The records of one long-input task at one input length."""

    tier: str  # the task's label: "Long-low"
    length: int  # tokens asked for (``--context-length``)
    subtask: str  # its report column: "Long-low 2k"
    records: list[Record] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> float:
        """Mean prompt length of the group's first turns (every method reads the same prompts)."""
        firsts = [r.prompt_tokens for r in self.records if r.turn == 1]
        return sum(firsts) / len(firsts) if firsts else float("nan")

    @property
    def ar_prefill_share(self) -> float | None:
        """AR's prefill seconds over its generation seconds in this group (None without AR prefill times)."""
        ar = [r for r in self.records if r.method == BASELINE and r.prefill_time_s is not None]
        wall = sum(r.wall_time_s for r in ar)
        return sum(r.prefill_time_s for r in ar) / wall if ar and wall > 0 else None  # type: ignore[misc]


def length_groups(records: list[Record]) -> list[LengthGroup]:
    """Groups of the records that carry a ``context_length``, in report order (tier, then length)."""
    groups: dict[str, LengthGroup] = {}
    for r in records:
        if r.context_length is None:
            continue
        g = groups.get(r.subtask)
        if g is None:
            g = groups[r.subtask] = LengthGroup(task_label(r.task.partition("@")[0]), r.context_length, r.subtask)
        g.records.append(r)
    return [groups[s] for s in order_subtasks(groups)]
