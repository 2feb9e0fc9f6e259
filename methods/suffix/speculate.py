"""SuffixDecoding's speculation: match the context's tail, then grow a draft by continuation frequency.

For every match length m = 1, 2, ... for which the last m tokens of the pattern occur in the index
(``automaton.py``), a draft is grown from them with at most ``min(max_spec_tokens, alpha * m + offset)``
tokens (the reference's adaptive size: longer matches earn longer drafts). Each candidate token's
probability is the product, along its path, of ``count(s + t) / count(s)``: how often the text continued
that way. The tree draft pops candidates best first from a priority queue (siblings and equal
probabilities: the more frequent, then the more recent, then the earlier pushed), keeping only
candidates of probability >= ``min_token_prob``, until the budget is spent; the path draft follows the
likeliest child only. A draft's score is the sum of its tokens' probabilities; the best-scoring
match length wins, ties going to the longer match. Nothing deeper than ``max_depth`` tokens from the
start of the match (the reference's suffix tree depth), nor than ``depth_cap`` draft tokens.

Worked example: the text ``[5, 1, 2, 3, 9, 1, 2, 4, 1, 2]`` (a per-request index: the pattern is the
text itself, so its own end counts as an occurrence). Matches of 3 to 9 tokens occur only at the end:
no continuation, score 0. ``[1, 2]`` (m = 2) occurs 3 times, followed by 3, by 4 and by nothing:
candidates 4 (the more recent) and 3 at 1/3 each; budget 2 -> the tree ``4, 3`` (siblings), score 2/3.
``[2]`` (m = 1) earns one token, score 1/3. The draft is ``4, 3`` from m = 2::

    >>> a = SuffixAutomaton(); _ = a.extend_all(0, [5, 1, 2, 3, 9, 1, 2, 4, 1, 2])
    >>> d = speculate(a, [5, 1, 2, 3, 9, 1, 2, 4, 1, 2], Limits())
    >>> d.tokens, d.parents, round(d.score, 3), d.match_len
    ([4, 3], [-1, -1], 0.667, 2)
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Sequence

from specbench_methods.suffix.automaton import SuffixAutomaton


@dataclass
class Draft:
    """A speculation: tokens with parent indices (-1 = child of the root), their probabilities, the score
    (their sum) and the match length it was grown from."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


@dataclass(frozen=True)
class Limits:
    """The reference's knobs (``SuffixDecodingCache.speculate``) plus the engine's depth hint."""

    max_depth: int = 64  # the suffix trees' depth: match + draft never longer
    max_spec_tokens: int = 64
    alpha: float = 1.0  # max_spec_factor
    offset: float = 0.0  # max_spec_offset
    min_token_prob: float = 0.1
    tree: bool = True  # tree speculation; False: a single path
    depth_cap: int = 1 << 30  # draft tokens below the root (DraftContext.max_depth)

    def budget(self, m: int) -> int:
        """Most draft tokens a match of length ``m`` may earn: ``min(max_spec_tokens, alpha m + offset)``."""
        return max(0, min(self.max_spec_tokens, int(m * self.alpha + self.offset + 1e-6)))


def _children(a: SuffixAutomaton, state: int, prob: float, min_prob: float) -> list[tuple[float, int, int]]:
    """(probability, token, state) of the continuations of ``state`` kept by ``min_prob``, best first."""
    total = a.count[state]
    count, nxt = a.count, a.next[state]
    if len(nxt) == 1:  # most states deep in a match: one continuation, no sorting
        ((tok, c),) = nxt.items()
        p = prob * count[c] / total
        return [(p, tok, c)] if p >= min_prob else []
    stamp = a.stamp
    kept = [(count[c], stamp[c], tok, c) for tok, c in nxt.items() if prob * count[c] / total >= min_prob]
    kept.sort(key=lambda x: (-x[0], -x[1]))
    return [(prob * n / total, tok, c) for n, _, tok, c in kept]


def grow_tree(a: SuffixAutomaton, state: int, m: int, budget: int, lim: Limits) -> Draft:
    """The best-first speculation tree of at most ``budget`` tokens after a match of length ``m`` in ``state``."""
    d = Draft(match_len=m)
    heap: list[tuple[float, int, int, int, int, int]] = []  # (-prob, order, token, state, parent, depth)
    order = 0

    def push(st: int, prob: float, parent: int, depth: int) -> None:
        nonlocal order
        if depth > lim.depth_cap or m + depth > lim.max_depth:
            return
        for p, tok, c in _children(a, st, prob, lim.min_token_prob):
            heapq.heappush(heap, (-p, order, tok, c, parent, depth))
            order += 1

    push(state, 1.0, -1, 1)
    while heap and len(d.tokens) < budget:
        negp, _, tok, c, parent, depth = heapq.heappop(heap)
        d.parents.append(parent)
        d.tokens.append(tok)
        d.probs.append(-negp)
        d.score += -negp
        push(c, -negp, len(d.tokens) - 1, depth + 1)
    return d


def grow_path(a: SuffixAutomaton, state: int, m: int, budget: int, lim: Limits) -> Draft:
    """The single likeliest continuation, while its probability stays >= ``min_token_prob``."""
    d = Draft(match_len=m)
    prob, depth = 1.0, 0
    while len(d.tokens) < budget and depth < lim.depth_cap and m + depth < lim.max_depth:
        kids = _children(a, state, prob, lim.min_token_prob)
        if not kids:
            break
        prob, tok, state = kids[0]
        d.parents.append(len(d.tokens) - 1)
        d.tokens.append(tok)
        d.probs.append(prob)
        d.score += prob
        depth += 1
    return d


def speculate(a: SuffixAutomaton, pattern: Sequence[int], lim: Limits) -> Draft:
    """The best draft over every match length of ``pattern``'s tail (at most ``len(pattern) - 1``, as the
    reference), the longest on ties. Lengths are tried longest first and the search stops once no shorter
    match's budget could beat the best score (a score never exceeds its budget)."""
    state, longest = a.match(pattern)
    grow = grow_tree if lim.tree else grow_path
    best: Draft | None = None
    for m in range(min(longest, len(pattern) - 1), 0, -1):
        budget = lim.budget(m)
        if best is not None and best.score >= budget:
            break
        state = a.shorten(state, m)
        d = grow(a, state, m, budget, lim)
        if best is None or d.score > best.score:
            best = d
    return best or Draft()
