"""PARD's draft step: the unseen tokens and K - 1 mask tokens in one forward of the draft, K tokens out.

The draft keeps its own KV cache of the tokens it has seen (``fed``). A step feeds what it has not seen (the
prompt at first, then the previous step's accepted tokens and bonus, the root last) followed by ``k - 1`` mask
tokens, causal, at the positions that follow; the argmax of the last ``k`` rows is the chain. The mask rows are cut
from the cache at once, so the next step feeds the tokens the target really emitted there.

Example: prompt ``[1, 2, 3]`` + root ``9``, k 3: one forward over ``[1, 2, 3, 9, m, m]`` -> rows 3, 4, 5 give
d1, d2, d3; the cache keeps ``[1, 2, 3, 9]``. If the target accepts d1 and its bonus is b, the next step feeds
``[d1, b, m, m]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from specbench.api import PreallocatedCache, draft_ids


class ParallelRunner:
    """One generation at a time of a parallel draft: ``vocab`` maps its ids to the target's (None: the same ids;
    slot 0 of a reduced vocabulary is "any other token", never proposed), ``mask_id`` its mask token."""

    def __init__(self, model: Any, mask_id: int, vocab: np.ndarray | None = None, target_vocab: int = 0,
                 stop_ids: frozenset[int] = frozenset(), capacity: int = 1024) -> None:
        self.model, self.mask_id, self.to_target, self.stop_ids = model, int(mask_id), vocab, stop_ids
        self.device = next(model.parameters()).device
        self.to_draft = None if vocab is None else draft_ids(vocab, target_vocab)  # target id -> draft id
        self.capacity = capacity
        self.cache = PreallocatedCache(capacity)
        self.fed = 0
        self.forwards = 0

    def reset(self) -> None:
        self.cache = PreallocatedCache(self.capacity)
        self.fed = 0

    @torch.inference_mode()
    def draft(self, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens after ``tokens`` from one forward (cut after a stop token, as the target would stop)."""
        if self.fed > len(tokens):
            raise RuntimeError("draft cache is ahead of the sequence: reset() was not called for a new generation")
        new = tokens[self.fed:]
        mapped = new if self.to_draft is None else self.to_draft[new].tolist()
        ids = torch.tensor([mapped + [self.mask_id] * (k - 1)], dtype=torch.long, device=self.device)
        logits = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=k).logits[0]
        self.forwards += 1
        self.fed += len(new)
        self.cache.trim(self.fed, [])  # the mask rows go: the next step feeds what was really emitted there
        logits[:, self.mask_id] = float("-inf")
        if self.to_target is not None:
            logits[:, 0] = float("-inf")
        out = []
        for column in logits.argmax(-1).tolist():
            token = column if self.to_target is None else int(self.to_target[column])
            out.append(token)
            if token in self.stop_ids:
                break
        return out
