"""Every registered drafter lists a node's children best first (the drafter contract's obligation 2,
``specbench/engine/drafter.py``), which ``budget=auto``'s acceptance model assumes: it learns an acceptance rate
per (depth, sibling rank) and keeps the best nodes by it (``budget/auto.py``).

Each method runs on the golden test's tiny random Llama (``test_golden.tiny``: vocab 64, character tokenizer,
datastores over the model's own continuations, untrained heads; everything seeded, so a checkout passes or fails
deterministically) over the golden prompts, its proposals and verifications recorded. Three kinds of check:

- ``RANKED``: the drafter's own ranking, recomputed (or recorded from its tree builder) at each proposal, must be
  non-increasing among every node's children in tree order:
  rest by its trie counts (the retrieved continuations sharing a node's path), recycling by the position of a
  child in its adjacency row (the target's top-k there, best first; rows never written are skipped: all zeros),
  medusa by its heads' logits, hydra by its heads' logits along the path, eagle and eagle3 by the log-probability
  their draft gives each child (recorded from ``dynamic_tree`` / ``static_tree``), redrafter by the best beam
  score through a node, ddtree by the summed log-probability of a node's path under its block's rows (recorded
  from ``best_first_tree``);
- ``OBSERVED`` (a ranking the test cannot read back: crest's stored trees): what the engine sees. Over every
  verified sibling group whose parent was accepted (the root always is), a child at rank 0 must be accepted at
  least once and at least as often as a child at rank 1; with ``MIN_GROUPS`` such groups at least, or the check proves nothing;
- ``CHAINS``: drafters that propose chains (best first trivially) never propose siblings (and do draft); AR
  proposes nothing.

``UNCHECKED`` lists the methods not checked yet, each with its reason (lookahead breaks the rule on the tiny
model). A new method fails ``test_every_method_is_classified`` until it is put in one of them.

Example of what fails: a REST whose trie lists children by first occurrence instead of count would draft
``[1, 4]`` under a node whose continuations read ``1`` once and ``4`` three times: the counts ``1, 3`` increase.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
import torch

from specbench.engine.drafter import DraftContext, Proposal, StepResult
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from specbench.paths import default_data_dir
from specbench.plugins.registry import METHODS
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from test_golden import MAX_NEW, TINY_OPTIONS, tiny  # noqa: F401  (the fixture: tiny model, tokenizer, golden, cache)

Scores = list[float | None]  # per proposed node: the drafter's own score (higher = better), None = unranked
Scorer = Callable[[Any, DraftContext, DraftTree], Scores]
MIN_GROUPS = 20  # verified sibling groups an OBSERVED method must show (fewer: the comparison means nothing)


@dataclass
class Step:
    proposed: DraftTree | None
    scores: Scores | None = None
    verified: DraftTree | None = None
    accepted: list[int] = field(default_factory=list)


def paths(tree: DraftTree) -> list[tuple[int, ...]]:
    """Each node's tokens from the root's child down to it."""
    out: list[tuple[int, ...]] = []
    for t, p in zip(tree.tokens, tree.parents):
        out.append((out[p] if p >= 0 else ()) + (int(t),))
    return out


# -- RANKED: the drafter's own ranking ------------------------------------------------------------------------------


def rest_counts(drafter: Any, ctx: DraftContext, tree: DraftTree) -> Scores:
    """How many retrieved continuations (those ``rest_tree`` counted) start with each node's path."""
    cfg, ds = drafter.config, drafter.ds
    s = ds.longest_suffix_match(ctx.tokens, cfg.n_max, cfg.n_min)
    counts: Counter = Counter()
    for row in ds.continuations(list(ctx.tokens[-s:]), cfg.k, cfg.m).tolist():
        for n in range(1, len(row) + 1):
            if row[n - 1] < 0:
                break
            counts[tuple(row[:n])] += 1
    return [float(counts[p]) for p in paths(tree)]


def recycling_positions(drafter: Any, ctx: DraftContext, tree: DraftTree) -> Scores:
    """Minus each node's position in its parent token's adjacency row (None below a row never written).

    Called before the step is verified, so the matrix is the one ``propose`` read."""
    m = drafter.matrix
    inputs = [ctx.tokens[-1], *tree.tokens]
    out: Scores = []
    for t, p in zip(tree.tokens, tree.parents):
        parent = inputs[p + 1]
        row = m.matrix[parent].tolist()
        out.append(-float(row.index(t)) if m.seen[parent] and t in row else None)
    return out


def medusa_logits(drafter: Any, ctx: DraftContext, tree: DraftTree) -> Scores:
    """Head ``d - 1``'s logit of each node at depth ``d`` (Medusa's heads all read the root's hidden state)."""
    from specbench_methods.medusa.method import HEADS_DTYPE

    assert drafter.heads.ids is None, "a restricted vocabulary: map the ids first"
    with torch.inference_mode():
        logits = drafter.heads(ctx.hidden.unsqueeze(0).to(HEADS_DTYPE))[0]  # [K, V]
    return [float(logits[d - 1, t]) for d, t in zip(tree.depths(), tree.tokens)]


