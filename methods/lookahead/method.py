"""Config, drafter and registration of ``lookahead``.

Example: with the defaults (window 7, n-gram 5, guess set 7) every step adds 27 auxiliary rows (the
window: 6 guesses on level 0 and 7 on each of levels 1-3) and, once the window is full, up to 7 pool
n-grams after the root merged into a tree of at most 28 nodes. As the reference, a step emits at most
N - 1 = 4 tokens even when all 4 tokens of a guess match (``bonus=false``); ``bonus=true`` emits 5.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from specbench.api import (
    BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, Proposal, StepResult, register_method)

from specbench_methods.lookahead.pool import NgramPool
from specbench_methods.lookahead.window import JacobiWindow


@dataclass(frozen=True)
class LookaheadConfig:
    """Spec-Bench's settings (``eval.sh``: LEVEL=5, WINDOW_SIZE=7, GUESS_SET_SIZE=7, no prompt pool)."""

    window: int = 7  # W: Jacobi window columns
    ngram: int = 5  # N: n-gram size (LADE's LEVEL); the window has N - 1 levels
    guess: int = 7  # G: n-grams kept per key in the pool, all verified when their key is the root
    # The reference emits at most N - 1 tokens a step: on a full match it drops the target's token after
    # the last guessed one. True emits it too (ours: more tokens per step at no extra cost).
    bonus: bool = False
    pool_from_prompt: bool = False  # LADE's POOL_FROM_PROMPT (off in config_lade and in Spec-Bench's copy)
    # With pool_from_prompt, how emitted n-grams enter the pool. The reference (lade/decoding.py) appends
    # the step's LAST token once per emitted token to the history it takes n-grams from (a bug: after a
    # 3-token step the history ends "c c c", not "a b c"); True stores the n-grams actually emitted.
    true_ngrams: bool = False
    seed: int = 0  # the window's first guesses are prompt tokens drawn with this seed

    def validate(self) -> None:
        if self.window < 1:
            raise ConfigError("lookahead: window must be >= 1")
        if self.ngram < 3:
            raise ConfigError("lookahead: ngram must be >= 3 (the window needs a level above level 0)")
        if self.guess < 0:
            raise ConfigError("lookahead: guess must be >= 0")


class LookaheadDrafter(BaseDrafter):
    """Proposes the pool's n-grams after the root plus the Jacobi window; learns from the window."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, config: LookaheadConfig) -> None:
        self.config = config
        self.pool = NgramPool(config.ngram, config.guess)
        self.window: JacobiWindow | None = None
        self._root: int | None = None
        self._seen = 0
        self._history: list[int] = []  # what pool_from_prompt takes emitted n-grams from

    def begin(self, prompt_ids: list[int]) -> None:
        c = self.config
        self.pool = NgramPool(c.ngram, c.guess)
        if c.pool_from_prompt:
            self.pool.add_sequence(prompt_ids)
        self.window = JacobiWindow(c.window, c.ngram, prompt_ids, random.Random(c.seed))
        self._seen = len(prompt_ids)
        self._history = list(prompt_ids)
        self._root = None

    def propose(self, ctx: DraftContext) -> Proposal:
        assert self.window is not None, "begin() was not called"
        if self.config.pool_from_prompt:
            self._pool_emitted(ctx.tokens)
        self._seen = len(ctx.tokens)
        self._root = ctx.tokens[-1]
        tree = None
        if self.window.full:  # as the reference: verify only once the window is filled
            guesses = self.pool.guesses(self._root)
            tree = DraftTree.from_chains(guesses) if guesses else None
        depth = None if self.config.bonus else self.config.ngram - 2
        return Proposal(tree, self.window.layout(), accept_depth=depth)

    def _pool_emitted(self, tokens: list[int]) -> None:
        """Add the n-grams ending at each token emitted since the last step, as configured.

        Example (n = 3): history ``[1, 2]``, the step emitted ``[3, 4]``: ``true_ngrams`` adds
        ``1 -> (2, 3)`` and ``2 -> (3, 4)``; the reference's history becomes ``[1, 2, 4, 4]`` and adds
        ``1 -> (2, 4)`` and ``2 -> (4, 4)``.
        """
        if self.config.true_ngrams:
            for end in range(self._seen, len(tokens)):
                self.pool.add_ngram_ending_at(tokens, end)
            return
        new = tokens[self._seen :]
        for _ in new:
            self._history.append(new[-1])
            self.pool.add_ngram_ending_at(self._history, len(self._history) - 1)

    def observe(self, result: StepResult) -> None:
        if result.aux_predictions is None or self._root is None or self.window is None:
            return  # no window ran this step (the engine skipped drafting)
        for gram in self.window.advance(self._root, result.aux_predictions):
            self.pool.add(gram[0], gram[1:])
        self._root = None


@register_method("lookahead", LookaheadConfig)
def build_lookahead(config: LookaheadConfig, env: MethodEnv) -> LookaheadDrafter:
    """Lookahead decoding: Jacobi window + n-gram pool + verification in one forward; no model, no datastore."""
    return LookaheadDrafter(config)
