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
from dataclasses import dataclass
from typing import Any

import torch

from specbench.engine.aux_rows import append_aux
from specbench.engine.backends import DEFAULT_BACKEND, Backend, resolve_backend
from specbench.engine.budget import DraftBudget
from specbench.engine.draft_or_skip import SequenceState
from specbench.engine.draft_step import Draft, draft_step
from specbench.engine.drafter import DraftContext, Drafter, StepResult
from specbench.engine.generation import Generation
from specbench.engine.kv_cache import trim_cache
from specbench.engine.sampling import Sampler, accept_sampled, first_token
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.verify import Verification, accept_greedy
from specbench.models.device import synchronize

# room for the largest draft a step may verify, so a cache sized up front rarely has to grow
DRAFT_HEADROOM = 128


class Engine:
    """Draft -> verify decoding (greedy, or sampling) of one target model; the only code that runs the model."""

    def __init__(self, model: torch.nn.Module, stop_ids: set[int], backend: str | Backend | Any = DEFAULT_BACKEND) -> None:
        """``backend``: a name (``backends.resolve_backend``) or a resolved backend (``llamacpp``'s needs its GGUF)."""
        self.model = model
        self.stop_ids = set(stop_ids)
        param = next(model.parameters())
        self.backend = resolve_backend(backend, param.device, param.dtype) if isinstance(backend, str) else backend
        self.backend.prepare(model)
        self.target = self.backend.target(model)
        device = self.target.device
        self._sync = lambda: synchronize(device)

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], drafter: Drafter | None, max_new_tokens: int,
                 record_margins: bool = False, sampling: SamplingConfig | None = None, seed: int = 0,
                 draft_budget: DraftBudget | None = None, max_draft_depth: int | None = None) -> Generation:
        """Greedy-decode up to ``max_new_tokens`` after ``prompt_ids``; identical output for any drafter.

        ``record_margins``: also keep each emitted token's top-2 margin (``Generation.token_margins``; the
        emitting logits rows are kept, a view for AR's single row, and reduced after timing). ``sampling`` with
        temperature > 0: sample from a generator seeded with ``seed``, distributed as AR sampling's for any
        drafter (``sampling.py``). ``draft_budget`` (``budget.py``): draft only when it pays, verify only the part
        worth its cost here, tell the drafter how deep drafting pays; lossless whatever it chooses.
        ``max_draft_depth`` (a fixed budget, ``budget=K``): every draft is cut to depth K, and the drafter told so."""
        if max_new_tokens < 1 or not prompt_ids:
            raise ValueError("max_new_tokens must be >= 1" if prompt_ids else "empty prompt")
        target, sync, now = self.target, self._sync, time.perf_counter
        t_start = now()
        sampler = None if sampling is None or sampling.greedy else Sampler(sampling, seed, target.device)
        self.backend.prepare(self.model)
        cache = self.backend.new_cache(self.model, len(prompt_ids) + max_new_tokens + DRAFT_HEADROOM)
        seq, layers, hidden = self._begin(drafter, prompt_ids, draft_budget)
        st = self._prefill(prompt_ids, cache, sampler, record_margins, t_start, layers, hidden)
        gen = st.gen
        _learn_prefill(draft_budget, seq, self.target, drafter, len(prompt_ids), gen.verify_times_s[0], hidden)
        while st.root not in self.stop_ids and len(gen.output_ids) < max_new_tokens:
            room = max_new_tokens - len(gen.output_ids)  # tokens this step may still emit
            t_step = now()
            drafting = drafter is not None and room > 1 and (  # budget=auto: draft only when it pays
                seq is None or draft_budget.plan([_ready(seq, st, room, layers or hidden)], len(st.tokens) - 1)[0])
            # 1. draft
            draft = self._draft_step(st, drafter, room, draft_budget, t_step, depth_cap=max_draft_depth) \
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
            ver = accept_greedy(compiled, logits, states) if sampler is None else \
                accept_sampled(compiled, logits, states, sampler, draft.draft_probs)
            ver = ver.capped(draft.accept_depth)
            # 4. trim: the cache keeps the context plus the accepted path
            if len(ver.rows) < compiled.input_ids.shape[1]:
                trim_cache(cache, n_ctx, ver.rows)
            sync()
            t_verify = now() - t
            gen.add_pass(draft.tree, draft.aux_rows, t_draft, t_verify)
            # 5. emit and stop
            emitted = self._emit(st, ver, logits, record_margins)
            topk = _row_topk(drafter, logits, compiled.tree_rows) if drafting else None
            self._feedback(st, drafter, draft_budget if drafting else None, draft.tree, ver, layer_states, topk,
                           observe=seq is None or drafting)  # a skipped drafter was not called: it is not told
            _learn_step(draft_budget, seq, drafting, len(emitted), t_draft, draft, int(compiled.input_ids.shape[1]),
                        n_ctx, t_verify, now() - t_step)
            gen.step_times_s.append(now() - t_step)  # (budget=auto's bookkeeping included)
            if emitted[-1] in self.stop_ids:
                break
        return gen if seq is None else gen.add_budget_summary(seq)

    def _begin(self, drafter: Drafter | None, prompt_ids: list[int],
               budget: DraftBudget | None = None) -> tuple[SequenceState | None, tuple[int, ...], bool]:
        """(the sequence's ``budget=auto`` state, None without a budget or drafter; the target layers whose states
        the drafter reads; whether the generation runs with the final hidden states); the drafter's ``begin``.
        Where those states cost more (``_prices_prompt_states``: llama.cpp) ``budget`` may run the generation
        without them (``DraftBudget.prompt_states``): its steps are then plain (``SequenceState.blind``)."""
        layers = _layers(drafter)
        self.target.check_layers(layers)
        if drafter is not None:
            drafter.begin(list(prompt_ids))
        hidden, seq = _reads_hidden(drafter), None
        if budget is not None and drafter is not None:
            seq = SequenceState()
            if not layers and _prices_prompt_states(self.target, drafter):
                hidden = budget.prompt_states(len(prompt_ids))
                seq.blind = not hidden
        return seq, layers, hidden

    def _prefill(self, prompt_ids: list[int], cache: object, sampler: Sampler | None, record_margins: bool,
                 t_start: float, layers: tuple[int, ...] = (), want_hidden: bool = True) -> "_Decoding":
        """Run the prompt through the target; its greedy (or sampled) next token is the first root.
        ``want_hidden`` False: no drafter reads hidden states (a backend may then return zero-width ones)."""
        target, now = self.target, time.perf_counter
        t = now()
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=target.device)  # [1, prompt]
        hidden, logits, layer_states = target.run(ids, cache, 0, last_logits_only=True, layers=layers,
                                                  hidden=want_hidden)
        if sampler is None:
            root = int(logits[-1].argmax())
        else:
            root, root_logprob = first_token(logits, sampler)
        self._sync()
        t_end = now()
        gen = Generation(output_ids=[root], accept_lengths=[1], draft_sizes=[0], aux_sizes=[0], draft_times_s=[0.0],
                         draft_depths=[0])
        if sampler is not None:
            gen.token_logprobs.append(root_logprob)
        if record_margins:
            gen.margin_rows.append(logits[-1:])
        gen.verify_times_s.append(t_end - t)
        gen.step_times_s.append(t_end - t_start)
        return _Decoding(gen, list(prompt_ids) + [root], len(prompt_ids), root, hidden[-1], [hidden], sampler,
                         [] if layer_states is None else [layer_states])

    def _draft_step(self, st: "_Decoding", drafter: Drafter, room: int, budget: DraftBudget | None,
                    started: float, select: bool = True, depth_cap: int | None = None) -> Draft:
        """Step 1: the drafter proposes from the context it may read (``draft_step.py`` shapes the proposal).
        ``depth_cap`` (a fixed budget K): the draft is cut to depth K as if only K + 1 tokens were left."""
        if depth_cap is not None:
            room = min(room, depth_cap + 1)
        unseen = st.fresh[0] if len(st.fresh) == 1 else torch.cat(st.fresh)
        unseen_layers = None
        if st.fresh_layers:
            unseen_layers = st.fresh_layers[0] if len(st.fresh_layers) == 1 else torch.cat(st.fresh_layers)
        st.fresh, st.fresh_layers, st.fresh_rows = [], [], 0
        max_depth = room - 1 if budget is None else min(room - 1, budget.depth_hint(len(st.tokens)))
        ctx = DraftContext(st.tokens, st.prompt_len, st.last_hidden, self.model, max_depth, unseen, sampler=st.sampler,
                           layer_states=unseen_layers)
        draft = draft_step(drafter, ctx, room, budget, started, select)
        draft.asked_depth = max_depth
        return draft

    def _emit(self, st: "_Decoding", ver: Verification, logits: torch.Tensor, record_margins: bool) -> list[int]:
        """Step 5: append the accepted tokens and the bonus (cut after a stop token); the bonus is the next root."""
        emitted = ver.accepted + [ver.bonus]
        for i, tok in enumerate(emitted):
            if tok in self.stop_ids:
                emitted = emitted[: i + 1]
                break
        st.gen.output_ids.extend(emitted)
        st.tokens.extend(emitted)
        if st.sampler is not None:
            st.gen.token_logprobs.extend(ver.token_logprobs[: len(emitted)])
        st.gen.accept_lengths.append(len(emitted))
        if record_margins:
            rows = ver.rows[: len(emitted)]
            st.gen.margin_rows.append(logits[:1] if rows == [0] else logits[rows])
        st.root = ver.bonus
        st.last_hidden = ver.hidden[ver.rows[-1]]
        return emitted

    @staticmethod
    def _feedback(st: "_Decoding", drafter: Drafter | None, budget: DraftBudget | None, tree: DraftTree | None,
                  ver: Verification, layer_states: torch.Tensor | None = None,
                  row_topk: torch.Tensor | None = None, observe: bool = True) -> None:
        """Tell the budget and the drafter which nodes were accepted; keep the rows' hidden states for the drafter
        (and the chosen layers' states, ``layer_states`` [n, m, h] of every verified row, when it asked).
        ``observe`` False (a step ``budget=auto`` skipped): the drafter is not told (it proposed nothing), but the
        rows' states are still queued, so a drafter that reads them catches up when it is next called."""
        accepted = [r - 1 for r in ver.rows[1:]]
        if budget is not None:
            budget.observe(tree, accepted)
        if drafter is not None:
            rows = slice(0, 1) if ver.rows == [0] else ver.rows  # (a plain step's row: a view, not a gather)
            st.fresh.append(ver.hidden[rows])
            st.fresh_rows += len(ver.rows)
            if layer_states is not None:
                st.fresh_layers.append(layer_states[rows])
            if observe:
                drafter.observe(StepResult(tree, accepted, ver.bonus, ver.aux_predictions, row_topk))


