"""Config, drafter and registration of ``swift`` (SWIFT: on-the-fly self-speculative decoding, Xia et al., ICLR 2025).

The draft model is the target itself with some decoder sub-layers skipped; the engine hands the drafter that forward
over the generation's own KV cache (``DraftContext.target_draft``), so there is no second model. Each step:

1. while the layer search is on (``layer_search.py``) and more than ``context_window + 1`` tokens were generated,
   score one candidate layer set: its *matchness*, how often the skipped target's argmax over the first
   ``context_window + 1`` generated tokens (teacher-forced after the prompt) equals the next generated token;
2. draft a top-1 chain with the best layer set so far, one skipped forward per token, until the draft's top-1
   probability falls below ``stop_threshold`` or ``max_step_draft`` tokens;
3. propose the chain with each depth's runner-up tokens as siblings (``confidence_tree``): the more confident the
   draft was at a depth, the fewer siblings.

Example (greedy): top-1 probabilities ``[0.97, 0.85, 0.6]`` -> 3, 5 and 8 candidates at depths 1, 2 and 3: a tree of
16 nodes whose top-1 chain is 3 deep.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, SkipSet, register_method

from specbench_methods.swift.layer_search import LayerSearch, parse_skip, require_bayes_opt

TOPK = 10  # the reference's TOPK: tokens kept per draft step, the most a depth's candidates can be
GREEDY_CANDIDATES = (3, 5, 8, 10)  # candidates per depth at top-1 probability > 0.95, > 0.8, > 0.5, else
SAMPLED_CANDIDATES = (1, 3, 5, 10)  # the same at temperature > 0 (the reference's ``get_choices_list``)
CONFIDENCE_STEPS = (0.95, 0.8, 0.5)


@dataclass(frozen=True)
class SwiftConfig:
    """The reference's settings (``eval_llama.sh`` at hemingkx/SWIFT@88caed7: skip ratio 0.45, optimisation and
    Bayesian search on, optimisation every step, Bayes every 25th, at most 1000 iterations, 300 without gain, stop at
    matchness 0.93, a context window of 50; ``swift_draft``'s stop threshold 0.8 and 25 tokens at most)."""

    skip_ratio: float = 0.45  # share of the 2 (L - 2) searchable sub-layers a candidate skips
    optimize: bool = True  # search the layer set on the fly (False: the initial set, every odd layer)
    skip: str = ""  # a fixed layer set, "attn:1,3/mlp:2,4" (the reference's cached configuration): no search
    context_window: int = 50  # generated tokens the matchness is scored on (the search waits for context_window + 2)
    opt_interval: int = 1  # score a candidate every this many steps of a generation
    bayes_interval: int = 25  # every this many candidates, the Bayesian optimiser's (0: random search only)
    max_opt_iter: int = 1000
    max_tolerance_iter: int = 300
    max_score: float = 0.93
    stop_threshold: float = 0.8  # the draft stops after a token whose top-1 probability is below this
    max_step_draft: int = 25
    seed: int = 0  # the random candidates' generator

    def validate(self) -> None:
        if not 0 <= self.skip_ratio < 1:
            raise ConfigError("swift: skip_ratio must be in [0, 1)")
        for name in ("context_window", "opt_interval", "max_step_draft"):
            if getattr(self, name) < 1:
                raise ConfigError(f"swift: {name} must be >= 1")
        for name in ("bayes_interval", "max_opt_iter", "max_tolerance_iter"):
            if getattr(self, name) < 0:
                raise ConfigError(f"swift: {name} must be >= 0")
        if not 0 <= self.stop_threshold <= 1 or not 0 <= self.max_score <= 1:
            raise ConfigError("swift: stop_threshold and max_score must be in [0, 1]")


def candidates_at(top1_prob: float, sampled: bool) -> int:
    """How many of a depth's tokens the tree keeps, by the draft's top-1 probability there.

    >>> [candidates_at(p, False) for p in (0.99, 0.9, 0.6, 0.3)], candidates_at(0.99, True)
    ([3, 5, 8, 10], 1)
    """
    table = SAMPLED_CANDIDATES if sampled else GREEDY_CANDIDATES
    for bound, n in zip(CONFIDENCE_STEPS, table):
        if top1_prob > bound:
            return n
    return table[-1]


