"""``ngram-cache``: llama.cpp's ``--spec-type ngram-cache`` (lookup decoding: ``common/ngram-cache.cpp`` and the
server's ``common_speculative_impl_ngram_cache``).

A context cache counts, for each n-gram of 1 to 4 tokens, the tokens that followed it. To draft, the last 4, 3,
2, then 1 tokens (the drafted ones included) are looked up, the largest first; the first whose most frequent
next token was seen often enough (``LAX_MIN_SAMPLES``) and makes a large enough share (``LAX_MIN_PERCENT``) gives
the next token; up to 8 tokens, until none qualifies. Kept from the server (``README.md``):

- the cache and its position (``cache_size``) outlive requests: each step adds the tokens from ``cache_size`` on
  of the current text and the root as one chunk, counting only the n-grams inside that chunk;
- the server's static and dynamic caches (``--lookup-cache-static``, ``--lookup-cache-dynamic``) are files it
  loads when given; by default there are none, so only the context cache drafts.

Example: text ``[1, 2, 3, 1, 2, 3, 1, 2]``: the 4-gram ``[2, 3, 1, 2]`` was followed by 3 once (one sample
suffices for 3- and 4-grams), then ``[3, 1, 2, 3]`` by 1, and so on: the draft runs to 8 tokens.

>>> cache = {}
>>> add_chunk(cache, [1, 2, 3, 1, 2, 3, 1, 2])
>>> draft_from(cache, [1, 2, 3, 1, 2, 3, 1, 2])
[3, 1, 2, 3, 1, 2, 3, 1]
>>> draft_from(cache, [1, 2, 3, 1, 2, 3, 1, 9])  # [9] never seen, nor any n-gram ending with it
[]
"""
from __future__ import annotations

from dataclasses import dataclass

from specbench.api import BaseDrafter, DraftContext, DraftTree, MethodEnv, register_method

NGRAM_MIN, NGRAM_MAX = 1, 4  # LLAMA_NGRAM_MIN, LLAMA_NGRAM_MAX
N_DRAFT = 8  # the server's ngram-cache drafts at most 8 tokens (fixed in speculative.cpp)
LAX_MIN_SAMPLES = (2, 2, 1, 1)  # draft_min_sample_size_lax, by n-gram size 1..4 (the context cache's)
LAX_MIN_PERCENT = (66, 50, 50, 50)  # draft_min_percent_lax

Cache = dict[tuple[int, ...], dict[int, int]]  # n-gram -> next token -> count


def add_chunk(cache: Cache, chunk: list[int]) -> None:
    """``common_ngram_cache_update`` of a chunk: every n-gram of 1..4 tokens inside it, with its next token."""
    for size in range(NGRAM_MIN, NGRAM_MAX + 1):
        for i in range(size, len(chunk)):
            part = cache.setdefault(tuple(chunk[i - size : i]), {})
            part[chunk[i]] = part.get(chunk[i], 0) + 1


def _next_token(cache: Cache, seq: list[int]) -> int | None:
    """The context cache's ``try_draft``: the largest n-gram ending ``seq`` whose best next token qualifies."""
    for size in range(min(NGRAM_MAX, len(seq)), NGRAM_MIN - 1, -1):
        part = cache.get(tuple(seq[len(seq) - size :]))
        if part is None:
            continue
        best, best_count = None, 0
        # among equals the token first seen last wins: libstdc++'s unordered_map iterates newest first (README)
        for token, count in reversed(part.items()):
            if count > best_count:
                best, best_count = token, count
        total = sum(part.values())
        if total < LAX_MIN_SAMPLES[size - 1] or 100 * best_count < LAX_MIN_PERCENT[size - 1] * total:
            continue
        return best
    return None


def draft_from(cache: Cache, text: list[int], n_draft: int = N_DRAFT) -> list[int]:
    """``common_ngram_cache_draft`` with only a context cache: ``text`` = history + root."""
    if len(text) < 2:  # LLAMA_NGRAM_STATIC
        return []
    seq = list(text[-NGRAM_MAX:])  # the n-grams looked up end here (the drafted tokens appended)
    start = len(seq)
    while len(seq) - start < n_draft:
        token = _next_token(cache, seq)
        if token is None:
            break
        seq.append(token)
    return seq[start:]


@dataclass(frozen=True)
class NgramCacheConfig:
    """No options: the server's ngram-cache has none but its cache files, which this method does not read."""

    def validate(self) -> None:
        return None


class NgramCacheDrafter(BaseDrafter):
    reads_hidden_states = False
    keeps_state_across_generations = True  # the context cache and its position outlive a request, as the server's

    def __init__(self, config: NgramCacheConfig) -> None:
        self.config = config
        self.cache: Cache = {}
        self.cache_size = 0  # the text up to here was added (the server's sinfo.cache_size, never reset)

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if ctx.max_depth < 1:
            return None
        history = len(ctx.tokens) - 1
        if self.cache_size < history + 1:
            add_chunk(self.cache, ctx.tokens[self.cache_size :])  # the history's new tokens and the root
            self.cache_size = history + 1
        draft = draft_from(self.cache, ctx.tokens)
        return DraftTree.chain(draft[: ctx.max_depth]) if draft else None


@register_method("ngram-cache", NgramCacheConfig)
def build_ngram_cache(config: NgramCacheConfig, env: MethodEnv) -> NgramCacheDrafter:
    """llama.cpp's ngram-cache (lookup decoding): 1- to 4-gram statistics of the context, up to 8 tokens drafted."""
    return NgramCacheDrafter(config)
