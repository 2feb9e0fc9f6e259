"""``ngram-simple``: llama.cpp's ``--spec-type ngram-simple`` (``common_ngram_simple_draft``, ``common/ngram-map.cpp``).

The last ``size_n`` tokens of the text (prompt + answer so far, ending with the root) are looked up earlier in
the same text; at their most recent earlier occurrence, the ``size_m`` tokens that followed become a chain draft.
No model, no datastore, no state across steps. llama.cpp's rules, all kept (``README.md`` beside this file):

- nothing is drafted until the history (the text before the root) holds more than ``size_n + size_m + 1`` tokens;
- only the most recent occurrence counts; one starting at position 0 is never found (llama.cpp's loop stops
  before it), nor one overlapping the final n-gram by all but one token;
- the continuation stops before the root (it is read from the history) and, when shorter than ``size_n``
  tokens, nothing is drafted (no earlier occurrence is tried instead);
- the draft is then cut to the depth the engine allows (the server's cut to the tokens left to generate).

Example (``size_n=2, size_m=3``): text ``[9, 1, 2, 3, 4, 5, 6, 1, 2]``, root ``2``: the 2-gram ``[1, 2]`` last
occurred at position 1, followed by ``[3, 4, 5]``: the draft.

>>> simple_draft(np.array([9, 1, 2, 3, 4, 5, 6, 1, 2]), size_n=2, size_m=3)
[3, 4, 5]
>>> simple_draft(np.array([1, 2, 3, 4, 5, 6, 7, 1, 2]), size_n=2, size_m=3)  # the match at position 0 is skipped
[]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specbench_methods.ngram.history import TokenHistory
from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, register_method

SIZE_LIMIT = 1024  # llama.cpp's argument check: sizes in 1..1024


@dataclass(frozen=True)
class NgramSimpleConfig:
    """llama.cpp's ``common_params_speculative_ngram_map`` defaults for ngram-simple (``--spec-ngram-simple-size-n``,
    ``--spec-ngram-simple-size-m``): look up 12 tokens, draft the 48 after them."""

    size_n: int = 12  # the n-gram looked up (and the shortest continuation worth drafting)
    size_m: int = 48  # the most tokens drafted

    def validate(self) -> None:
        for key in ("size_n", "size_m"):
            if not 1 <= getattr(self, key) <= SIZE_LIMIT:
                raise ConfigError(f"ngram-simple: {key} must be between 1 and {SIZE_LIMIT} (llama.cpp's range)")


def simple_draft(text: np.ndarray, size_n: int, size_m: int) -> list[int]:
    """llama.cpp's ngram-simple draft of ``text`` (prompt + answer, ending with the root): ``[]`` for none.

    llama.cpp reads ``tokens`` (the history, the root excluded) and ``sampled`` (the root) apart; here they are
    ``text[:-1]`` and ``text[-1]``, and the indices below are llama.cpp's.
    """
    cur_len = len(text) - 1  # the history's length
    if cur_len <= size_n + size_m + 1:
        return []
    pattern = text[cur_len - size_n + 1 :]  # the last size_n - 1 history tokens and the root
    last = cur_len - size_n - 1  # the latest start searched (llama.cpp's loop runs from it down to 1)
    starts = np.flatnonzero(text[1 : last + 1] == pattern[0]) + 1
    for k in range(1, size_n):
        if starts.size == 0:
            return []
        starts = starts[text[starts + k] == pattern[k]]
    if starts.size == 0:
        return []
    match = int(starts[-1])  # the most recent occurrence
    copy = min(size_m, cur_len - (match + size_n))  # the continuation ends before the root
    if copy < size_n:  # too short to be worth a draft
        return []
    return text[match + size_n : match + size_n + copy].tolist()


class NgramSimpleDrafter(BaseDrafter):
    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, config: NgramSimpleConfig) -> None:
        self.config = config
        self._history = TokenHistory()

    def begin(self, prompt_ids: list[int]) -> None:
        self._history.reset()  # (a per-sequence cache: nothing carries to the next generation)

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if ctx.max_depth < 1:
            return None
        draft = simple_draft(self._history.update(ctx.tokens), self.config.size_n, self.config.size_m)
        # the server cuts the draft to what may still be generated after the size_n check, as here
        return DraftTree.chain(draft[: ctx.max_depth]) if draft else None


@register_method("ngram-simple", NgramSimpleConfig)
def build_ngram_simple(config: NgramSimpleConfig, env: MethodEnv) -> NgramSimpleDrafter:
    """llama.cpp's ngram-simple: the last 12 tokens looked up in the context, the 48 after them drafted."""
    return NgramSimpleDrafter(config)
