"""What a drafter carries from one generation to the next, and how the runner keeps it to timed work.

A drafter may learn across generations (SuffixDecoding's tree of earlier answers, Token Recycling's
matrix). The runner gives it only what an uninterrupted run would: warm-up runs on separate instances
(``Runner._warm_up``), ``learn`` sees each timed generation's finished output of the drafter's own
(method, task), and a resumed run ``replay``s the finished records in plan order before it goes on.

Example: plan order q1, q2, q3 for ``suffix`` on gsm8k, interrupted after q2. The uninterrupted run's
drafter learned q1's then q2's output before q3; the resumed run's fresh drafter is replayed q1, q2 from
the records, so q3 is drafted from the same state (for a drafter whose state comes only from ``learn``).

With ``--repeats`` every repeat of a unit starts from the state before its repeat 0 (``RepeatIsolation``):
only repeat 0's output is learned, and a later repeat runs on a copy of that state, so a repeat never
drafts from its own question's answer and the drafter's trajectory is the one of ``--repeats 1``. The same
holds for a ``budget=auto`` budget, which learns acceptance across generations too.

Sequences and batched pools learn and replay alike (``DrafterPools``, ``replay``): a sequence's drafter is a pool
of one in the slot (method, task), a batched pool one instance per sequence in flight in (method, task, size).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Hashable, Iterable, Sequence

from specbench.budget.contract import WHOLE_DRAFT
from specbench.prompts.task import Question
from specbench.results.record import Unit
from specbench.run.driver import DraftedJob


def learn(drafter: Any, prompt_ids: list[int], output_ids: list[int]) -> None:
    """Hand a finished generation to a drafter that learns across generations (``BaseDrafter.learn``);
    nothing for AR (no drafter)."""
    if drafter is not None:
        drafter.learn(list(prompt_ids), list(output_ids))


def keeps_state(part: Any) -> bool:
    """Whether a drafter or draft budget carries state from one generation to the next, as it declares
    (``BaseDrafter.keeps_state_across_generations``, ``Budget.keeps_state_across_generations``: ``budget=auto``'s
    acceptance counts and random draws); AR's None never."""
    return part is not None and bool(part.keeps_state_across_generations)


class RepeatIsolation:
    """Every timed repeat of a unit starts from the same state, the one before its repeat 0.

    What times a unit in a ``slot`` (the sequential runner's (method, task), a batched pool's (method,
    task, size)) is a list of ``parts``: its drafters and its budget. At repeat 0, when more repeats
    follow, the parts that keep state (``keeps_state``) are deep-copied into the slot's snapshot and repeat
    0 runs on the live parts, which learn its output as with ``--repeats 1``. Each later repeat runs on
    copies of the snapshot (the last one on the snapshot itself) and nothing learns from it. Stateless
    parts, drafters holding models among them, are never copied. A slot holds one snapshot: dropped at its
    unit's last repeat, replaced at the next unit's repeat 0.

    Example, ``suffix`` with ``--repeats 2``: snapshot S1, q1 r0 on the live drafter, which learns q1's
    answer; q1 r1 on S1 (q1's answer in no index); snapshot S2 (q1 learned once), q2 r0 live, q2 r1 on S2.
    A resumed run's ``replay`` calls ``keep`` where the run did, so the repeats it still has to time start
    from the same state.
    """

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        # slot -> (its unit(s) at repeat 0, the stateful parts' snapshots; None for a stateless part)
        self._snapshots: dict[Hashable, tuple[tuple[Unit, ...], list[Any]]] = {}

    @staticmethod
    def learns(unit: Unit) -> bool:
        """Whether ``unit``'s output is learned: repeat 0's alone (a later repeat repeats its question)."""
        return unit.repeat == 0

    def keep(self, slot: Hashable, units: Sequence[Unit], parts: Sequence[Any]) -> None:
        """Snapshot the stateful ``parts`` as the state every repeat of ``units`` starts from."""
        self._snapshots[slot] = (_at_repeat_0(units), [copy.deepcopy(p) if keeps_state(p) else None for p in parts])

    def later_pending(self, method: str, units: Sequence[Unit], done: Any) -> bool:
        """Whether a repeat after repeat 0 of ``units`` is missing from ``done`` (``(method, unit)`` keys)."""
        later = range(1, self.repeats)
        return any((method, dataclasses.replace(u, repeat=r)) not in done for u in units for r in later)

    def parts_for(self, slot: Hashable, units: Sequence[Unit], live: Sequence[Any]) -> list[Any]:
        """The parts that time ``units`` (one repeat of a job) in ``slot``: ``live`` at repeat 0 (snapshot
        first when repeats follow), else copies of the snapshot taken then."""
        repeat = units[0].repeat
        if self.repeats == 1:
            return list(live)
        if repeat == 0:
            self.keep(slot, units, live)
            return list(live)
        kept, snapshot = self._snapshots.get(slot, ((), []))
        if kept != _at_repeat_0(units):  # plan order times repeat 0 first; replay keeps it for a resumed run
            raise RuntimeError(f"no drafter state kept from repeat 0 of {units[0]} ({slot})")
        if repeat == self.repeats - 1:
            del self._snapshots[slot]
            return [p if s is None else s for s, p in zip(snapshot, live)]
        return [p if s is None else copy.deepcopy(s) for s, p in zip(snapshot, live)]


