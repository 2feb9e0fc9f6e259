"""budget=auto: the engine-side choice of how much of a ranked draft to verify (constructed stats and costs;
exactness with a budget on tiny random models is in test_engine_exact.py), method labels and ``--budget``."""
import doctest
import itertools
import random

import numpy as np
import pytest

import specbench.budget.acceptance_stats as stats_mod
import specbench.budget.auto as budget_mod
import specbench.budget.draft_gains as gains_mod
import specbench.budget.draft_or_skip as skip_mod
import specbench.models.device as device_mod
import specbench.run.methods_factory as factory_mod
from specbench.config.method_labels import budget_of, expand_budget, label_options, split_label
from specbench.config.run_config import RunConfig
from specbench.budget.acceptance_stats import AcceptanceStats, sibling_ranks
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError
from specbench.run.methods_factory import method_config
from specbench.run.plan import make_plan


def linear(t1: float, slope: float):
    return lambda n, context=None: t1 + slope * (np.asarray(n) - 1)


def learned(cost, rate: float = 0.5, trials: float = 1e7) -> AutoBudget:
    """A budget whose every bucket has seen ``trials`` trials at ``rate``: its draws are ``rate`` (to 1e-3)."""
    b = AutoBudget(cost)
    b.stats.trials[:] = trials
    b.stats.accepted[:] = rate * trials
    return b


def test_doctests():
    for mod in (budget_mod, factory_mod, skip_mod, gains_mod, device_mod):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_chain_kept_whole_on_flat_cost_and_cut_on_steep_cost():
    chain = DraftTree.chain([4, 5, 6])
    # rate 0.5 everywhere: P = 0.5, 0.25, 0.125 (the module docstring's example)
    assert learned(linear(40, 2)).select(chain).keep == [0, 1, 2]
    assert learned(linear(40, 10)).select(chain).keep == [0]
    assert learned(linear(40, 40)).select(chain).keep == []
    # a cost curve with a bump at 2 rows (seen on this project's CPU): 3 nodes beat 1
    bump = {1: 40, 2: 52, 3: 44, 4: 45}
    bumpy = learned(lambda n, context=None: np.array([bump[int(k)] for k in np.atleast_1d(n)]))
    assert bumpy.select(chain).keep == [0, 1, 2]


def test_a_longer_context_makes_wide_drafts_dearer():
    from specbench.profiling.cost_profile import cost_function

    # T(1) = 40 ms at both contexts; T(n) grows 2 ms per token after 128 cached tokens, 10 ms after 512
    prof = {"latency_s": {"1": 0.040, "64": 0.166},
            "latency_by_context_s": {"128": {"1": 0.040, "64": 0.166}, "512": {"1": 0.040, "64": 0.670}}}
    cost = cost_function(prof)
    assert cost(33, 320) == pytest.approx((0.104 + 0.360) / 2) and cost(33) == pytest.approx(0.104)
    chain = DraftTree.chain([4, 5, 6])
    b = learned(cost)
    assert b.select(chain, context=128).keep == [0, 1, 2]
    assert b.select(chain, context=512).keep == [0]


def test_draft_time_and_aux_rows_enter_the_cost():
    chain = DraftTree.chain([4, 5, 6])
    # T(n) = 40 + 10 (n - 1): without draft time 1 node is best (1.5/50 > 1.75/60), with 200 sunk all 3
    # (1.875/270 > 1.75/260 > 1.5/250): the drafting already paid for weighs the verification cost down
    b = learned(linear(40, 10))
    assert b.select(chain).keep == [0]
    assert b.select(chain, draft_s=200).keep == [0, 1, 2]
    sel = b.select(chain, aux_rows=4)
    assert sel.expected_seconds == pytest.approx(40 + 10 * (4 + len(sel.keep)))


def test_thompson_draws_keep_trying_a_bucket_that_looked_bad():
    # 20 early trials at depth 1 with one acceptance: the mean (0.09) never pays for T(2) = 1.2 T(1),
    # but the posterior draws sometimes do, so the bucket is tried again
    chain = DraftTree.chain([4])
    b = AutoBudget(lambda n, context=None: 1.0 + 0.2 * (np.asarray(n) > 1))
    b.stats.trials[0, 0], b.stats.accepted[0, 0] = 20, 1
    tried = 0
    for _ in range(400):
        b.depth_hint()
        tried += bool(b.select(chain).keep)
        b.observe(None, [])  # nothing learned: only the decay
    assert 5 <= tried <= 200
    # well learned, a bad bucket is (almost) never drawn good
    sure = learned(lambda n, context=None: 1.0 + 0.2 * (np.asarray(n) > 1), rate=0.05)
    for _ in range(200):
        sure.depth_hint()
        assert not sure.select(chain).keep


