"""``budget=auto``'s draft-or-skip choice (``budget/draft_or_skip.py``), its cost calibration (``budget/step_costs.py``)
and the report of both (``reports/auto_report.py``), on constructed costs and gains: nothing here is timed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from specbench.budget.auto_budget import AutoBudget
from specbench.budget.outcome import StepOutcome
from specbench.budget.draft_or_skip import (PROBE_COST, PROBE_TOKENS, WARM_STEPS, DraftGains, MethodLearning,
                                            SequenceState, best_k, choose)
from specbench.budget.step_costs import CATCH_UP_FREE, StepCosts, row_bucket
from specbench.reports.auto_report import auto_table, calibrated_speedup, drafted_share
from test_stats import fake_record


def flat_forward(rows: float) -> float:
    return 0.040 + 0.002 * (rows - 1)


def test_best_k_hand_worked() -> None:
    # one sequence, plain step 40 ms; drafting 10 ms + a 4-row forward of 48 ms: pays from 58/40 = 1.45 tokens on
    fwd = lambda k: 0.040 if k == 0 else 0.048  # noqa: E731
    assert best_k([1.46], [0.010], fwd, lambda k: 0.0, 1) == 1
    # ... but the plain step must win by more than SKIP_MARGIN (1%): from 1.45 x 0.99 = 1.4355 tokens on, it drafts
    assert best_k([1.44], [0.010], fwd, lambda k: 0.0, 1) == 1
    assert best_k([1.43], [0.010], fwd, lambda k: 0.0, 1) == 0
    assert best_k([1.41], [0.010], fwd, lambda k: 0.0, 1) == 0
    assert best_k([1.20], [0.010], fwd, lambda k: 0.0, 1) == 0
    # four sequences padded to 4 rows cost 4x40 ms plain, 4x48 ms drafted: the two of gain 3 draft, not the two of 1.1
    fwd4 = lambda k: 0.160 if k == 0 else 0.192  # noqa: E731
    assert best_k([3.0, 3.0, 1.1, 1.1], [0.010] * 4, fwd4, lambda k: 0.0, 4) == 2


def _learned(gain: float, ratio: float = 2.0, steps: int = 20, active: int = 1) -> DraftGains:
    """A budget whose drafted steps emitted ``gain`` tokens for ``ratio`` times a plain step's forward."""
    g = DraftGains()
    for _ in range(steps):
        g.add(active, [int(gain)], ratio)
    return g


def _plain_budget(gain: float, ratio: float) -> AutoBudget:
    """A budget with a flat 40 ms forward whose drafted steps emitted ``gain`` tokens for ``ratio`` times its price."""
    budget = AutoBudget(lambda n, context=None: np.full(np.shape(n), 0.040), calibrate=False)
    budget.gains = _learned(gain, ratio)
    return budget


def test_choose_warm_then_skip() -> None:
    s = SequenceState()
    # before WARM_STEPS drafted steps every candidate drafts, whatever the costs
    assert choose([s], DraftGains(), [0.0], [0.0], 0.040, lambda d: 0.0, active=1).drafting == [True]
    gains = _learned(1.0)  # drafting doubles the forward for nothing
    assert gains.drafted >= WARM_STEPS
    choice = choose([s], gains, [0.0], [0.0], 0.040, lambda d: 0.0, active=1)
    # skipped; its probe would waste a whole plain step: 80 ms for 1 token where a plain step costs 40
    assert choice.drafting == [False] and choice.seconds == pytest.approx(0.040)
    assert choice.waste == [pytest.approx(0.040)]
    # a drafter whose steps emit 3 tokens for twice the price drafts every step
    assert choose([SequenceState()], _learned(3.0), [0.0], [0.0], 0.040, lambda d: 0.0, active=1).drafting == [True]


