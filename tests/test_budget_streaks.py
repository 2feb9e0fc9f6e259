"""budget=auto's two regimes (``budget/acceptance_stats.py``): a sequence whose last step accepted its whole draft
is hot; acceptance and tokens per drafted step are learned per regime, so a streak of whole accepts (a repeated
code block) drafts deep and keeps drafting where the pooled rates would cut it short or skip."""
from __future__ import annotations

import numpy as np

from specbench.budget.acceptance_stats import DECAY, AcceptanceStats, is_hot
from specbench.budget.auto_budget import AutoBudget
from specbench.budget.draft_or_skip import DraftGains, SequenceState, choose, expected_gain
from specbench.engine.tree import DraftTree


def flat(n, context=None):
    """A forward of ``n`` rows: 40 ms plus 1 ms a row."""
    return 0.040 + 0.001 * (np.asarray(n, dtype=float) - 1)


def test_is_hot_needs_the_deepest_node_accepted() -> None:
    tree = DraftTree((5, 6, 7, 8), (-1, 0, 1, -1))  # a chain of 3 and a second first token
    assert is_hot(tree, [0, 1, 2])
    assert not is_hot(tree, [0, 1]) and not is_hot(tree, []) and not is_hot(DraftTree.chain([]), [])
    assert is_hot(DraftTree.chain([9]), [0])  # a probe's single node, accepted


def test_trials_are_counted_in_their_own_regime() -> None:
    stats = AcceptanceStats()
    chain = DraftTree.chain([4, 5])
    stats.update(chain, [0, 1], hot=True)
    stats.update(chain, [], hot=False)
    assert stats.hot_trials[0, 0] == stats.hot_accepted[1, 0] == DECAY  # (decayed by the second step)
    assert stats.trials[0, 0] == 1 and stats.accepted[0, 0] == 0 and stats.trials[1, 0] == 0


def test_untried_hot_depths_start_from_the_depth_above() -> None:
    stats = AcceptanceStats()
    stats.hot_trials[:3, 0] = stats.hot_accepted[:3, 0] = 200.0  # depths 1-3 of hot steps: always accepted
    stats.trials[:, 0], stats.accepted[:, 0] = 200.0, 60.0  # cold steps: 30% at every depth
    rng = np.random.default_rng(0)
    hot = np.mean([stats.sample_rates(rng, hot=True)[3:8, 0] for _ in range(400)], axis=0)
    cold = np.mean([stats.sample_rates(rng)[3:8, 0] for _ in range(400)], axis=0)
    assert (hot > 0.85).all(), hot  # untried depths 4-8 inherit depth 3's rate, not even odds
    assert np.allclose(cold, 0.3, atol=0.03), cold
    fresh = AcceptanceStats()  # nothing learned: the hot prior is the cold one's even odds
    assert abs(np.mean([fresh.sample_rates(rng, hot=True)[5, 0] for _ in range(2000)]) - 0.5) < 0.03


def test_a_streak_verifies_a_deep_draft_that_cold_steps_would_cut() -> None:
    budget = AutoBudget(flat, calibrate=False)
    budget.stats.trials[:] = 1000.0
    budget.stats.accepted[:] = 400.0  # cold: 40% at every depth
    budget.stats.hot_trials[:6, 0] = budget.stats.hot_accepted[:6, 0] = 1000.0  # hot: depths 1-6 always accepted
    chain = DraftTree.chain(list(range(100, 124)))
    assert budget.depth_hint(hot=False) <= 4  # (P = 0.4, 0.16, 0.064: three nodes pay at 1 ms a row, plus one)
    cold = budget.select(chain).keep
    assert budget.depth_hint(hot=True) >= 16
    hot = budget.select(chain).keep
    assert len(cold) <= 3 and len(hot) >= 16, (cold, hot)
    # in a batch every sequence is priced cold, whatever the regime ``depth_hint`` was last asked for
    assert len(budget.select_batch([chain, chain], [0, 0], flat)[0]) <= 3


def test_a_hot_sequence_drafts_where_the_pooled_mean_skips() -> None:
    gains = DraftGains()
    for _ in range(40):  # cold drafted steps emit 1 token, hot ones 4, at twice a plain step's forward
        gains.add(1, [1], 2.0, hot=[False])
    for _ in range(10):
        gains.add(1, [4], 2.0, hot=[True])
    cold, hot = SequenceState(), SequenceState(hot=True)
    assert expected_gain(gains, cold, 1) < 2.0 < expected_gain(gains, hot, 1)
    args = ([0.0], [0.0], 0.040, lambda drafted: 0.0)
    assert choose([cold], gains, *args, active=1).drafting == [False]
    assert choose([hot], gains, *args, active=1).drafting == [True]
