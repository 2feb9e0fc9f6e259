"""The decode loop shared by every method (the autoregressive baseline is the same loop, no drafts).

Each generation: prefill the prompt (its greedy token is the first root), then repeat
1. draft: the drafter proposes a tree continuing ``context + [root]`` (optionally with auxiliary rows,
   ``aux_rows.py``, whose greedy predictions go back to the drafter and are never output);
2. verify: one forward over ``[root] + tree (+ auxiliary rows)`` with a tree mask and depth-based positions;
3. accept: the longest path matching the model's argmax, plus the bonus token (at temperature > 0:
   recursive rejection sampling, ``sampling.py``, and the root is sampled too);
4. trim: the KV cache keeps the context plus the accepted path;
5. stop: EOS (any of the stop ids) or ``max_new_tokens``; output never overshoots and ends at EOS.

Per forward pass (prefill included) the engine records the tokens emitted (``accept_lengths``,
accepted + 1, so AR is all ones), the draft size in nodes and its depth (longest root-to-leaf path),
draft / verify seconds, and the whole step's seconds (``step_times_s``: the prefill's entry is the time
to first token, from the call on, so it includes the cache allocation and ``drafter.begin``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from specbench.ar_margin import relative_margins
from specbench.device import synchronize
from specbench.drafter import DraftContext, Drafter, Proposal, StepResult
from specbench.engine.aux_rows import append_aux
from specbench.engine.backends import DEFAULT_BACKEND, Backend, resolve_backend
from specbench.engine.budget import DraftBudget
from specbench.engine.cache import trim_cache
from specbench.engine.sampling import Sampler, accept_sampled, first_token
from specbench.engine.tree import compile_tree
from specbench.engine.verify import TargetModel, accept_greedy
from specbench.sampling import SamplingConfig


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

    @property
    def forward_passes(self) -> int:
        return len(self.accept_lengths)

    def token_margins(self) -> list[float] | None:
        """Per emitted token, the relative top-2 margin of the logits that chose it; None unless the
        generation recorded them. Computed here, after timing: inside the loop AR only keeps a view of
        its one logits row, so recording margins does not slow the baseline."""
        if not self.margin_rows:
            return None
        return [round(m, 7) for m in relative_margins(torch.cat(self.margin_rows)).tolist()]


# room for the largest draft a step may verify, so a cache sized up front rarely has to grow
DRAFT_HEADROOM = 128


class Engine:
    """Draft -> verify decoding (greedy, or sampling) of one target model; the only code that runs the model."""

    def __init__(self, model: torch.nn.Module, stop_ids: set[int], backend: str | Backend = DEFAULT_BACKEND) -> None:
        self.model = model
        self.stop_ids = set(stop_ids)
        param = next(model.parameters())
        self.backend = backend if isinstance(backend, Backend) else resolve_backend(backend, param.device, param.dtype)
        self.backend.prepare(model)
        self.target = TargetModel(model)
        device = self.target.device
        self._sync = lambda: synchronize(device)

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], drafter: Drafter | None, max_new_tokens: int,
                 record_margins: bool = False, sampling: SamplingConfig | None = None, seed: int = 0,
                 draft_budget: DraftBudget | None = None) -> Generation:
        """Greedy-decode up to ``max_new_tokens`` after ``prompt_ids``; identical output for any drafter.

        ``record_margins``: also keep each emitted token's top-2 margin (``Generation.token_margins``);
        the emitting logits rows are kept (a view for AR's single row) and reduced after timing.
        ``sampling`` with temperature > 0: sample instead, from a generator seeded with ``seed``; the
        output is then distributed as AR sampling's for any drafter (``sampling.py``).
        ``draft_budget`` (``budget.py``): verify only the part of each draft worth its cost on this machine, and
        tell the drafter how deep drafting pays (``DraftContext.max_depth``); any choice stays lossless.
        """
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if not prompt_ids:
            raise ValueError("empty prompt")
        target, sync, now = self.target, self._sync, time.perf_counter
        t_start = now()
        sampler = None if sampling is None or sampling.greedy else Sampler(sampling, seed, target.device)
        self.backend.prepare(self.model)
        cache = self.backend.new_cache(self.model, len(prompt_ids) + max_new_tokens + DRAFT_HEADROOM)
        if drafter is not None:
            drafter.begin(list(prompt_ids))

        t = now()
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=target.device)
        hidden, logits = target.forward(ids, cache, 0, last_logits_only=True)
        if sampler is None:
            root = int(logits[-1].argmax())
        else:
            root, root_logprob = first_token(logits, sampler)
        sync()
        t_end = now()
        gen = Generation(output_ids=[root], accept_lengths=[1], draft_sizes=[0], aux_sizes=[0], draft_times_s=[0.0],
                         draft_depths=[0])
        if sampler is not None:
            gen.token_logprobs.append(root_logprob)
        if record_margins:
            gen.margin_rows.append(logits[-1:])
        gen.verify_times_s.append(t_end - t)
        gen.step_times_s.append(t_end - t_start)
        last_hidden = hidden[-1]
        fresh = [hidden]  # hidden states the drafter has not seen yet (DraftContext.hidden_states)
        tokens = list(prompt_ids) + [root]
        out = gen.output_ids

        while root not in self.stop_ids and len(out) < max_new_tokens:
            room = max_new_tokens - len(out)  # tokens this step may still emit
            # 1. draft
            t = t_step = now()
            tree, aux, draft_probs, accept_depth = None, None, None, None
            if drafter is not None and room > 1:
                unseen = fresh[0] if len(fresh) == 1 else torch.cat(fresh)
                fresh = []
                max_depth = room - 1 if draft_budget is None else min(room - 1, draft_budget.depth_hint(len(tokens)))
                ctx = DraftContext(tokens, len(prompt_ids), last_hidden, self.model, max_depth, unseen, sampler=sampler)
                proposal = drafter.propose(ctx)
                if isinstance(proposal, Proposal):
                    tree, aux, draft_probs = proposal.tree, proposal.aux, proposal.draft_probs
                    accept_depth = proposal.accept_depth
                else:
                    tree = proposal
                if tree is not None:
                    full = tree
                    tree = tree.truncated(room - 1) if len(tree) else None
                    if draft_probs is not None and tree is not full:
                        draft_probs = None if tree is None else draft_probs[full.kept_nodes(room - 1)]
                if tree is not None and draft_budget is not None:
                    keep = draft_budget.select(tree, now() - t, 0 if aux is None else len(aux), len(tokens)).keep
                    if len(keep) < len(tree):
                        draft_probs = None if draft_probs is None or not keep else draft_probs[keep]
                        tree = tree.subtree(keep) if keep else None
            sync()
            t_draft = now() - t
            # 2. verify
            t = now()
            n_ctx = len(tokens) - 1
            compiled = append_aux(compile_tree(root, tree, target.device), aux)
            hidden, logits = target.forward(
                compiled.input_ids, cache, n_ctx, compiled.position_offsets, compiled.ancestor_mask
            )
            # 3. accept
            if sampler is None:
                ver = accept_greedy(compiled, logits, hidden)
            else:
                ver = accept_sampled(compiled, logits, hidden, sampler, draft_probs)
            ver = ver.capped(accept_depth)
            # 4. trim
            if len(ver.rows) < compiled.input_ids.shape[1]:
                trim_cache(cache, n_ctx, ver.rows)
            sync()
            gen.verify_times_s.append(now() - t)
            gen.draft_times_s.append(t_draft)
            gen.draft_sizes.append(0 if tree is None else len(tree))
            gen.aux_sizes.append(0 if aux is None else len(aux))
            gen.draft_depths.append(0 if tree is None else max(tree.depths()))
            # 5. emit and stop
            emitted = ver.accepted + [ver.bonus]
            for i, tok in enumerate(emitted):
                if tok in self.stop_ids:
                    emitted = emitted[: i + 1]
                    break
            out.extend(emitted)
            tokens.extend(emitted)
            if sampler is not None:
                gen.token_logprobs.extend(ver.token_logprobs[: len(emitted)])
            gen.accept_lengths.append(len(emitted))
            if record_margins:
                rows = ver.rows[: len(emitted)]
                gen.margin_rows.append(logits[:1] if rows == [0] else logits[rows])
            root = ver.bonus
            last_hidden = ver.hidden[ver.rows[-1]]
            if draft_budget is not None and drafter is not None and room > 1:
                draft_budget.observe(tree, [r - 1 for r in ver.rows[1:]])
            if drafter is not None:
                fresh.append(ver.hidden[ver.rows])
                drafter.observe(StepResult(tree, [r - 1 for r in ver.rows[1:]], ver.bonus, ver.aux_predictions))
            gen.step_times_s.append(now() - t_step)
            if emitted[-1] in self.stop_ids:
                break
        return gen