def test_probes_spend_at_most_their_share_of_the_skipped_time() -> None:
    """A probe wasting half a plain step is made once PROBE_COST of the skipped steps' seconds covers it, one
    wasting ten steps twenty times less often; the credit outlives the generation."""
    for ratio, waste_steps in ((1.503, 0.503), (10.993, 9.993)):
        # drafted steps and a probe's two-row forward both cost ``ratio`` plain steps
        budget = AutoBudget(lambda n, context=None, r=ratio: np.where(np.asarray(n) >= 2, 0.040 * r, 0.040),
                             calibrate=False)
        budget.gains = _learned(1.0, ratio)
        due = math.ceil(waste_steps / PROBE_COST)  # steps whose credit covers the waste
        pattern = []
        for steps in (due // 2, due - due // 2):  # two generations: the credit carries over
            s = SequenceState()
            pattern += [budget.plan([s], 100)[0] for _ in range(steps)]
        assert pattern == [False] * (due - 1) + [True], ratio
        assert s.skipped_steps == due - due // 2 - 1 and budget.shared.probe_credit == 0.0


def test_catch_up_is_priced_and_spread_over_the_room_left() -> None:
    """EAGLE after a long prompt: reading 2000 missed rows costs 1 s. Drafting pays in steady state (3 tokens for
    twice a plain step's price); with 400 tokens left the catch-up is worth it, with 20 left it is not, and a
    probe is priced with the whole catch-up."""
    budget = _plain_budget(3.0, 2.0)
    budget.costs.observe_draft(4, 0.0)
    budget.costs.observe_draft(4, 1.0, catch_up=CATCH_UP_FREE + 2000)
    assert budget.costs.catch_up_seconds(CATCH_UP_FREE + 2000) == pytest.approx(1.0)
    ready = lambda room: SequenceState(unseen=CATCH_UP_FREE + 2000, room=room)  # noqa: E731
    assert budget.plan([ready(400)], 100) == [True]  # 1 s over ~133 drafted steps: 7.5 ms each
    budget.shared.probe_credit = 0.0
    assert budget.plan([ready(20)], 100) == [False]  # 1 s over ~7 steps: 150 ms each
    waste = choose([ready(20)], budget.gains, [0.0], [1.0], 0.040, lambda d: 0.0, active=1).waste[0]
    assert waste == pytest.approx(1.0 + 0.080 - PROBE_TOKENS * 0.040)  # (one node: 2 tokens at most, not 3)


def test_a_new_task_starts_from_the_method_s_other_tasks() -> None:
    """Budgets of one method share costs, probe credit and, until a task has WARM_STEPS drafted steps of its own,
    the gains: a second task whose first task found drafting a loss skips from its first step."""
    cost = lambda n, context=None: 0.040 + 0.005 * (np.asarray(n, dtype=float) - 1)  # noqa: E731
    shared = MethodLearning(StepCosts(cost, calibrate=False))
    first, second = AutoBudget(cost, shared=shared), AutoBudget(cost, shared=shared)
    assert second.costs is first.costs
    assert second.plan([SequenceState()], 100) == [True]  # nothing known anywhere: warm up
    s = SequenceState()
    for _ in range(WARM_STEPS):  # the first task: drafted steps emit 1 token at twice the price
        first.learn(StepOutcome(states=[s], drafted=[True], emitted=[1], draft_s=[0.0],
                                 depths=[4], padded_rows=8, context=100, verify_s=0.080, step_s=0.080))
    second.gains.add(1, [1], 1.0)  # (one drafted step of its own is not enough to go by)
    assert second.plan([SequenceState()], 100) == [False]
    assert AutoBudget(cost, calibrate=False).plan([SequenceState()], 100) == [True]  # unshared: warms up


def test_learn_counts_its_own_time_in_the_next_overhead(monkeypatch) -> None:
    import specbench.budget.auto as budget_mod

    clock = iter([0.0, 0.005, 1.0, 1.0])  # the first learn takes 5 ms of bookkeeping
    monkeypatch.setattr(budget_mod.time, "perf_counter", lambda: next(clock))
    budget = AutoBudget(lambda n, context=None: np.full(np.shape(n), 0.040), calibrate=False)
    s = SequenceState()
    budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                              depths=[0], padded_rows=1, context=100, verify_s=0.040, step_s=0.041))
    assert budget.costs.overhead(False) == pytest.approx(0.001)
    budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                              depths=[0], padded_rows=1, context=100, verify_s=0.040, step_s=0.041))
    assert budget.costs.overhead(False) == pytest.approx((0.001 * 0.97 + 0.006) / 1.97)


