"""What one generation produced: its output ids and per-forward-pass statistics (the record's raw material).

Per forward pass (prefill included) the engine records the tokens emitted (``accept_lengths``,
accepted + 1, so AR is all ones), the draft size in nodes and its depth (longest root-to-leaf path),
draft / verify seconds, and the whole step's seconds (``step_times_s``: the prefill's entry is the time
to first token, from the call on, so it includes the cache allocation and ``drafter.begin``).

>>> g = Generation(output_ids=[5], accept_lengths=[1], draft_sizes=[0], aux_sizes=[0], draft_times_s=[0.0],
...                draft_depths=[0])
>>> g.forward_passes, g.token_margins()
(1, None)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from specbench.engine.margins import relative_margins
from specbench.engine.tree import DraftTree


@dataclass
class Generation:
    """One generation's output and per-forward-pass statistics."""

    output_ids: list[int]
    accept_lengths: list[int] = field(default_factory=list)
    draft_sizes: list[int] = field(default_factory=list)
    aux_sizes: list[int] = field(default_factory=list)  # auxiliary rows per pass (all 0 unless a method uses them)
    draft_times_s: list[float] = field(default_factory=list)
    verify_times_s: list[float] = field(default_factory=list)
    step_times_s: list[float] = field(default_factory=list)  # per pass: draft + verify + emit + observe
    draft_depths: list[int] = field(default_factory=list)
    margin_rows: list[torch.Tensor] = field(default_factory=list)  # per pass, the emitting logits rows [k, V]
    token_logprobs: list[float] = field(default_factory=list)  # sampling only: target log-prob per emitted token
    # batched decoding only (``batch_loop.py``), seconds from the batch's start: when the sequence entered
    # the batch (0 unless it refilled a finished one's slot) and when it emitted its last token
    admitted_s: float | None = None
    finished_s: float | None = None
    # budget=auto only (``draft_or_skip.py``): decode steps that drafted and that ran plain; the budget's priced
    # seconds of the decode steps (calibrated, each made before its step) and of the same tokens as plain steps
    drafted_steps: int | None = None
    skipped_steps: int | None = None
    predicted_s: float | None = None
    predicted_ar_s: float | None = None
    drafter_state: dict[str, Any] | None = None  # what the drafter reports of itself at the end (Drafter.report)
    # the process's CPU seconds over the timed span (set by the runner, which times it; a batch's equal share; None
    # where another process did the work: an engine's rows), so a stopped or starved generation shows as stalled
    cpu_time_s: float | None = None

    @property
    def forward_passes(self) -> int:
        return len(self.accept_lengths)

    def add_pass(self, tree: DraftTree | None, aux_rows: int, draft_s: float, verify_s: float) -> None:
        """The statistics of one draft -> verify pass (its emitted tokens are added when they are known)."""
        self.verify_times_s.append(verify_s)
        self.draft_times_s.append(draft_s)
        self.draft_sizes.append(0 if tree is None else len(tree))
        self.aux_sizes.append(aux_rows)
        self.draft_depths.append(0 if tree is None else max(tree.depths()))

    def add_budget_summary(self, seq: Any) -> "Generation":
        """Keep a ``budget=auto`` sequence's counts and predictions (``draft_or_skip.SequenceState``); returns self."""
        self.drafted_steps, self.skipped_steps = seq.drafted_steps, seq.skipped_steps
        self.predicted_s, self.predicted_ar_s = seq.predicted_s, seq.predicted_ar_s
        return self

    def add_drafter_state(self, drafter: Any) -> None:
        """Keep what ``drafter`` reports of itself at the generation's end (``BaseDrafter.report``; None for AR)."""
        self.drafter_state = None if drafter is None else drafter.report()

    def token_margins(self) -> list[float] | None:
        """Per emitted token, the relative top-2 margin of the logits that chose it; None unless the
        generation recorded them. Computed here, after timing: inside the loop AR only keeps a view of
        its one logits row, so recording margins does not slow the baseline."""
        if not self.margin_rows:
            return None
        return [round(m, 7) for m in relative_margins(torch.cat(self.margin_rows)).tolist()]
