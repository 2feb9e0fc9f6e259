"""The draft budget's contract (``specbench/budget/contract.py``, issue 88): a new budget is one class and one
registration, and both decode loops run it with no change: here a budget that drafts on every other step of a
sequence, 2 deep, stays exact alone and batched, and its drafts and plain steps alternate as it says."""
from __future__ import annotations

import random

import pytest

from conftest import make_tiny_model
from test_batching import PerPrompt
from test_engine_exact import OracleDrafter, greedy_reference
from specbench.budget.contract import WholeDraft
from specbench.budget.draft_or_skip import SequenceState
from specbench.budget.registry import BUDGET_KINDS, make_budget, register_budget
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine


class EveryOther(WholeDraft):
    """Drafts on a sequence's first, third, fifth ... step, at most 2 deep; plain steps between."""

    def sequence(self) -> SequenceState:
        return SequenceState()

    def plan(self, states, context, active=1):
        out = []
        for s in states:
            go = (s.drafted_steps + s.skipped_steps) % 2 == 0
            s.drafted_steps, s.skipped_steps = s.drafted_steps + go, s.skipped_steps + (not go)
            out.append(go)
        return out

    def room(self, room: int) -> int:
        return min(room, 3)


@pytest.fixture
def every_other():
    register_budget("every-other")(lambda value, prices: EveryOther())
    yield make_budget("every-other")
    del BUDGET_KINDS["every-other"]


def alternates(gen) -> bool:
    """Drafted passes (after the prefill) and plain ones alternate, a drafted one first (the last may be cut)."""
    steps = gen.draft_sizes[1:]
    return all((size > 0) == (i % 2 == 0) for i, size in enumerate(steps[:-1])) and max(gen.draft_depths) == 2


def test_a_registered_budget_runs_alone(every_other) -> None:
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    prompt = [5, 9, 17, 33, 2, 41]
    ref = greedy_reference(model, prompt, 24)
    gen = engine.generate(prompt, OracleDrafter(ref, len(prompt), depth=5), 24, budget=every_other)
    assert gen.output_ids == ref
    assert alternates(gen), gen.draft_sizes
    assert gen.accept_lengths[1:4] == [3, 1, 3]  # the oracle's 2 cut nodes and the bonus; a plain step's token
    assert (gen.drafted_steps, gen.skipped_steps) != (0, 0)  # (its sequence's counts, as a record keeps them)


def test_a_registered_budget_runs_batched(every_other) -> None:
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(4)
    prompts = [[rng.randrange(4, 64) for _ in range(rng.randint(3, 9))] for _ in range(2)]
    refs = {tuple(p): greedy_reference(model, p, 16) for p in prompts}
    table = {p: OracleDrafter(r, len(p), depth=5) for p, r in refs.items()}
    gens = BatchDecoder(engine, 16, budget=every_other).generate([Request(p) for p in prompts],
                                                                 [PerPrompt(table) for _ in range(2)], 2)
    for p, g in zip(prompts, gens):
        assert g.output_ids == refs[tuple(p)] and alternates(g), g.draft_sizes


def test_unknown_budget_names_are_refused() -> None:
    with pytest.raises(KeyError, match="no draft budget named 'sometimes'"):
        make_budget("sometimes")


def test_a_registered_budget_is_a_method_labels_budget(every_other) -> None:
    """A label names a registered budget by its name (``budget_of``), the method factory builds it through the
    registry, and a run measures no cost profile for it (it prices nothing)."""
    from specbench.config.method_labels import budget_of
    from specbench.errors import ConfigError
    from specbench.run.methods_factory import budget_priced, build_budget

    assert budget_of("pld@alt", {"budget": "every-other"}) == "every-other"
    assert isinstance(build_budget("pld@alt", {"budget": "every-other"}), EveryOther)
    assert not budget_priced("pld@alt", {"budget": "every-other"}) and budget_priced("pld@auto", {"budget": "auto"})
    with pytest.raises(ConfigError, match="one of default, auto, every-other or a draft depth K >= 1, got 'fixed'"):
        budget_of("pld", {"budget": "fixed"})  # (the kind of a depth K is not a name)
    del BUDGET_KINDS["every-other"]
    with pytest.raises(ConfigError, match="one of default, auto or a draft depth"):
        budget_of("pld@alt", {"budget": "every-other"})
    register_budget("every-other")(lambda value, prices: EveryOther())


def test_a_run_asks_the_budget_whether_it_keeps_state(every_other) -> None:
    """Repeats are isolated from a budget that learns across generations as it declares
    (``Budget.keeps_state_across_generations``), not by its class."""
    from specbench.budget.registry import Prices
    from specbench.run.drafter_state import keeps_state

    auto = make_budget("auto", Prices(lambda n, context=None: 0.04 + 0.001 * n))
    assert keeps_state(auto) and not keeps_state(every_other) and not keeps_state(make_budget(2))

    class Learning(EveryOther):
        keeps_state_across_generations = True

    assert keeps_state(Learning())