def _learn_step(budget: DraftBudget | None, seq: SequenceState | None, drafted: bool, emitted: int, draft_s: float,
                draft: Draft, rows: int, context: int, verify_s: float, step_s: float) -> None:
    """``budget=auto`` learns one step of a single sequence (``DraftBudget.end_step``); nothing without a budget."""
    if budget is not None and seq is not None:
        budget.end_step([seq], [drafted], [emitted], [draft_s], [draft.asked_depth], rows, context, verify_s, step_s)


def _learn_prefill(budget: DraftBudget | None, seq: SequenceState | None, target: Any, drafter: Drafter | None,
                   rows: int, seconds: float, hidden: bool) -> None:
    """``budget=auto`` learns the prompt's price with or without its hidden states, where they cost more."""
    if seq is not None and _prices_prompt_states(target, drafter):
        budget.costs.observe_prefill(rows, seconds, hidden)


def _prices_prompt_states(target: Any, drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads the final hidden states on a target where a prompt's cost more
    (``prompt_states_cost``: llama.cpp outputs every prompt row's logits with them)."""
    return _reads_hidden(drafter) and getattr(target, "prompt_states_cost", False)


def _layers(drafter: Drafter | None) -> tuple[int, ...]:
    """The target layers whose states ``drafter`` reads (``BaseDrafter.feature_layers``); () for AR or none."""
    return tuple(getattr(drafter, "feature_layers", None) or ())


def _reads_hidden(drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads the target's final hidden states (llama.cpp pays for them)."""
    return drafter is not None and getattr(drafter, "reads_hidden_states", True)


def _reads_states(drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads any of the target's states (then it catches up on the rows it missed)."""
    return bool(_layers(drafter)) or _reads_hidden(drafter)


def _ready(seq: SequenceState, st: "_Decoding", room: int, reads_states: bool) -> SequenceState:
    """``seq`` with the rows its drafter would read before drafting now (none unless it reads the target's states)
    and the tokens its generation may still emit: what ``DraftBudget.plan`` prices."""
    seq.unseen = st.fresh_rows if reads_states else 0
    seq.room = room
    return seq


def _row_topk(drafter: Drafter | None, logits: torch.Tensor, tree_rows: int) -> torch.Tensor | None:
    """``[tree_rows, k]`` ids of each tree row's k largest logits, for a drafter whose ``row_topk`` is k > 0
    (``StepResult.row_topk``); None, and nothing computed, for every other drafter."""
    k = getattr(drafter, "row_topk", 0)
    if not k:
        return None
    return logits[:tree_rows].topk(min(int(k), logits.shape[-1]), dim=-1).indices


@dataclass
class _Decoding:
    """The state of one generation between steps."""

    gen: Generation
    tokens: list[int]  # prompt + emitted tokens; ends with the root
    prompt_len: int
    root: int  # the token the next step starts from (already emitted)
    last_hidden: torch.Tensor  # [hidden] the target's hidden state that predicted the root
    fresh: list[torch.Tensor]  # hidden states the drafter has not seen yet (DraftContext.hidden_states)
    sampler: Sampler | None
    fresh_layers: list[torch.Tensor]  # the same rows' chosen-layer states (DraftContext.layer_states), if asked
    fresh_rows: int = 0  # rows in ``fresh`` (kept as they come: budget=auto prices the catch-up every step)

    def __post_init__(self) -> None:
        self.fresh_rows = sum(int(t.shape[0]) for t in self.fresh)
