"""``budget=auto`` on llama.cpp runs a generation without the prompt's hidden states when it expects to skip.

llama.cpp outputs every prompt row's logits with the hidden states (about a quarter more prefill), so a budget that
skips drafting pays for states nobody reads. ``AutoBudget.prompt_states`` (``draft_or_skip.fetch_prompt_states``)
asks for them while warming up or drafting, and while skipping only as a probe the credit pays for; a generation
without them is blind (its steps are plain). Checked on a tiny llama.cpp model with a drafter that reads hidden
states: which prefills carry states, that a blind generation never calls the drafter and equals AR's output, that
the credit pays for the states, and that a drafter reading no states is never blind.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from llamacpp_fixtures import needs_llamacpp, tiny_backend
from specbench.budget.auto_budget import AutoBudget
from specbench.budget.draft_or_skip import WARM_STEPS
from specbench.engine.drafter import BaseDrafter
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree

pytestmark = needs_llamacpp
PROMPT = [5, 9, 13, 2, 7, 11, 3, 8, 21, 4]
NEW = 12


class StateReader(BaseDrafter):
    """Proposes a chain of two made-up tokens; records the width of the hidden states it was given."""

    reads_hidden_states = True

    def __init__(self, reads: bool = True) -> None:
        self.reads_hidden_states = reads
        self.widths: list[int] = []

    def propose(self, ctx):
        self.widths.append(int(ctx.hidden_states.shape[-1]) if ctx.hidden_states is not None else -1)
        return DraftTree.chain([3, 4])


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    model = make_tiny_model("llama", seed=3)
    return Engine(model, set(), backend=tiny_backend(model, tmp_path_factory.mktemp("states")))


def flat(n, context=None) -> np.ndarray:
    """A made-up forward of 1 ms a step (a probe's waste about 1 ms: the credits below pay for it)."""
    return 0.001 + 0.00001 * (np.asarray(n, dtype=float) - 1)


def skipping_budget(credit: float, waste: float = 0.0) -> AutoBudget:
    """A warm budget that skips (its drafts emitted one token each), the states' extra price known: 5 ms a row."""
    budget = AutoBudget(flat, calibrate=False)
    shared = budget.shared
    shared.gains.add(1, [1] * WARM_STEPS * 2, 2.0)
    shared.drafting, shared.probe_credit, shared.probe_waste = False, credit, waste
    shared.costs.observe_prefill(100, 1.0, True)
    shared.costs.observe_prefill(100, 0.5, False)
    return budget


def prefill_states(engine, monkeypatch) -> list[bool]:
    """Spy on the target: whether each prefill (a forward after 0 cached tokens) asked for hidden states."""
    seen: list[bool] = []
    run = engine.target.run

    def spy(ids, cache, n_ctx, *args, hidden=True, **kwargs):
        if n_ctx == 0:
            seen.append(hidden)
        return run(ids, cache, n_ctx, *args, hidden=hidden, **kwargs)

    monkeypatch.setattr(engine.target, "run", spy)
    return seen


def test_a_skipping_budget_runs_blind_and_matches_ar(engine, monkeypatch) -> None:
    ar = engine.generate(PROMPT, None, NEW).output_ids
    seen = prefill_states(engine, monkeypatch)
    drafter, budget = StateReader(), skipping_budget(credit=0.0)
    gen = engine.generate(PROMPT, drafter, NEW, budget=budget)
    assert seen == [False] and drafter.widths == []  # no states, so no draft: not even a probe
    assert gen.output_ids == ar
    assert gen.skipped_steps == len(ar) - 2 and gen.drafted_steps == 0  # (the last step has no room to draft)
    assert budget.shared.probe_credit > 0  # the blind steps still add to the probe credit


def test_the_credit_pays_for_the_states_and_a_probe_follows(engine, monkeypatch) -> None:
    ar = engine.generate(PROMPT, None, NEW).output_ids
    seen = prefill_states(engine, monkeypatch)
    extra = 0.005 * len(PROMPT)
    low = skipping_budget(credit=extra + 0.01, waste=0.02)  # below the states' price plus a probe's waste
    engine.generate(PROMPT, StateReader(), NEW, budget=low)
    drafter, budget = StateReader(), skipping_budget(credit=extra + 0.03, waste=0.02)
    gen = engine.generate(PROMPT, drafter, NEW, budget=budget)
    assert seen == [False, True]
    assert gen.output_ids == ar
    assert drafter.widths and drafter.widths[0] > 0  # the probe read the prompt's states


@pytest.mark.parametrize("state", ["warming up", "drafting"])
def test_states_are_fetched_while_warming_up_or_drafting(engine, monkeypatch, state) -> None:
    seen = prefill_states(engine, monkeypatch)
    budget = skipping_budget(credit=0.0) if state == "drafting" else AutoBudget(flat, calibrate=False)
    budget.shared.drafting = True
    engine.generate(PROMPT, StateReader(), NEW, budget=budget)
    assert seen == [True]


def test_a_drafter_reading_no_states_is_never_blind(engine, monkeypatch) -> None:
    seen = prefill_states(engine, monkeypatch)
    drafter = StateReader(reads=False)
    budget = skipping_budget(credit=0.0)
    budget.shared.probe_credit = 10.0  # a probe is due at once
    gen = engine.generate(PROMPT, drafter, NEW, budget=budget)
    assert seen == [False] and gen.drafted_steps >= 1 and drafter.widths


def test_the_extra_price_is_learned_from_both_kinds_of_prefill() -> None:
    budget = AutoBudget(flat, calibrate=False)
    costs = budget.costs
    assert costs.prompt_states_seconds(100) is None
    costs.observe_prefill(50, 0.30, True)
    costs.observe_prefill(80, 0.40, False)
    assert costs.prompt_states_seconds(100) == pytest.approx(100 * (0.30 / 50 - 0.40 / 80))
    budget.shared.drafting = False
    budget.shared.gains.add(1, [1] * WARM_STEPS, 2.0)
    assert budget.prompt_states(100) is False  # no credit
    budget.shared.probe_credit = 1.0
    assert budget.prompt_states(100) is True
    assert budget.shared.probe_credit == pytest.approx(1.0 - 0.1)
