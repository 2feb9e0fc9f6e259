"""The DReSD drafter: nearest neighbours of the current hidden state propose continuations.

Each step, the query is the target's final-norm hidden state at the position that predicted the
root g (``ctx.hidden``). After the datastore's transform (z-score, PCA, L2) it retrieves k
neighbours; those whose value starts with g are the ones whose context continued like ours, and
``value[1 : 1 + L]`` of the first D of them (in similarity order) are the draft chains.

Example: g = 7, neighbour values ``[7, 1, 2, ...]``, ``[9, 4, ...]``, ``[7, 1, 5, ...]`` with L = 2
-> chains ``[1, 2]`` and ``[1, 5]`` (the ``9`` neighbour is dropped), merged into a tree sharing ``1``.
"""
from __future__ import annotations

import numpy as np

from specbench.api import BaseDrafter, DraftContext, DraftTree


def select_drafts(values: np.ndarray, ids: np.ndarray, root: int, num_drafts: int, draft_len: int, eos_id: int | None) -> list[list[int]]:
    """Chains from neighbour ``ids`` [k] (best first; -1 = empty) whose ``values[id, 0] == root``.

    A chain stops after its first ``eos_id`` (the rest is padding).
    """
    ids = ids[ids >= 0]
    cand = values[ids]  # [k, n_next]
    keep = cand[cand[:, 0] == root][:num_drafts, 1 : 1 + draft_len]  # [<=D, <=L]
    chains: list[list[int]] = []
    for row in keep.tolist():
        if eos_id is not None and eos_id in row:
            row = row[: row.index(eos_id) + 1]
        if row:
            chains.append(row)
    return chains


class DReSDDrafter(BaseDrafter):
    """Dense retrieval drafter over a ``DenseDatastore``."""

    def __init__(self, datastore, num_drafts: int = 10, draft_len: int = 10, k: int = 50, nprobe: int = 32, exact: bool = False) -> None:
        self.ds = datastore
        self.num_drafts, self.draft_len, self.k, self.nprobe, self.exact = num_drafts, draft_len, k, nprobe, exact
        eos = datastore.header.get("eos_id")
        self.eos_id = int(eos) if eos is not None else None
        self.ds.flat_index() if exact else self.ds.ensure_index()

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        query = self.ds.transform.apply(ctx.hidden.detach().float().cpu().numpy())  # [d]
        _, ids = self.ds.search(query[None, :], self.k, self.nprobe, self.exact)  # [1, k]
        chains = select_drafts(self.ds.values, ids[0], ctx.tokens[-1], self.num_drafts, min(self.draft_len, ctx.max_depth), self.eos_id)
        return DraftTree.from_chains(chains) if chains else None
