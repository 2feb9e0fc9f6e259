"""Records ``budget_replay.json``, the fixture ``tests/test_budget_replay.py`` replays (issue 88, step 1: the draft
budget's decisions frozen before it moved into its own room).

Four real runs of the decode loops on a tiny random Llama (CPU, its steps timed for real): ``budget=auto`` and a
fixed depth K = 2, each at batch size 1 (``Engine.generate``, two prompts in turn on one budget) and 2
(``BatchDecoder``, both prompts in one batch). The drafter proposes the target's own continuation for 12 tokens,
then random trees for 12, and so on, so ``auto`` both drafts and skips. For ``auto`` every call the loops make
into the budget is kept with its arguments (the measured seconds among them) and its answer; for the fixed depth,
every draft step's room, the drafter's raw tree and what was verified. The budget's own clock is stopped (its
bookkeeping seconds are 0) so a replay prices exactly what was recorded.

It calls the budget as it was before issue 88 moved it (``specbench.engine.budget``, ``draft_budget=``,
``max_draft_depth=``): to record again, check out the commit that added it. Run once, from the repository root
(never needed again: the fixture is the frozen behaviour)::

    PYTHONPATH=.:tests python tests/data/record_budget_replay.py
"""
from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # (tests/: conftest, test_engine_exact)

import specbench.engine.budget as budget_module  # noqa: E402
from conftest import make_tiny_model  # noqa: E402
from specbench.engine import step  # noqa: E402
from specbench.engine.batch_loop import BatchDecoder, Request  # noqa: E402
from specbench.engine.budget import DraftBudget  # noqa: E402
from specbench.engine.drafter import BaseDrafter  # noqa: E402
from specbench.engine.loop import Engine  # noqa: E402
from test_engine_exact import OracleDrafter, RandomDrafter, greedy_reference  # noqa: E402

OUT = Path(__file__).resolve().parent / "budget_replay.json"
MAX_NEW, FIXED, PHASE = 40, 2, 12
COST = (0.0015, 0.00005)  # the made-up profile T(n) = a + b (n - 1) seconds the run calibrates on its own steps


def cost(n, context=None):
    return COST[0] + COST[1] * (np.asarray(n, dtype=float) - 1)


def tree_json(tree):
    return None if tree is None else [list(tree.tokens), list(tree.parents), list(tree.sibling_ranks())]


