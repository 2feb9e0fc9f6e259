"""Config, drafter and registration of ``eagle3`` (Li et al. 2025): EAGLE-3's draft on EAGLE-2's dynamic tree.

Each step the drafter reads the target's low / middle / high layer states of the positions kept since
the last step (``DraftContext.layer_states``: the engine collects them because the drafter declares
``feature_layers``), fuses them (``fc``) and runs them through its decoder layer into its own cache.
The last row's output scores the root's children; deeper levels feed the draft's own outputs back
(``tree.py`` of ``eagle`` builds the tree); the tree's rows leave the cache again. Draft ids are mapped
to the target's ids (``d2t``) before the engine sees them.

Example: a 30-layer target, prompt of 40 tokens, root ``t``: the first step fuses ``[40, 3, 576]``
states of layers (2, 15, 27) into 40 rows (positions 0..39, tokens 1..40 with the root last); with
``top_k=6, depth=4, total_tokens=16`` it then runs 4 draft forwards of 6 rows and proposes 16 nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from specbench.api import DraftCache, causal_chunks
from specbench.api import dynamic_tree
from specbench_methods.eagle3.checkpoint import load_draft
from specbench_methods.eagle3.init import new_draft
from specbench_methods.eagle3.layer import Eagle3Layer, reference_layers
from specbench_methods.eagle3.train import RECIPES, TRAIN_S_PER_POSITION, train_eagle3
from specbench.api import (BaseDrafter, ConfigError, DEFAULT_CORPORA, DTYPES, DraftContext, DraftTree, MethodEnv,
                           check_recipe, choose_draft_vocab, draft_dtype, find_or_train, pack_for_inference,
                           parse_vocab, record_checkpoint, record_head_rows, register_method)


@dataclass(frozen=True)
class Eagle3Config:
    """``checkpoint``: ``default`` (self-distilled on first use, cached), ``random`` (untrained; for tests),
    a folder or a hub id (ours, or a published EAGLE-3 draft in the reference's layout). The tree is
    EAGLE-2's: ``top_k`` nodes expanded per level for ``depth`` levels after the first, the best
    ``total_tokens`` kept (Spec-Bench ran 10, 5 and 60 with the root, i.e. 59 draft nodes). ``dtype`` of the
    draft's weights: ``auto`` = bfloat16 on a CPU with oneDNN bf16 kernels, else the target's dtype.
    ``recipe`` of the default draft: ``quick`` (first use, minutes) or ``full`` (``train.RECIPES``). ``vocab``: the
    tokens its head scores, ``trained`` = ``full`` (EAGLE-3's head is its own, over its draft vocabulary) or
    FR-Spec's ``fr:N`` (the N most frequent tokens of a corpus, within its draft vocabulary)."""

    checkpoint: str = "default"
    top_k: int = 6
    depth: int = 4
    total_tokens: int = 16
    dtype: str = "auto"
    recipe: str = "quick"
    vocab: str = "trained"

    def validate(self) -> None:
        check_recipe("eagle3", self.recipe, RECIPES)
        parse_vocab(self.vocab)
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ConfigError(f"eagle3: dtype must be auto or one of {', '.join(DTYPES)}")
        if min(self.top_k, self.total_tokens) < 1 or self.depth < 0:
            raise ConfigError("eagle3: top_k and total_tokens must be >= 1, depth >= 0")


class Eagle3Drafter(BaseDrafter):
    def __init__(self, layer: Eagle3Layer, feature_layers: tuple[int, ...], config: Eagle3Config) -> None:
        self.layer, self.config = layer.eval(), config
        self.feature_layers = feature_layers  # the engine hands their states over as DraftContext.layer_states
        param = next(layer.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.cache = DraftCache()

    def begin(self, prompt_ids: list[int]) -> None:
        self.cache = DraftCache()

    def _log_probs(self, out: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.layer.logits(out).float(), -1)  # [n, N] over the draft vocabulary

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if ctx.layer_states is None:
            raise RuntimeError("eagle3: the engine delivered no layer states (feature_layers not honoured)")
        k, P = ctx.layer_states.shape[0], len(ctx.tokens) - 1  # the root sits at position P
        if self.cache.length != P - k:
            raise RuntimeError(f"eagle3: draft cache holds {self.cache.length} rows, expected {P - k}")
        dev, layer = self.device, self.layer
        feats = layer.fuse(ctx.layer_states.to(dev, self.dtype))  # [k, h]
        nxt = torch.tensor(ctx.tokens[P - k + 1 : P + 1], device=dev)
        positions = torch.arange(P - k, P, device=dev)
        for rows, mask in causal_chunks(P - k, k, dev):  # a long prompt's rows in slices (bounded memory)
            out = layer(feats[rows], nxt[rows], positions[rows], mask, self.cache)
        root_feat = out[-1]
        own: dict[int, torch.Tensor] = {}  # node -> the draft's output at it (its children's input feature)
        rows: dict[int, int] = {}  # node -> its row in the draft cache
        depth_of: dict[int, int] = {}
        parent_of: dict[int, int] = {}

        def expand(nodes: list[int], toks: list[int], parents: list[int]) -> torch.Tensor:
            n, start = len(nodes), self.cache.length
            m = torch.zeros(n, start + n, dtype=torch.bool)
            m[:, :P] = True  # every node sees the whole context
            for i, (node, parent) in enumerate(zip(nodes, parents)):
                parent_of[node], depth_of[node] = parent, 1 if parent == -1 else depth_of[parent] + 1
                m[i, start + i] = True
                a = parent
                while a != -1:  # ... and its ancestors' rows
                    m[i, rows[a]] = True
                    a = parent_of[a]
            x = torch.stack([root_feat if p == -1 else own[p] for p in parents])  # [n, h]
            pos = torch.tensor([P + depth_of[node] - 1 for node in nodes], device=dev)
            ids = layer.to_target(torch.tensor(toks, device=dev))  # embeddings are the target's: target ids
            y = layer(x, ids, pos, m.to(dev), self.cache)
            for i, node in enumerate(nodes):
                own[node], rows[node] = y[i], start + i
            return self._log_probs(y)

        c = self.config
        tree = dynamic_tree(self._log_probs(root_feat[None])[0], expand, c.top_k, c.depth, c.total_tokens, ctx.max_depth)
        self.cache.truncate(P)
        if not len(tree):
            return None
        return DraftTree(tuple(layer.to_target(torch.tensor(tree.tokens, device=dev)).tolist()), tree.parents)


def trained_draft(config: Eagle3Config, env: MethodEnv) -> tuple[Eagle3Layer, tuple[int, ...]]:
    """(draft, its feature layers) ``config.checkpoint`` names: ``random`` (tests), ``default`` (self-distilled
    on first use with ``config.recipe``), a folder or a hub id (``specbench.api.find_or_train``)."""
    target, checkpoint = env.model, config.checkpoint
    param = next(target.parameters())
    if checkpoint == "random":  # untrained, as training starts: the whole vocabulary, the target's head rows
        torch.manual_seed(0)
        return new_draft(target, None).to(param.device), reference_layers(int(target.config.num_hidden_layers))
    # any other checkpoint: a folder or a hub id (ORG/NAME[@REVISION]), e.g. yuhuili/EAGLE3-Vicuna1.3-13B
    path = find_or_train("eagle3", checkpoint, config.recipe, RECIPES[config.recipe], env, what="EAGLE-3 draft",
                         train=train_eagle3, seconds_per_position=TRAIN_S_PER_POSITION, corpora=DEFAULT_CORPORA)
    layer, layers, meta = load_draft(path, target)
    record_checkpoint(env, path, meta, checkpoint, config.recipe, metrics=meta.get("metrics"),
                      weights_sha256=meta.get("weights_sha256"), feature_layers=list(layers),
                      draft_vocab=int(layer.lm_head.weight.shape[0]))
    return layer.to(param.device, torch.float32), layers


@register_method("eagle3", Eagle3Config)
def build_eagle3(config: Eagle3Config, env: MethodEnv) -> Eagle3Drafter:
    """EAGLE-3's draft over fused low / middle / high target features, drafting EAGLE-2's dynamic tree."""
    layer, layers = trained_draft(config, env)
    env.declare_overhead(parameters=layer.parameter_count())
    keep = choose_draft_vocab(config.vocab, None, env)  # FR-Spec's ``fr:N``: the N most frequent tokens
    if keep is not None:
        layer.restrict(keep)
        record_head_rows(env, layer.lm_head.out_features)
    layer = layer.to(draft_dtype(config.dtype, env.model))
    pack_for_inference(layer)
    return Eagle3Drafter(layer, layers, config)
