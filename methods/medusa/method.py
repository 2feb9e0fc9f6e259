"""Config, drafter and registration of ``medusa`` (Cai et al. 2024, Medusa-1: frozen target, trained heads).

Example: each step the heads read the target's hidden state at the root, each gives its top-10 tokens,
and the reference's 63-node tree of rank paths (``tree.py``) becomes the draft the engine verifies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from methods.medusa.checkpoint import load_heads
from methods.medusa.heads import MedusaHeads
from methods.medusa.train import MedusaTrainConfig, train_medusa
from methods.medusa.tree import TREES, max_rank, tree_from_choices
from specbench.config import ConfigError
from specbench.distill_data import DEFAULT_CORPORA, default_checkpoint
from specbench.drafter import BaseDrafter, DraftContext
from specbench.engine.tree import DraftTree
from specbench.hub_checkpoint import resolve_checkpoint
from specbench.method_env import MethodEnv
from specbench.registry import register_method



@dataclass(frozen=True)
class MedusaConfig:
    """``checkpoint``: ``default`` (self-distilled from the target on first use, cached), ``random``
    (untrained heads: each repeats the target's own prediction; for tests) or a folder (ours or a
    published Medusa checkpoint)."""

    checkpoint: str = "default"
    tree: str = "mc_sim_7b_63"
    tree_size: int = 0  # > 0: only the tree's first N choices (the reference lists them best first)

    def validate(self) -> None:
        if self.tree not in TREES:
            raise ConfigError(f"medusa: tree must be one of {', '.join(TREES)}")
        if self.tree_size < 0:
            raise ConfigError("medusa: tree_size must be >= 0 (0 = the whole tree)")


class MedusaDrafter(BaseDrafter):
    def __init__(self, heads: MedusaHeads, choices: tuple[tuple[int, ...], ...]) -> None:
        self.heads = heads.eval()
        self.choices = choices
        self.topk = max_rank(choices)

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        logits = self.heads(ctx.hidden.unsqueeze(0).float())[0]  # [K, V]; heads keep fp32 weights
        top = logits.topk(self.topk, dim=-1).indices.tolist()  # [K, topk]
        tree = tree_from_choices(top, self.choices)
        return tree if len(tree) else None


def load_or_train(checkpoint: str, env: MethodEnv) -> MedusaHeads:
    target = env.model
    param = next(target.parameters())
    if checkpoint == "random":
        torch.manual_seed(0)
        return MedusaHeads(int(target.config.hidden_size), int(target.config.vocab_size), 4, 1,
                           target.get_output_embeddings()).to(param.device)
    if checkpoint == "default":
        recipe = MedusaTrainConfig()
        path = default_checkpoint(env, "medusa", recipe, "heads", lambda out: train_medusa(
            target, env.tokenizer, DEFAULT_CORPORA, env.data_dir, out, recipe, env.model_id))
    else:  # a folder or a hub id (ORG/NAME[@REVISION]), e.g. FasterDecoding/medusa-vicuna-7b-v1.3
        source = resolve_checkpoint(checkpoint, "medusa.checkpoint")
        env.artifacts["checkpoint_source"] = source.record()
        path = source.path
    heads, meta = load_heads(path, target)
    env.artifacts["checkpoint"] = {"path": str(path), "metrics": meta.get("metrics")}
    return heads.to(param.device, torch.float32)


@register_method("medusa", MedusaConfig)
def build_medusa(config: MedusaConfig, env: MethodEnv) -> MedusaDrafter:
    """Medusa-1 heads on the target's last hidden state, top-k per head in the reference's sparse tree."""
    choices = TREES[config.tree]
    return MedusaDrafter(load_or_train(config.checkpoint, env), choices[: config.tree_size] if config.tree_size else choices)
