"""How deep ``budget=auto`` asks its drafter to draft (``DraftBudget.depth_hint``), before the draft is made.

A depth ``d`` is worth what ``DraftBudget.select`` could keep of a ``d``-deep draft: the best number ``k`` of its
most likely nodes, valued as ``select`` values them,

    value(d) = max over k of (1 + sum of the k highest P(v) among nodes of depth <= d) / (T(1 + k) + O + D(d))

with ``D(d)`` the drafter's own seconds for a ``d``-deep draft (``StepCosts.draft_seconds``). The nodes are those
of the deepest draft the drafter made so far (its shape: EAGLE's static tree, REST's trie), priced with this
step's rates, and beyond that draft's depth one first-ranked guess per depth (the chain of first guesses). Why the
whole tree and not the chain of first guesses alone: EAGLE's root has six guesses, worth about half a token
together, that a one-deep draft of 2.5 ms already holds; valued as a chain, the first guess alone stood for depth
1, a second depth (2.5 ms more) looked worth its price, and a third was asked whose nodes ``select`` then never
kept, crowded out by the first level's guesses (eagle@auto drafted 3 deep at 7 ms for 4 kept nodes, where
budget=1 drafted 2.5 ms for 6).

Where every depth costs the same to draft (a lookup: PLD, REST, suffix), the depth only bounds the lookup and
``select`` cuts what the rows do not pay for; the chain of first guesses values it (``shape`` None). The best
depth is asked, and one more where that depth's drafting costs at most ``free`` seconds more (an untried depth
keeps being tried); a best of no node at all asks 1.

Example: a chain with ``P`` = 0.5, 0.25 at depths 1, 2; rows cost 40, 41, 42 ms; drafting 1 or 2 deep 2 or 4 ms:
value(1) = max(1/42, 1.5/43), value(2) = max(1/44, 1.5/45, 1.75/46); 1.5/43 = 0.0349 < 1.75/46 = 0.0380: 2 deep.

>>> best_depth(np.zeros(0), np.zeros(0, int), np.array([0.5, 0.25]), np.array([0.040, 0.041, 0.042]),
...            np.array([0.002, 0.004]), free=0.001)
2
>>> best_depth(np.zeros(0), np.zeros(0, int), np.array([0.5, 0.25]), np.array([0.040, 0.041, 0.042]),
...            np.array([0.002, 0.012]), free=0.001)  # a second depth at 10 ms more: 1.75/54 < 1.5/43
1
"""
from __future__ import annotations

import numpy as np


def best_depth(probs: np.ndarray, depths: np.ndarray, chain: np.ndarray, seconds: np.ndarray, drafting: np.ndarray,
               free: float) -> int:
    """The depth to ask (module docstring). ``probs``, ``depths``: ``P`` and depth (from 1) of each node of the
    drafter's deepest draft (empty: none, or valued as a chain); ``chain[d - 1]``: ``P`` of the first-ranked guess
    at depth ``d``; ``seconds[k]``: the step's seconds besides drafting when ``k`` nodes are verified (at least
    ``len(probs) + len(chain) + 1`` entries); ``drafting[d - 1]``: the drafting seconds of a ``d``-deep draft, for
    ``d`` up to ``len(chain)`` (and one deeper: the depth tried beyond the best)."""
    top = int(depths.max()) if len(depths) else 0
    most = len(chain)
    p = np.concatenate([probs, chain[top:]])
    d = np.concatenate([depths, np.arange(top + 1, most + 1)])
    order = np.argsort(-p, kind="stable")  # (a parent's P is above its child's: a prefix is prefix-closed)
    p, d = p[order], d[order]
    # [depth - 1, j]: keeping, of the j + 1 likeliest nodes, those a draft of that depth holds (one array op per step:
    # this runs before every drafted step)
    held = d[None, :] <= np.arange(1, most + 1)[:, None]
    rows = np.concatenate([np.zeros((most, 1), int), np.cumsum(held, axis=1)], axis=1)  # [depth - 1, j]: k kept
    gained = 1.0 + np.concatenate([np.zeros((most, 1)), np.cumsum(held * p[None, :], axis=1)], axis=1)
    value = gained / (seconds[rows] + drafting[:most, None])
    at = int(np.argmax(value))  # (row-major: the shallowest depth, then the fewest nodes, on ties)
    best, best_k = at // value.shape[1] + 1, int(rows.flat[at])
    if best_k == 0:
        return 1
    return best + 1 if best < len(drafting) and drafting[best] - drafting[best - 1] <= free else best
