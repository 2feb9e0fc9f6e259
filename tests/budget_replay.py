"""Replays ``data/budget_replay.json`` through the current draft budget (``test_budget_replay.py`` compares the
decisions): every call the decode loops made into the budget, in order, with the recorded arguments (the measured
seconds among them), on a fresh budget built as the recorded one was; and every fixed-depth draft step through
the engine's own draft step. This file is the one place that follows the budget's API as it changes (issue 88);
the test and the fixture stay as recorded.

A decision is ``(call, answer)``: ``plan`` -> which sequences draft; ``depth`` -> how deep the drafter was asked;
``select`` / ``select_batch`` -> the nodes verified; ``draft`` (a fixed depth) -> ``[asked depth, nodes verified]``.
"""
from __future__ import annotations

import contextlib
import types
from typing import Any, Iterator

import numpy as np
import torch

import specbench.budget.auto as budget_module
from specbench.budget.registry import Prices, make_budget
from specbench.engine import step
from specbench.budget.draft_or_skip import SequenceState
from specbench.budget.outcome import StepOutcome
from specbench.engine.drafter import BaseDrafter
from specbench.engine.tree import DraftTree


# an ``end_step`` event's fields besides its states: a ``StepOutcome``'s (``Budget.learn``)
OUTCOME_KEYS = ("drafted", "emitted", "draft_s", "depths", "padded_rows", "context", "verify_s", "step_s", "rows_each")


def tree_of(data: list | None) -> DraftTree | None:
    return None if data is None else DraftTree(tuple(data[0]), tuple(data[1]), tuple(data[2]))


@contextlib.contextmanager
def stopped_clock() -> Iterator[None]:
    """The budget's own bookkeeping seconds are 0, as when the fixture was recorded."""
    saved, budget_module.time = budget_module.time, types.SimpleNamespace(perf_counter=lambda: 0.0)
    try:
        yield
    finally:
        budget_module.time = saved


class Replayed(BaseDrafter):
    """Proposes the recorded raw tree."""

    def __init__(self, tree: DraftTree | None) -> None:
        self.tree = tree

    def propose(self, ctx):
        return self.tree


def fixed_draft(event: dict, depth: int) -> list[int]:
    """A fixed-depth draft step through ``step.draft``: [the depth asked, the nodes verified]."""
    st = step.Decoding(None, [1] * 8, 4, 1, torch.zeros(4), [torch.zeros(1, 4)], None, [], vocab=64)
    out = step.draft(st, Replayed(tree_of(event["tree"])), event["room"], make_budget(depth), 0.0)
    return [out.asked_depth, 0 if out.tree is None else len(out.tree)]


def replay_run(run: dict, data: dict, seed: int | None = None) -> tuple[list[tuple[str, Any]], list[dict] | None]:
    """(the decisions of ``run`` replayed, in call order; each sequence's summary at the end, for ``auto``)."""
    if run["budget"] != "auto":
        return [("draft", fixed_draft(e, run["budget"])) for e in run["events"]], None
    a, b = data["cost"]
    budget = make_budget("auto", Prices(lambda n, context=None: a + b * (np.asarray(n, dtype=float) - 1),
                                        seed=data["seed"] if seed is None else seed))
    seqs: dict[int, SequenceState] = {}
    out: list[tuple[str, Any]] = []
    with stopped_clock():
        for e in run["events"]:
            call = e["call"]
            if call == "plan":
                states = []
                for s in e["states"]:
                    seq = seqs.setdefault(s["seq"], SequenceState())
                    seq.unseen, seq.room, seq.hot = s["unseen"], s["room"], s["hot"]
                    states.append(seq)
                out.append((call, budget.plan(states, e["context"], e["active"])))
            elif call == "depth":
                out.append((call, budget.depth(e["room"], e["context"], e["hot"])))
            elif call == "select":
                out.append((call, budget.keep(tree_of(e["tree"]), e["draft_s"], e["aux_rows"], e["context"])))
            elif call == "select_batch":
                out.append((call, budget.keep_batch([tree_of(t) for t in e["trees"]], e["aux_rows"], e["context"],
                                                    e["draft_s"], e["probing"])))
            elif call == "observe":
                budget.observe(tree_of(e["tree"]), e["accepted"], e["hot"])
            elif call == "end_step":
                states = [None if i is None else seqs[i] for i in e["states"]]
                budget.learn(StepOutcome(states=states, **{k: e[k] for k in OUTCOME_KEYS}))
    summaries = [{"drafted_steps": s.drafted_steps, "skipped_steps": s.skipped_steps, "predicted_s": s.predicted_s,
                  "predicted_ar_s": s.predicted_ar_s} for _, s in sorted(seqs.items())]
    return out, summaries
