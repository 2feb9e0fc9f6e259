"""The parts of one decode step, shared by the single-sequence loop (``loop.py``) and the batched loop
(``batch_loop.py``): each loop runs its own forwards (one sequence, or every slot padded) and calls these for
everything else, so the two cannot drift apart.

- ``start``: a prefill's root token becomes a generation's state (``Decoding``);
- ``draft`` (step 1): the drafter proposes from what it may read, shaped by ``draft_step.py``;
- ``accept`` (step 3): the longest matching path (or rejection sampling), capped as the drafter asked;
- ``emit`` (step 5): the accepted tokens and the bonus are output, cut after a stop token;
- ``feedback``: the budget and the drafter learn which nodes were accepted; the verified rows' states are
  queued for the drafter;
- what a drafter reads (``feature_layers``, ``reads_hidden``, ``reads_states``), what ``budget=auto`` prices
  before a step (``ready``) and learns of a prompt (``learn_prefill``; a step's ``Budget.learn``: the loops).

Example (the single loop, greedy): ``st = start(...)`` after the prompt's forward; then every step
``d = draft(st, drafter, room, budget, t)``, a forward over ``compile_tree(st.root, d.tree)``,
``ver = accept(compiled, logits, hidden, st.sampler, d)``, ``emit(st, ver, logits, stop_ids, False)`` and
``feedback(st, drafter, budget, d.tree, ver, logits, tree_rows=compiled.tree_rows)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specbench.budget.contract import Budget
from specbench.budget.draft_or_skip import SequenceState
from specbench.engine.draft_step import Draft, draft_step
from specbench.engine.drafter import DraftContext, Drafter, StepResult
from specbench.engine.generation import Generation
from specbench.engine.backends.self_draft import SelfDraft
from specbench.errors import ConfigError
from specbench.engine.sampling import Sampler, accept_sampled, first_token
from specbench.engine.tree import CompiledTree, DraftTree
from specbench.engine.verify import Verification, accept_greedy

# room for the largest draft a step may verify, so a cache sized up front rarely has to grow
DRAFT_HEADROOM = 128


@dataclass
class Decoding:
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
    hot: bool = False  # the last step accepted its whole draft (budget=auto's regime: ``acceptance_stats.is_hot``)
    vocab: int | None = None  # the target's logits width: every proposed token id must be below it (``proposal_check``)

    def __post_init__(self) -> None:
        self.fresh_rows = sum(int(t.shape[0]) for t in self.fresh)


def first_root(logits: torch.Tensor, sampler: Sampler | None) -> tuple[int, float | None]:
    """The prompt's next token from its last logits row: greedy, or sampled (with its log-probability)."""
    if sampler is None:
        return int(logits[-1].argmax()), None
    return first_token(logits, sampler)


def start(prompt_ids: list[int], root: int, logprob: float | None, logits: torch.Tensor, hidden: torch.Tensor, *,
          layer_states: torch.Tensor | None, sampler: Sampler | None, record_margins: bool, verify_s: float,
          step_s: float, admitted_s: float | None = None) -> Decoding:
    """A generation's state after its prompt's forward (``hidden`` [prompt, h], ``layer_states`` [prompt, m, h]
    when a drafter asked for chosen layers): the root is its first output token; the prefill is its first pass
    (``verify_s``: the forward, ``step_s``: the time to first token, from the generation's start or, batched,
    from its admission ``admitted_s``)."""
    gen = Generation(output_ids=[root], accept_lengths=[1], draft_sizes=[0], aux_sizes=[0], draft_times_s=[0.0],
                     draft_depths=[0], verify_times_s=[verify_s], admitted_s=admitted_s)
    gen.step_times_s.append(step_s)
    if logprob is not None:
        gen.token_logprobs.append(logprob)
    if record_margins:
        gen.margin_rows.append(logits[-1:])
    return Decoding(gen, list(prompt_ids) + [root], len(prompt_ids), root, hidden[-1], [hidden], sampler,
                    [] if layer_states is None else [layer_states], vocab=int(logits.shape[-1]))


def draft(st: Decoding, drafter: Drafter, room: int, budget: Budget, started: float, *, select: bool = True,
          target_draft: SelfDraft | None = None) -> Draft:
    """Step 1: the drafter proposes from the context it may read (``draft_step.py`` shapes the proposal), asked as
    deep as ``budget`` says, its draft cut to the room the budget leaves (``Budget.room``: a fixed depth K cuts
    it to K as if only K + 1 tokens were left).
    ``target_draft``: the target as the draft of a drafter that ``drafts_with_target``, rewound after ``propose``."""
    room = budget.room(room)
    unseen = st.fresh[0] if len(st.fresh) == 1 else torch.cat(st.fresh)
    unseen_layers = None
    if st.fresh_layers:
        unseen_layers = st.fresh_layers[0] if len(st.fresh_layers) == 1 else torch.cat(st.fresh_layers)
    st.fresh, st.fresh_layers, st.fresh_rows = [], [], 0
    max_depth = budget.depth(room, len(st.tokens), st.hot)
    ctx = DraftContext(st.tokens, st.prompt_len, st.last_hidden, max_depth, unseen, sampler=st.sampler,
                       layer_states=unseen_layers, target_draft=target_draft)
    try:
        out = draft_step(drafter, ctx, room, budget, started, select=select, vocab=st.vocab)
    finally:
        if target_draft is not None:  # verification writes where the draft's rows were
            target_draft.rewind()
    out.asked_depth = max_depth
    return out