def test_choose_per_sequence_in_a_batch() -> None:
    """The sequences whose own drafted steps emitted most draft; the others run plain beside them."""
    gains = _learned(1.0, 1.3, active=4)  # over the budget, drafted steps emitted 1 token; padding costs +30%
    states = [SequenceState() for _ in range(4)]
    for s, g in zip(states, (1.0, 6.0, 1.0, 6.0)):  # but those of sequences 1 and 3 emitted 6 of late
        for _ in range(10):
            s.gain.add(g)
    choice = choose(states, gains, [0.002] * 4, [0.0] * 4, 0.100, lambda d: 0.0, active=4)
    assert choice.drafting == [False, True, False, True]


def test_step_costs_calibrate_per_bucket_and_batch() -> None:
    costs = StepCosts(lambda n, context=None: 0.01 * np.asarray(n, dtype=float))
    for _ in range(10):
        costs.observe_forward(1, None, 0.012)  # one row: 20% over the profile
        costs.observe_forward(6, None, 0.09)  # 4-7 rows: 50% over
    assert float(costs.forward(1, None)) == pytest.approx(0.012)
    assert float(costs.forward(5, None)) == pytest.approx(0.075)
    assert [float(x) for x in costs.forward(np.array([1, 4]), None)] == pytest.approx([0.012, 0.06])
    # 16 rows: no data in its bucket, so the ratio of all single-sequence forwards
    assert float(costs.forward(16, None)) == pytest.approx(0.16 * (0.12 + 0.9) / (0.1 + 0.6), rel=1e-2)  # (decayed)
    # a batched forward has its own table; none yet: the profile (here 4 x rows) as it is
    assert float(costs.forward(2, None, active=4)) == pytest.approx(0.08)
    assert row_bucket(7) == 2 and row_bucket(8) == 3
    off = StepCosts(lambda n, context=None: 0.01 * np.asarray(n, dtype=float), calibrate=False)
    off.observe_forward(1, None, 0.5)
    assert float(off.forward(1, None)) == pytest.approx(0.01)


def test_step_costs_overhead_and_draft_fallbacks() -> None:
    costs = StepCosts(lambda n, context=None: 0.01)
    assert costs.overhead(True) == 0.0 and costs.draft_seconds(4) == 0.0
    costs.observe_overhead(False, 0.002)
    assert costs.overhead(True) == pytest.approx(0.002)  # no drafted step yet: the plain steps' overhead
    costs.observe_overhead(True, 0.005)
    assert costs.overhead(True) == pytest.approx(0.005) and costs.overhead(False) == pytest.approx(0.002)
    costs.observe_draft(2, 0.004)
    costs.observe_draft(6, 0.012)
    # between known depths: interpolated; beyond the deepest: the last slope; below the shallowest: in proportion
    assert costs.draft_seconds(3) == pytest.approx(0.006) and costs.draft_seconds(5) == pytest.approx(0.010)
    assert costs.draft_seconds(9) == pytest.approx(0.018) and costs.draft_seconds(1) == pytest.approx(0.002)
    assert costs.draft_seconds(np.array([1, 4])) == pytest.approx([0.002, 0.008])
    assert costs.draft_seconds(6, active=8) == pytest.approx(0.012)  # another batch size: any size's figure


