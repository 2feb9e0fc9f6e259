"""Offline tau of a model-free drafter, replayed against known greedy (AR) outputs.

With greedy verification the accepted path is the longest root-to-node path whose tokens equal the AR
continuation, so for drafters that do not read the model (REST, CREST, PLD) the engine's forward-pass
count can be replayed exactly from the AR output, without running the model. Used for datastore-size
sweeps; the runner's measured tau is the reference (the two agree, see methods/rest_crest.md).
"""
from __future__ import annotations

from typing import Any, Sequence

from specbench.engine.drafter import DraftContext
from specbench.engine.tree import DraftTree


def accepted_length(tree: DraftTree | None, future: Sequence[int]) -> int:
    """Length of the longest root-to-node path of ``tree`` equal to a prefix of ``future``."""
    if tree is None or not future:
        return 0
    children: dict[tuple[int, int], int] = {}
    for i, (tok, par) in enumerate(zip(tree.tokens, tree.parents)):
        children.setdefault((par, tok), i)
    node, n = -1, 0
    while n < len(future):
        nxt = children.get((node, int(future[n])))
        if nxt is None:
            break
        node, n = nxt, n + 1
    return n


def replay(drafter: Any, prompt_ids: list[int], ar_output: list[int], max_new_tokens: int) -> list[int]:
    """Tokens emitted per forward pass (prefill = 1) if ``drafter`` had decoded ``prompt_ids``."""
    drafter.begin(list(prompt_ids))
    out = [ar_output[0]]
    lengths = [1]
    while len(out) < len(ar_output):
        budget = max_new_tokens - len(out)
        tree = None
        if budget > 1:
            ctx = DraftContext(list(prompt_ids) + out, len(prompt_ids), None, None, budget - 1)  # type: ignore[arg-type]
            tree = drafter.propose(ctx)
            if tree is not None and len(tree):
                tree = tree.truncated(budget - 1)
        acc = accepted_length(tree, ar_output[len(out) :])
        emitted = ar_output[len(out) : len(out) + acc + 1]
        out.extend(emitted)
        lengths.append(len(emitted))
    return lengths
