"""Draft trees: what a drafter proposes (the engine compiles them for a forward: ``engine/tree.py``).

On the ground floor: the draft budget (``budget/``), below the decode loop, values and cuts them too.

A tree holds draft tokens that continue ``context + [root]`` where ``root`` (t0) is the model's
greedy next token, already certain. Each node has a parent index; ``-1`` means "child of the root".
A chain is the degenerate tree whose parents are ``[-1, 0, 1, ...]``.

Example: chains ``[5, 6, 7]`` and ``[5, 8]`` merge into tokens ``[5, 6, 7, 8]`` with parents
``[-1, 0, 1, 0]``: the shared prefix ``5`` is verified once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence


@dataclass(frozen=True)
class DraftTree:
    """Draft tokens with a parent index per node (``-1`` = the root t0); parents precede children."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    # each node's position among its siblings in the tree its drafter proposed, where a cut (``subtree``) dropped
    # some (None: as in this tree): ``budget=auto`` learns per drafter's rank, and a kept third guess stays third
    ranks: tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.parents):
            raise ValueError("tokens and parents must have the same length")
        for i, p in enumerate(self.parents):
            if not -1 <= p < i:
                raise ValueError(f"node {i} has parent {p}; parents must precede their children")

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def is_chain(self) -> bool:
        return all(p == i - 1 for i, p in enumerate(self.parents))

    @staticmethod
    def chain(tokens: Sequence[int]) -> "DraftTree":
        """A single chain: ``chain([4, 2, 3])`` -> tokens (4, 2, 3), parents (-1, 0, 1)."""
        toks = tuple(int(t) for t in tokens)
        return DraftTree(toks, tuple(range(-1, len(toks) - 1)))

    @staticmethod
    def from_chains(chains: Sequence[Sequence[int]]) -> "DraftTree":
        """Merge chains into a prefix tree (a trie); shared prefixes become shared nodes."""
        tokens: list[int] = []
        parents: list[int] = []
        children: dict[tuple[int, int], int] = {}
        for chain in chains:
            node = -1
            for tok in chain:
                key = (node, int(tok))
                nxt = children.get(key)
                if nxt is None:
                    nxt = len(tokens)
                    tokens.append(int(tok))
                    parents.append(node)
                    children[key] = nxt
                node = nxt
        return DraftTree(tuple(tokens), tuple(parents))

    def sibling_ranks(self) -> list[int]:
        """Each node's position among its parent's children as its drafter proposed them, in tree order.

        >>> t = DraftTree((5, 6, 7, 8), (-1, 0, -1, -1))
        >>> t.sibling_ranks(), t.subtree([0, 3]).sibling_ranks()  # the kept 8 stays the root's third guess
        ([0, 0, 1, 2], [0, 2])
        """
        return list(self._sibling_ranks)

    @cached_property
    def _sibling_ranks(self) -> tuple[int, ...]:  # (once per tree, as ``_depths``)
        if self.ranks is not None:
            return self.ranks
        seen: dict[int, int] = {}
        ranks = []
        for p in self.parents:
            ranks.append(seen.get(p, 0))
            seen[p] = ranks[-1] + 1
        return tuple(ranks)

    @property
    def depth(self) -> int:
        """The deepest node's depth (0: no node)."""
        return max(self._depths, default=0)

    def depths(self) -> list[int]:
        """Depth of each node (children of the root have depth 1)."""
        return list(self._depths)

    @cached_property
    def _depths(self) -> tuple[int, ...]:
        # computed once per tree: ``budget=auto`` asks a tree's depths several times a step, and its deepest draft's
        # on every step after (a Python pass over the nodes each time, on the timed path)
        depth: list[int] = []
        for p in self.parents:
            depth.append(1 if p < 0 else depth[p] + 1)
        return tuple(depth)

    def truncated(self, max_depth: int, max_nodes: int | None = None) -> "DraftTree":
        """Drop nodes deeper than ``max_depth`` (and beyond ``max_nodes``), keeping parents valid."""
        return self.subtree(self.kept_nodes(max_depth, max_nodes))

    def subtree(self, keep: Sequence[int]) -> "DraftTree":
        """The nodes ``keep`` (ascending; each one's parent kept too), re-indexed.

        >>> DraftTree((5, 6, 7), (-1, 0, -1)).subtree([0, 2])
        DraftTree(tokens=(5, 7), parents=(-1, -1))
        """
        if len(keep) == len(self.tokens):
            return self
        new_index = {-1: -1, **{old: new for new, old in enumerate(keep)}}
        try:
            ranks = self.sibling_ranks()
            return DraftTree(tuple(self.tokens[i] for i in keep), tuple(new_index[self.parents[i]] for i in keep),
                             tuple(ranks[i] for i in keep))
        except KeyError:
            raise ValueError(f"subtree {list(keep)} drops a parent of a kept node") from None

    def kept_nodes(self, max_depth: int, max_nodes: int | None = None) -> list[int]:
        """Indices of the nodes ``truncated(max_depth, max_nodes)`` keeps, in order."""
        depth = self.depths()
        keep: list[int] = []
        kept = {-1}
        for i, p in enumerate(self.parents):
            if depth[i] > max_depth or p not in kept:
                continue
            if max_nodes is not None and len(keep) >= max_nodes:
                break
            kept.add(i)
            keep.append(i)
        return keep

    def path_to(self, node: int) -> list[int]:
        """Token ids on the path root -> ``node`` (excluding the root)."""
        path: list[int] = []
        while node >= 0:
            path.append(self.tokens[node])
            node = self.parents[node]
        return path[::-1]
