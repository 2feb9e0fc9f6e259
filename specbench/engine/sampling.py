"""Speculative *sampling*: the engine's acceptance rule at temperature > 0 (greedy uses ``verify.accept_greedy``).

The target's distribution at each row is ``Sampler.probs`` of its logits (temperature, then top-k, then
top-p; AR samples from the very same processing). Verification of a draft tree is multi-draft recursive
rejection sampling (SpecInfer, Miao et al. 2024): at a row with target distribution ``p`` and children
``c_1..c_m``, child ``c_i`` drawn from ``q_i`` is accepted with probability ``min(1, p(c_i) / q_i(c_i))``;
on rejection ``p <- normalize(max(p - q_i, 0))`` and the next child is tried. The walk descends into
an accepted child; where no child is accepted (or at a leaf) the bonus token is drawn from the current
``p``. Whatever the drafts, every emitted token is distributed as the target's ``p`` given the tokens
before it, so the method is lossless in distribution.

A drafter that returns tokens without probabilities is a deterministic proposal: ``q_i`` is one-hot
at ``c_i``, so the child is accepted with probability ``p(c_i)`` and rejection zeroes ``c_i`` in ``p``
(sampling without replacement). A drafter that *samples* its draft passes ``Proposal.draft_probs``:
row ``i`` is the distribution node ``i`` was drawn from given its ancestors and earlier siblings
(siblings must be distinct tokens; the engine verifies a repeated sibling once).

Example: ``p = [0.5, 0.3, 0.2]`` and one deterministic child token 0: accepted with probability 0.5;
if rejected, the bonus is drawn from ``[0, 0.6, 0.4]``: overall token 0 has 0.5, token 1 has
0.5 * 0.6 = 0.3, token 2 has 0.2, exactly ``p``.
"""
from __future__ import annotations

import torch

from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.tree import CompiledTree
from specbench.engine.verify import Verification


class Sampler:
    """The sampling distribution and the seeded random stream of one generation.

    >>> s = Sampler(SamplingConfig(temperature=1.0, top_k=2), seed=0, device=torch.device("cpu"))
    >>> s.probs(torch.tensor([[0.0, 0.0, -100.0]])).tolist()
    [[0.5, 0.5, 0.0]]
    """

    def __init__(self, config: SamplingConfig, seed: int, device: torch.device) -> None:
        if config.greedy:
            raise ValueError("Sampler needs temperature > 0 (greedy decoding uses argmax)")
        self.config = config
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """``[..., V]`` logits -> float32 probabilities after temperature, top-k and top-p."""
        c = self.config
        x = logits.float() / c.temperature
        if c.top_k and c.top_k < x.shape[-1]:
            kth = torch.topk(x, c.top_k, dim=-1).values[..., -1:]
            x = x.masked_fill(x < kth, float("-inf"))
        p = torch.softmax(x, dim=-1)
        if c.top_p < 1:
            sorted_p, order = torch.sort(p, dim=-1, descending=True)
            # drop a token once the tokens before it already reach top_p (the most likely one always stays)
            drop = (torch.cumsum(sorted_p, dim=-1) - sorted_p) >= c.top_p
            sorted_p = sorted_p.masked_fill(drop, 0.0)
            p = torch.zeros_like(p).scatter(-1, order, sorted_p)
            p = p / p.sum(dim=-1, keepdim=True)
        return p

    def sample(self, p: torch.Tensor) -> int:
        """One token from the distribution ``p`` ([V])."""
        return int(torch.multinomial(p, 1, generator=self.generator))

    def uniform(self) -> float:
        return float(torch.rand((), generator=self.generator, device=self.generator.device))


def residual(p: torch.Tensor, q: torch.Tensor | None, token: int) -> torch.Tensor:
    """The target distribution left after rejecting ``token`` drawn from ``q`` (None = one-hot at ``token``):
    ``normalize(max(p - q, 0))``; ``p`` itself when nothing is left (a rejection of probability 0)."""
    if q is None:
        r = p.clone()
        r[token] = 0.0
    else:
        r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    return r / total if float(total) > 0 else p


def accept_sampled(compiled: CompiledTree, logits: torch.Tensor, hidden: torch.Tensor, sampler: Sampler,
                   draft_probs: torch.Tensor | None = None) -> Verification:
    """Recursive rejection sampling down ``compiled``'s tree; ``draft_probs`` [n_nodes, V] or None (one-hot).

    The returned ``token_logprobs`` are the log-probabilities, under the target's processed distribution
    (before any residual), of the accepted tokens and the bonus.
    """
    aux = None if compiled.aux_start is None else logits[compiled.aux_start :].argmax(dim=-1).tolist()
    row, rows, accepted, logps = 0, [0], [], []  # type: ignore[var-annotated]
    while True:
        # only the rows on the accepted path are processed (top-p sorts the vocabulary)
        target = p = sampler.probs(logits[row])
        chosen: tuple[int, int] | None = None
        for token, child in compiled.children[row].items():
            q = None if draft_probs is None else draft_probs[child - 1]
            q_tok = 1.0 if q is None else float(q[token])
            if q_tok <= 0:  # not drawn from that row after all: treat as a deterministic proposal
                q, q_tok = None, 1.0
            if sampler.uniform() * q_tok < float(p[token]):  # probability min(1, p / q)
                chosen = (child, token)
                break
            p = residual(p, q, token)
        if chosen is None:
            break
        child, token = chosen
        logps.append(float(torch.log(target[token])))
        accepted.append(token)
        rows.append(child)
        row = child
    bonus = sampler.sample(p)
    logps.append(float(torch.log(target[bonus])))
    return Verification(rows=rows, accepted=accepted, bonus=bonus, hidden=hidden, aux_predictions=aux,
                        token_logprobs=logps)


def first_token(logits: torch.Tensor, sampler: Sampler) -> tuple[int, float]:
    """The prefill's token drawn from the last row of ``logits`` and its log-probability."""
    p = sampler.probs(logits[-1])
    tok = sampler.sample(p)
    return tok, float(torch.log(p[tok]))