def test_budget_learns_and_predicts() -> None:
    budget = AutoBudget(lambda n, context=None: 0.010 + 0.001 * (np.asarray(n, dtype=float) - 1))
    s = SequenceState()
    # a drafted step: 5 rows predicted at 14 ms, took 28 ms (x2), drafting 3 ms, 1 ms besides; emitted 3 tokens
    budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[3], draft_s=[0.003],
                              depths=[4], padded_rows=5, context=100, verify_s=0.028, step_s=0.032))
    assert s.predicted_s == pytest.approx(0.014)  # priced before the step was learned: nothing calibrated yet
    assert s.predicted_ar_s == pytest.approx(3 * 0.010)
    assert s.drafted_steps == 1 and s.skipped == 0 and budget.last_depth == 4
    assert float(budget.costs.forward(5, 100)) == pytest.approx(0.028)
    assert budget.costs.draft_seconds(4) == pytest.approx(0.003)
    assert budget.costs.overhead(True) == pytest.approx(0.001)
    # the next identical step is priced with what the first taught it
    budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[3], draft_s=[0.003],
                              depths=[4], padded_rows=5, context=100, verify_s=0.028, step_s=0.032))
    assert s.predicted_s == pytest.approx(0.014 + 0.032)
    # drafted steps' forwards cost 1.4 plain ones (the 5-row price over the 1-row one, each at its step)
    assert budget.gains.forward_ratio(1) == pytest.approx(1.4) and budget.gains.gain(1) == pytest.approx(3.0)


def test_drafted_forward_is_the_mean_price_not_the_price_of_the_mean_width() -> None:
    """PLD verifies one row or seven; on a CPU whose T(4) is dear, pricing the mean width (4) would overstate it."""
    cost = lambda n, context=None: np.where(np.asarray(n) == 4, 0.080, 0.040 + 0.001 * (np.asarray(n) - 1))  # noqa
    budget = AutoBudget(cost, calibrate=False)
    s = SequenceState()
    for rows in (1, 7) * 5:
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[1 if rows == 1 else 4], draft_s=[0.0],
                                  depths=[6], padded_rows=rows, context=100, verify_s=0.04, step_s=0.04))
    assert budget.gains.forward_ratio(1) == pytest.approx((1.0 + 0.046 / 0.040) / 2, rel=0.02)


def test_auto_report_counts_drafted_steps_and_predictions() -> None:
    ar = [fake_record("ar", "gsm8k", q, 1, 0, [1] * 10, 1.0, [1] * 10, [0] * 10, None) for q in "ab"]
    auto = []
    for q in "ab":
        r = fake_record("pld@auto", "gsm8k", q, 1, 0, [1] * 10, 0.5, [1, 3, 3, 3], [0, 3, 3, 3], None)
        r.drafted_steps, r.skipped_steps, r.predicted_s, r.predicted_ar_s = 2, 1, 0.45, 0.9
        r.prefill_time_s = 0.05
        auto.append(r)
    assert drafted_share(auto) == pytest.approx(2 / 3)
    assert calibrated_speedup(auto) == pytest.approx(0.95 / 0.5)
    table = auto_table(ar + auto, None)
    assert table is not None and "1 of 1 subtask cells" in table.title
    row = table.keys[0]
    assert row[:4] == ["pld@auto", 1, "GSM8K", pytest.approx(2 / 3)]
    assert row[6] == pytest.approx(2.0) and row[5] == pytest.approx(1.9)
    assert auto_table(ar, None) is None


