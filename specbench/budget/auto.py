"""Draft budget (``budget=auto``): whether a step drafts at all, and how much of a ranked draft is worth verifying.

Before the drafter is called, ``plan`` prices the whole step both ways, drafting or plain, with the costs the
run's own steps calibrate (``draft_or_skip.py``, ``step_costs.py``); a step that does not draft runs as AR's.
Between propose and verify the engine then keeps the prefix-closed subset of the draft tree that maximises
expected tokens per second for this step:

    value(S) = (1 + sum over v in S of P(v)) / (T(1 + |S| + aux rows) + draft seconds)

- ``T(n)`` is the machine's cost profile (``specbench/profiling/cost_profile.py``): seconds of one target forward
  of ``n`` new tokens after the step's context (wide forwards cost more after a long context).
- ``P(v)`` is the probability that node ``v`` is accepted: the product, along its path, of the
  learned acceptance rate ``p(depth, rank)`` = P(node accepted | its parent accepted), where ``rank``
  is the node's position among its siblings. Every drafter lists a node's children best-first (REST
  and CREST by count, DReSD by neighbour order, ReDrafter by beam score, EAGLE and Medusa by
  probability, chains trivially), so the sibling rank is how a drafter ranks its nodes.
- ``p`` is learned online from every verification: each node whose parent was accepted is one trial
  of its ``(depth, rank)`` bucket, counted on a Beta(1, 1) prior. Counts decay a little every step, so
  recent text weighs more. Each step draws ``p`` from the buckets' Beta posteriors (Thompson sampling,
  seeded) instead of taking their means: a bucket that looked bad early (PLD on a first creative-writing
  answer) is still tried now and then and recovers when the text turns repetitive; with many trials
  the draws are close to the means.
- The buckets are kept per regime (``acceptance_stats.py``): a sequence whose last step accepted its whole draft is
  hot and draws from the hot buckets, whose untried depths start from the depth above; so a streak of whole
  accepts grows its draft as fast as the accepts show (suffix on a repeated HumanEval block: 17-token drafts).

Since ``p < 1``, a child's ``P`` is below its parent's, so for each size k the k nodes of highest ``P`` form a
prefix-closed subset and are the best subset of that size; the step keeps the best k, each k priced with its own T
(the cost curve need not be monotone: on this project's CPU a 2-row forward costs more than a 4-row one).

Example: a chain of 3 drafts with ``p = 0.5`` at every depth (well learned: the draws are 0.5), ``T(n) = 40 + 2 (n -
1)`` ms, no draft time: P = 0.5, 0.25, 0.125; values (1 + cum P) / T = 1/40, 1.5/42, 1.75/44, 1.875/46 tokens per ms
-> 0.0250, 0.0357, 0.0398, 0.0408: all 3 are kept. With ``T(n) = 40 (1 + (n - 1) / 4)``: 1/40, 1.5/50, 1.75/60,
1.875/70 -> only the first draft token is kept.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

# (the budget's label names live in its own room, below the loop; re-exported here for the loop's callers)
from specbench.budget.names import AUTO, BUDGETS, DEFAULT_BUDGET, RUN_BUDGETS  # noqa: F401
from specbench.budget.draft_or_skip import (PROBE_COST, WARM_STEPS, DraftGains, MethodLearning, SequenceState, choose,
                                            count_skips, fetch_prompt_states, probe)
from specbench.budget.acceptance_stats import AcceptanceStats, first_guesses, probe_nodes
from specbench.budget.draft_depth import best_depth
from specbench.budget.outcome import StepOutcome
from specbench.budget.step_costs import StepCosts
from specbench.tree.draft_tree import DraftTree

REPLAN_STEPS = 8  # steps a choice to skip every sequence is kept while nothing drafts
FREE_DEPTH = 0.02  # a depth's drafting seconds, over a plain forward's, below which it is tried beyond the best


@dataclass
class Selection:
    """The kept nodes (tree order) and the model's expected tokens and seconds for the step."""

    keep: list[int]
    expected_tokens: float
    expected_seconds: float


