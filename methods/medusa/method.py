"""Config, drafter and registration of ``medusa`` (Cai et al. 2024, Medusa-1: frozen target, trained heads).

Example: each step the heads read the target's hidden state at the root, each gives its top-10 tokens,
and the reference's 63-node tree of rank paths (``tree.py``) becomes the draft the engine verifies.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench_methods.medusa.checkpoint import load_heads
from specbench_methods.medusa.heads import MedusaHeads
from specbench_methods.medusa.train import RECIPES, TRAIN_S_PER_POSITION, train_medusa
from specbench_methods.medusa.tree import TREES, max_rank, tree_from_choices
from specbench.api import (BaseDrafter, ConfigError, DEFAULT_CORPORA, DraftContext, DraftTree, MethodEnv, check_recipe,
                           choose_draft_vocab, find_or_train, parse_vocab, record_checkpoint, record_head_rows,
                           register_method)

# the heads draft in float32 whatever the target's dtype (the reference: the target's); no dtype option
HEADS_DTYPE = torch.float32


@dataclass(frozen=True)
class MedusaConfig:
    """``checkpoint``: ``default`` (self-distilled from the target on first use, cached), ``random``
    (untrained heads: each repeats the target's own prediction; for tests) or a folder (ours or a
    published Medusa checkpoint). ``recipe`` of the default heads: ``quick`` (first use, minutes) or ``full``
    (``train.RECIPES``; about an hour). ``vocab``: the tokens the heads score, ``trained`` = ``full`` (Medusa's heads
    score the whole vocabulary) or FR-Spec's ``fr:N`` (the N most frequent tokens of a corpus)."""

    checkpoint: str = "default"
    tree: str = "mc_sim_7b_63"
    tree_size: int = 0  # > 0: only the tree's first N choices (the reference lists them best first)
    recipe: str = "quick"
    vocab: str = "trained"

    def validate(self) -> None:
        check_recipe("medusa", self.recipe, RECIPES)
        parse_vocab(self.vocab)
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
        logits = self.heads(ctx.hidden.unsqueeze(0).to(HEADS_DTYPE))[0]  # [K, V]
        top = logits.topk(min(self.topk, logits.shape[-1]), dim=-1).indices  # [K, topk]
        if self.heads.ids is not None:  # (vocab=fr:N: columns are the kept ids)
            top = self.heads.ids[top]
        top = top.tolist()
        tree = tree_from_choices(top, self.choices)
        return tree if len(tree) else None


def trained_heads(config: MedusaConfig, env: MethodEnv) -> MedusaHeads:
    """The heads ``config.checkpoint`` names: ``random`` (tests), ``default`` (self-distilled on first use with
    ``config.recipe``), a folder or a hub id (``specbench.api.find_or_train``), in fp32 on the target's device."""
    target, checkpoint = env.model, config.checkpoint
    param = next(target.parameters())
    if checkpoint == "random":
        torch.manual_seed(0)
        return MedusaHeads(int(target.config.hidden_size), int(target.config.vocab_size), 4, 1,
                           target.get_output_embeddings()).to(param.device)
    # any other checkpoint: a folder or a hub id (ORG/NAME[@REVISION]), e.g. FasterDecoding/medusa-vicuna-7b-v1.3
    path = find_or_train("medusa", checkpoint, config.recipe, RECIPES[config.recipe], env, what="heads",
                         train=train_medusa, seconds_per_position=TRAIN_S_PER_POSITION, corpora=DEFAULT_CORPORA)
    heads, meta = load_heads(path, target)
    record_checkpoint(env, path, meta, checkpoint, config.recipe, metrics=meta.get("metrics"))
    return heads.to(param.device, HEADS_DTYPE)


@register_method("medusa", MedusaConfig)
def build_medusa(config: MedusaConfig, env: MethodEnv) -> MedusaDrafter:
    """Medusa-1 heads on the target's last hidden state, top-k per head in the reference's sparse tree."""
    choices = TREES[config.tree]
    heads = trained_heads(config, env)
    vocab = choose_draft_vocab(config.vocab, None, env)  # FR-Spec's ``fr:N``: the N most frequent tokens
    if vocab is not None:
        heads.restrict(torch.as_tensor(vocab))
        record_head_rows(env, len(vocab))
    return MedusaDrafter(heads, choices[: config.tree_size] if config.tree_size else choices)
