"""``pld``: prompt lookup decoding (Saxena 2023): copy what followed the last n-gram's earlier match.

Deviations from the PLD reference and from transformers' prompt lookup: ``methods/pld.md``.

Example: context ``[1, 2, 3, 4, 2, 3]`` (ending with the root). The 3-gram ``[4, 2, 3]`` has no earlier
occurrence; the 2-gram ``[2, 3]`` occurs at index 1, so PLD proposes what followed it: ``[4, 2, 3]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, register_method


@dataclass(frozen=True)
class PLDConfig:
    """Defaults as in the PLD reference: n-grams of 3 down to 1, 10 draft tokens."""

    max_ngram: int = 3
    min_ngram: int = 1
    num_draft: int = 10

    def validate(self) -> None:
        if not 1 <= self.min_ngram <= self.max_ngram:
            raise ConfigError("pld: need 1 <= min_ngram <= max_ngram")
        if self.num_draft < 1:
            raise ConfigError("pld: num_draft must be >= 1")


def lookup(tokens: np.ndarray, max_ngram: int, min_ngram: int, num_draft: int) -> list[int]:
    """Continuation after the first earlier occurrence of the longest matching suffix n-gram."""
    n_tok = len(tokens)
    for n in range(min(max_ngram, n_tok - 1), min_ngram - 1, -1):
        # candidate starts 0 .. n_tok - n - 1: the suffix itself (start n_tok - n) is excluded
        span = n_tok - n
        hit = tokens[:span] == tokens[n_tok - n]
        for i in range(1, n):
            hit &= tokens[i : span + i] == tokens[n_tok - n + i]
        idx = np.flatnonzero(hit)
        if idx.size:
            start = int(idx[0]) + n
            return tokens[start : start + num_draft].tolist()
    return []


class PLDDrafter(BaseDrafter):
    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, config: PLDConfig) -> None:
        self.config = config

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        c = self.config
        draft = lookup(np.asarray(ctx.tokens, dtype=np.int64), c.max_ngram, c.min_ngram, min(c.num_draft, ctx.max_depth))
        return DraftTree.chain(draft) if draft else None


@register_method("pld", PLDConfig)
def build_pld(config: PLDConfig, env: MethodEnv) -> PLDDrafter:
    """Prompt lookup decoding: n-gram match against prompt + generated text, no model, no datastore."""
    return PLDDrafter(config)
