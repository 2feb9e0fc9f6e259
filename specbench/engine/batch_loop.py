"""Batched decoding: several sequences, each with its own drafter, verified together in one forward per step.

Every sequence ("slot") goes through the single-sequence loop's steps (``loop.py``, their parts in ``step.py``),
side by side:
1. draft: each slot's drafter proposes for its own context (``step.draft``);
2. verify: one forward over every slot's ``[root] + tree (+ auxiliary rows)``, padded to the longest
   (``batch_inputs.py``), on a KV cache with per-slot lengths (``backends/batch_cache.py``);
3. accept: each slot's longest matching path (or rejection sampling), ragged across slots;
4. trim: each slot keeps its context plus its accepted path;
5. emit and stop: each slot emits; a finished slot leaves the batch (its slot is given to the last
   active one, so the forward shrinks) or, with ``refill``, takes the next waiting request.

A request is prefilled alone in its slot when it enters (a long prompt padded beside one-row decode steps
would multiply their cost), so its time to first token counts from its admission.

Example: three requests at width 2 with ``refill``: requests 0 and 1 are prefilled into slots 0 and 1
and decoded together; when request 1 finishes, request 2 is prefilled into slot 1 and joins the next step.

The engine alone does all of it: drafters still propose for one sequence and never see the batch.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import torch

from specbench.engine import step
from specbench.engine.aux_rows import append_aux
from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.backends.contract import BatchedTarget, require
from specbench.engine.batch_inputs import batch_inputs
from specbench.budget.contract import WHOLE_DRAFT, Budget
from specbench.budget.draft_or_skip import SequenceState
from specbench.budget.outcome import StepOutcome
from specbench.engine.draft_step import Draft, keep_nodes
from specbench.engine.drafter import Drafter
from specbench.engine.generation import Generation
from specbench.engine.loop import Engine
from specbench.engine.sampling import Sampler
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.step import DRAFT_HEADROOM, Decoding
from specbench.engine.tree import CompiledTree, compile_tree


@dataclass
class Request:
    """One sequence of a batch: its prompt and its sampling seed."""

    prompt_ids: list[int]
    seed: int = 0


@dataclass
class _Slot:
    request: int  # index into the requests
    drafter: Drafter | None
    st: Decoding
    seq: SequenceState | None = None  # budget=auto: this sequence's drafting history (draft_or_skip.py)


class BatchDecoder:
    """Decodes ``requests`` ``width`` at a time on ``engine``'s target (its backend declares ``caps.batching``: the
    target is a ``BatchedTarget`` and the backend makes the batched cache, ``BatchingBackend.new_batch_cache``)."""

    def __init__(self, engine: Engine, max_new_tokens: int, record_margins: bool = False,
                 sampling: SamplingConfig | None = None, budget: Budget = WHOLE_DRAFT,
                 batch_cost: Callable[..., Any] | None = None) -> None:
        """``budget``: every slot's, as ``Engine.generate``'s; ``batch_cost`` the padded batched forwards' costs it
        prices with (``profiling/batch_profile.py``)."""
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        require(engine.target, BatchedTarget,
                f"the {engine.backend.name} backend decodes one sequence at a time: --batch-size 1")
        self.engine, self.max_new = engine, max_new_tokens
        self.record_margins = record_margins
        self.sampling = None if sampling is None or sampling.greedy else sampling
        self.budget = budget
        # budget=auto prices a step as the padded batched forward: batch_cost(active slots, rows each, context);
        # without batch curves, a forward of all the rows (the single-sequence curve); calibrated by the budget
        if batch_cost is not None:
            budget.price_batches(batch_cost)
        self._sync = engine.sync

    @torch.inference_mode()
    def generate(self, requests: list[Request], drafters: list[Drafter] | None, width: int,
                 refill: bool = False) -> list[Generation]:
        """The generations of ``requests`` in order, decoded at most ``width`` at a time; without ``refill``
        the first ``width`` run as one batch and the rest as later batches (static batching).

        ``drafters``: ``width`` instances of one method (None: AR); a sequence drafts with the instance
        of the slot it enters, which a finished sequence hands over to the next (each drafter keeps the
        state of one sequence at a time, reset by its ``begin``).
        """
        if not requests or any(not r.prompt_ids for r in requests):
            raise ValueError("every request needs a prompt")
        if drafters is not None and len(drafters) < min(width, len(requests)):
            raise ValueError(f"{min(width, len(requests))} slots need as many drafters, got {len(drafters)}")
        if not refill:
            out: list[Generation] = []
            for lo in range(0, len(requests), width):
                out += self.generate(requests[lo : lo + width], drafters, width, refill=True)
            return out
        engine = self.engine
        engine.backend.prepare(engine.model)
        longest = max(len(r.prompt_ids) for r in requests)
        cache = engine.backend.new_batch_cache(min(width, len(requests)), longest + self.max_new + DRAFT_HEADROOM)
        self._t0 = time.perf_counter()
        waiting = deque(range(len(requests)))
        gens: list[Generation | None] = [None] * len(requests)
        slots: list[_Slot] = []
        self._free: list[Drafter | None] = list(drafters[: cache.slots]) if drafters is not None else [None] * cache.slots
        while waiting and len(slots) < cache.slots:
            self._admit(requests, waiting.popleft(), slots, cache, gens)
        while True:
            for b in reversed(range(len(slots))):  # descending: moving the last slot never skips one
                if self._finished(slots[b].st):  # (a prompt's first token may already end it)
                    slots[b].st.gen.finished_s = time.perf_counter() - self._t0
                    self._release(b, slots, cache, requests, waiting, gens)
            if not slots:
                return [g for g in gens if g is not None]
            self._step(slots, cache)

    # -- entering and leaving ----------------------------------------------------------------
    def _admit(self, requests: list[Request], index: int, slots: list[_Slot], cache: BatchedCache,
               gens: list[Generation | None], slot: int | None = None) -> None:
        """Prefill request ``index`` alone into ``slot`` (default: a new slot at the end)."""
        engine, req = self.engine, requests[index]
        target, now = engine.target, time.perf_counter
        slot = len(slots) if slot is None else slot
        t = now()
        drafter = self._free.pop(0)
        if drafter is not None:
            drafter.begin(list(req.prompt_ids))
        sampler = None if self.sampling is None else Sampler(self.sampling, req.seed, target.device)
        cache.clear_slot(slot)
        plan = cache.plan_step(slot, slot + 1, len(req.prompt_ids), target.device)
        prompt = CompiledTree(torch.tensor([req.prompt_ids], dtype=torch.long, device=target.device), None, None, [], [])
        ids, pos, mask = batch_inputs([prompt], [0], plan.span, target.device, target.dtype, target.layout)
        layers = step.feature_layers(drafter)
        target.check_layers(layers)
        hidden, states = target.run_batch(ids, cache, pos, mask, layers)
        hidden = hidden[0]  # [prompt, h]
        cache.keep(slot, [list(range(len(req.prompt_ids)))])
        logits = target.head(hidden[-1:])
        root, logprob = step.first_root(logits, sampler)
        self._sync()
        took = now() - t  # time to first token, from the request's admission
        st = step.start(req.prompt_ids, root, logprob, logits, hidden, sampler=sampler, verify_s=took, step_s=took,
                        layer_states=None if states is None else states[0], record_margins=self.record_margins,
                        admitted_s=t - self._t0)
        gen = st.gen
        entry = _Slot(index, drafter, st, None if drafter is None else self.budget.sequence())
        if slot == len(slots):
            slots.append(entry)
        else:
            slots[slot] = entry
        gens[index] = gen

    def _finished(self, st: Decoding) -> bool:
        """Its last token is a stop token (a step's emission is cut there) or it has ``max_new`` tokens."""
        out = st.gen.output_ids
        return out[-1] in self.engine.stop_ids or len(out) >= self.max_new

    def _release(self, b: int, slots: list[_Slot], cache: BatchedCache, requests: list[Request],
                 waiting: deque, gens: list[Generation | None]) -> None:
        """Slot ``b`` is done: it takes the next waiting request, else the last active slot moves into it."""
        if slots[b].seq is not None:
            slots[b].st.gen.add_budget_summary(slots[b].seq)
        slots[b].st.gen.add_drafter_state(slots[b].drafter)
        self._free.append(slots[b].drafter)
        if waiting:
            self._admit(requests, waiting.popleft(), slots, cache, gens, slot=b)
            if not self._finished(slots[b].st):
                return
            slots[b].st.gen.finished_s = time.perf_counter() - self._t0  # done at its first token
            self._release(b, slots, cache, requests, waiting, gens)
            return
        last = len(slots) - 1
        if b != last:
            cache.move_slot(last, b)
            slots[b] = slots[last]
        slots.pop()
        cache.clear_slot(last)

    # -- one step of every active slot ---------------------------------------------------------
    def _step(self, slots: list[_Slot], cache: BatchedCache) -> None:
        engine, target, now = self.engine, self.engine.target, time.perf_counter
        t_step = now()
        budget, a = self.budget, len(slots)
        context = max(len(s.st.tokens) for s in slots)
        rooms = [self.max_new - len(slot.st.gen.output_ids) for slot in slots]
        drafting = [slot.drafter is not None and room > 1 for slot, room in zip(slots, rooms)]
        skipped = [False] * a
        # which sequences the budget plans for draft this step (budget=auto: draft_or_skip.py)
        candidates = [b for b in range(a) if drafting[b] and slots[b].seq is not None]
        for b in candidates:
            step.ready(slots[b].seq, slots[b].st, rooms[b], step.reads_states(slots[b].drafter))
        for b, go in zip(candidates, budget.plan([slots[b].seq for b in candidates], context - 1, a)):
            drafting[b], skipped[b] = go, not go
        drafts, draft_s = [], []
        for b, (slot, room, drafted) in enumerate(zip(slots, rooms, drafting)):  # 1. draft, each slot for itself
            t = now()
            view = step.self_draft(target, slot.drafter, cache, cache.lengths[b], slot=b) if drafted else None
            drafts.append(step.draft(slot.st, slot.drafter, room, budget, t, select=a == 1,
                                     target_draft=view) if drafted else Draft())
            draft_s.append(now() - t if drafted else 0.0)
        if a > 1 and any(d.tree is not None for d in drafts):
            keeps = budget.keep_batch([d.tree for d in drafts], [d.aux_rows for d in drafts], context, sum(draft_s),
                                      [s.seq is not None and s.seq.probing for s in slots])
            for d, keep in zip(drafts, keeps or ()):
                keep_nodes(d, keep)
        self._sync()
        # 2. verify: one forward over every slot's rows, padded to the longest
        t = now()
        compiled = [append_aux(compile_tree(s.st.root, d.tree, target.device), d.aux) for s, d in zip(slots, drafts)]
        rows = max(c.input_ids.shape[1] for c in compiled)
        plan = cache.plan_step(0, len(slots), rows, target.device)
        ids, pos, mask = batch_inputs(compiled, cache.lengths[: len(slots)], plan.span, target.device, target.dtype,
                                     target.layout)
        # chosen layers' states (DraftContext.layer_states): the union of what the slots' drafters ask
        wanted = [step.feature_layers(s.drafter) for s in slots]  # every step, as the single loop: fresh rows stay aligned
        layers = tuple(sorted(set().union(*wanted)))
        hidden, states = target.run_batch(ids, cache, pos, mask, layers)  # [A, rows, h], [A, rows, m, h] | None
        sizes = [c.input_ids.shape[1] for c in compiled]
        real = torch.cat([hidden[b, :n] for b, n in enumerate(sizes)])  # padding rows need no logits
        logits_all = target.head(real).split(sizes)
        # 3. accept, ragged across slots
        vers = []
        for b, (slot, c, d) in enumerate(zip(slots, compiled, drafts)):
            vers.append(step.accept(c, logits_all[b], hidden[b, : sizes[b]], slot.st.sampler, d))
        # 4. trim: each slot keeps its context plus its accepted path
        cache.keep(0, [v.rows for v in vers])
        self._sync()
        verify_s = now() - t
        # 5. emit; each slot's drafter and the budget learn what was accepted
        emitted = []
        for b, (slot, c, d, ver, logits, ds, drafted) in enumerate(
                zip(slots, compiled, drafts, vers, logits_all, draft_s, drafting)):
            st = slot.st
            st.gen.add_pass(d.tree, d.aux_rows, ds, verify_s)
            emitted.append(len(step.emit(st, ver, logits, engine.stop_ids, self.record_margins)))
            mine = None
            if states is not None and wanted[b]:  # this slot's layers, in its drafter's declared order
                mine = states[b, : c.input_ids.shape[1], [layers.index(i) for i in wanted[b]]]
            step.feedback(st, slot.drafter, budget, d.tree, ver, logits, tree_rows=c.tree_rows, layer_states=mine,
                          drafted=drafted, observe=not skipped[b])
            # in a batch every sequence drafts cold (``acceptance_stats.py``): a hot one's deep draft pads the whole
            # batch's forward, and wide padded forwards cost more than the batch profile says (pld@auto at B=8 drafted
            # three times as many steps hot, read 0.95x and its calibrated prediction missed by 14%)
            st.hot = st.hot and a == 1
            st.gen.step_times_s.append(now() - t_step)
        t = now()  # the budget learns the step (nothing but budget=auto does)
        budget.learn(StepOutcome(states=[s.seq for s in slots], drafted=drafting, emitted=emitted, draft_s=draft_s,
                                 depths=[d.asked_depth for d in drafts], padded_rows=rows, context=context - 1,
                                 verify_s=verify_s, step_s=t - t_step, rows_each=sizes))
        learn_s = now() - t
        for slot in slots:  # the step's bookkeeping is part of every slot's step
            slot.st.gen.step_times_s[-1] += learn_s

