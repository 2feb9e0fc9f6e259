"""``ngram-map-k``: llama.cpp's ``--spec-type ngram-map-k`` (``common_ngram_map_draft`` in key-only mode).

The key, the last ``size_n`` tokens (the root included), is looked up among the starts that ``size_m`` tokens
still follow before the root; the tokens after its occurrence are drafted, at most what the same key's last draft
accepted (``size_m`` for a key never drafted). No minimum: a key whose draft accepted nothing drafts nothing
again. The map (``key_map.py``) persists from one request to the next, as in one server slot, so the drafter
keeps state across generations (``--repeats`` times each repeat from a copy of the state before repeat 0).

>>> d = NgramMapKDrafter(NgramMapKConfig(size_n=2, size_m=3))
>>> d.begin([4, 5, 6, 7, 8, 9, 1, 2])
>>> d.propose(DraftContext([4, 5, 6, 7, 8, 9, 1, 2, 5, 6], 8, None, max_depth=10)).tokens
(7, 8, 9)
"""
from __future__ import annotations

from dataclasses import dataclass

from specbench_methods.ngram.history import TokenHistory
from specbench_methods.ngram.key_map import KeyMap
from specbench_methods.ngram.simple import SIZE_LIMIT
from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, StepResult, register_method


@dataclass(frozen=True)
class NgramMapKConfig:
    """llama.cpp's defaults for ngram-map-k (``--spec-ngram-map-k-size-n``, ``--spec-ngram-map-k-size-m``): a key
    of 12 tokens, drafts of up to 48."""

    size_n: int = 12  # the key n-gram
    size_m: int = 48  # the most tokens drafted (and the tokens that must follow an occurrence)

    def validate(self) -> None:
        for key in ("size_n", "size_m"):
            if not 1 <= getattr(self, key) <= SIZE_LIMIT:
                raise ConfigError(f"ngram-map-k: {key} must be between 1 and {SIZE_LIMIT} (llama.cpp's range)")


class NgramMapKDrafter(BaseDrafter):
    reads_hidden_states = False  # drafts from tokens alone
    keeps_state_across_generations = True  # the map carries from one request to the next, as a server slot's

    def __init__(self, config: NgramMapKConfig) -> None:
        self.config = config
        self.map = KeyMap(config.size_n, config.size_m)
        self._history = TokenHistory()

    def begin(self, prompt_ids: list[int]) -> None:
        self._history.reset()
        self.map.begin(len(prompt_ids))  # (the server's begin: the prompt, before the first sampled token)

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if ctx.max_depth < 1:  # the server asks for no draft when nothing more may be drafted
            return None
        draft = self.map.draft(self._history.update(ctx.tokens))
        return DraftTree.chain(draft[: ctx.max_depth]) if draft else None  # the server's cut, after the lookup

    def observe(self, result: StepResult) -> None:
        if result.tree is not None and len(result.tree):  # a draft was verified: the server's accept
            self.map.accept(len(result.accepted_nodes))


@register_method("ngram-map-k", NgramMapKConfig)
def build_ngram_map_k(config: NgramMapKConfig, env: MethodEnv) -> NgramMapKDrafter:
    """llama.cpp's ngram-map-k: a 12-token key's continuation, capped at what its last draft accepted."""
    return NgramMapKDrafter(config)
