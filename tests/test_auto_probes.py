"""``budget=auto``'s probes, and steps whose drafter found nothing (PLD or REST with no match: the forward verified
the root alone, so such a step is a plain one that called the drafter). Constructed costs and steps; nothing is
timed."""
from __future__ import annotations

import numpy as np
import pytest

from specbench.budget.auto_budget import AutoBudget
from specbench.budget.outcome import StepOutcome
from specbench.budget.draft_or_skip import WARM_STEPS, DraftGains, SequenceState


def _flat_budget(wide: float = 0.044) -> AutoBudget:
    """A 40 ms one-row forward and ``wide`` seconds for any wider one, not calibrated by the steps below."""
    return AutoBudget(lambda n, context=None: np.where(np.asarray(n) >= 2, wide, 0.040), calibrate=False)


def test_steps_that_found_nothing_do_not_warm_the_budget_up() -> None:
    """pld@auto on a GSM8K answer: its first four lookups found nothing, so the budget had seen four drafted steps
    of 1 token and skipped the next 40 steps. Such steps say nothing of what a draft emits: the budget keeps
    drafting until WARM_STEPS drafts were verified, and those decide (here they pay: 2 tokens at 1.1 plain steps)."""
    budget, s = _flat_budget(), SequenceState()
    for _ in range(3 * WARM_STEPS):  # the drafter is called and finds nothing: one row, one token
        assert budget.plan([s], 100) == [True]
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[1], draft_s=[0.0001],
                                  depths=[4], padded_rows=1, context=100, verify_s=0.040, step_s=0.0402))
    assert budget.gains.drafted == 0
    for _ in range(WARM_STEPS):  # drafts of 4 tokens verified in 5 rows, 2 tokens each
        assert budget.plan([s], 100) == [True]
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[2], draft_s=[0.0001],
                                  depths=[4], padded_rows=5, context=100, verify_s=0.044, step_s=0.0442))
    assert budget.gains.drafted == WARM_STEPS
    # every step is in the means: 16 steps of which 4 emitted 2 tokens (decayed: the recent ones weigh more)
    assert 1.2 < budget.gains.gain(1) < 1.3 and budget.plan([s], 100) == [True]


def _skipping_budget(wide: float = 0.044) -> tuple[AutoBudget, SequenceState]:
    """A warm budget whose drafts of 5 rows emit 1 token for 1.5 plain steps: it skips, and probes once the credit
    allows. A probe's 2 or 3 rows cost ``wide`` seconds."""
    rows_cost = lambda n, context=None: np.where(np.asarray(n) >= 5, 0.060,  # noqa: E731
                                                 np.where(np.asarray(n) >= 2, wide, 0.040))
    budget, gains = AutoBudget(rows_cost, calibrate=False), DraftGains()
    for _ in range(20):
        gains.add(1, [1], 1.5, rows=[5])
    budget.gains = gains
    s = SequenceState()
    for _ in range(10_000):
        if budget.plan([s], 100) == [True]:
            return budget, s
        budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                                  depths=[0], padded_rows=1, context=100, verify_s=0.040, step_s=0.0401))
    raise AssertionError("the budget never probed")


def test_a_probe_that_found_nothing_keeps_the_credit_and_probes_again() -> None:
    """A probe whose lookup found nothing cost its lookup alone: it gives back the credit it took (less the
    lookup's seconds), is not a probe that missed in the means, counts as a plain step in the record, and the next
    step probes again."""
    budget, s = _skipping_budget()
    assert s.probing
    credit, probes_before = budget._probe_spent, budget.gains.probe_tokens.get(1)
    lookup = 0.0001  # (cheaper than a step's credit, 0.2 ms)
    budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[1], draft_s=[lookup],
                              depths=[1], padded_rows=1, context=100, verify_s=0.040, step_s=0.0403))
    assert budget.shared.probe_credit == pytest.approx(credit - lookup)
    assert budget.gains.probe_tokens.get(1) is probes_before and budget.gains.drafted == 20
    assert s.drafted_steps == 0 and s.skipped > 0
    assert budget.plan([s], 100) == [True] and s.probing


@pytest.mark.parametrize("wide, emitted, kept", [(0.044, 1, "some"), (0.044, 2, "all"), (0.038, 1, "all")])
def test_a_probe_is_charged_the_seconds_it_wasted(wide: float, emitted: int, kept: str) -> None:
    """A probe that verified its guess is charged its priced waste: its seconds beyond what its tokens cost at plain
    steps. One that missed at a dearer forward (44 ms against 40) spends part of the credit; one that hit, or whose
    forward is no dearer than a plain step's (38 ms), keeps all of it, and the next step probes again."""
    budget, s = _skipping_budget(wide)
    assert s.probing
    credit = budget._probe_spent
    budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[emitted], draft_s=[0.0001],
                              depths=[1], padded_rows=2, context=100, verify_s=wide, step_s=wide + 0.0003))
    assert s.drafted_steps == 1 and budget.gains.probe_tokens[1].known
    if kept == "all":
        assert budget.shared.probe_credit == pytest.approx(credit)
        assert budget.plan([s], 100) == [True] and s.probing
    else:  # (the 4 ms of forward beyond a plain step's, and the lookup's 0.1 ms as the profile prices it)
        assert 0.0 <= budget.shared.probe_credit < credit - 0.004 + 1e-9


def test_a_probe_widens_to_where_the_forward_is_cheapest() -> None:
    """On this project's CPU a 2-row forward costs more than a 4-row one: a PLD probe of its first guess alone paid
    the dearest forward to verify the least. A probe keeps the first guesses and widens to the cheapest forward,
    whatever the sampled rates (untried buckets draw near 0.5 and widened Token Recycling's probes to 15-25
    nodes); with a forward that grows with its rows it stays at the first guess."""
    from specbench.engine.tree import DraftTree

    chain = DraftTree((5, 6, 7, 8, 9), (-1, 0, 1, 2, 3))
    cpu = np.array([0.0, 0.040, 0.048, 0.041, 0.039, 0.045, 0.046])  # [n]: T(n), ms-shaped like this CPU's profile
    for cost, kept in ((lambda n: cpu[np.asarray(n)], 3),
                       (lambda n: 0.040 + 0.010 * (np.asarray(n, dtype=float) - 1), 1)):
        budget = AutoBudget(lambda n, context=None, c=cost: c(n), calibrate=False)
        budget.gains = DraftGains()
        for _ in range(20):
            budget.gains.add(1, [1], 2.0)
        # every bucket untried: each node draws near the prior's 0.5, so by value the probe would take the chain
        budget.shared.probe_credit = 1.0
        s = SequenceState()
        assert budget.plan([s], 100) == [True] and s.probing
        assert budget.select(chain, context=100).keep == list(range(kept))
        # before any probe, the probe is priced at the cheapest forward it may widen to (the last draft: depth 4)
        budget.last_depth = 4
        first = budget._first_probe(DraftGains(), 0.040, 100, 1)
        assert first == pytest.approx((0.039 if kept == 3 else 0.050) / 0.040)
        seen = DraftGains()
        seen.add(1, [1], 1.2, probe=True)
        assert budget._first_probe(seen, 0.040, 100, 1) is None  # (then the probes' own ratio prices them)
