"""Greedy acceptance of the longest matching path of a verified tree (``Verification``); the forward that verifies
it is the backend's target (``backends/target.py`` for the torch backends)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.engine.tree import CompiledTree


@dataclass
class Verification:
    """Outcome of verifying one compiled tree."""

    rows: list[int]  # accepted query rows, starting with row 0 (the root)
    accepted: list[int]  # accepted draft tokens (root excluded)
    bonus: int  # the model's greedy token after the last accepted row
    hidden: torch.Tensor  # [n, hidden] final-norm hidden states of all rows
    aux_predictions: list[int] | None = None  # the model's greedy token at each auxiliary row
    token_logprobs: list[float] | None = None  # sampling only: target log-prob of each accepted token and the bonus

    def capped(self, depth: int | None) -> "Verification":
        """This outcome with at most ``depth`` accepted draft tokens (``Proposal.accept_depth``).

        The accepted token at ``depth`` becomes the bonus: it is the target's own choice at that row
        (greedy: its argmax; sampled: a token the rejection rule accepted), so the output stays exact.
        Example: accepted ``[4, 5, 6]``, bonus ``7``, ``capped(2)`` -> accepted ``[4, 5]``, bonus ``6``.
        """
        if depth is None or len(self.accepted) <= depth:
            return self
        return Verification(
            rows=self.rows[: depth + 1],
            accepted=self.accepted[:depth],
            bonus=self.accepted[depth],
            hidden=self.hidden,
            aux_predictions=self.aux_predictions,
            token_logprobs=None if self.token_logprobs is None else self.token_logprobs[: depth + 1],
        )


def accept_greedy(compiled: CompiledTree, logits: torch.Tensor, hidden: torch.Tensor) -> Verification:
    """Follow the model's argmax from the root down the tree while a child matches it."""
    pred = logits.argmax(dim=-1).tolist()  # [n]; the only host sync of the step (auxiliary rows included)
    row = 0
    rows = [0]
    while True:
        nxt = compiled.children[row].get(pred[row])
        if nxt is None:
            break
        rows.append(nxt)
        row = nxt
    accepted = [pred[r] for r in rows[:-1]]  # child tokens equal the parent's argmax
    aux = None if compiled.aux_start is None else pred[compiled.aux_start :]
    return Verification(rows=rows, accepted=accepted, bonus=pred[row], hidden=hidden, aux_predictions=aux)
