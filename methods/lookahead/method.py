"""Config, drafter and registration of ``lookahead``.

Example: with the defaults (window 7, n-gram 5, guess set 7) every step adds 27 auxiliary rows (the
window: 6 guesses on level 0 and 7 on each of levels 1-3) and, once the window is full, up to 7 pool
n-grams after the root merged into a tree of at most 28 nodes.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from specbench.config import ConfigError
from specbench.drafter import BaseDrafter, DraftContext, Proposal, StepResult
from specbench.engine.tree import DraftTree
from specbench.method_env import MethodEnv
from specbench.registry import register_method

from methods.lookahead.pool import NgramPool
from methods.lookahead.window import JacobiWindow


@dataclass(frozen=True)
class LookaheadConfig:
    """The reference's settings for 7B targets (LEVEL=5, WINDOW_SIZE=7, GUESS_SET_SIZE=7, pool from prompt)."""

    window: int = 7  # W: Jacobi window columns
    ngram: int = 5  # N: n-gram size (LADE's LEVEL); the window has N - 1 levels
    guess: int = 7  # G: n-grams kept per key in the pool, all verified when their key is the root
    pool_from_prompt: bool = True  # seed the pool with the prompt's n-grams and add each emitted one
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

    def __init__(self, config: LookaheadConfig) -> None:
        self.config = config
        self.pool = NgramPool(config.ngram, config.guess)
        self.window: JacobiWindow | None = None
        self._root: int | None = None
        self._seen = 0

    def begin(self, prompt_ids: list[int]) -> None:
        c = self.config
        self.pool = NgramPool(c.ngram, c.guess)
        if c.pool_from_prompt:
            self.pool.add_sequence(prompt_ids)
        self.window = JacobiWindow(c.window, c.ngram, prompt_ids, random.Random(c.seed))
        self._seen = len(prompt_ids)
        self._root = None

    def propose(self, ctx: DraftContext) -> Proposal:
        assert self.window is not None, "begin() was not called"
        if self.config.pool_from_prompt:
            for end in range(self._seen, len(ctx.tokens)):
                self.pool.add_ngram_ending_at(ctx.tokens, end)
        self._seen = len(ctx.tokens)
        self._root = ctx.tokens[-1]
        tree = None
        if self.window.full:  # as the reference: verify only once the window is filled
            guesses = self.pool.guesses(self._root)
            tree = DraftTree.from_chains(guesses) if guesses else None
        return Proposal(tree, self.window.layout())

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
