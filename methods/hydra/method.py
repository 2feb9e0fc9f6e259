"""Config, drafter and registration of ``hydra`` (Ankner et al. 2024: sequentially dependent draft heads).

Each step: Hydra++'s prefix layer first reads the target's hidden states of the positions accepted since the
last step (``DraftContext.hidden_states``) into its own cache and gives the context feature ``c`` at the root
(plain Hydra heads read the target's last hidden state itself); then the reference's tree is drafted depth by
depth (``tree.py``): head k scores, in one call, every depth-k path that has children, each path's input being
``[c, e(root), e(d_1), ..., e(d_k)]`` (``heads.py``).

Example: prompt of 40 tokens, root ``t``, the default tree ``mc_sim_7b_63``: the prefix layer reads 40 rows;
head 0 scores 1 row (the root) and gives its top-10; head 1 scores the 10 depth-1 nodes that have children,
head 2 the 10 depth-2 ones, head 3 the 1 depth-3 one: 63 nodes in 4 head calls of 1 + 10 + 10 + 1 rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.api import DraftCache, LayerShape
from specbench_methods.hydra.checkpoint import ARCHS, load_heads
from specbench_methods.hydra.heads import HydraHeads, SubHead
from specbench_methods.hydra.train import RECIPES, TRAIN_S_PER_POSITION, recipe_for, train_hydra
from specbench_methods.hydra.tree import TREES, Path, plan, walk
from specbench.api import (BaseDrafter, ConfigError, DEFAULT_CORPORA, DTYPES, DraftContext, DraftTree, MethodEnv,
                           choose_draft_vocab, parse_vocab, record_head_rows,
                           check_recipe, draft_dtype, find_or_train, pack_for_inference,
                           record_checkpoint, register_method)


@dataclass(frozen=True)
class HydraConfig:
    """``checkpoint``: ``default`` (self-distilled from the target on first use, cached), ``random`` (untrained
    heads that repeat the target's prediction; tests) or a folder or hub id (ours or a published Hydra checkpoint,
    whose ``config.json`` names its head). ``head`` (for ``default`` and ``random``): ``prefix-mlp`` = Hydra++
    (the published checkpoints' head), ``mlp`` = the paper's base Hydra heads. ``dtype`` of the heads' weights:
    ``auto`` = bfloat16 on a CPU with oneDNN bf16 kernels (a draft only proposes), else the target's.
    ``recipe`` of the default heads: ``quick`` (first use, minutes) or ``full`` (``train.recipe_for``). ``vocab``: the
    tokens the heads score, ``trained`` (the checkpoint's own; ours a reduced one), ``full`` = ``trained`` for Hydra
    (its heads score only what they were trained on), or FR-Spec's ``fr:N`` (the N most frequent tokens of a corpus,
    within what the heads score)."""

    checkpoint: str = "default"
    head: str = "prefix-mlp"
    tree: str = "mc_sim_7b_63"
    tree_size: int = 0  # > 0: only the tree's first N choices (listed best first)
    dtype: str = "auto"
    recipe: str = "quick"
    vocab: str = "trained"

    def validate(self) -> None:
        check_recipe("hydra", self.recipe, RECIPES)
        parse_vocab(self.vocab)
        if self.head not in ARCHS:
            raise ConfigError(f"hydra: head must be one of {', '.join(ARCHS)}")
        if self.tree not in TREES:
            raise ConfigError(f"hydra: tree must be one of {', '.join(TREES)}")
        if self.tree_size < 0:
            raise ConfigError("hydra: tree_size must be >= 0 (0 = the whole tree)")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ConfigError(f"hydra: dtype must be auto or one of {', '.join(DTYPES)}")


class HydraDrafter(BaseDrafter):
    def __init__(self, heads: HydraHeads, embed: torch.nn.Module, choices: tuple[Path, ...]) -> None:
        self.heads = heads.eval()
        self.embed = embed
        param = next(heads.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.levels = plan(choices)[: heads.num_heads]
        self.cache = DraftCache()

    def begin(self, prompt_ids: list[int]) -> None:
        self.cache = DraftCache()

    def _embed(self, target_ids: torch.Tensor) -> torch.Tensor:
        return self.embed(target_ids.to(self.device)).to(self.dtype)  # [n, h]

    def _context(self, ctx: DraftContext) -> torch.Tensor:
        """``c`` at the root ``[h]``; Hydra++ first feeds the new rows into the prefix layer's cache."""
        if self.heads.prefix is None:
            return ctx.hidden.to(self.device, self.dtype)
        new = ctx.hidden_states if ctx.hidden_states is not None else ctx.hidden[None]
        expected = len(ctx.tokens) - 1 - new.shape[0]  # rows already cached: every position before these
        if self.cache.length != expected:
            raise RuntimeError(f"hydra: prefix cache holds {self.cache.length} rows, expected {expected}")
        return self.heads.prefix.extend(new.to(self.device, self.dtype), self.cache)[-1]

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        c = self._context(ctx)
        levels = self.levels[: max(0, ctx.max_depth)]
        if not levels:
            return None
        root_input = torch.cat([c, self._embed(torch.tensor([ctx.tokens[-1]]))[0]])  # [2h]
        tree = walk(levels, root_input, self.heads.logits,
                    lambda ids: self._embed(self.heads.to_target(torch.tensor(ids, device=self.device))))
        if not len(tree):
            return None
        ids = self.heads.to_target(torch.tensor(tree.tokens, device=self.device)).tolist()
        return DraftTree(tuple(int(i) for i in ids), tree.parents)


def trained_heads(config: HydraConfig, env: MethodEnv) -> HydraHeads:
    """The heads ``config.checkpoint`` names: ``random`` (tests), ``default`` (self-distilled on first use), a
    folder or a hub id (``specbench.api.find_or_train``), in fp32 on the target's device."""
    target = env.model
    param = next(target.parameters())
    recipe = recipe_for(config.head, config.recipe)
    if config.checkpoint == "random":
        torch.manual_seed(0)
        shape = LayerShape.from_config(target.config) if recipe.head == "prefix-mlp" else None
        heads = HydraHeads(int(target.get_input_embeddings().weight.shape[1]), recipe.num_heads, recipe.num_layers, shape,
                           head=SubHead(target.get_output_embeddings(), None))
        return heads.identity_init().to(param.device)
    # any other checkpoint: a folder or a hub id (ORG/NAME[@REVISION]), e.g. ankner/hydra-vicuna-7b-v1.3
    path = find_or_train("hydra", config.checkpoint, config.recipe, recipe, env, what="heads", train=train_hydra,
                         seconds_per_position=TRAIN_S_PER_POSITION, corpora=DEFAULT_CORPORA)
    heads, meta = load_heads(path, target)
    record_checkpoint(env, path, meta, config.checkpoint, config.recipe, head=heads.arch, metrics=meta.get("metrics"),
                      draft_vocab=None if heads.shared is None else heads.shared.size,
                      weights_sha256=meta.get("weights_sha256"))
    return heads.to(param.device, torch.float32)


@register_method("hydra", HydraConfig)
def build_hydra(config: HydraConfig, env: MethodEnv) -> HydraDrafter:
    """Hydra's sequentially dependent heads (Hydra++ by default) drafting the reference's tree."""
    heads = trained_heads(config, env)
    env.declare_overhead(parameters=heads.parameter_count())
    keep = choose_draft_vocab(config.vocab, None, env)  # FR-Spec's ``fr:N``: the N most frequent tokens
    if keep is not None:
        heads.restrict(keep)
        record_head_rows(env, heads.shared.size if heads.shared is not None else len(heads.own_ids))
    dtype = draft_dtype(config.dtype, env.model)
    heads = heads.to(dtype)
    if heads.shared is not None:
        heads.shared.to(heads.shared.linear.weight.device, dtype)
        pack_for_inference(heads.shared)
    pack_for_inference(heads)
    choices = TREES[config.tree]
    return HydraDrafter(heads, env.model.get_input_embeddings(), choices[: config.tree_size] if config.tree_size else choices)