def brute_force_best(b: AutoBudget, tree: DraftTree, cost) -> float:
    probs = b.path_probs(tree)
    best = 0.0
    for mask in itertools.product([0, 1], repeat=len(tree)):
        keep = [i for i in range(len(tree)) if mask[i]]
        if any(tree.parents[i] >= 0 and not mask[tree.parents[i]] for i in keep):
            continue
        best = max(best, (1 + probs[keep].sum()) / cost(1 + len(keep)))
    return best


@pytest.mark.parametrize("seed", range(20))
def test_selection_is_prefix_closed_and_optimal(seed):
    rng = random.Random(seed)
    cost = linear(1.0, rng.choice([0.01, 0.05, 0.2, 0.6]))
    b = AutoBudget(cost)
    b.stats.trials[:] = rng.choice([5, 50])
    b.stats.accepted[:] = b.stats.trials * np.array([[rng.random() for _ in range(8)] for _ in range(16)])
    n = rng.randint(1, 9)
    tree = DraftTree(tuple(rng.randrange(50) for _ in range(n)), tuple(rng.randint(-1, i - 1) for i in range(n)))
    sel = b.select(tree)
    assert all(tree.parents[i] in set(sel.keep) | {-1} for i in sel.keep)
    assert sel.expected_tokens / sel.expected_seconds == pytest.approx(brute_force_best(b, tree, cost))


def test_stats_count_trials_of_nodes_whose_parent_was_accepted():
    # root children 0 (rank 0) and 3 (rank 1); 0's children 1 (rank 0) and 2 (rank 1); accepted path 0 -> 2
    tree = DraftTree((5, 6, 7, 8), (-1, 0, 0, -1))
    assert sibling_ranks(tree) == [0, 0, 1, 1]
    s = AcceptanceStats()
    s.update(tree, [0, 2])
    assert s.trials[0, 0] == s.trials[0, 1] == s.trials[1, 0] == s.trials[1, 1] == 1
    assert s.accepted[0, 0] == 1 and s.accepted[0, 1] == 0 and s.accepted[1, 0] == 0 and s.accepted[1, 1] == 1
    s.update(tree, [])  # nothing accepted: only the root's children were tried; older counts decay
    assert s.trials[0, 0] == pytest.approx(stats_mod.DECAY + 1) and s.trials[1, 0] == pytest.approx(stats_mod.DECAY)
    assert 0 < s.rates().min() and s.rates().max() < 1


def test_a_cut_tree_is_learned_in_its_drafters_ranks():
    # the root's guesses 5, 6, 7 (ranks 0, 1, 2); the budget verified 6 and 7 alone, and 7 was accepted
    cut = DraftTree((5, 6, 7), (-1, -1, -1)).subtree([1, 2])
    s = AcceptanceStats()
    s.update(cut, [1])
    assert s.trials[0, 0] == 0 and s.trials[0, 1] == s.trials[0, 2] == 1  # not ranks 0 and 1 of the cut tree
    assert s.accepted[0, 2] == 1 and s.accepted[0, 1] == 0


def test_an_untried_sibling_is_priced_below_its_elder_and_the_siblings_within_one_token():
    # EAGLE's root guesses: the first accepted 40 times in 100, the second 10, the rest never tried. Priced at even
    # odds each (the prior alone), six untried guesses added 3 tokens a step that were never there.
    s = AcceptanceStats()
    s.trials[0, :2], s.accepted[0, :2] = 100.0, (40.0, 10.0)
    mean = np.mean([s.sample_rates(np.random.default_rng(seed))[0] for seed in range(400)], axis=0)
    assert mean[2] < 0.15 and mean[2:].sum() < 0.5 + 0.05  # what 0.40 and 0.10 leave of one token, with noise
    assert s.rates()[0].sum() < 1.05  # (a sibling whose elders leave nothing keeps MIN_PRIOR)


