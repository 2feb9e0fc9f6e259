"""The decode loop shared by every method (the autoregressive baseline is the same loop, no drafts).

Each generation: prefill the prompt (its greedy token is the first root), then repeat
1. draft: the drafter proposes a tree continuing ``context + [root]`` (optionally with auxiliary rows,
   ``aux_rows.py``, whose greedy predictions go back to the drafter and are never output);
2. verify: one forward over ``[root] + tree (+ auxiliary rows)`` with a tree mask and depth-based positions;
3. accept: the longest path matching the model's argmax, plus the bonus token (at temperature > 0:
   recursive rejection sampling, ``sampling.py``, and the root is sampled too);
4. trim: the KV cache keeps the context plus the accepted path;
5. emit and stop: the accepted tokens and the bonus are output; EOS (any of the stop ids) or
   ``max_new_tokens`` ends the generation; output never overshoots and ends at EOS.

The statistics each pass records: ``generation.py``. The glossary (root, draft / accepted / bonus token,
tau): ``drafter.py``.

Example: context ``[1, 2, 3]`` with root ``4``; the drafter proposes the chain ``[5, 6]``; one forward over
``[4, 5, 6]`` finds the target's argmax ``[5, 7, ...]``: ``5`` is accepted, ``7`` is the bonus, the step
emits ``[5, 7]`` and the cache drops the row of ``6``.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from specbench.engine import step
from specbench.engine.aux_rows import append_aux
from specbench.engine.backends.contract import Backend, WarmsUp, checked_target
from specbench.engine.backends.registry import DEFAULT_BACKEND
from specbench.engine.backends.torch_backends import resolve_backend
from specbench.budget.contract import WHOLE_DRAFT, Budget
from specbench.budget.draft_or_skip import SequenceState
from specbench.budget.outcome import StepOutcome
from specbench.engine.draft_step import Draft
from specbench.engine.drafter import Drafter
from specbench.engine.generation import Generation
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.sampling import Sampler
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.step import DRAFT_HEADROOM, Decoding
from specbench.engine.tree import compile_tree
from specbench.models.device import synchronize

__all__ = ["DRAFT_HEADROOM", "Engine"]


class Engine:
    """Draft -> verify decoding (greedy, or sampling) of one target model; the only code that runs the model."""

    def __init__(self, model: torch.nn.Module, stop_ids: set[int], backend: str | Backend | Any = DEFAULT_BACKEND) -> None:
        """``backend``: a name (``backends.torch_backends.resolve_backend``) or a resolved backend (``llamacpp``'s needs its GGUF)."""
        self.model = model
        self.stop_ids = set(stop_ids)
        param = next(model.parameters())
        self.backend = resolve_backend(backend, param.device, param.dtype) if isinstance(backend, str) else backend
        self.backend.prepare(model)
        self.target = checked_target(self.backend, model)  # (what its caps declare, it has)
        device = self.target.device
        self.sync = lambda: synchronize(device)  # (the batched loop waits for the device the same way)

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], drafter: Drafter | None, max_new_tokens: int, *,
                 budget: Budget = WHOLE_DRAFT, sampling: SamplingConfig | None = None, seed: int = 0,
                 record_margins: bool = False) -> Generation:
        """Greedy-decode up to ``max_new_tokens`` after ``prompt_ids``; identical output for any drafter.

        ``record_margins``: also keep each emitted token's top-2 margin (``Generation.token_margins``; the emitting
        logits rows are kept, a view for AR's single row, and reduced after timing). ``sampling`` with temperature
        > 0: sample from a generator seeded with ``seed``, as AR sampling for any drafter (``sampling.py``). ``budget``
        (``budget/contract.py``): whether a step drafts, how deep, what is verified; lossless whatever it chooses."""
        if max_new_tokens < 1 or not prompt_ids:
            raise ValueError("max_new_tokens must be >= 1" if prompt_ids else "empty prompt")
        target, sync, now = self.target, self.sync, time.perf_counter
        self.warm_up(len(prompt_ids) + max_new_tokens, drafter)  # (before the clock: a compiled backend's shapes)
        t_start = now()
        sampler = None if sampling is None or sampling.greedy else Sampler(sampling, seed, target.device)
        self.backend.prepare(self.model)
        cache = self.backend.new_cache(self.model, len(prompt_ids) + max_new_tokens + DRAFT_HEADROOM)
        seq, layers, hidden = self._begin(drafter, prompt_ids, budget)
        st = self._prefill(prompt_ids, cache, sampler, record_margins, t_start, layers=layers, want_hidden=hidden)
        gen = st.gen
        step.learn_prefill(budget, seq, self.target, drafter, st, hidden)
        while st.root not in self.stop_ids and len(gen.output_ids) < max_new_tokens:
            room = max_new_tokens - len(gen.output_ids)  # tokens this step may still emit
            t_step = now()
            drafting = drafter is not None and room > 1 and (  # budget=auto: draft only when it pays
                seq is None or budget.plan([step.ready(seq, st, room, layers or hidden)], len(st.tokens) - 1)[0])
            # 1. draft
            draft = step.draft(st, drafter, room, budget, t_step,
                               target_draft=step.self_draft(target, drafter, cache, len(st.tokens) - 1)) \
                if drafting else Draft()
            sync()
            t_draft = now() - t_step
            # 2. verify: one forward over [root] + tree (+ auxiliary rows)
            t = now()
            n_ctx = len(st.tokens) - 1
            compiled = append_aux(compile_tree(st.root, draft.tree, target.device), draft.aux)
            states, logits, layer_states = target.run(compiled.input_ids, cache, n_ctx, compiled.position_offsets,
                                                      compiled.ancestor_mask, layers=layers, hidden=hidden)
            # 3. accept
            ver = step.accept(compiled, logits, states, sampler, draft)
            # 4. trim: the cache keeps the context plus the accepted path
            if len(ver.rows) < compiled.input_ids.shape[1]:
                trim_cache(cache, n_ctx, ver.rows)
            sync()
            t_verify = now() - t
            gen.add_pass(draft.tree, draft.aux_rows, t_draft, t_verify)
            # 5. emit and stop
            emitted = step.emit(st, ver, logits, self.stop_ids, record_margins)
            step.feedback(st, drafter, budget, draft.tree, ver, logits, tree_rows=compiled.tree_rows,
                          layer_states=layer_states, drafted=drafting, observe=seq is None or drafting)
            if seq is not None:  # (a budget that plans nothing learns nothing: only budget=auto does)
                budget.learn(StepOutcome(states=[seq], drafted=[drafting], emitted=[len(emitted)], draft_s=[t_draft],
                                         depths=[draft.asked_depth], padded_rows=int(compiled.input_ids.shape[1]),
                                         context=n_ctx, verify_s=t_verify, step_s=now() - t_step))
            gen.step_times_s.append(now() - t_step)  # (budget=auto's bookkeeping included)
            if emitted[-1] in self.stop_ids:
                break
        gen.add_drafter_state(drafter)
        return gen if seq is None else gen.add_budget_summary(seq)

    def warm_up(self, positions: int, drafter: Drafter | None = None) -> None:
        """What the backend does before a generation of ``positions`` prompt and new positions (draft headroom
        added here) is timed, when it declares any (``contract.WarmsUp``); nothing otherwise."""
        if isinstance(self.backend, WarmsUp):
            self.backend.warm_up(self.model, positions + DRAFT_HEADROOM, bool(step.feature_layers(drafter)))

    def _begin(self, drafter: Drafter | None, prompt_ids: list[int],
               budget: Budget = WHOLE_DRAFT) -> tuple[SequenceState | None, tuple[int, ...], bool]:
        """(the sequence's state its budget plans with, None for a budget that plans nothing or without a drafter;
        the target layers whose states the drafter reads; whether the generation runs with the final hidden states); the drafter's ``begin``.
        Where those states cost more (``step.prices_prompt_states``: llama.cpp) ``budget`` may run the generation
        without them (``Budget.prompt_states``): its steps are then plain (``SequenceState.blind``)."""
        layers = step.feature_layers(drafter)
        self.target.check_layers(layers)
        step.check_self_draft(self.target, drafter)
        if drafter is not None:
            drafter.begin(list(prompt_ids))
        hidden = step.reads_hidden(drafter)
        seq = None if drafter is None else budget.sequence()
        if seq is not None and not layers and step.prices_prompt_states(self.target, drafter):
            hidden = budget.prompt_states(len(prompt_ids))
            seq.blind = not hidden
        return seq, layers, hidden

    def _prefill(self, prompt_ids: list[int], cache: object, sampler: Sampler | None, record_margins: bool,
                 t_start: float, *, layers: tuple[int, ...] = (), want_hidden: bool = True) -> Decoding:
        """Run the prompt through the target; its greedy (or sampled) next token is the first root.
        ``want_hidden`` False: no drafter reads hidden states (a backend may then return zero-width ones)."""
        target, now = self.target, time.perf_counter
        t = now()
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=target.device)  # [1, prompt]
        hidden, logits, layer_states = target.run(ids, cache, 0, last_logits_only=True, layers=layers,
                                                  hidden=want_hidden)
        root, logprob = step.first_root(logits, sampler)
        self.sync()
        t_end = now()
        return step.start(prompt_ids, root, logprob, logits, hidden, layer_states=layer_states, sampler=sampler,
                          record_margins=record_margins, verify_s=t_end - t, step_s=t_end - t_start)


