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

import numpy as np
import torch
from torch import nn

from specbench.api import PreallocatedCache, draft_ids, frozen_rows, kept_columns, pack_for_inference


class DraftRunner:
    """Owns the draft model's cache for one generation at a time.

    ``vocab`` (draft id -> target id; id 0 = any other token, never proposed) for a draft with a reduced
    vocabulary, such as the distilled default; ``None`` when the draft shares the target's ids. ``keep`` (target
    ids; FR-Spec's ``vocab=fr:N``): the draft scores only those of them it can propose, through a copy of its
    head's rows for them run on its base model's last hidden state; the draft model itself is left as it is
    (another method may share it).
    """

    def __init__(self, model: Any, capacity: int = 1024, vocab: np.ndarray | None = None, target_vocab: int = 0,
                 stop_ids: frozenset[int] = frozenset(), keep: np.ndarray | None = None) -> None:
        self.model = model
        # as transformers' assistant (its eos is the target's): a draft ends at a stop token, since the
        # target would end the sequence there and nothing after it could be used
        self.stop_ids = stop_ids
        self.record_probs = False  # keep each drafted token's probability in last_probs (adaptive threshold)
        self.last_probs: list[float] = []
        self.device = next(model.parameters()).device
        self.to_target = vocab
        self.to_draft = None if vocab is None else draft_ids(vocab, target_vocab)  # target id -> draft id
        self.capacity = capacity
        self.cache = PreallocatedCache(capacity)
        self.fed = 0
        self.target_vocab = target_vocab
        self.head: nn.Sequential | None = None
        self.out_ids: np.ndarray | None = None  # with ``keep``: the head's column -> target id
        if keep is not None:
            self._restrict(keep)

    def _restrict(self, keep: np.ndarray) -> None:
        full = self.model.get_output_embeddings()
        columns = np.arange(full.weight.shape[0]) if self.to_target is None else self.to_target.astype(np.int64)
        if self.to_target is not None:
            columns = np.concatenate([[-1], columns[1:]])  # "any other token" is never kept
        rows = kept_columns(columns, keep)
        self.head = nn.Sequential(frozen_rows(full, rows))  # (a module to pack the linear in, as the draft's head is)
        pack_for_inference(self.head)
        self.out_ids = columns[rows]
        self.target_vocab = max(self.target_vocab, int(self.out_ids.max()) + 1)

    def reset(self) -> None:
        self.cache = PreallocatedCache(self.capacity)
        self.fed = 0

    @torch.inference_mode()
    def _next_logits(self, new_tokens: list[int]) -> torch.Tensor:
        mapped = new_tokens if self.to_draft is None else self.to_draft[new_tokens].tolist()
        ids = torch.tensor([mapped], dtype=torch.long, device=self.device)
        if self.head is not None:  # (vocab=fr:N: the kept rows of the head, on the final hidden state)
            states = self.model.base_model(input_ids=ids, past_key_values=self.cache, use_cache=True)
            self.fed += len(new_tokens)
            return self.head(states.last_hidden_state[0, -1])
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.fed += len(new_tokens)
        logits = out.logits[0, -1]  # [v]
        if self.to_target is not None:
            logits[0] = float("-inf")  # "any other token" is not a token
        return logits

    def draft(self, tokens: list[int], gamma: int, min_confidence: float = 0.0) -> list[int]:
        """Up to ``gamma`` greedy tokens after ``tokens``; with ``min_confidence`` > 0, drafting stops
        after the first token whose draft probability is below it (that token is still proposed), and
        after a stop token."""
        return self._draft(tokens, gamma, min_confidence, None)[0]

    def draft_sampled(self, tokens: list[int], gamma: int, sampler: Any,
                      min_confidence: float = 0.0) -> tuple[list[int], torch.Tensor]:
        """Like ``draft`` but each token is SAMPLED from the draft's distribution processed as the target's
        (``sampler.probs``: temperature, top-k, top-p); also returns those distributions over the target's
        vocabulary, ``[len(draft), target_vocab]``, for the engine's acceptance rule."""
        out, rows = self._draft(tokens, gamma, min_confidence, sampler)
        return out, torch.stack(rows)

    def _draft(self, tokens: list[int], gamma: int, min_confidence: float, sampler: Any) -> tuple[list[int], list[torch.Tensor]]:
        if self.fed > len(tokens):
            raise RuntimeError("draft cache is ahead of the sequence: keep() was not called after verification")
        logits = self._next_logits(tokens[self.fed :])
        out: list[int] = []
        rows: list[torch.Tensor] = []
        self.last_probs = []
        while True:
            if sampler is None:
                tok = int(logits.argmax())
                # the softmax only when something reads it: it is most of a small draft's step otherwise
                need = min_confidence > 0 or self.record_probs
                prob = float(torch.softmax(logits.float(), -1)[tok]) if need else 1.0
            else:
                q = sampler.probs(logits)
                tok = sampler.sample(q)
                prob = float(q[tok])
                rows.append(self._on_target_vocab(q))
            if self.record_probs:
                self.last_probs.append(prob)
            target_tok = self._target_id(tok)
            out.append(target_tok)
            if len(out) == gamma or prob < min_confidence or target_tok in self.stop_ids:
                return out, rows
            logits = self._next_logits([target_tok])

    def _target_id(self, column: int) -> int:
        if self.out_ids is not None:
            return int(self.out_ids[column])
        return column if self.to_target is None else int(self.to_target[column])

    def _on_target_vocab(self, q: torch.Tensor) -> torch.Tensor:
        """A draft-vocabulary distribution spread onto the target's ids (slot 0 has probability 0)."""
        if self.out_ids is not None:
            full = torch.zeros(self.target_vocab, dtype=q.dtype, device=q.device)
            full[torch.as_tensor(self.out_ids, device=q.device)] = q
            return full
        if self.to_target is None:
            return q
        full = torch.zeros(len(self.to_draft), dtype=q.dtype, device=q.device)
        full[torch.as_tensor(self.to_target[1:], device=q.device)] = q[1:]
        return full

    def keep(self, n: int) -> None:
        """Cut the cache back to the first ``n`` tokens of the sequence (it may hold fewer)."""
        if n < self.fed:
            self.cache.trim(n, [])
            self.fed = n
