"""Step 1 of every decode step: ask the drafter for a proposal and shape it into what verification runs.

The drafter's ``propose`` may return nothing, a ``DraftTree`` or a ``Proposal`` (tree + auxiliary rows +
draft distributions + an accept cap). The engine then
- checks it is one it can verify (``proposal_check.py``: anything else, or a ``propose`` that raised, is one
  ``DrafterError`` line);
- cuts the tree to the tokens the generation may still emit (``room - 1`` draft tokens after the root),
  re-indexing the draft distributions to the nodes kept;
- keeps the part its budget says (``Budget.keep``: ``budget=auto`` the part worth its cost on this machine).

Example: room 3 (two tokens left after the root) and the chain ``[4, 5, 6]`` -> ``[4, 5]`` is verified.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from specbench.engine.aux_rows import AuxRows
from specbench.budget.contract import Budget
from specbench.engine.drafter import DraftContext, Drafter, Proposal
from specbench.engine.proposal_check import check_proposal, proposed
from specbench.engine.tree import DraftTree


@dataclass
class Draft:
    """What verification runs besides the root (all None: a plain autoregressive step)."""

    tree: DraftTree | None = None
    aux: AuxRows | None = None
    draft_probs: torch.Tensor | None = None  # [len(tree), V] at temperature > 0 when sampled; None = one-hot
    accept_depth: int | None = None  # Proposal.accept_depth
    asked_depth: int = 0  # the DraftContext.max_depth the drafter was given (0: not asked)

    @property
    def aux_rows(self) -> int:
        return 0 if self.aux is None else len(self.aux)


def draft_step(drafter: Drafter, ctx: DraftContext, room: int, budget: Budget, started: float, *,
               select: bool = True, vocab: int | None = None) -> Draft:
    """The drafter's proposal for ``ctx``, checked against a target whose logits are ``vocab`` wide (None: not
    checked), cut to ``room - 1`` draft tokens and to the part ``budget`` keeps (priced with the drafting seconds
    since ``started``, a ``perf_counter`` time; ``select=False``: a batched step keeps for every sequence at once,
    ``Budget.keep_batch``)."""
    proposal = proposed(drafter.propose, ctx)
    if vocab is not None:
        check_proposal(proposal, vocab)
    draft = Draft(proposal.tree, proposal.aux, proposal.draft_probs, proposal.accept_depth) \
        if isinstance(proposal, Proposal) else Draft(proposal)
    tree = draft.tree
    if tree is None:
        return draft
    full = tree
    tree = tree.truncated(room - 1) if len(tree) else None
    if draft.draft_probs is not None and tree is not full:
        draft.draft_probs = None if tree is None else draft.draft_probs[full.kept_nodes(room - 1)]
    draft.tree = tree
    if tree is not None and select:
        keep = budget.keep(tree, time.perf_counter() - started, draft.aux_rows, len(ctx.tokens))
        if keep is not None:
            keep_nodes(draft, keep)
    return draft


def keep_nodes(draft: Draft, keep: list[int]) -> None:
    """Cut ``draft``'s tree to the nodes ``keep`` (tree order, prefix-closed), its draft distributions too."""
    tree = draft.tree
    if tree is None or len(keep) == len(tree):
        return
    draft.draft_probs = None if draft.draft_probs is None or not keep else draft.draft_probs[keep]
    draft.tree = tree.subtree(keep) if keep else None
