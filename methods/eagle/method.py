"""Config, drafter and registration of ``eagle`` (Li et al. 2024: EAGLE-1 static tree, EAGLE-2 dynamic tree).

Each step the draft layer first reads the target's features of the positions accepted since the last
step (``DraftContext.hidden_states``) into its own cache, then drafts a tree level by level over its
predicted features (``tree.py``); the tree's rows are dropped from its cache afterwards, so the cache
only ever holds features the target computed.

Example: prompt of 40 tokens, root ``t``: the first step feeds 40 rows (positions 0..39, tokens 1..40
with the root last), the root's predicted feature scores the first level; with ``tree=dynamic``,
``top_k=6, depth=4, total_tokens=16`` it runs 4 more draft forwards of 6 rows and proposes the 16
best-scoring nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from specbench_methods.eagle.checkpoint import load_layer
from specbench_methods.eagle.layer import DraftCache, EagleLayer, LayerShape, causal_chunks
from specbench_methods.eagle.train import RECIPES, TRAIN_S_PER_POSITION, train_eagle
from specbench_methods.eagle.tree import EAGLE1_TREE, dynamic_tree, static_tree
from specbench.api import (BaseDrafter, ConfigError, DEFAULT_CORPORA, DTYPES, DraftContext, DraftTree, MethodEnv,
                           check_recipe, choose_draft_vocab, draft_dtype, find_or_train, pack_for_inference,
                           frozen_rows, parse_vocab, record_checkpoint, record_head_rows, register_method)

TREES = ("dynamic", "static")


@dataclass(frozen=True)
class EagleConfig:
    """``checkpoint``: ``default`` (self-distilled on first use, cached), ``random`` (untrained; for
    tests) or a folder (ours or a published EAGLE-1/2 checkpoint). ``tree=dynamic`` is EAGLE-2 (``top_k``
    nodes expanded per level for ``depth`` levels after the first, the best ``total_tokens`` kept; the
    reference's defaults are 10, 5 and 60 with the root, i.e. 59 draft nodes); ``tree=static`` is EAGLE-1's
    25-node tree. ``dtype`` of the draft's weights: ``auto`` = bfloat16 on a CPU with oneDNN bf16 kernels
    (the draft only proposes, so its rounding cannot change the output), else the target's dtype. ``recipe``
    of the default layer: ``quick`` (first use, minutes), ``full`` (``train.RECIPES``; about an hour) or ``hass``
    (full's data with HASS's harmonized training, ``hass.py``; a few hours). ``vocab``
    the draft head scores: ``trained`` (the checkpoint's own: ours keeps 8192 tokens, a published one the whole
    vocabulary), ``full``, or FR-Spec's ``fr:N`` (the N most frequent tokens of a corpus,
    ``specbench/drafting/frequency_vocab.py``)."""

    checkpoint: str = "default"
    tree: str = "dynamic"
    top_k: int = 6
    depth: int = 4
    total_tokens: int = 16
    dtype: str = "auto"
    recipe: str = "quick"
    vocab: str = "trained"

    def validate(self) -> None:
        check_recipe("eagle", self.recipe, RECIPES)
        parse_vocab(self.vocab)
        if self.tree not in TREES:
            raise ConfigError(f"eagle: tree must be one of {', '.join(TREES)}")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ConfigError(f"eagle: dtype must be auto or one of {', '.join(DTYPES)}")
        if min(self.top_k, self.total_tokens) < 1 or self.depth < 0:
            raise ConfigError("eagle: top_k and total_tokens must be >= 1, depth >= 0")


class DraftHead(nn.Module):
    """Log-probabilities over the draft vocabulary: the target's own head, or its rows for ``vocab``."""

    def __init__(self, target_head: nn.Module, vocab: np.ndarray | None) -> None:
        super().__init__()
        self.ids = None if vocab is None else torch.as_tensor(vocab, device=target_head.weight.device)
        self.sub = None
        if self.ids is not None:
            self.sub = frozen_rows(target_head, self.ids)
        self._full = [target_head]  # the target's head: not a submodule

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if self.sub is not None:
            return F.log_softmax(self.sub(feats.to(self.sub.weight.dtype)).float(), -1)
        head = self._full[0]
        return F.log_softmax(head(feats.to(head.weight.dtype)).float(), -1)

    def to_target(self, draft_ids: list[int]) -> list[int]:
        return draft_ids if self.ids is None else self.ids[draft_ids].tolist()