class Phased(BaseDrafter):
    """The oracle's chain (6 deep) for ``PHASE`` output tokens, then random trees for ``PHASE``, per prompt."""

    def __init__(self, refs: dict, seed: int) -> None:
        self.refs, self.rand, self.oracle, self.last = refs, RandomDrafter(seed, 64), None, None

    def begin(self, prompt_ids):
        self.oracle = OracleDrafter(self.refs[tuple(prompt_ids)], len(prompt_ids), depth=6)

    def propose(self, ctx):
        done = len(ctx.tokens) - self.oracle.plen
        self.last = (self.oracle if (done // PHASE) % 2 == 0 else self.rand).propose(ctx)
        return self.last


class Recorder(DraftBudget):
    """``DraftBudget`` keeping every call the loops make into it (``events``), sequences by first appearance."""

    def __init__(self, events: list, room: list) -> None:
        super().__init__(cost, seed=0)
        self.events, self.room, self.seqs = events, room, []

    def _seq(self, s):
        if s is None:
            return None
        if not any(s is t for t in self.seqs):
            self.seqs.append(s)
        return next(i for i, t in enumerate(self.seqs) if t is s)

    def plan(self, states, context, active=1):
        args = [{"seq": self._seq(s), "unseen": s.unseen, "room": s.room, "hot": s.hot} for s in states]
        out = super().plan(states, context, active)
        self.events.append({"call": "plan", "states": args, "context": context, "active": active, "out": out})
        return out

    def depth_hint(self, context=None, hot=False):
        out = super().depth_hint(context, hot)
        self.events.append({"call": "depth", "context": context, "hot": hot, "room": self.room[0], "out": out})
        return out

    def select(self, tree, draft_s=0.0, aux_rows=0, context=None):
        out = super().select(tree, draft_s, aux_rows, context)
        self.events.append({"call": "select", "tree": tree_json(tree), "draft_s": draft_s, "aux_rows": aux_rows,
                            "context": context, "out": out.keep})
        return out

    def select_batch(self, trees, aux_rows, cost_rows, context=None, draft_s=0.0, probing=None):
        out = super().select_batch(trees, aux_rows, cost_rows, context, draft_s, probing)
        self.events.append({"call": "select_batch", "trees": [tree_json(t) for t in trees], "aux_rows": aux_rows,
                            "context": context, "draft_s": draft_s, "probing": probing, "out": out})
        return out

    def observe(self, tree, accepted_nodes, hot=False):
        self.events.append({"call": "observe", "tree": tree_json(tree), "accepted": list(accepted_nodes), "hot": hot})
        super().observe(tree, accepted_nodes, hot)

    def learn(self, outcome):
        self.events.append({"call": "end_step", "states": [self._seq(s) for s in outcome.states],
                            "drafted": outcome.drafted, "emitted": outcome.emitted, "draft_s": outcome.draft_s,
                            "depths": outcome.depths, "padded_rows": outcome.padded_rows, "context": outcome.context,
                            "verify_s": outcome.verify_s, "step_s": outcome.step_s, "rows_each": outcome.rows_each})
        super().learn(outcome)

    def summaries(self):
        return [{"drafted_steps": s.drafted_steps, "skipped_steps": s.skipped_steps, "predicted_s": s.predicted_s,
                 "predicted_ar_s": s.predicted_ar_s} for s in self.seqs]


def record() -> dict:
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(11)
    prompts = [[rng.randrange(4, 64) for _ in range(rng.randint(5, 10))] for _ in range(2)]
    refs = {tuple(p): greedy_reference(model, p, MAX_NEW) for p in prompts}
    runs, room, events = [], [0], []
    original = step.draft

    def draft(st, drafter, r, budget, started, *args, **kwargs):  # (the loops call step.draft by its module name)
        room[0] = r
        out = original(st, drafter, r, budget, started, *args, **kwargs)
        if budget is None:  # a fixed depth: what the loop asked and verified
            events.append({"call": "draft", "room": r, "tree": tree_json(drafter.last), "depth": out.asked_depth,
                           "kept": 0 if out.tree is None else len(out.tree)})
        return out

    step.draft, budget_module.time = draft, types.SimpleNamespace(perf_counter=lambda: 0.0)
    try:
        for label, batch in (("auto", 1), ("auto", 2), (FIXED, 1), (FIXED, 2)):
            events = []
            rec = Recorder(events, room) if label == "auto" else None
            drafters = [Phased(refs, seed) for seed in range(2)]
            if batch == 1:
                for p in prompts:
                    kw = {"draft_budget": rec} if rec is not None else {"max_draft_depth": FIXED}
                    drafters[0].begin(p)
                    gen = engine.generate(p, drafters[0], MAX_NEW, **kw)
                    assert gen.output_ids == refs[tuple(p)]
            else:
                kw = {"budget": rec} if rec is not None else {"max_draft_depth": FIXED}
                gens = BatchDecoder(engine, MAX_NEW, **kw).generate([Request(p) for p in prompts], drafters, 2)
                assert [g.output_ids for g in gens] == [refs[tuple(p)] for p in prompts]
            runs.append({"budget": label, "batch": batch, "events": events,
                         "summaries": None if rec is None else rec.summaries()})
    finally:
        step.draft, budget_module.time = original, __import__("time")
    return {"cost": list(COST), "seed": 0, "runs": runs}


if __name__ == "__main__":
    data = record()
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    for run in data["runs"]:
        calls = [e["call"] for e in run["events"]]
        plans = [x for e in run["events"] if e["call"] == "plan" for x in e["out"]]
        print(run["budget"], run["batch"], {c: calls.count(c) for c in set(calls)}, "plans drafted",
              sum(plans), "of", len(plans))
    print(OUT, OUT.stat().st_size, "bytes")
