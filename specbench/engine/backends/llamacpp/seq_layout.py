"""The engine's attention mask among a pass's rows, expressed as llama.cpp sequence ids (exactly, or not at all).

llama.cpp has no free-form attention mask. A cell of its KV cache carries a position and a set of
sequence ids; a query token attends to the cells that hold its *first* sequence id and whose position
is at most its own. So a row's allowed set is given by choosing, for every row, a home sequence whose
cells at positions up to the row's are exactly the rows it may see (plus the context, which every
sequence holds).

The layout takes the allowed set of a "maximal" row as a sequence's contents and lets every other row
whose allowed set is the same set cut at its own position share that sequence: a token tree needs one
sequence per leaf (a node's allowed set, its root-to-node path, is the leaf's path cut at the node's
depth), Lookahead's Jacobi window one per trajectory it cannot share. Rows are visited largest allowed
set first, so the sequence that can serve a row exists before the row is placed.

llama.cpp also checks a batch: every sequence's positions must be contiguous from the context's end,
and must not decrease in batch order. The layout sorts rows by position (``order``) and refuses a mask
whose sequences would skip a position, in one line.

Example: a tree ``root -> a -> b`` and ``root -> c`` at offsets ``0, 1, 2, 1`` (rows root, a, b, c). Row ``b``
(allowed {root, a, b}) makes sequence 0; row ``c`` (allowed {root, c}) cannot use it (sequence 0 cut at
offset 1 is {root, a}), so it makes sequence 1; ``a`` uses 0 and the root uses 0. The rows' sequence
ids, home first: root ``(0, 1)``, a ``(0,)``, b ``(0,)``, c ``(1,)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specbench.errors import ConfigError


class LayoutError(ConfigError):
    """A mask llama.cpp's sequences cannot express, or that needs more sequences than the context has (a
    method's drafts that this backend cannot verify: one line from the CLI)."""


@dataclass(frozen=True)
class SeqLayout:
    """Sequence ids per row of a pass (home sequence first) and the batch order (rows sorted by position)."""

    seq_ids: tuple[tuple[int, ...], ...]  # [n] the sequences of each row, its home sequence first
    order: np.ndarray  # [n] int: the row at each batch index
    n_seqs: int

    def home(self, row: int) -> int:
        return self.seq_ids[row][0]


def layout_sequences(allowed: np.ndarray, offsets: np.ndarray, max_seqs: int) -> SeqLayout:
    """The sequences that express ``allowed`` ([n, n] bool, row attends to column; diagonal set) for rows at
    position ``offsets`` ([n] ints, the root at 0) with at most ``max_seqs`` sequences; ``LayoutError`` else."""
    allowed = np.asarray(allowed, dtype=bool)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets)
    if allowed.shape != (n, n) or not allowed.diagonal().all():
        raise LayoutError("the mask must be square over the rows, each row attending to itself")
    before = offsets[None, :] <= offsets[:, None]  # [n, n]: column j's position is at most row i's
    late = allowed & ~before
    if late.any():
        i, j = map(int, np.argwhere(late)[0])
        raise LayoutError(f"row {i} (position {offsets[i]}) attends to row {j} at a later position {offsets[j]}: "
                          "llama.cpp's causal order by position cannot express it")
    a = allowed.astype(np.float32)
    # mismatch[r, q]: cells of q's allowed set at positions <= r's, symmetric-differenced with r's allowed set
    # (r's set lies within positions <= r's, so |X xor Y| = |X| + |Y| - 2 |X and Y| with X and Y = A[q] and A[r])
    mismatch = (before.astype(np.float32) @ a.T) + a.sum(1)[:, None] - 2 * (a @ a.T)  # [n, n]
    fits = mismatch < 0.5
    visit = np.lexsort((np.arange(n), -offsets, -allowed.sum(1)))  # largest allowed set first
    owners: list[int] = []  # the row whose allowed set is each sequence's contents
    home = np.empty(n, dtype=np.int64)
    for r in visit:
        found = np.flatnonzero(fits[r, owners]) if owners else ()
        if len(found):
            home[r] = found[0]
        else:
            home[r] = len(owners)
            owners.append(int(r))
    if len(owners) > max_seqs:
        raise LayoutError(f"this pass needs {len(owners)} llama.cpp sequences, more than the context's {max_seqs}")
    members = allowed[owners]  # [S, n]: row j holds sequence s
    for s, row in enumerate(members):
        span = np.unique(offsets[row])
        if span[0] != 0 or len(span) != span[-1] + 1:
            raise LayoutError(f"sequence {s} would hold positions {span.tolist()} with a gap: llama.cpp needs each "
                              "sequence's positions contiguous")
    seq_ids = tuple((int(home[j]),) + tuple(int(s) for s in np.flatnonzero(members[:, j]) if s != home[j])
                    for j in range(n))
    order = np.argsort(offsets, kind="stable")
    return SeqLayout(seq_ids, order, len(owners))


def implied_mask(layout: SeqLayout, offsets: np.ndarray) -> np.ndarray:
    """``[n, n]`` bool: what llama.cpp lets each row see under ``layout`` (a cell holds the row's home
    sequence and sits at a position at most the row's) - equal to the mask the layout was made from."""
    offsets = np.asarray(offsets)
    n = len(offsets)
    holds = np.zeros((layout.n_seqs, n), dtype=bool)
    for j, seqs in enumerate(layout.seq_ids):
        holds[list(seqs), j] = True
    homes = np.array([s[0] for s in layout.seq_ids])
    return holds[homes] & (offsets[None, :] <= offsets[:, None])
