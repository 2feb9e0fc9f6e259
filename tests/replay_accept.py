"""Offline tau of a model-free drafter, replayed against known greedy (AR) outputs (a tool of the tests and the
benchmark scripts in ``tests/benchmarks/``, not of the product).

With greedy verification the accepted path is the longest root-to-node path whose tokens equal the AR
continuation, so for drafters that do not read the model (REST, CREST, PLD) the engine's forward-pass
count can be replayed exactly from the AR output, without running the model: the engine's own accept rule
(``compile_tree`` + ``accept_greedy``) runs on logits that put the AR continuation first at every depth. Used for
datastore-size sweeps; the runner's measured tau is the reference (the two agree, see methods/rest_crest.md).
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from specbench.engine.drafter import DraftContext
from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.verify import accept_greedy


def accepted_length(tree: DraftTree | None, future: Sequence[int]) -> int:
    """Length of the longest root-to-node path of ``tree`` equal to a prefix of ``future``.

    >>> accepted_length(DraftTree.from_chains([[1, 2, 3], [1, 4]]), [1, 4, 9])
    2
    """
    if tree is None or not future or not len(tree):
        return 0
    compiled = compile_tree(0, tree, torch.device("cpu"))
    depths = [0, *tree.depths()]  # row 0 is the root
    vocab = max(max(tree.tokens), max(future)) + 2
    logits = torch.zeros(len(depths), vocab)
    for row, d in enumerate(depths):  # the target's argmax at depth d: the AR token d (past the end: none of the tree's)
        logits[row, int(future[d]) if d < len(future) else vocab - 1] = 1.0
    return len(accept_greedy(compiled, logits, torch.zeros(len(depths), 1)).accepted)


def replay(drafter: Any, prompt_ids: list[int], ar_output: list[int], max_new_tokens: int) -> list[int]:
    """Tokens emitted per forward pass (prefill = 1) if ``drafter`` had decoded ``prompt_ids``."""
    drafter.begin(list(prompt_ids))
    out = [ar_output[0]]
    lengths = [1]
    while len(out) < len(ar_output):
        budget = max_new_tokens - len(out)
        tree = None
        if budget > 1:
            ctx = DraftContext(list(prompt_ids) + out, len(prompt_ids), None, budget - 1)  # type: ignore[arg-type]
            tree = drafter.propose(ctx)
            if tree is not None and len(tree):
                tree = tree.truncated(budget - 1)
        acc = accepted_length(tree, ar_output[len(out) :])
        emitted = ar_output[len(out) : len(out) + acc + 1]
        out.extend(emitted)
        lengths.append(len(emitted))
    return lengths