def confidence_tree(topk: list[list[int]], top1_probs: list[float], sampled: bool = False) -> DraftTree:
    """The draft's top-1 chain with each depth's next-best tokens as siblings (``candidates_at`` of them).

    >>> t = confidence_tree([[5, 6, 7], [8, 9, 4]], [0.99, 0.3])
    >>> t.tokens, t.parents
    ((5, 6, 7, 8, 9, 4), (-1, -1, -1, 0, 0, 0))
    """
    tokens: list[int] = []
    parents: list[int] = []
    parent = -1
    for row, prob in zip(topk, top1_probs):
        first = len(tokens)
        for token in row[: candidates_at(prob, sampled)]:
            tokens.append(int(token))
            parents.append(parent)
        parent = first  # (the depth's top-1 token: the chain goes on from it)
    return DraftTree(tuple(tokens), tuple(parents))


class SwiftDrafter(BaseDrafter):
    """Drafts with the target's own layers skipped; searches which to skip as it goes (module docstring)."""

    drafts_with_target = True
    reads_hidden_states = False  # (the draft runs its own forwards; the target's final states are not read)
    keeps_state_across_generations = True  # the layer set and its search carry over, as the reference's

    def __init__(self, config: SwiftConfig, fixed: SkipSet | None = None) -> None:
        self.config = config
        self.fixed = fixed  # the ``skip`` option's layer set
        self.search: LayerSearch | None = None  # built at the first step, when the target's depth is known
        self._steps = 0

    def begin(self, prompt_ids: list[int]) -> None:
        self._steps = 0

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        view = ctx.target_draft
        if view is None:
            raise ConfigError("swift drafts with the target itself: the engine gave it no target_draft")
        c = self.config
        if self.search is None:
            self.search = LayerSearch(view.num_layers, c.skip_ratio, c.bayes_interval, c.max_opt_iter,
                                      c.max_tolerance_iter, c.max_score, c.seed, c.optimize, self.fixed)
        self._steps += 1
        # the reference counts the tokens verified so far (the root is not yet) and scores after verification idx
        # (0-based), i.e. before this generation's draft number idx + 2
        verified = len(ctx.tokens) - ctx.prompt_len - 1
        if self.search.active and verified > c.context_window + 1 and (self._steps - 2) % c.opt_interval == 0:
            self._score_candidate(ctx, view)
        depth = min(c.max_step_draft, ctx.max_depth)
        if depth < 1:
            return None
        return self._draft(ctx.tokens[-1], depth, view, self.search.best, ctx.sampler is not None)

    def _score_candidate(self, ctx: DraftContext, view: Any) -> None:
        """One search iteration: a candidate's matchness over the first generated tokens (teacher-forced)."""
        assert self.search is not None
        window = ctx.tokens[ctx.prompt_len: ctx.prompt_len + self.config.context_window + 1]
        skip = self.search.candidate()
        guesses = view.score(window, ctx.prompt_len, skip)[:-1].argmax(-1)
        truth = torch.tensor(window[1:], device=guesses.device)
        self.search.report(skip, float((guesses == truth).float().mean()))

    def _draft(self, root: int, depth: int, view: Any, skip: SkipSet, sampled: bool) -> DraftTree:
        token, topk, probs = root, [], []
        for _ in range(depth):
            p = torch.softmax(view.extend([token], skip)[-1].float(), -1)
            top = p.topk(min(TOPK, p.shape[-1]))
            topk.append(top.indices.tolist())
            probs.append(float(top.values[0]))
            token = topk[-1][0]
            if probs[-1] < self.config.stop_threshold:
                break
        return confidence_tree(topk, probs, sampled)

    def report(self) -> dict[str, Any] | None:
        """The layer set this generation drafted with at its end, and the search's state (the record's
        ``drafter_state``)."""
        return None if self.search is None else self.search.state()


@register_method("swift", SwiftConfig)
def build_swift(config: SwiftConfig, env: MethodEnv) -> SwiftDrafter:
    """Self-speculative decoding: the target drafts with some of its own layers skipped, chosen on the fly."""
    fixed = None
    if config.skip:
        cfg = env.model.config
        fixed = parse_skip(config.skip, int(getattr(cfg, "num_hidden_layers", None) or cfg.n_layer))
    elif config.optimize and config.bayes_interval:
        require_bayes_opt()  # (at build time: a run without the extra fails before its first generation)
    return SwiftDrafter(config, fixed)
