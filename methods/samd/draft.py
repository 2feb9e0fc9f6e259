"""SAM-Decoding's drafting rules (the reference's ``DraftModel.lookup``), given the two matches of the root.

With ``d`` = the dynamic match length (prompt + generated text) and ``s`` = the static one (corpus):

- **alone** (no auxiliary drafter): if ``d >= s``, the chain after the dynamic match's first occurrence,
  ``min(n_predicts, 1 + int(alpha * d)) - 1`` tokens (nothing when ``d = 0``); otherwise a tree over the
  corpus: best-first by the product of continuation frequencies ``count(child) / count(parent)``, at
  most ``top_k`` children per node and ``top_k`` nodes per depth, ``min(n_predicts, 1 + int(alpha * s))``
  nodes with the root.
- **with an auxiliary**: with ``s' = s - len_bias``, if ``max(d, s') >= len_threshold`` the chain of
  ``n_predicts - 1`` tokens after the dynamic match (``d >= s'``; first widened to a shorter match with
  enough text after it) or after the static match's first occurrence in the corpus; otherwise the
  auxiliary drafter's proposal.

Example (alone, ``n_predicts=40, alpha=4``): a dynamic match of 3 tokens beats a static one of 2 and
drafts the 12 tokens after it; a static match of 2 against a dynamic one of 1 drafts a corpus tree of
8 nodes after the root.
"""
from __future__ import annotations

from heapq import heappop, heappush

from specbench_methods.samd.dyn_sam import DynamicSAM
from specbench_methods.samd.static_sam import StaticSAM
from specbench.api import DraftTree


class _Candidate:
    """A heap entry ordered by ``score`` alone (the negated path probability), as the reference's."""

    __slots__ = ("score", "token", "state", "parent", "depth")

    def __init__(self, score: float, token: int, state: int, parent: int, depth: int) -> None:
        self.score, self.token, self.state, self.parent, self.depth = score, token, state, parent, depth

    def __lt__(self, other: "_Candidate") -> bool:
        return self.score < other.score


def alone_size(n_predicts: int, alpha: float, match_len: int) -> int:
    """Tokens in a draft from a match of ``match_len`` tokens, the root included.

    >>> alone_size(40, 4.0, 3), alone_size(40, 4.0, 0), alone_size(40, 4.0, 12)
    (13, 1, 40)
    """
    return min(n_predicts, 1 + int(match_len * alpha))


def frequency_tree(sam: StaticSAM, state: int, root: int, size: int, top_k: int, max_depth: int) -> DraftTree | None:
    """The reference's best-first corpus tree of ``size`` nodes with the root (the root excluded from the
    result), never deeper than ``max_depth`` draft tokens.

    >>> sam = StaticSAM.from_tokens([1, 2, 3, 1, 2, 3, 1, 2, 4], 5)
    >>> s, _ = sam.transfer(0, 0, 1)  # the root "1": continuations "2" (3 times), then "3" (2) or "4" (1)
    >>> frequency_tree(sam, s, 1, 4, 8, 2)  # scores -1, -2/3, -1/3 (depth 2 is not expanded further)
    DraftTree(tokens=(2, 3, 4), parents=(-1, 0, 0))
    """
    heap = [_Candidate(-1.0, root, state, -1, 0)]
    tokens: list[int] = []
    parents: list[int] = []
    per_depth: dict[int, int] = {}
    while len(tokens) < size and heap:
        node = heappop(heap)
        if per_depth.get(node.depth, 0) >= top_k:
            continue
        per_depth[node.depth] = per_depth.get(node.depth, 0) + 1
        index = len(tokens)
        tokens.append(node.token)
        parents.append(node.parent)
        if len(tokens) == size or node.depth >= max_depth:
            continue
        total = int(sam.count[node.state])
        for token, child in sam.top_children(node.state, top_k):
            heappush(heap, _Candidate(node.score * (int(sam.count[child]) / total), token, child, index, node.depth + 1))
    if len(tokens) < 2:
        return None
    return DraftTree(tuple(tokens[1:]), tuple(p - 1 for p in parents[1:]))


def alone_draft(dyn: DynamicSAM, d: tuple[int, int], static: StaticSAM | None, s: tuple[int, int], root: int,
                n_predicts: int, alpha: float, top_k: int, max_depth: int) -> tuple[DraftTree | None, str]:
    """(draft, its source) without an auxiliary drafter; ``d`` and ``s`` are (state, length) matches."""
    if static is None or d[1] >= s[1]:
        chain = dyn.continuation(d[0], min(alone_size(n_predicts, alpha, d[1]) - 1, max_depth))
        return (DraftTree.chain(chain) if chain else None), "dynamic"
    size = alone_size(n_predicts, alpha, s[1])
    return frequency_tree(static, s[0], root, size, top_k, max_depth), "static"


def retrieval_chain(dyn: DynamicSAM, d: tuple[int, int], static: StaticSAM | None, s: tuple[int, int],
                    n_predicts: int, len_threshold: int, len_bias: int, max_depth: int) -> tuple[list[int] | None, str]:
    """With an auxiliary drafter: (the retrieval chain, its source) when a match is long enough, else (None, "auxiliary")."""
    s_len = s[1] - len_bias if static is not None else -len_bias
    if max(d[1], s_len) < len_threshold:
        return None, "auxiliary"
    n = min(n_predicts - 1, max_depth)
    if d[1] >= s_len:
        return dyn.continuation(dyn.widen(d[0], n_predicts), n), "dynamic"
    return static.continuation(s[0], n), "static"  # type: ignore[union-attr]
