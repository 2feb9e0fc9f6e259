"""The ReDrafter drafter: beam search over the recurrent head, beams packed into one draft tree."""
from __future__ import annotations

import torch

from specbench_methods.redrafter.beam import StepFn, beam_search, head_step_fn
from specbench_methods.redrafter.config import ReDrafterConfig
from specbench_methods.redrafter.head import DraftHead
from specbench_methods.redrafter.prefix import pack_beams
from specbench.api import BaseDrafter, DraftContext, DraftTree, StepResult


class ReDrafter(BaseDrafter):
    """Each step: W beams of L-1 draft tokens after the root, deduplicated into a tree.

    The engine's greedy acceptance (longest root-to-node path matching the target's argmax) picks
    exactly the beam with the longest accepted prefix (the first such beam on ties).
    """

    def __init__(self, head: DraftHead | None, config: ReDrafterConfig, token_ids: torch.Tensor | None = None) -> None:
        self.head = head  # the drafting copy: its logits are over ``token_ids`` (None = every target id)
        self.config = config
        self.token_ids = token_ids
        self.accepted_depths: list[int] = []  # per step, for diagnostics

    def step_fn(self, ctx: DraftContext) -> StepFn:
        """The beam-search scorer for this step (tests override it with an oracle)."""
        assert self.head is not None
        return head_step_fn(self.head, ctx.hidden, self.config.top_k)

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        length = min(self.config.beam_length, ctx.max_depth + 1)
        if length < 2:
            return None
        width = min(self.config.beam_width, self.config.top_k or self.config.beam_width)  # no masked beams
        beams, _ = beam_search(self.step_fn(ctx), ctx.tokens[-1], width, length, ctx.hidden.device, self.token_ids)
        tree, _ = pack_beams(beams)
        return tree

    def observe(self, result: StepResult) -> None:
        self.accepted_depths.append(len(result.accepted_nodes))
