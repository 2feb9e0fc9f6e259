"""``recycling``: Token Recycling's drafter, config and registration.

Each step drafts the static tree (``template.py``) grown from the root through the adjacency matrix
(``adjacency.py``); after verification, every verified row's top-k token ids (``StepResult.row_topk``,
computed by the engine because this drafter sets ``row_topk``) overwrite the matrix row of that row's
input token. With ``hot_start`` (the reference's behaviour) the matrix is kept across the generations of
the drafter's (method, task); it is learned from logits inside generations, so a resumed run cannot
replay it and starts it from zeros at the resume point.

Example: the matrix says 3 -> (4, 5) and 4 -> (1, 2); with root 3 the first nodes are 4, 5, ... (depth 1)
and 1, 2, ... under 4 (depth 2), as in the doctest of ``adjacency.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specbench_methods.recycling.adjacency import Adjacency
from specbench_methods.recycling.template import TEMPLATES, TreeLayout, layout
from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, StepResult, register_method


@dataclass(frozen=True)
class RecyclingConfig:
    """Defaults as Spec-Bench ran Token Recycling (``inference_recycling.py``: top-k 8, tree "2.2.2")."""

    topk: int = 8  # successors kept per token (the reference's output_id_topk)
    tree_version: str = "2.2.2"
    hot_start: bool = True  # keep the matrix across generations (the reference's one matrix for the run)
    skip_unseen: bool = False  # ours: draft no node below a token whose row was never written

    def validate(self) -> None:
        if self.tree_version not in TEMPLATES:
            raise ConfigError(f"recycling: tree_version must be one of {', '.join(TEMPLATES)}, got {self.tree_version!r}")
        need = _layout(self.tree_version).max_rank + 1
        if self.topk < need:
            raise ConfigError(f"recycling: tree {self.tree_version} needs topk >= {need}, got {self.topk}")


_LAYOUTS: dict[str, TreeLayout] = {}


def _layout(version: str) -> TreeLayout:
    if version not in _LAYOUTS:
        _LAYOUTS[version] = layout(TEMPLATES[version])
    return _LAYOUTS[version]


class RecyclingDrafter(BaseDrafter):
    """Drafts the static tree from the adjacency matrix; recycles every verified row's top-k into it."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)
    observes_plain_steps = True  # the matrix learns from every verified row, drafted or not (budget=auto)

    def __init__(self, config: RecyclingConfig, vocab: int) -> None:
        self.config = config
        self.tree = _layout(config.tree_version)
        self.matrix = Adjacency(vocab, config.topk)
        self.keeps_state_across_generations = config.hot_start  # the matrix outlives a generation
        self.row_topk = config.topk  # asks the engine for StepResult.row_topk
        self._root = -1

    def begin(self, prompt_ids: list[int]) -> None:
        if not self.config.hot_start:
            self.matrix.reset()

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        self._root = root = ctx.tokens[-1]
        n = self.tree.nodes_within(ctx.max_depth)
        if n == 0:
            return None
        tokens = self.matrix.expand(root, self.tree, ctx.max_depth)
        tree = DraftTree(tuple(tokens.tolist()), self.tree.parents[:n])
        if self.config.skip_unseen:
            keep = np.flatnonzero(self.matrix.known(root, tokens, self.tree)).tolist()
            tree = tree.subtree(keep) if keep else None
        return tree

    def observe(self, result: StepResult) -> None:
        if result.row_topk is None:
            return
        root = self._root if result.root is None else result.root
        inputs = np.array([root, *(result.tree.tokens if result.tree is not None else ())], dtype=np.int64)
        self.matrix.update(inputs, result.row_topk.cpu().numpy())


@register_method("recycling", RecyclingConfig)
def build_recycling(config: RecyclingConfig, env: MethodEnv) -> RecyclingDrafter:
    """Token Recycling: no training, no datastore; an adjacency matrix over the target's vocabulary."""
    vocab = int(env.model.get_output_embeddings().weight.shape[0])
    if config.topk > vocab:
        raise ConfigError(f"recycling: topk {config.topk} exceeds the target's vocabulary of {vocab}")
    return RecyclingDrafter(config, vocab)
