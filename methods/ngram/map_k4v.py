"""``ngram-map-k4v``: llama.cpp's ``--spec-type ngram-map-k4v`` (``common_ngram_map_draft`` with values).

As ``ngram-map-k`` (the same search for the key's occurrence, the same map kept from one request to the next),
but each key counts up to four continuations (``size_m`` tokens each) after its occurrences, and drafts only
once the key was found ``min_hits`` times and its most frequent continuation occurs at least twice as often as
the others together (``value_map.py``).

>>> d = NgramMapK4vDrafter(NgramMapK4vConfig(size_n=1, size_m=2))
>>> d.begin([0, 5, 6])
>>> d.propose(DraftContext([0, 5, 6, 7, 5, 6, 7, 0, 5], 3, None, max_depth=10)).tokens
(6, 7)
"""
from __future__ import annotations

from dataclasses import dataclass

from specbench_methods.ngram.history import TokenHistory
from specbench_methods.ngram.map_k import NgramMapKDrafter
from specbench_methods.ngram.simple import SIZE_LIMIT
from specbench_methods.ngram.value_map import ValueMap
from specbench.api import ConfigError, DraftContext, MethodEnv, register_method


@dataclass(frozen=True)
class NgramMapK4vConfig:
    """llama.cpp's defaults for ngram-map-k4v (``--spec-ngram-map-k4v-size-n``, ``-size-m``, ``-min-hits``): a
    key of 12 tokens, drafts of up to 48, a draft from the first time a key is found."""

    size_n: int = 12  # the key n-gram
    size_m: int = 48  # the most tokens drafted, and the length of a counted continuation
    min_hits: int = 1  # how often a key must have been found before it drafts

    def validate(self) -> None:
        for key in ("size_n", "size_m"):
            if not 1 <= getattr(self, key) <= SIZE_LIMIT:
                raise ConfigError(f"ngram-map-k4v: {key} must be between 1 and {SIZE_LIMIT} (llama.cpp's range)")
        if not 1 <= self.min_hits <= 0xFFFF:
            raise ConfigError("ngram-map-k4v: min_hits must be at least 1 (llama.cpp's check; a uint16)")


class NgramMapK4vDrafter(NgramMapKDrafter):
    """``ngram-map-k``'s drafter on a map with values; it keeps state across generations as that one does."""

    def __init__(self, config: NgramMapK4vConfig) -> None:
        self.config = config  # type: ignore[assignment]
        self.map = ValueMap(config.size_n, config.size_m, config.min_hits)
        self._history = TokenHistory()


@register_method("ngram-map-k4v", NgramMapK4vConfig)
def build_ngram_map_k4v(config: NgramMapK4vConfig, env: MethodEnv) -> NgramMapK4vDrafter:
    """llama.cpp's ngram-map-k4v: a 12-token key's continuation, when it is clearly the most frequent of four."""
    return NgramMapK4vDrafter(config)