def accept(compiled: CompiledTree, logits: torch.Tensor, hidden: torch.Tensor, sampler: Sampler | None,
           proposed: Draft) -> Verification:
    """Step 3: the accepted path of one sequence's verified rows, capped where its drafter asked."""
    ver = accept_greedy(compiled, logits, hidden) if sampler is None else \
        accept_sampled(compiled, logits, hidden, sampler, proposed.draft_probs)
    return ver.capped(proposed.accept_depth)


def emit(st: Decoding, ver: Verification, logits: torch.Tensor, stop_ids: set[int], record_margins: bool) -> list[int]:
    """Step 5: append the accepted tokens and the bonus (cut after a stop token); the bonus is the next root."""
    emitted = ver.accepted + [ver.bonus]
    for i, tok in enumerate(emitted):
        if tok in stop_ids:
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


def feedback(st: Decoding, drafter: Drafter | None, budget: Budget, tree: DraftTree | None,
             ver: Verification, logits: torch.Tensor, *, tree_rows: int, layer_states: torch.Tensor | None = None,
             drafted: bool = True, observe: bool = True) -> None:
    """After ``emit``: tell the budget and the drafter which nodes were accepted; keep the rows' hidden states for
    the drafter (and the chosen layers' states, ``layer_states`` [n, m, h] of every verified row, when it asked).

    ``drafted``: the drafter proposed this step (the budget learns from it; a drafter that asks for ``row_topk``
    gets the top-k ids of the ``tree_rows`` rows of ``logits``). ``observe`` False (a step ``budget=auto`` skipped):
    the drafter is not told (it proposed nothing) unless it learns from every verified row
    (``BaseDrafter.observes_plain_steps``: Token Recycling's matrix), and the rows' states are still queued, so a
    drafter that reads them catches up when it is next called."""
    accepted = [r - 1 for r in ver.rows[1:]]
    # (a plain step shows nothing: cold; only budget=auto reads the regime, the others answer cold)
    st.hot = budget.observe(tree, accepted, st.hot) if drafted else False
    if drafter is None:
        return
    rows = slice(0, 1) if ver.rows == [0] else ver.rows  # (a plain step's row: a view, not a gather)
    st.fresh.append(ver.hidden[rows])
    st.fresh_rows += len(ver.rows)
    if layer_states is not None:
        st.fresh_layers.append(layer_states[rows])
    if observe or drafter.observes_plain_steps:
        topk = row_topk(drafter, logits, tree_rows) if drafted or not observe else None
        root = st.tokens[-st.gen.accept_lengths[-1] - 1]  # (the step's input token: before what it emitted)
        drafter.observe(StepResult(tree, accepted, ver.bonus, ver.aux_predictions, topk, root))


def row_topk(drafter: Drafter | None, logits: torch.Tensor, tree_rows: int) -> torch.Tensor | None:
    """``[tree_rows, k]`` ids of each tree row's k largest logits, for a drafter whose ``row_topk`` is k > 0
    (``StepResult.row_topk``); None, and nothing computed, for every other drafter."""
    k = 0 if drafter is None else drafter.row_topk
    if not k:
        return None
    return logits[:tree_rows].topk(min(int(k), logits.shape[-1]), dim=-1).indices


def self_draft(target: Any, drafter: Drafter | None, cache: Any, n_ctx: int, slot: int | None = None) -> SelfDraft | None:
    """The target as ``drafter``'s draft model this step (``BaseDrafter.drafts_with_target``); None for the others."""
    if drafter is None or not drafter.drafts_with_target:
        return None
    return SelfDraft(target, cache, n_ctx, slot)


def check_self_draft(target: Any, drafter: Drafter | None) -> None:
    """One-line ``ConfigError`` for a drafter that drafts with the target on a backend that cannot skip layers."""
    if drafter is not None and drafter.drafts_with_target and not target.caps.skips_layers:
        raise ConfigError("this method drafts with the target's own layers skipped, which this backend cannot run "
                          "(it runs the graph whole: llama.cpp, compiled); use --backend fast")


def feature_layers(drafter: Drafter | None) -> tuple[int, ...]:
    """The target layers whose states ``drafter`` reads (``BaseDrafter.feature_layers``); () for AR or none."""
    return () if drafter is None else tuple(drafter.feature_layers or ())


def reads_hidden(drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads the target's final hidden states (llama.cpp pays for them)."""
    return drafter is not None and drafter.reads_hidden_states


def reads_states(drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads any of the target's states (then it catches up on the rows it missed)."""
    return bool(feature_layers(drafter)) or reads_hidden(drafter)


def prices_prompt_states(target: Any, drafter: Drafter | None) -> bool:
    """Whether ``drafter`` reads the final hidden states on a target where a prompt's cost more
    (``TargetCaps.prompt_states_cost``: llama.cpp outputs every prompt row's logits with them)."""
    return reads_hidden(drafter) and target.caps.prompt_states_cost


def ready(seq: SequenceState, st: Decoding, room: int, reads: bool) -> SequenceState:
    """``seq`` with the rows its drafter would read before drafting now (none unless it ``reads`` the target's
    states) and the tokens its generation may still emit: what ``DraftBudget.plan`` prices."""
    seq.unseen = st.fresh_rows if reads else 0
    seq.room = room
    seq.hot = st.hot
    return seq


def learn_prefill(budget: Budget, seq: SequenceState | None, target: Any, drafter: Drafter | None, st: Decoding,
                  hidden: bool) -> None:
    """The budget learns the price of ``st``'s prompt (its first pass) with or without its hidden states, where
    they cost more."""
    if seq is not None and prices_prompt_states(target, drafter):
        budget.learn_prefill(st.prompt_len, st.gen.verify_times_s[0], hidden)