def _at_repeat_0(units: Sequence[Unit]) -> tuple[Unit, ...]:
    return tuple(dataclasses.replace(u, repeat=0) for u in units)


class DrafterPools:
    """The drafter instances of each slot, which learn every finished output of their slot together: a sequence's
    slot (method, task) holds the one drafter built up front (``open``); a batched pool's (method, task, batch
    size) one instance per sequence in flight, built as a job needs them (``grown``), a late one first learning what
    its pool has learned. ``fresh(method, task)`` builds an instance.

    >>> class Echo:
    ...     def __init__(self): self.seen = []
    ...     def learn(self, prompt, output): self.seen.append(output)
    >>> pools = DrafterPools(lambda method, task: Echo())
    >>> pools.open(("suffix", "gsm8k", 2))
    >>> first, = pools.grown(("suffix", "gsm8k", 2), 1)
    >>> pools.learn(("suffix", "gsm8k", 2), [1], [7, 8])
    >>> [d.seen for d in pools.grown(("suffix", "gsm8k", 2), 2)]  # the second instance caught up
    [[[7, 8]], [[7, 8]]]
    """

    def __init__(self, fresh: Callable[[str, str], Any]) -> None:
        self.fresh = fresh
        self._pools: dict[Hashable, list[Any]] = {}
        self._learned: dict[Hashable, list[tuple[list[int], list[int]]]] = {}  # slot -> what its instances learned

    def __contains__(self, slot: Hashable) -> bool:
        return slot in self._pools

    def open(self, slot: Hashable, drafters: Sequence[Any] = ()) -> None:
        """Start ``slot``'s pool with ``drafters`` (none: instances are built as jobs need them)."""
        self._pools[slot] = list(drafters)

    def grown(self, slot: Hashable, count: int) -> list[Any]:
        """The first ``count`` instances of ``slot``'s pool, the ones it lacks built now."""
        pool = self._pools[slot]
        while len(pool) < count:
            pool.append(self.fresh(slot[0], slot[1]))
            for prompt, output in self._learned.get(slot, []):  # a late instance catches up with its pool
                learn(pool[-1], prompt, output)
        return pool[:count]

    def learn(self, slot: Hashable, prompt_ids: list[int], output_ids: list[int]) -> None:
        """Every instance of ``slot`` (and every later one) learns this finished generation."""
        self._learned.setdefault(slot, []).append((prompt_ids, output_ids))
        for drafter in self._pools.get(slot, []):
            learn(drafter, prompt_ids, output_ids)

    def parts(self, job: DraftedJob, budgets: dict[tuple[str, str], Any]) -> list[Any]:
        """What times ``job`` live (``RepeatIsolation.parts_for``): its slot's drafters, then its (method, task)'s
        budget from ``budgets`` (``RunBudgets.by_slot``)."""
        return [*self.grown(job.slot, job.width), budgets.get((job.method, job.units[0].task), WHOLE_DRAFT)]


def replay(jobs: Iterable[DraftedJob], records: dict, prompt_for: Callable[[Unit, Question], list[int]],
           isolation: RepeatIsolation, pools: DrafterPools, budgets: dict[tuple[str, str], Any]) -> None:
    """Each slot's drafters learn its finished jobs' outputs (``records``: ``(method, unit) -> Record``), in plan
    order, the order an uninterrupted run learned them in: whole jobs only (a job redone whole learns when it
    runs), repeat 0's alone, and before a job whose later repeats are still to run, ``isolation`` keeps the state
    they start from (with the slot's budget as it is now: what a budget learned inside generations is not
    replayed). The sequential runner replays all its jobs up front, a batched pool its own when it is opened."""
    for job in jobs:
        if not isolation.learns(job.units[0]) or any((job.method, u) not in records for u in job.units):
            continue
        if isolation.later_pending(job.method, job.units, records):
            isolation.keep(job.slot, job.units, pools.parts(job, budgets))
        for unit, q in zip(job.units, job.questions):
            pools.learn(job.slot, prompt_for(unit.reference(), q), records[(job.method, unit)].output_ids)


def first_pending(todo: list[tuple[Unit, Question, str]]) -> dict[str, Question]:
    """task -> its first question left to run (the warm-up prompt), in the order the tasks come."""
    first: dict[str, Question] = {}
    for unit, q, _method in todo:
        first.setdefault(unit.task, q)
    return first
