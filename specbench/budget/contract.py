"""The draft budget's contract (issue 88): what the decode loops ask of a budget, whatever it is, so a step has one
way in and a new budget needs one class and one registration (``registry.py``), never an engine change.

A budget answers, each step of each sequence: whether it drafts (``plan``), how deep its drafter is asked
(``depth``, within ``room``), which nodes of the draft are verified (``keep``, ``keep_batch``), and learns what
was accepted (``observe``) and what the step did and cost (``learn``, a ``StepOutcome``). Three are built in:

- ``WholeDraft``: the method's paper setting, every draft verified whole (the null object: it answers "all");
- ``FixedDepth(k)``: every draft cut to depth k, and the drafter told so (``budget=K``);
- ``AutoBudget`` (``auto_budget.py``): draft or skip, how deep and what to verify, priced on this machine.

>>> whole, fixed = WholeDraft(), FixedDepth(2)
>>> whole.room(10), whole.depth(10, 100, False), fixed.room(10), fixed.depth(fixed.room(10), 100, False)
(10, 9, 3, 2)
>>> fixed.room(2), whole.plan([None, None], 100), whole.keep(None, 0.0, 0, 100)
(2, [True, True], None)
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from specbench.budget.draft_or_skip import SequenceState
from specbench.budget.outcome import StepOutcome
from specbench.tree.draft_tree import DraftTree


class Budget(Protocol):
    """What the decode loops (``engine/loop.py``, ``engine/batch_loop.py``, ``engine/step.py``) ask of a budget,
    and the runner: whether it carries what it learned from one generation to the next (then a run isolates its
    repeats from it as from a drafter's: ``run/drafter_state.py``; ``BaseDrafter.keeps_state_across_generations``)."""

    keeps_state_across_generations: bool

    def sequence(self) -> SequenceState | None:
        """A new sequence's state, which ``plan`` prices (None: the budget plans nothing; every step drafts)."""

    def prompt_states(self, rows: int) -> bool:
        """Whether a prompt of ``rows`` tokens runs with the hidden states its drafter reads, where they cost more."""

    def learn_prefill(self, rows: int, seconds: float, hidden: bool) -> None:
        """A prompt's forward of ``rows`` took ``seconds``, with (``hidden``) or without the hidden states."""

    def price_batches(self, batch_cost: Callable[..., Any]) -> None:
        """The batched forwards' costs (``profiling/batch_profile.py``) a batched loop prices steps with."""

    def plan(self, states: list[SequenceState], context: int | None, active: int = 1) -> list[bool]:
        """Whether each sequence of ``states`` drafts this step, in a forward of ``active`` after ``context``."""

    def room(self, room: int) -> int:
        """The tokens a step may emit under the budget when the generation may still emit ``room``: the draft is
        cut to one less."""

    def depth(self, room: int, context: int, hot: bool) -> int:
        """How deep the drafter is asked (at most ``room - 1``), after ``context`` tokens, in the ``hot`` regime."""

    def keep(self, tree: DraftTree, draft_s: float, aux_rows: int, context: int) -> list[int] | None:
        """The nodes of ``tree`` verified (tree order, prefix-closed; None: all), drafted in ``draft_s``."""

    def keep_batch(self, trees: list[DraftTree | None], aux_rows: list[int], context: int | None, draft_s: float,
                   probing: list[bool]) -> list[list[int]] | None:
        """Each tree's verified nodes in a batched step padded to the longest (None: all of every tree)."""

    def observe(self, tree: DraftTree | None, accepted: list[int], hot: bool) -> bool:
        """Learn a drafted step's accepted nodes; returns whether the sequence is hot now (``acceptance_stats``)."""

    def learn(self, outcome: StepOutcome) -> None:
        """Learn one step's outcome and seconds (``outcome.py``; ``auto.DraftBudget.learn``)."""


class WholeDraft:
    """The method's own draft, verified whole (its paper's setting): the budget that decides nothing."""

    keeps_state_across_generations = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def sequence(self) -> SequenceState | None:
        return None

    def prompt_states(self, rows: int) -> bool:
        return True

    def learn_prefill(self, rows: int, seconds: float, hidden: bool) -> None:
        return None

    def price_batches(self, batch_cost: Callable[..., Any]) -> None:
        return None

    def plan(self, states: list[Any], context: int | None, active: int = 1) -> list[bool]:
        return [True] * len(states)

    def room(self, room: int) -> int:
        return room

    def depth(self, room: int, context: int, hot: bool) -> int:
        return room - 1

    def keep(self, tree: DraftTree, draft_s: float, aux_rows: int, context: int) -> list[int] | None:
        return None

    def keep_batch(self, trees: list[DraftTree | None], aux_rows: list[int], context: int | None, draft_s: float,
                   probing: list[bool]) -> list[list[int]] | None:
        return None

    def observe(self, tree: DraftTree | None, accepted: list[int], hot: bool) -> bool:
        return False  # (only budget=auto reads the regime: the others pay nothing for it)

    def learn(self, outcome: StepOutcome) -> None:
        return None


class FixedDepth(WholeDraft):
    """``budget=K``: every draft cut to depth ``k``, as if only ``k + 1`` tokens were left, and the drafter told so."""

    def __init__(self, k: int) -> None:
        self.k = k

    def room(self, room: int) -> int:
        return min(room, self.k + 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.k})"


WHOLE_DRAFT = WholeDraft()  # (stateless: one serves every loop that is given no budget)
