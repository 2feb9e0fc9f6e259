"""Greedy drafting with a small causal LM that keeps its own KV cache across engine steps.

The draft model has seen ``fed`` tokens of the sequence (its cache holds them). A step feeds what it
has not seen (the previous step's accepted tokens and bonus, or the whole prompt at first) in one
forward, then one token at a time; after verification the cache is cut back to the accepted prefix,
so no token is ever fed twice.

Example: prompt ``[1, 2, 3]`` + root ``9``, gamma 3: feed ``[1, 2, 3, 9]`` -> d1, feed ``[d1]`` -> d2,
feed ``[d2]`` -> d3; the cache holds 6 tokens. The target accepts d1 only: ``keep(4 + 1)`` cuts the cache
to ``[1, 2, 3, 9, d1]`` and the next step feeds the bonus token first.
"""
from __future__ import annotations

from typing import Any

import torch

from specbench.engine.kv_cache import PreallocatedCache


class DraftRunner:
    """Owns the draft model's cache for one generation at a time."""

    def __init__(self, model: Any, capacity: int = 1024) -> None:
        self.model = model
        self.device = next(model.parameters()).device
        self.capacity = capacity
        self.cache = PreallocatedCache(capacity)
        self.fed = 0

    def reset(self) -> None:
        self.cache = PreallocatedCache(self.capacity)
        self.fed = 0

    @torch.inference_mode()
    def _next_logits(self, new_tokens: list[int]) -> torch.Tensor:
        ids = torch.tensor([new_tokens], dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.fed += len(new_tokens)
        return out.logits[0, -1]  # [V]

    def draft(self, tokens: list[int], gamma: int, min_confidence: float = 0.0) -> list[int]:
        """Up to ``gamma`` greedy tokens after ``tokens``; with ``min_confidence`` > 0, drafting stops
        after the first token whose draft probability is below it (that token is still proposed)."""
        if self.fed > len(tokens):
            raise RuntimeError("draft cache is ahead of the sequence: keep() was not called after verification")
        logits = self._next_logits(tokens[self.fed :])
        out: list[int] = []
        while True:
            tok = int(logits.argmax())
            out.append(tok)
            if len(out) == gamma:
                return out
            if min_confidence > 0 and float(torch.softmax(logits.float(), -1)[tok]) < min_confidence:
                return out
            logits = self._next_logits([tok])

    def keep(self, n: int) -> None:
        """Cut the cache back to the first ``n`` tokens of the sequence (it may hold fewer)."""
        if n < self.fed:
            self.cache.trim(n, [])
            self.fed = n