def test_depth_hint_follows_learned_acceptance():
    assert learned(linear(1.0, 0.001), rate=0.99).depth_hint() >= 10
    assert learned(linear(1.0, 0.5), rate=0.01).depth_hint() == 1  # never 0: the first depth keeps being tried


def test_depth_hint_prices_the_drafting_seconds_of_each_depth():
    # EAGLE-like: a flat 40 ms forward, p = 0.6 a depth; each depth asked costs a 2.5 ms draft forward
    flat = linear(0.040, 0.0)
    budget, free = learned(flat, rate=0.6), learned(flat, rate=0.6)
    for depth in (1, 6):
        budget.costs.observe_draft(depth, 0.0025 * depth)
    assert free.depth_hint() >= 10  # drafting priced at nothing: the deeper the better on a flat forward
    # a chain of k priced with its drafting at depth k: (1 + .6 + ... + .6^k) / (40 + 2.5 k) ms is best at k = 4
    # (0.0461 a ms; k = 3 and 5: 0.0458 and 0.0455); depth 5 would cost 2.5 ms more (6% of a plain forward): not tried
    assert budget.depth_hint() == 4
    # PLD-like: a lookup that costs the same at any depth keeps the deep draft
    same = learned(flat, rate=0.6)
    for depth in (1, 6):
        same.costs.observe_draft(depth, 0.0002)
    assert same.depth_hint() >= 10


def test_depth_hint_values_a_dear_depth_by_the_drafters_tree_not_its_first_guesses():
    # EAGLE-like: six root guesses (accepted 0.3, then 0.1 each), the first with a child (0.4 once it is accepted);
    # each depth drafted costs a 3 ms draft forward, a forward 40 ms + 0.5 ms a row
    budget = learned(linear(0.040, 0.0005), rate=0.5)
    budget.stats.accepted[0, :] = budget.stats.trials[0, :] * np.array([0.3] + [0.1] * 7)
    budget.stats.accepted[1, :] = budget.stats.trials[1, :] * 0.4
    for depth in (1, 2, 6):
        budget.costs.observe_draft(depth, 0.003 * depth)
    # the first guesses alone: 1.3 / 43.5 < 1.42 / 47 tokens a ms, so a second depth was asked
    assert budget.depth_hint() == 2
    eagle = DraftTree((5, 6, 7, 8, 9, 10, 11), (-1, -1, -1, -1, -1, -1, 0))
    budget.select(eagle)
    # with the other five guesses that one depth holds: 1.8 / 46 > 1.92 / 49.5: one deep
    assert budget.depth_hint() == 1


def test_labels_and_budget_option():
    assert split_label("dresd@5x5") == ("dresd", "5x5")
    assert label_options("rest@small", {"rest": {"c": "16"}, "rest@small": {"c": "8"}}) == {"c": "8"}
    assert budget_of("rest", {"budget": "auto"}) == "auto"
    with pytest.raises(ConfigError, match="budget must be one of"):
        budget_of("rest", {"budget": "fast"})
    with pytest.raises(ConfigError, match="drafting method"):
        budget_of("ar@auto", {"budget": "auto"})
    with pytest.raises(ConfigError, match="NAME@VARIANT"):
        split_label("rest@a.b")
    assert method_config("pld@auto", {"budget": "auto", "num_draft": "3"}).num_draft == 3
    assert expand_budget(["ar", "pld", "rest"], "auto") == ["ar", "pld@auto", "rest@auto"]
    with pytest.raises(ConfigError, match="--budget"):
        expand_budget(["pld"], "some")


def test_plan_expands_budget_both_and_keeps_old_digests(tmp_path):
    from specbench.run.plan import config_digest

    both = make_plan(RunConfig(methods=("pld", "rest"), tasks=("gsm8k",), limit=1, budget="both", out_dir=str(tmp_path)))
    assert both.methods == ["ar", "pld", "pld@auto", "rest", "rest@auto"]
    plain = make_plan(RunConfig(methods=("pld",), tasks=("gsm8k",), limit=1, out_dir=str(tmp_path)))
    # a default-budget run's digest is the one it had before --budget existed (resumable old runs)
    assert config_digest(plain) == "374e4f24"
    with pytest.raises(ConfigError, match="not in --methods"):
        make_plan(RunConfig(methods=("pld",), tasks=("gsm8k",), method_options={"rest@auto": {"c": "8"}}))