def test_plan_keeps_a_choice_to_skip_while_nothing_drafts(monkeypatch) -> None:
    """A choice to skip is priced once per ``REPLAN_STEPS`` steps, and again as soon as a step drafts (a probe)."""
    import specbench.budget.auto as budget_mod

    budget = AutoBudget(lambda n, context=None: 0.04 * np.asarray(n, dtype=float), calibrate=False)
    for _ in range(WARM_STEPS):
        budget.gains.add(1, [1], 5.0)  # drafted steps emitted 1 token for five times the price: skip
    priced = []
    real = budget_mod.choose
    monkeypatch.setattr(budget_mod, "choose", lambda *a, **k: priced.append(1) or real(*a, **k))
    s = SequenceState()
    pattern = [budget.plan([s], 100)[0] for _ in range(3 * budget_mod.REPLAN_STEPS)]
    assert not any(pattern) and len(priced) == 3
    budget.gains.add(1, [1], 5.0)  # a drafted step (say a probe) was learned: priced again at once
    budget.plan([s], 100)
    assert len(priced) == 4


def test_a_probe_verifies_at_least_one_node_whatever_the_learned_rates() -> None:
    """Suffix's trap: after early rejections every (depth, rank) rate is near 0, so ``select`` cut a probe's draft
    to nothing, nothing was verified and the rates never recovered. A probe now verifies its most likely node
    alone, priced as the probes seen so far; a step that drafts on its value may still keep none."""
    from specbench.engine.tree import DraftTree

    cost = lambda n, context=None: 0.040 + 0.010 * (np.asarray(n, dtype=float) - 1)  # noqa: E731
    budget = AutoBudget(cost, calibrate=False)
    budget.gains = _learned(1.0, 2.0)  # drafting loses: every step skips, probes come from the credit
    budget.stats.trials[:] = 1000.0  # every bucket rejected 1000 times
    tree = DraftTree((5, 6, 7), (-1, 0, 1))
    budget.shared.probe_credit = 1.0  # enough for a probe now
    s = SequenceState()
    assert budget.plan([s], 100) == [True] and s.probing
    assert budget.select(tree, context=100).keep == [0]
    # the probe's price is learned apart from full drafts': a plain step is 40 ms, drafted ones cost twice that, the
    # probe's 2-row forward 50 ms, so the next probe's waste is its 10 ms (a token of 1 at most: gains of 1.0)
    assert budget.gains.probe_ratio(1, 1.25) == pytest.approx(1.25)  # (none seen yet: the two-row forward's)
    budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[1], draft_s=[0.0],
                              depths=[3], padded_rows=2, context=100, verify_s=0.050, step_s=0.050))
    assert budget.gains.probe_ratio(1, 9.0) == pytest.approx(1.25) and budget.gains.forward_ratio(1) > 1.9
    waste = choose([SequenceState()], budget.gains, [0.0], [0.0], 0.040, lambda d: 0.0, active=1).waste[0]
    assert waste == pytest.approx(0.010)
    budget.shared.probe_credit = 0.0
    s2 = SequenceState()
    assert budget.plan([s2], 100) == [False] and not s2.probing
    budget.gains = _learned(3.0, 2.0, steps=30)  # drafting pays on its value, but these rates say none of the nodes does
    assert budget.plan([s2], 100) == [True] and not s2.probing
    assert budget.select(tree, context=100).keep == []
    # batched: only the probing sequence keeps a node; a sequence without a tree keeps none
    keeps = budget.select_batch([tree, tree, None], [0, 0, 0], lambda m, ctx: cost(m), 100,
                                probing=[False, True, True])
    assert keeps == [[], [0], []]


