"""``ngram-mod``: llama.cpp's ``--spec-type ngram-mod`` (``common_speculative_impl_ngram_mod``, ``ngram-mod.cpp``).

A pool (``mod_pool.py``) maps the hash of every ``n_match``-gram seen to the token that followed it. Each step the
last ``n_match`` tokens (the root included) are hashed, the token found is drafted and the window slides over it,
up to ``n_max`` tokens; an empty entry ends the draft, and before ``n_min`` tokens it drops the draft. The pool
outlives requests (the server resets it at a request's start once over a quarter full, and after five drafts in a
row accepted below a quarter), so the drafter keeps state across generations.

>>> d = NgramModDrafter(NgramModConfig(n_match=2, n_max=3, n_min=1), pool_size=1 << 10)
>>> d.begin([1, 2, 3, 4, 1])  # [1, 2] -> 3, [2, 3] -> 4, [3, 4] -> 1
>>> d.propose(DraftContext([1, 2, 3, 4, 1, 2], 5, None, max_depth=10)).tokens
(3, 4, 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specbench_methods.ngram.history import TokenHistory
from specbench_methods.ngram.mod_pool import EMPTY, POOL_SIZE, ModPool
from specbench_methods.ngram.simple import SIZE_LIMIT
from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, StepResult, register_method

CHUNK = 32  # new n-grams enter the pool once more than 32 tokens wait
OCCUPANCY_RESET = 0.25  # a request's start resets a pool fuller than this
LOW_ACCEPTANCE = 0.25  # a draft accepted below this fraction is a low round ...
LOW_ROUNDS = 5  # ... and this many in a row reset the pool


@dataclass(frozen=True)
class NgramModConfig:
    """llama.cpp's defaults for ngram-mod (``--spec-ngram-mod-n-match``, ``-n-max``, ``-n-min``)."""

    n_match: int = 24  # the n-gram hashed
    n_max: int = 64  # the most tokens drafted
    n_min: int = 48  # fewer found, nothing drafted

    def validate(self) -> None:
        if not 1 <= self.n_match <= SIZE_LIMIT:
            raise ConfigError(f"ngram-mod: n_match must be between 1 and {SIZE_LIMIT} (llama.cpp's range)")
        for key in ("n_max", "n_min"):
            if not 0 <= getattr(self, key) <= SIZE_LIMIT:
                raise ConfigError(f"ngram-mod: {key} must be between 0 and {SIZE_LIMIT} (llama.cpp's range)")


class NgramModDrafter(BaseDrafter):
    reads_hidden_states = False
    keeps_state_across_generations = True  # the pool and the low-acceptance streak outlive a request

    def __init__(self, config: NgramModConfig, pool_size: int = POOL_SIZE) -> None:
        self.config = config
        self.pool = ModPool(config.n_match, pool_size)
        self._history = TokenHistory()
        self.i_last = 0  # the starts below it are in the pool
        self.n_draft_last = 0  # the last draft's length before the engine's cut (the server's n_draft_last)
        self.n_low = 0  # drafts in a row accepted below LOW_ACCEPTANCE (kept across requests, as the server's)

    def begin(self, prompt_ids: list[int]) -> None:
        self._history.reset()
        self.i_last = self.n_draft_last = 0
        n = self.pool.n
        if len(prompt_ids) < n:
            return
        self.pool.add_range(np.asarray(prompt_ids, dtype=np.int64), 0, len(prompt_ids) - n)
        self.i_last = len(prompt_ids) - n
        if self.pool.used / self.pool.size > OCCUPANCY_RESET:
            self.pool.reset()

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if ctx.max_depth < 1:
            return None
        draft = self.draft(self._history.update(ctx.tokens))
        return DraftTree.chain(draft[: ctx.max_depth]) if draft else None

    def draft(self, text: np.ndarray) -> list[int]:
        """The server's ``draft_one`` on ``text`` = history + root: ``[]`` for none."""
        self.n_draft_last = 0
        n, cur_len = self.pool.n, len(text) - 1
        if cur_len < n:
            return []
        if self.i_last + CHUNK < cur_len:
            self.pool.add_range(text, self.i_last, cur_len - n)
            self.i_last = cur_len - n
        window = text[cur_len - n + 1 :].tolist()  # the last n - 1 history tokens and the root
        h = self.pool.hash_of(window)
        draft: list[int] = []
        for i in range(self.config.n_max):
            token = self.pool.get(h)
            if token == EMPTY:
                if i < self.config.n_min:
                    return []
                break
            draft.append(token)
            h = self.pool.roll(h, window[i], token)
            window.append(token)
        self.n_draft_last = len(draft)
        return draft

    def observe(self, result: StepResult) -> None:
        if result.tree is not None and len(result.tree):  # a draft was verified: the server's accept
            self.accept(len(result.accepted_nodes))

    def accept(self, n_accepted: int) -> None:
        """Five drafts in a row accepted below a quarter (of their length before any cut) reset the pool."""
        if self.n_draft_last == 0:
            return
        if n_accepted / self.n_draft_last >= LOW_ACCEPTANCE:
            self.n_low = 0
            return
        self.n_low += 1
        if self.n_low >= LOW_ROUNDS:
            self.pool.reset()
            self.n_low = self.i_last = 0


@register_method("ngram-mod", NgramModConfig)
def build_ngram_mod(config: NgramModConfig, env: MethodEnv) -> NgramModDrafter:
    """llama.cpp's ngram-mod: a pool of 24-gram hashes, 48 to 64 tokens drafted by chaining them."""
    return NgramModDrafter(config)
