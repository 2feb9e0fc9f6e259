"""The engine's forward passes rebuilt from what it streams: our own measure of its tau and acceptance.

llama.cpp's server sends every output token in an event of its own, each with the slot's running counters at
that moment: draft tokens made so far (``draft_n``) and draft tokens accepted so far (``draft_n_accepted``). A
verification step updates both before it emits its tokens, so the tokens of one step carry the same counters,
and a step that drafted changes ``draft_n``. Reading the events in order:

- counters unchanged since the last pass: a plain step (one token, nothing drafted); the first token, from the
  prompt's forward, is always one;
- counters changed by (+d drafted, +a accepted): a step that verified a draft of d tokens and emitted a + 1
  tokens (fewer where the output ended inside it: a stop token or the token limit).

An engine without counters (vLLM streams one event per engine step) gives one pass per event, its draft size
unknown (0). An event the stream left out (llama.cpp holds back a token that ends inside a UTF-8 character)
joins the pass of the event after it.

>>> def ev(ids, d, a): return TokenEvent(ids, 0.0, drafted=d, accepted=a)
>>> [(p.tokens, p.drafted) for p in passes_of([ev([1], 0, 0), ev([2], 0, 0), ev([3], 4, 2), ev([4], 4, 2),
...                                              ev([5], 4, 2), ev([6], 4, 2), ev([7], 8, 2)])]
[(1, 0), (1, 0), (3, 4), (1, 0), (1, 4)]
>>> [(p.tokens, p.drafted) for p in passes_of([TokenEvent([1], 0.1), TokenEvent([2, 3, 4], 0.2)])]
[(1, 0), (3, 0)]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class TokenEvent:
    """One streamed event: its ids, arrival (seconds since the request was sent), and, where the engine reports
    them, the output position of its first id and the engine's cumulative draft / accepted tokens so far."""

    ids: list[int]
    at_s: float
    index: int | None = None
    drafted: int | None = None
    accepted: int | None = None


@dataclass(frozen=True)
class Pass:
    """One forward pass of the engine: tokens it emitted, draft tokens it verified, when its last token arrived."""

    tokens: int
    drafted: int
    at_s: float


def passes_of(events: Sequence[TokenEvent], total: int | None = None) -> list[Pass]:
    """The passes of a reply's ``events`` (``total``: the output's length where ids are missing from them)."""
    events = [e for e in events if e.ids or (e.index is not None and total is not None)]
    if events and all(e.drafted is not None and e.accepted is not None for e in events):
        return _from_counters(_per_token(events, total))
    passes = [Pass(len(e.ids), 0, e.at_s) for e in events if e.ids]
    missing = (total or 0) - sum(p.tokens for p in passes)
    if passes and missing > 0:  # (ids the stream left out, asked again: they came with its last pass)
        passes[-1] = Pass(passes[-1].tokens + missing, 0, passes[-1].at_s)
    return passes


def _per_token(events: Sequence[TokenEvent], total: int | None) -> list[tuple[int, int, float]]:
    """(drafted, accepted, arrival) of every output position; positions the stream skipped take the counters
    and arrival of the event that comes after them."""
    out: list[tuple[int, int, float]] = []
    for e in events:
        while e.index is not None and len(out) < e.index:
            out.append((e.drafted, e.accepted, e.at_s))
        out += [(e.drafted, e.accepted, e.at_s)] * len(e.ids)
    if total is not None and events:
        last = events[-1]
        out += [(last.drafted, last.accepted, last.at_s)] * max(total - len(out), 0)
    return out


def _from_counters(tokens: list[tuple[int, int, float]]) -> list[Pass]:
    passes: list[Pass] = []
    seen_d, seen_a, i = 0, 0, 0
    while i < len(tokens):
        d, a, _ = tokens[i]
        if (d, a) == (seen_d, seen_a) or d < seen_d or a < seen_a:  # a plain step (or counters gone backwards)
            passes.append(Pass(1, 0, tokens[i][2]))
            i += 1
            continue
        n = 1  # the step emitted its accepted tokens + the target's own, all under the same counters
        while n < a - seen_a + 1 and i + n < len(tokens) and tokens[i + n][:2] == (d, a):
            n += 1
        passes.append(Pass(n, d - seen_d, tokens[i + n - 1][2]))
        seen_d, seen_a, i = d, a, i + n
    return passes