def test_a_probe_verifies_every_first_token_guess_of_a_wide_draft() -> None:
    """REST's trap: its first token is spread over several guesses of a tenth of a token each, so a probe of the
    first guess alone showed little of what drafting gains. A probe verifies the root's children (at most
    ``PROBE_WIDTH``, in the drafter's order), not their descendants, whatever the learned rates."""
    from specbench.budget.acceptance_stats import PROBE_WIDTH
    from specbench.engine.tree import DraftTree

    cost = lambda n, context=None: 0.040 + 0.010 * (np.asarray(n, dtype=float) - 1)  # noqa: E731
    budget = AutoBudget(cost, calibrate=False)
    budget.gains = _learned(1.0, 2.0)
    budget.stats.trials[:] = 1000.0
    budget.shared.probe_credit = 1.0
    s = SequenceState()
    assert budget.plan([s], 100) == [True] and s.probing
    wide = DraftTree((5, 6, 7, 8, 9), (-1, 0, -1, 2, -1))  # root children 0, 2, 4; their children 1, 3
    sel = budget.select(wide, context=100)
    assert sel.keep == [0, 2, 4] and sel.expected_seconds == pytest.approx(float(cost(4)))
    widest = DraftTree(tuple(range(PROBE_WIDTH + 3)), (-1,) * (PROBE_WIDTH + 3))
    assert budget.select(widest, context=100).keep == list(range(PROBE_WIDTH))
    keeps = budget.select_batch([wide, wide], [0, 0], lambda m, ctx: cost(m), 100, probing=[True, False])
    assert keeps == [[0, 2, 4], []]


def test_a_warm_budget_measures_the_plain_step_before_weighing_it() -> None:
    """eagle@auto's trap: it never ran a one-row forward, so the plain step was priced with the wide forwards'
    calibration (here 1.4 times the profile), drafting looked worth it, and every step drafted at a loss. A warm
    budget runs ``PLAIN_SEEN`` plain steps first; priced so, it skips."""
    from specbench.budget.step_costs import COST_DECAY, PLAIN_REFRESH, PLAIN_SEEN, STALE_WEIGHT

    cost = lambda n, context=None: 0.030 + 0.002 * (np.asarray(n, dtype=float) - 1)  # noqa: E731
    budget = AutoBudget(cost)  # calibrated online, as in a run
    for _ in range(20):  # drafted steps emit 1.8 tokens and verify 5 rows
        budget.gains.add(1, [1.8], 1.7, rows=[5])  # type: ignore[list-item]
    s = SequenceState()
    for _ in range(3):  # drafted steps of 5 rows, measured at 1.4 times T(5), plus 10 ms of drafting
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[2], draft_s=[0.010],
                                  depths=[4], padded_rows=5, context=100,
                                  verify_s=1.4 * 0.038, step_s=1.4 * 0.038 + 0.011))
    assert float(budget.costs.forward(1, 100)) == pytest.approx(1.4 * 0.030)  # (carried over from 5 rows)
    def drafts_on_value() -> bool:  # (``plan``'s choice before any probe)
        return choose([s], budget.gains, [0.010], [0.0], float(budget.costs.forward(1, 100)),
                      lambda d: budget.costs.overhead(d), active=1,
                      price_rows=lambda r: budget.costs.forward(r, 100)).k == 1

    assert drafts_on_value()
    for _ in range(PLAIN_SEEN):  # whatever drafting looks worth (just checked): 1.8 tokens / 64 ms > 1 / 43 ms
        assert budget.plan([s], 100) == [False] and not s.probing
        budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                                  depths=[0], padded_rows=1, context=100, verify_s=0.031, step_s=0.0315))
    assert s.skipped_steps == PLAIN_SEEN and not budget.costs.plain_unpriced(1)
    assert float(budget.costs.forward(1, 100)) == pytest.approx(0.031)
    assert not drafts_on_value()  # priced: 1.8 / 64 ms < 1 / 31.5 ms
    # a price measured in a slow spell is not kept for the rest of the run: after PLAIN_REFRESH wider forwards
    # the next step is plain again, and its measurement outweighs the stale one (which keeps STALE_WEIGHT)
    for _ in range(PLAIN_REFRESH):
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[2], draft_s=[0.010],
                                  depths=[4], padded_rows=5, context=100,
                                  verify_s=1.4 * 0.038, step_s=1.4 * 0.038 + 0.011))
    assert budget.costs.plain_unpriced(1) and budget.plan([s], 100) == [False] and not s.probing
    budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                              depths=[0], padded_rows=1, context=100, verify_s=0.020, step_s=0.0205))
    stale = STALE_WEIGHT * COST_DECAY  # (decayed once more as the fresh one is added)
    fresh = (stale * 0.031 + 0.020) / (stale + 1)
    assert float(budget.costs.forward(1, 100)) == pytest.approx(fresh) and not budget.costs.plain_unpriced(1)
    uncalibrated = AutoBudget(cost, calibrate=False)  # (a made-up profile: nothing to measure, no plain steps)
    uncalibrated.gains = _learned(2.0, 1.2)
    assert uncalibrated.plan([SequenceState()], 100) == [True] and not uncalibrated.costs.plain_unpriced(1)


