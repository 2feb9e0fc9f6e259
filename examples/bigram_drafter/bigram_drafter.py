"""bigram: a drafting method from outside specbench, in one file (README: "Benchmark your own method").

It drafts the tokens that followed the last occurrence of the current token, a one-token prompt lookup.
"""
from dataclasses import dataclass

from specbench.api import BaseDrafter, DraftContext, DraftTree, MethodEnv, register_method


@dataclass(frozen=True)
class BigramConfig:
    num_draft: int = 4  # draft tokens per step (--method-opt bigram.num_draft=6)


class BigramDrafter(BaseDrafter):
    reads_hidden_states = False  # declared: the engine then hands it no hidden states (contract, point 7)

    def __init__(self, config: BigramConfig) -> None:
        self.config = config

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        tokens, root = ctx.tokens, ctx.tokens[-1]  # (read only: never mutate ctx.tokens)
        for i in range(len(tokens) - 2, -1, -1):  # the latest earlier occurrence of the root
            if tokens[i] == root:
                follow = tokens[i + 1: i + 1 + min(self.config.num_draft, ctx.max_depth)]
                return DraftTree.chain(follow) if follow else None
        return None  # no draft: this step runs as autoregressive decoding


@register_method("bigram", BigramConfig)
def build(config: BigramConfig, env: MethodEnv) -> BigramDrafter:
    """bigram: the tokens that followed the current token's previous occurrence (an outside plugin)."""
    return BigramDrafter(config)
