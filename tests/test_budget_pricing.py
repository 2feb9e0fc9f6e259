"""What ``budget=auto`` charges a choice for, on constructed costs and gains (nothing timed): a batch's padded forward
by how many sequences draft (``DraftGains.padded_forward``), a probe by what probes emitted (``probe_gain``), and a
cold sequence's draft by what cold drafted steps emitted (``cold_gain``)."""
from __future__ import annotations

import numpy as np
import pytest

from specbench.budget.draft_or_skip import DraftGains, SequenceState, choose, expected_gain

PLAIN_8 = 0.056  # a plain step of 8 sequences


def _price(rows: np.ndarray) -> np.ndarray:
    """A padded batch-8 forward: each row a sequence verifies beyond the first costs 10% of a plain step."""
    return PLAIN_8 * (1.0 + 0.1 * (np.asarray(rows, dtype=float) - 1.0))


def _batch_gains() -> DraftGains:
    """PLD-like drafting at batch 8: one drafting sequence in 8 finds a 5-node draft (6 rows), the others nothing;
    each drafting sequence emits 1.25 tokens on average; learned from steps in which one sequence drafted."""
    g = DraftGains()
    for i in range(64):
        found = i % 8 == 0
        g.add(8, [2 if i % 4 == 1 else 1], float(_price(6 if found else 1)) / PLAIN_8, rows=[6 if found else 1])
    return g


def test_padded_forward_grows_with_the_sequences_drafting() -> None:
    g = _batch_gains()
    ks = np.arange(9)
    priced = g.padded_forward(8, ks, _price, fallback=-1.0)
    wide = 1.0 - (7 / 8) ** ks  # P(at least one of k drafts is 6 rows wide)
    assert priced == pytest.approx(PLAIN_8 * (1.0 + 0.5 * wide))
    assert g.padded_forward(4, ks, _price, -1.0) == pytest.approx(priced)  # (size 4 unseen: every size's rows)
    assert (DraftGains().padded_forward(8, ks, _price, fallback=0.07) == 0.07).all()


def test_batch_of_eight_skips_where_the_mean_ratio_drafted_all() -> None:
    g, states = _batch_gains(), [SequenceState() for _ in range(8)]
    args = (g, [0.0002] * 8, [0.0] * 8, PLAIN_8, lambda drafted: 0.0)
    # priced at the mean ratio of steps where one sequence drafted (1.0625), all eight drafting looks 14% better
    assert choose(states, *args, active=8).k == 8
    # priced as the widest of the eight (65% of such steps are 6 rows wide), every choice loses to the plain step
    assert choose(states, *args, active=8, price_rows=_price).k == 0


def test_probe_is_credited_with_what_probes_emitted() -> None:
    g = DraftGains()
    for _ in range(20):  # drafted steps emit 1.5 tokens for twice a plain step's forward: skip
        g.add(1, [2], 2.0)
        g.add(1, [1], 2.0)
    args = ([SequenceState()], g, [0.0], [0.0], 0.040, lambda drafted: 0.0)
    before = choose(*args, active=1, first_probe_ratio=1.25)
    # before any probe, a probe is credited with a drafted step's mean (1.5): it looks like a gain of 10 ms
    assert before.k == 0 and before.waste[0] == pytest.approx(0.010 - 0.5 * 0.040, abs=5e-4)
    g.add(1, [1], 1.25, probe=True)  # a probe that found nothing to accept
    assert g.probe_gain(1, 9.0) == pytest.approx(1.0)
    # its 2-row forward's 10 ms, for no token
    assert choose(*args, active=1, first_probe_ratio=1.25).waste[0] == pytest.approx(0.010)


def test_cold_sequence_is_priced_by_cold_steps() -> None:
    g = DraftGains()
    for _ in range(20):  # streaks emit 5 tokens a drafted step, cold steps 1
        g.add(1, [5, 1], 1.5, hot=[True, False])
    cold, hot = SequenceState(), SequenceState(hot=True)
    args = (g, [0.0], [0.0], 0.040, lambda drafted: 0.0)
    assert expected_gain(g, cold, 1) == pytest.approx(1.0) and expected_gain(g, hot, 1) > 4.5
    assert choose([cold], *args, active=1).k == 0 and choose([hot], *args, active=1).k == 1
    assert g.gain(1) == pytest.approx(3.0, abs=0.05)  # (priced with every step's mean, the cold one drafted)


def test_a_probe_that_hit_counts_as_the_whole_draft_a_cold_hit_emits() -> None:
    """rest@auto's trap: a probe verifies only its drafter's first-token guesses, so one that hit emits 2 tokens
    where the whole draft would have emitted what a cold step that hit emits (here 3). Counted as 2, every hit
    probe pulled the cold mean down, and the more the budget probed, the more it skipped."""
    g = DraftGains()
    for _ in range(30):  # cold drafted steps: half miss (1 token), half hit (3 tokens): a cold mean of 2
        g.add(1, [1], 1.5)
        g.add(1, [3], 1.5)
    for _ in range(30):  # probes that behave alike: half miss, half hit (2 tokens: one guess and the bonus)
        g.add(1, [1], 1.2, probe=True)
        g.add(1, [2], 1.2, probe=True)
    assert g.cold_gain(1) == pytest.approx(2.0, abs=0.02)  # (counted as they came: 1.5)
    assert g.probe_gain(1, 9.0) == pytest.approx(1.5, abs=0.02)  # (what a probe itself emits: its own price)
    assert g.as_drafted(1, 1, True) == 1.0 and g.as_drafted(1, 2, False) == 2.0