@pytest.mark.parametrize("draft_s, refreshed_after", [(0.019, "near"), (0.005, "far")])
def test_a_narrow_lead_measures_the_plain_step_again_sooner(draft_s: float, refreshed_after: str) -> None:
    """hydra@auto's trap: a plain price learned in a slow spell (41-45 ms against AR's 36-39) made drafting look
    worth a few percent where it lost 13%. Where drafting leads plain by under ``NEAR_LEAD`` the plain step is
    measured again after ``PLAIN_REFRESH_NEAR`` drafted steps; where it leads by more, after ``PLAIN_REFRESH``."""
    from specbench.budget.step_costs import NEAR_LEAD, PLAIN_REFRESH, PLAIN_REFRESH_NEAR, PLAIN_SEEN

    cost = lambda n, context=None: 0.030 + 0.002 * (np.asarray(n, dtype=float) - 1)  # noqa: E731
    budget = AutoBudget(cost)
    for _ in range(20):  # drafted steps emit 2 tokens and verify 5 rows
        budget.gains.add(1, [2.0], 38 / 30, rows=[5])  # type: ignore[list-item]
    s = SequenceState()
    for _ in range(PLAIN_SEEN):
        assert budget.plan([s], 100) == [False]
        budget.learn(StepOutcome(states=[s], drafted=[False], emitted=[1], draft_s=[0.0],
                                  depths=[0], padded_rows=1, context=100, verify_s=0.030, step_s=0.030))
    plans = []
    for _ in range(PLAIN_REFRESH + 1):  # 2 tokens / (draft_s + 38 ms) against 1 / 30 ms: 5% or 40% ahead
        plans.append(budget.plan([s], 100)[0])
        if not plans[-1]:
            break
        budget.learn(StepOutcome(states=[s], drafted=[True], emitted=[2], draft_s=[draft_s],
                                  depths=[4], padded_rows=5, context=100, verify_s=0.038, step_s=0.038 + draft_s))
    near = budget._lead < NEAR_LEAD
    assert near == (refreshed_after == "near") and budget._lead > 0
    assert plans == [True] * (PLAIN_REFRESH_NEAR if near else PLAIN_REFRESH) + [False] and not s.probing


def test_one_batch_sizes_first_step_does_not_set_its_gain_alone() -> None:
    # batch size 1 learned 3 tokens per drafted step; one step of 4 sequences whose drafts found nothing (1 token
    # each) must not make size 4 skip for the rest of the run: its gain shrinks towards every size's mean
    g = DraftGains()
    for _ in range(30):
        g.add(1, [3], 1.2)
    g.add(4, [1, 1, 1, 1], 1.1)
    assert g.gain(4) > 2.0 and math.isclose(g.gain(2), g.gain(0))  # (an unseen size: every size's mean)
    s = SequenceState()
    fwd4 = lambda k: 0.160 if k == 0 else 0.192  # noqa: E731
    assert choose([s] * 4, g, [0.001] * 4, [0.0] * 4, 0.160, lambda drafted: 0.0, active=4).k == 4
    assert best_k([g.tokens[4].mean] * 4, [0.001] * 4, fwd4, lambda k: 0.0, 4) == 0  # (size 4's own mean: skips)
    for _ in range(60):  # its own steps outweigh the prior once there are many
        g.add(4, [1, 1, 1, 1], 1.1)
    assert g.gain(4) < 1.2