class BuilderScores:
    """Scores recorded from inside a method's tree builder (patched where the method's module looks it up): the
    builder's own tree, in the draft's ids, and each node's score; the proposal must keep that tree's shape."""

    def __init__(self) -> None:
        self.tree: DraftTree | None = None
        self.scores: Scores = []

    def __call__(self, drafter: Any, ctx: DraftContext, tree: DraftTree) -> Scores:
        assert self.tree is not None and self.tree.parents == tree.parents, "the proposal is not the builder's tree"
        return self.scores


def eagle_builder(module: Any, name: str, monkeypatch: pytest.MonkeyPatch, scores: BuilderScores) -> None:
    """Wrap ``module.name`` (``dynamic_tree``, ``static_tree``: ``builder(first, expand, ...)``) so that every
    distribution it reads is kept by the path it continues; each node scores its parent's log-prob of it."""
    real = getattr(module, name)

    def builder(first: torch.Tensor, expand: Callable, *args: Any) -> DraftTree:
        dists = {(): first.detach().float().cpu()}
        path_of: dict[int, tuple[int, ...]] = {}

        def recorded(nodes: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
            out = expand(nodes, tokens, parents)
            for n, t, p, row in zip(nodes, tokens, parents, out):
                path_of[n] = (path_of[p] if p >= 0 else ()) + (int(t),)
                dists[path_of[n]] = row.detach().float().cpu()
            return out

        tree = real(first, recorded, *args)
        scores.tree = tree
        scores.scores = [float(dists[p[:-1]][p[-1]]) for p in paths(tree)]
        return tree

    monkeypatch.setattr(module, name, builder)


def hydra_builder(module: Any, monkeypatch: pytest.MonkeyPatch, scores: BuilderScores) -> None:
    """Wrap hydra's ``walk``: each node scores the logit its level's head gave its token in its parent's row."""
    real = module.walk

    def walk(levels: Any, root_input: torch.Tensor, score: Callable, embed: Callable) -> DraftTree:
        seen: list[torch.Tensor] = []

        def recorded(k: int, x: torch.Tensor) -> torch.Tensor:
            seen.append(score(k, x).detach().float().cpu())
            return seen[-1]

        tree = real(levels, root_input, recorded, embed)
        picks = [(k, row) for k, level in enumerate(levels) for row, _rank in level.picks]
        scores.tree = tree
        scores.scores = [float(seen[k][row, t]) for (k, row), t in zip(picks, tree.tokens)]
        return tree

    monkeypatch.setattr(module, "walk", walk)


def redrafter_builder(module: Any, monkeypatch: pytest.MonkeyPatch, scores: BuilderScores) -> None:
    """Wrap ReDrafter's ``beam_search``: each node scores the best summed log-prob of a beam through it."""
    from specbench_methods.redrafter.prefix import pack_beams

    real = module.beam_search

    def beam_search(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        beams, beam_scores = real(*args, **kwargs)
        tree, node_of = pack_beams(beams)
        best = [float("-inf")] * len(tree)
        for b, nodes in enumerate(node_of.tolist()):
            for n in nodes:
                best[n] = max(best[n], float(beam_scores[b]))
        scores.tree, scores.scores = tree, best
        return beams, beam_scores

    monkeypatch.setattr(module, "beam_search", beam_search)


def ddtree_builder(module: Any, monkeypatch: pytest.MonkeyPatch, scores: BuilderScores) -> None:
    """Wrap ddtree's ``best_first_tree``: each node scores its path's summed log-probability, row ``d - 1`` of the
    block scoring the token at depth ``d``."""
    real = module.best_first_tree

    def best_first_tree(logprobs: torch.Tensor, nodes: int) -> Any:
        tree = real(logprobs, nodes)
        rows = logprobs.detach().float().cpu()
        scores.tree = tree
        scores.scores = [sum(float(rows[d, t]) for d, t in enumerate(p)) for p in paths(tree)]
        return tree

    monkeypatch.setattr(module, "best_first_tree", best_first_tree)


def install_builder(method: str, monkeypatch: pytest.MonkeyPatch) -> Scorer:
    """The scorer of a method whose ranking lives inside its tree builder, with the builder patched."""
    import specbench_methods.dflash.ddtree
    import specbench_methods.eagle.method
    import specbench_methods.eagle3.method
    import specbench_methods.hydra.method
    import specbench_methods.redrafter.drafter

    scores = BuilderScores()
    if method == "eagle":
        for name in ("dynamic_tree", "static_tree"):
            eagle_builder(specbench_methods.eagle.method, name, monkeypatch, scores)
    elif method == "eagle3":
        eagle_builder(specbench_methods.eagle3.method, "dynamic_tree", monkeypatch, scores)
    elif method == "ddtree":
        ddtree_builder(specbench_methods.dflash.ddtree, monkeypatch, scores)
    elif method == "hydra":
        hydra_builder(specbench_methods.hydra.method, monkeypatch, scores)
    else:
        redrafter_builder(specbench_methods.redrafter.drafter, monkeypatch, scores)
    return scores


RANKED: dict[str, Scorer | None] = {"rest": rest_counts, "recycling": recycling_positions, "medusa": medusa_logits,
                                    "eagle": None, "eagle3": None, "hydra": None, "redrafter": None,
                                    "ddtree": None}  # None: builder
OBSERVED = {"crest"}
CHAINS = {"pld", "sps", "pard", "dflash", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"}
# not checked yet, and why (measured on this file's tiny model); each is left for a follow-up
UNCHECKED = {
    "dresd": "12 verified sibling groups on the tiny model, under MIN_GROUPS; its neighbour order is not recorded",
    "samd": "2 verified sibling groups on the tiny model, under MIN_GROUPS",
    "suffix": "1 verified sibling group on the tiny model, under MIN_GROUPS",
    "swift": "proposes trees, not chains; its ranking is not recorded yet",
    # a contract violation found by this test (behaviour is frozen in this change): rank 1 accepted 17 times, rank 0
    # twice over 41 groups; its pool seems to list guesses in insertion order, not best first
    "lookahead": "its children are not best first on the tiny model (rank 0 accepted 2 times, rank 1 17 times)",
}
NO_DRAFTER = {"ar"}  # proposes nothing


# -- running a method -----------------------------------------------------------------------------------------------


def record_steps(tiny, method: str, scorer: Scorer | None) -> list[Step]:  # noqa: F811
    """Every step of ``method`` over the golden prompts: what it proposed (scored by ``scorer``) and what the engine
    verified and accepted of it."""
    model, tok, golden, cache = tiny
    env = MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, "synthetic")
    drafter, _ = build_drafter(method, TINY_OPTIONS.get(method, {}), env)
    if drafter is None:
        return []
    steps: list[Step] = []
    propose, observe = drafter.propose, drafter.observe

    def recording_propose(ctx: DraftContext) -> Any:
        out = propose(ctx)
        tree = out.tree if isinstance(out, Proposal) else out
        steps.append(Step(tree, scorer(drafter, ctx, tree) if scorer is not None and tree is not None else None))
        return out

    def recording_observe(result: StepResult) -> None:
        if steps and result.tree is not None:
            steps[-1].verified, steps[-1].accepted = result.tree, list(result.accepted_nodes)
        observe(result)

    drafter.propose, drafter.observe = recording_propose, recording_observe
    engine = Engine(model, set(golden["stop_ids"]))
    for e in golden["entries"]:
        engine.generate(e["prompt_ids"], drafter, MAX_NEW)
    return steps


def sibling_groups(tree: DraftTree) -> dict[int, list[int]]:
    """Parent (-1: the root) -> its children, in tree order, for the parents with two children or more."""
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(tree.parents):
        groups.setdefault(p, []).append(i)
    return {p: c for p, c in groups.items() if len(c) > 1}


def test_every_method_is_classified() -> None:
    assert set(METHODS.names()) == set(RANKED) | OBSERVED | CHAINS | NO_DRAFTER | set(UNCHECKED), "classify the new method in this file's sets"


@pytest.mark.parametrize("method", sorted(RANKED))
def test_siblings_follow_the_drafters_own_ranking(tiny, method: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    scorer = RANKED[method] or install_builder(method, monkeypatch)
    steps = record_steps(tiny, method, scorer)
    groups = 0
    for s, step in enumerate(steps):
        if step.proposed is None:
            continue
        for parent, children in sibling_groups(step.proposed).items():
            ranked = [step.scores[c] for c in children if step.scores[c] is not None]
            groups += len(ranked) > 1
            assert ranked == sorted(ranked, reverse=True), (
                f"{method} step {s}: children {[step.proposed.tokens[c] for c in children]} of node {parent} score "
                f"{ranked}, not best first")
    assert groups >= MIN_GROUPS, f"{method}: only {groups} ranked sibling groups; the check saw too little"


@pytest.mark.parametrize("method", sorted(OBSERVED))
def test_rank_zero_children_are_accepted_most(tiny, method: str) -> None:  # noqa: F811
    accepted: Counter = Counter()
    groups = 0
    for step in record_steps(tiny, method, None):
        if step.verified is None:
            continue
        ranks = step.verified.sibling_ranks()
        on_path = {-1, *step.accepted}
        for parent, children in sibling_groups(step.verified).items():
            if parent in on_path:
                groups += 1
                accepted.update(ranks[c] for c in children if c in on_path)
    assert groups >= MIN_GROUPS, f"{method}: only {groups} verified sibling groups; the check saw too little"
    assert accepted[0] > 0 and accepted[0] >= accepted[1], (
        f"{method}: over {groups} sibling groups, accepted by rank {dict(sorted(accepted.items()))}")


@pytest.mark.parametrize("method", sorted(CHAINS))
def test_chain_drafters_propose_no_siblings(tiny, method: str) -> None:  # noqa: F811
    steps = record_steps(tiny, method, None)
    assert all(step.proposed is None or step.proposed.is_chain for step in steps), (
        f"{method} proposed a tree: move it to RANKED or OBSERVED")
    assert any(step.proposed is not None and len(step.proposed) for step in steps), f"{method} drafted nothing"