class EagleDrafter(BaseDrafter):
    def __init__(self, layer: EagleLayer, head: DraftHead, config: EagleConfig) -> None:
        self.layer, self.head, self.config = layer.eval(), head.eval(), config
        param = next(layer.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.cache = DraftCache()

    def begin(self, prompt_ids: list[int]) -> None:
        self.cache = DraftCache()

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        new = ctx.hidden_states if ctx.hidden_states is not None else ctx.hidden[None]
        k, P = new.shape[0], len(ctx.tokens) - 1  # the root sits at position P
        if self.cache.length != P - k:
            raise RuntimeError(f"eagle: draft cache holds {self.cache.length} rows, expected {P - k}")
        dev = self.device
        positions = torch.arange(P - k, P, device=dev)
        nxt = torch.tensor(ctx.tokens[P - k + 1 : P + 1], device=dev)
        for rows, mask in causal_chunks(P - k, k, dev):  # a long prompt's rows in slices (bounded memory)
            out = self.layer(new[rows].to(self.dtype), nxt[rows], positions[rows], mask, self.cache)
        root_feat = out[-1]
        feats: dict[int, torch.Tensor] = {}
        rows: dict[int, int] = {}
        depth_of: dict[int, int] = {}
        parent_of: dict[int, int] = {}

        def expand(nodes: list[int], toks: list[int], parents: list[int]) -> torch.Tensor:
            n, start = len(nodes), self.cache.length
            for node, parent in zip(nodes, parents):
                parent_of[node] = parent
                depth_of[node] = 1 if parent == -1 else depth_of[parent] + 1
            m = torch.zeros(n, start + n, dtype=torch.bool)
            m[:, :P] = True
            for i, node in enumerate(nodes):
                m[i, start + i] = True
                a = parent_of[node]
                while a != -1:
                    m[i, rows[a]] = True
                    a = parent_of[a]
            x = torch.stack([root_feat if p == -1 else feats[p] for p in parents])
            pos = torch.tensor([P + depth_of[node] - 1 for node in nodes], device=dev)
            ids = torch.tensor(self.head.to_target(toks), device=dev)
            y = self.layer(x, ids, pos, m.to(dev), self.cache)
            for i, node in enumerate(nodes):
                feats[node], rows[node] = y[i], start + i
            return self.head(y)

        first = self.head(root_feat[None])[0]
        c = self.config
        if c.tree == "dynamic":
            tree = dynamic_tree(first, expand, c.top_k, c.depth, c.total_tokens, ctx.max_depth)
        else:
            tree = static_tree(first, expand, EAGLE1_TREE, ctx.max_depth)
        self.cache.truncate(P)
        if not len(tree):
            return None
        return DraftTree(tuple(self.head.to_target(list(tree.tokens))), tree.parents)


def trained_layer(config: EagleConfig, env: MethodEnv) -> tuple[EagleLayer, np.ndarray | None]:
    """(draft layer, its draft vocabulary or None) ``config.checkpoint`` names: ``random`` (tests), ``default``
    (self-distilled on first use with ``config.recipe``), a folder or a hub id (``specbench.api.find_or_train``)."""
    target, checkpoint = env.model, config.checkpoint
    param = next(target.parameters())
    if checkpoint == "random":
        torch.manual_seed(0)
        return EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings()).to(param.device), None
    # any other checkpoint: a folder or a hub id (ORG/NAME[@REVISION]), e.g. yuhuili/EAGLE-Vicuna-7B-v1.3
    path = find_or_train("eagle", checkpoint, config.recipe, RECIPES[config.recipe], env, what="draft layer",
                         train=train_eagle, corpora=DEFAULT_CORPORA,
                         seconds_per_position=TRAIN_S_PER_POSITION * RECIPES[config.recipe].cost_factor())
    layer, vocab, meta = load_layer(path, target)
    record_checkpoint(env, path, meta, checkpoint, config.recipe, metrics=meta.get("metrics"),
                      draft_vocab=None if vocab is None else len(vocab))
    return layer.to(param.device, torch.float32), vocab


@register_method("eagle", EagleConfig)
def build_eagle(config: EagleConfig, env: MethodEnv) -> EagleDrafter:
    """EAGLE's draft layer over the target's features, drafting EAGLE-2's dynamic or EAGLE-1's static tree."""
    layer, trained = trained_layer(config, env)
    vocab = choose_draft_vocab(config.vocab, trained, env)  # FR-Spec's ``fr:N``: the N most frequent tokens
    env.declare_overhead(parameters=layer.parameter_count())
    dtype = draft_dtype(config.dtype, env.model)
    head = DraftHead(env.model.get_output_embeddings(), vocab).to(dtype)
    if vocab is not None:
        record_head_rows(env, len(vocab))
    layer = layer.to(dtype)
    pack_for_inference(layer)
    if head.sub is not None:
        pack_for_inference(head)
    return EagleDrafter(layer, head, config)