class DraftBudget:
    """Online per-step choices of ``budget=auto`` (one budget per drafter and task): whether a step drafts at all
    (``plan``, ``draft_or_skip.py``), and which subset of a ranked draft it verifies (``select``).

    ``cost(n, context)`` = seconds of a target forward of ``n`` new tokens (an array) after ``context``
    cached tokens (the cost profile's T, ``specbench/profiling/cost_profile.py``; ``context`` may be None);
    ``batch_cost(active, rows, context)`` the same for a padded batched forward (``profiling/batch_profile.py``).
    Both are calibrated online by the run's own step timings (``step_costs.py``, fed by ``learn``) unless
    ``calibrate`` is False (a made-up profile in a test). ``shared``: what this method's budgets on other tasks of
    the run learned (``draft_or_skip.MethodLearning``: costs, gains until this task is warm, probe credit).
    """

    def __init__(self, cost: Callable[..., np.ndarray], seed: int = 0,
                 batch_cost: Callable[..., np.ndarray] | None = None, calibrate: bool = True,
                 shared: MethodLearning | None = None) -> None:
        self.cost = cost
        self.shared = shared or MethodLearning(StepCosts(cost, batch_cost, calibrate))
        self.costs = self.shared.costs
        self.gains = DraftGains()  # this task's drafted steps
        self.stats = AcceptanceStats()
        self.rng = np.random.default_rng(seed)
        self.last_depth = 0  # the depth the last drafted step asked for (prices the next draft before it is made)
        # a kept choice to skip (``plan``): (shape, steps kept, credit per step, cheapest probe's waste)
        self._skip_all: tuple[tuple[int, int, int], int, float, float] | None = None
        self._learn_s = 0.0  # the last ``learn``'s own seconds: the next step's overhead includes them
        self._rates: dict[bool, np.ndarray] = {}  # this step's draw per regime (``depth_hint`` draws, ``select`` reuses it)
        self._hot = False  # the regime of the sequence ``depth_hint`` was last asked for (``acceptance_stats.py``)
        self._probing = False  # the last ``plan`` chose a probe (``select`` then keeps at least one node)
        self._lead = float("inf")  # the last priced choice's lead over a plain step (``StepCosts.plain_unpriced``)
        self._probe_spent = 0.0  # the credit the last ``plan``'s probe took (``learn`` gives back what it spared)
        self._active = 1  # the sequences of the last ``plan``'s forward (``depth_hint`` prices their drafting seconds)
        self._deepest: DraftTree | None = None  # the drafter's deepest draft so far (``depth_hint`` values depths by it)

    def _cost(self, n: np.ndarray, context: int | None) -> np.ndarray:
        """A drafting step's calibrated seconds besides the draft: the verify forward of ``n`` rows and the overhead."""
        return self.costs.forward(n, context) + self.costs.overhead(True)

    # -- draft or skip -------------------------------------------------------------------------------
    def plan(self, states: list[SequenceState], context: int | None, active: int = 1) -> list[bool]:
        """Whether each candidate sequence (``states``, those with a drafter and room for a draft; the loop sets
        their ``unseen`` and ``room``) drafts this step, in a forward of ``active`` sequences after ``context``
        cached tokens: those ``draft_or_skip.choose`` picks, and at most one probe the credit pays for.

        A choice to skip every sequence is kept for up to ``REPLAN_STEPS`` steps while nothing drafts and the
        credit stays below the cheapest probe (nothing it rests on changes then but the context, by a token a
        step): pricing a step costs about 0.3 ms in Python, 1% of a 40 ms plain step, and a plain step must cost
        what AR's does. Once warm, the first steps are plain until the plain forward's price is measured
        (``StepCosts.plain_unpriced``), not carried over from the wide forwards'."""
        shared, self._active = self.shared, active
        gains = self.gains if self.gains.drafted >= WARM_STEPS or shared.gains.drafted < WARM_STEPS else shared.gains
        if gains.drafted >= WARM_STEPS and self.costs.plain_unpriced(active, self._lead):  # (measured: step_costs)
            self._skip_all, self._probing = None, False
            return count_skips(states, [False] * len(states))
        shape = (len(states), active, gains.drafted)
        kept, credited = self._skip_all, False
        if kept is not None and kept[0] == shape and kept[1] < REPLAN_STEPS:
            shared.probe_credit, credited = shared.probe_credit + kept[2], True
            if shared.probe_credit < kept[3]:
                self._skip_all, self._probing = (shape, kept[1] + 1, kept[2], kept[3]), False
                return count_skips(states, [False] * len(states))
        costs = self.costs
        base = costs.draft_seconds(self.last_depth, active)
        plain = float(costs.forward(1, context, active))
        choice = choose(states, gains, [base] * len(states), [costs.catch_up_seconds(s.unseen, active)
                        for s in states], plain, lambda drafted: costs.overhead(drafted, active), active=active,
                        first_probe_ratio=self._first_probe(gains, plain, context, active),
                        price_rows=lambda rows: costs.forward(rows, context, active))
        drafting, self._lead = list(choice.drafting), choice.lead
        credit = PROBE_COST * choice.seconds * drafting.count(False) / active  # this step's, per skipped share
        if not credited:
            shared.probe_credit += credit
        chosen = probe(states, choice, shared.probe_credit)
        self._probe_spent = 0.0 if chosen is None else shared.probe_credit
        if chosen is not None:
            drafting[chosen], shared.probe_credit = True, 0.0
        self._skip_all = (shape, 1, credit, min(choice.waste)) if states and not any(drafting) else None
        if not all(s.blind for s in states):
            shared.drafting = choice.k > 0
            shared.probe_waste = min(choice.waste) if choice.k == 0 and states else shared.probe_waste
        self._probing = chosen is not None  # (``select``: a single sequence's probe keeps a node)
        return count_skips(states, drafting, chosen)

    def _first_probe(self, gains: DraftGains, plain: float, context: int | None, active: int) -> float | None:
        """Before any probe was seen, its forward over ``plain``: the cheapest of 2 up to the last depth + 1 rows
        (``acceptance_stats.probe_nodes`` widens to it); after, None (``choose`` then uses the probes' own ratio,
        unpriced here)."""
        if gains.probe_ratio(active, 0.0) != 0.0:  # (each planned step asks: pricing rows only until then)
            return None
        return float(np.min(self.costs.forward(np.arange(2, 3 + max(1, self.last_depth)), context, active))) / plain

    def prompt_states(self, rows: int) -> bool:
        """Whether a generation's prompt of ``rows`` tokens runs with the hidden states its drafter reads, where
        they cost more (``draft_or_skip.fetch_prompt_states``); without them the generation's steps are plain."""
        warm = max(self.gains.drafted, self.shared.gains.drafted) >= WARM_STEPS
        return fetch_prompt_states(self.shared, warm, self.costs.prompt_states_seconds(rows))

    def learn(self, outcome: StepOutcome) -> None:
        """Learn one step (``outcome.py``: each sequence's draft and tokens, the forward's and the step's seconds).
        Each state (None: a sequence without a drafter) first adds the step's price as predicted before this step
        was learned (its share of it)."""
        t0 = time.perf_counter()
        states, drafted, emitted, draft_s, depths = (outcome.states, outcome.drafted, outcome.emitted,
                                                     outcome.draft_s, outcome.depths)
        padded_rows, context, costs, active = outcome.padded_rows, outcome.context, self.costs, outcome.active
        called = [i for i, d in enumerate(drafted) if d]
        own_rows = {i: outcome.rows_of(i) for i in called}
        # a probe that found nothing (its root alone verified) is a plain step: it teaches nothing and spends only
        # its drafting seconds of the credit, so the next step probes again (pld@auto on GSM8K: 1 probe in 40 steps)
        empty = [i for i in called if own_rows[i] <= 1 and states[i] is not None and states[i].probing]
        for i in empty:
            self.shared.probe_credit += max(0.0, self._probe_spent - draft_s[i])
        used = [i for i in called if i not in empty]
        unseen = [0 if s is None else s.unseen for s in states]
        f_rows = float(costs.forward(padded_rows, context, active))
        forward_1 = f_rows if padded_rows == 1 else float(costs.forward(1, context, active))  # (a plain step: once)
        o_step = costs.overhead(bool(used), active)
        predicted = sum(costs.draft_seconds(depths[i], active) + costs.catch_up_seconds(unseen[i], active)
                        for i in called) + f_rows + o_step
        plain = forward_1 + (costs.overhead(False, active) if used else o_step)
        ratio = f_rows / forward_1 if forward_1 > 0 else 1.0
        if active == 1 and used and states[used[0]] is not None and states[used[0]].probing:
            # a probe is charged its priced waste, not the whole credit: one no dearer than a plain step (on this CPU
            # T(4) < T(1)) keeps it and the next step probes again (suffix@auto: 20-40 steps between probes)
            waste = predicted - emitted[used[0]] * plain
            self.shared.probe_credit += min(self._probe_spent, max(0.0, self._probe_spent - waste))
        for s, n in zip(states, emitted):
            if s is not None:
                s.predicted_s += predicted / active
                s.predicted_ar_s += n * plain / active
        costs.observe_forward(padded_rows, context, outcome.verify_s, active)
        overhead_s = outcome.step_s + self._learn_s - outcome.verify_s - sum(draft_s[i] for i in called)
        costs.observe_overhead(bool(used), overhead_s, active)
        for i in called:
            costs.observe_draft(depths[i], draft_s[i], active, unseen[i])
        if used:
            self.last_depth = max(depths[i] for i in used)
            probing = [states[i] is not None and states[i].probing for i in used]
            hot = [states[i] is not None and states[i].hot for i in used]
            rows = [own_rows[i] for i, p in zip(used, probing) if not p]
            verified = sum(own_rows[i] > 1 for i in used)
            for gains in (self.gains, self.shared.gains):  # (all probing: the step drafted only as a probe)
                gains.add(active, [emitted[i] for i in used], ratio, all(probing), hot=hot, rows=rows, probing=probing,
                          verified=verified)
        for i in used:  # (a skipped step was counted when ``plan`` chose it)
            s = states[i]
            if s is not None:
                s.gain.add(float(emitted[i]))
                s.skipped, s.drafted_steps = 0, s.drafted_steps + 1
        for i in empty:  # (plain, as far as its record goes: nothing drafted was verified)
            states[i].skipped, states[i].skipped_steps = states[i].skipped + 1, states[i].skipped_steps + 1
        self._learn_s = time.perf_counter() - t0  # (outside ``step_s``: the next step's overhead carries it)

    def _step_rates(self, hot: bool) -> np.ndarray:
        if hot not in self._rates:
            self._rates[hot] = self.stats.sample_rates(self.rng, hot)
        return self._rates[hot]

    def path_probs(self, tree: DraftTree, hot: bool | None = None) -> np.ndarray:
        """``P(v)`` per node: the product of this step's bucket rates along its path (in the ``hot`` regime or
        not; None: the one ``depth_hint`` was last asked for)."""
        depth, rank = AcceptanceStats.buckets(tree)
        p = self._step_rates(self._hot if hot is None else hot)[depth, rank]
        out = np.empty(len(tree))
        for i, parent in enumerate(tree.parents):
            out[i] = p[i] * (out[parent] if parent >= 0 else 1.0)
        return out

    def _remember(self, tree: DraftTree | None) -> None:  # (``depth_hint``'s shape: the deepest draft so far)
        if tree is not None and len(tree) and (self._deepest is None or tree.depth >= self._deepest.depth):
            self._deepest = tree

    def select(self, tree: DraftTree, draft_s: float = 0.0, aux_rows: int = 0, context: int | None = None) -> Selection:
        """The prefix-closed subset of ``tree`` with the most expected tokens per second, verified after
        ``context`` cached tokens; a probe (``plan``) verifies its drafter's first-token guesses alone
        (``first_guesses``; ``draft_or_skip.py``: a probe cut to nothing verified nothing, so low learned rates
        never recovered: suffix on GSM8K skipped 124 steps of an answer that drafting without ``auto`` ran in 78)."""
        self._remember(tree)
        probs = self.path_probs(tree)
        order = np.argsort(-probs, kind="stable")  # parents first on ties (a parent's index is smaller)
        gained = np.concatenate([[1.0], 1.0 + np.cumsum(probs[order])])  # [k] expected tokens keeping k nodes
        seconds = self._cost(np.arange(len(tree) + 1) + 1 + aux_rows, context) + draft_s
        k = int(np.argmax(gained / seconds))
        if self._probing and len(tree):
            return Selection(*probe_nodes(tree, probs, order, seconds))
        return Selection(sorted(order[:k].tolist()), float(gained[k]), float(seconds[k]))

    def select_batch(self, trees: list[DraftTree | None], aux_rows: list[int], cost_rows: Callable[..., np.ndarray],
                     context: int | None = None, draft_s: float = 0.0,
                     probing: list[bool] | None = None) -> list[list[int]]:
        """The kept nodes of each sequence of a batched step whose forward is padded to the longest one:
        every sequence keeps its most likely nodes up to ``m`` rows (root and auxiliary rows included), ``m``
        chosen for the most expected tokens of the whole batch per second of ``cost_rows(m, context)``; a
        sequence ``probing`` (``plan``) keeps its drafter's first-token guesses alone (``select``). Every sequence
        is priced cold (the batched loop keeps none hot: ``acceptance_stats.py``).

        Example: two sequences whose chains' nodes are accepted with 0.9 and 0.1: at ``m = 3`` the first
        gains 0.9 + 0.81 tokens and the second 0.1 + 0.01, both paying the 3-row padded forward.
        """
        _ = [self._remember(t) for t in trees]
        probs = [self.path_probs(t, False) if t is not None and len(t) else np.zeros(0) for t in trees]
        orders = [np.argsort(-p, kind="stable") for p in probs]
        sums = [np.concatenate([[0.0], np.cumsum(p[o])]) for p, o in zip(probs, orders)]
        ms = np.arange(max(1 + a for a in aux_rows), max(1 + a + len(p) for a, p in zip(aux_rows, probs)) + 1)
        gained = sum(1.0 + cum[np.clip(ms - 1 - a, 0, len(cum) - 1)] for cum, a in zip(sums, aux_rows))
        seconds = np.asarray(cost_rows(ms, context), dtype=float) + draft_s + self.costs.overhead(True, len(trees))
        m = int(ms[int(np.argmax(gained / seconds))])
        probing = probing or [False] * len(trees)
        keeps = [sorted(o[: max(0, m - 1 - a)].tolist()) for o, a in zip(orders, aux_rows)]
        return [first_guesses(t) if p and t is not None and len(t) else keep
                for t, keep, p in zip(trees, keeps, probing)]

    def depth_hint(self, context: int | None = None, hot: bool = False) -> int:
        """How deep a draft is worth making for a sequence in the ``hot`` regime or not (``draft_depth.py``; by the
        drafter's deepest draft where a depth costs more than ``FREE_DEPTH`` of a plain forward). Draws the rates."""
        self._rates, self._hot = {}, hot
        p = self._step_rates(hot)[:, 0]
        drafting = self.costs.draft_seconds(np.arange(1, len(p) + 2), self._active)  # [d - 1]: asked d deep
        free = FREE_DEPTH * float(self.costs.forward(1, context, self._active))
        shape = self._deepest if np.any(np.diff(drafting) > free) else None
        probs = np.zeros(0) if shape is None else self.path_probs(shape, hot)
        depths = np.zeros(0, int) if shape is None else np.array(shape.depths())
        seconds = self._cost(np.arange(len(probs) + len(p) + 1) + 1, context)
        return best_depth(probs, depths, np.cumprod(p), seconds, drafting, free)

    def observe(self, tree: DraftTree | None, accepted_nodes: list[int], hot: bool = False) -> None:
        """After every step that drafted (``tree`` None: nothing was verified) in the ``hot`` regime or not:
        learn, and end the step."""
        self.stats.update(tree, accepted_nodes, hot)
        self._rates = {}
