"""What one request to an engine gave back (``EngineReply``), and the ``Generation`` a record is made of.

The engine streams its answer: every event carries the token ids it emits, arrives at a time we take on our side,
and, where the engine says so, its position in the output and the engine's running speculation counters (draft
tokens made, draft tokens accepted). ``passes.py`` rebuilds the engine's forward passes from those counters;
``as_generation`` fills the fields the runner's records read.

Token margins (the tie rule's) are never asked in a timed request: computing them costs the engine a softmax over
the vocabulary per token, which llama.cpp skips for accepted draft tokens, so asking would slow the baseline more
than the methods; the runner asks for the one margin it needs, untimed, where an output diverges.

What an engine does not expose stays out rather than made up: drafting and verification times per pass are
unknown (left 0, and the engine's report section leaves the drafting-share table out); a draft's depth is its size
(every engine here drafts chains).

>>> r = EngineReply([TokenEvent([5], 0.1, 0, 0, 0), TokenEvent([6], 0.3, 1, 3, 1), TokenEvent([7], 0.3, 2, 3, 1)],
...                 wall_s=0.35)
>>> g = r.as_generation()
>>> g.output_ids, g.accept_lengths, g.draft_sizes, [round(t, 2) for t in g.step_times_s]
([5, 6, 7], [1, 2], [0, 3], [0.1, 0.2])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specbench.engine.generation import Generation
from specbench.serving.passes import Pass, TokenEvent, passes_of  # noqa: F401  (TokenEvent: its readers')


@dataclass
class EngineReply:
    """One generation by an engine: its events, the whole request's seconds, and the engine's own figures."""

    events: list[TokenEvent]
    wall_s: float
    engine_stats: dict[str, Any] = field(default_factory=dict)  # what the engine said of the request (its timings)
    refetched_ids: list[int] | None = None  # the whole output asked again, where the stream left ids out

    @property
    def output_ids(self) -> list[int]:
        if self.refetched_ids is not None:
            return list(self.refetched_ids)
        return [i for e in self.events for i in e.ids]

    def gaps(self, total: int | None) -> bool:
        """Whether the stream left ids out: an event's position skips ahead, or fewer ids than ``total`` came."""
        seen = 0
        for e in self.events:
            if e.index is not None and e.index > seen:
                return True
            seen += len(e.ids)
        return total is not None and seen < total

    def passes(self) -> list[Pass]:
        return passes_of(self.events, None if self.refetched_ids is None else len(self.refetched_ids))

    def as_generation(self) -> Generation:
        """The ``Generation`` the runner's record is made of (prefill pass first, as the engine's own)."""
        passes = self.passes()
        steps, last = [], 0.0
        for p in passes:
            steps.append(max(p.at_s - last, 0.0))
            last = p.at_s
        n = len(passes)
        gen = Generation(output_ids=self.output_ids, accept_lengths=[p.tokens for p in passes],
                               draft_sizes=[p.drafted for p in passes], aux_sizes=[0] * n,
                               draft_times_s=[0.0] * n, verify_times_s=[0.0] * n, step_times_s=steps,
                               draft_depths=[p.drafted for p in passes])
        gen.drafter_state = self.engine_stats or None
        return gen

