"""Config, drafter and registration of ``ddtree`` (Ringel and Romano 2026, liranringel/ddtree): DFlash's draft and
block unchanged, the chain replaced by a tree of the block's likeliest prefixes (``best_first.py``), verified by
the engine in one target forward.

It lives in the dflash package because it is DFlash's drafter with another last step (methods never import each
other): the same options, the same draft (``checkpoint=default`` is dflash's self-distilled one, trained once for
both), plus ``nodes``, the tree's size (the reference's ``tree_budget``).

Example: blocks of 16 and ``nodes=0`` (the reference's default: ``block_size - 1``): each step scores the 15 rows
as DFlash does, takes each row's log-softmax and proposes the 15 likeliest prefixes; where DFlash's draft is sure
of every row that is its chain, where it hesitates at depth 2 the tree spends nodes on both guesses there.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .best_first import best_first_tree
from .method import DFlashConfig, DFlashDrafter, dflash_first_use, ready_draft
from .network import DFlashDraft
from specbench.api import (ConfigError, DraftTree, MethodEnv, config_shape, register_draft_cost,
                           register_first_use_build, register_method)


@dataclass(frozen=True)
class DDTreeConfig(DFlashConfig):
    """dflash's options (``DFlashConfig``) and ``nodes``: draft tokens per tree (0 = ``block_size - 1``, the
    reference's default, as many as DFlash's chain; its paper sweeps 16 to 1024 and reports the best)."""

    nodes: int = 0

    def validate(self) -> None:
        super().validate()
        if self.nodes < 0:
            raise ConfigError("ddtree: nodes must be 0 (block_size - 1) or >= 1")


class DDTreeDrafter(DFlashDrafter):
    """``DFlashDrafter`` proposing ``best_first_tree`` of its block rows' log-softmax instead of their argmax."""

    def __init__(self, draft: DFlashDraft, block_size: int = 0, nodes: int = 0) -> None:
        super().__init__(draft, block_size)
        self.nodes = nodes or self.block_size - 1

    def tree_of(self, logits: torch.Tensor) -> DraftTree:
        return best_first_tree(torch.log_softmax(logits.float(), dim=-1), self.nodes)


@register_method("ddtree", DDTreeConfig)
def build_ddtree(config: DDTreeConfig, env: MethodEnv) -> DDTreeDrafter:
    """DDTree: the ``nodes`` likeliest prefixes of DFlash's block, one tree per draft forward."""
    return DDTreeDrafter(ready_draft(config, env), config.block_size, config.nodes)


register_first_use_build("ddtree")(dflash_first_use)
register_draft_cost("ddtree", config_shape(), random_options={"checkpoint": "random"})
