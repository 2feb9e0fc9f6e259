"""The drafter contract: methods only *propose* drafts; the engine does everything else.

The engine calls a drafter, never the other way round: ``begin(prompt_ids)`` once before each generation,
``propose(ctx)`` before each step, ``observe(result)`` after each step it proposed for; the runner calls ``learn``
after each timed generation and the engine ``report`` at a generation's end. What a drafter owes the engine:

1. **Propose only.** ``propose`` returns None (no draft: the step runs as AR's), a ``DraftTree`` (a chain is a
   tree) or a ``Proposal`` (the tree with auxiliary rows, draft distributions or an accept cap). The tree's tokens
   continue ``ctx.tokens`` (which ends with the root), are ids of the target's vocabulary, and each node's parent
   precedes it; anything else, or a ``propose`` that raises, is one ``DrafterError`` line naming the method
   (``proposal_check.py``). The engine alone runs the target, verifies and accepts: whatever is proposed, the
   output is AR's (greedy) or distributed as AR's (sampled).
2. **Children best-first.** The children of every node, the root's included, are listed best first by the
   drafter's own ranking: REST and CREST by count, DReSD by neighbour order, ReDrafter by beam score, EAGLE,
   Medusa and Hydra by probability, Token Recycling by its matrix's order, a chain trivially. ``budget=auto``
   learns an acceptance rate per (depth, sibling rank) and keeps the best nodes by it (``budget/auto.py``): a
   drafter that lists its second guess first makes it cut the better one. A node cut away keeps its rank
   (``DraftTree.ranks``). ``tests/test_best_first.py`` checks every registered method.
3. **Distinct siblings.** A node's children are distinct tokens: of repeated siblings only the first can be accepted
   (``compile_tree``), so a repeat costs a verified row for nothing (Token Recycling's rows never written repeat
   token 0), and a sampled proposal must not repeat one (its ``draft_probs`` are drawn without replacement).
4. **Read-only inputs.** ``propose`` (and ``observe``, ``begin``, ``learn``) never mutate what they are handed:
   ``ctx.tokens`` is the generation's own list, the tensors are views of the engine's rows (the next step's
   ``hidden``), ``StepResult.tree`` is the tree the engine verified. Copy what is kept: ``list(ctx.tokens)``
   (a kept reference sees the list grow), ``tensor.clone()`` before an in-place op.
5. **``max_depth`` is a hint.** The engine cuts a deeper tree to the tokens the generation may still emit, and
   ``budget=auto`` (or a fixed ``budget=K``) cuts further; a drafter that stops at ``max_depth`` saves drafting
   time. ``StepResult`` refers to the tree verified, which may be such a cut: index ``accepted_nodes`` into
   ``result.tree``, never into what ``propose`` returned.
6. **One sequence per instance.** An instance drafts for one sequence at a time; batched decoding gives each
   slot its own instance and hands it to the slot's next sequence after calling ``begin``, so ``begin`` resets
   every per-sequence state.
7. **Capabilities declared, never probed.** The engine and the runner read the attributes below (``BaseDrafter``
   declares each, all off but ``reads_hidden_states``; a drafter is built on it) and hand over, compute or copy
   only what they promise:
   - ``reads_hidden_states`` (True): reads ``ctx.hidden`` / ``ctx.hidden_states``; False lets a backend for which
     they cost extra (llama.cpp) skip them and hand zero-width ``[k, 0]`` rows.
   - ``feature_layers`` (()): the target layers whose states it reads as ``ctx.layer_states``, in that order;
     read at each generation's start, and () costs nothing.
   - ``drafts_with_target`` (False): drafts with the target itself, layers skipped (SWIFT): ``ctx.target_draft``
     is set, the engine rewinds it after ``propose``, and a backend that cannot skip layers refuses it.
   - ``row_topk`` (0): k > 0 gets ``StepResult.row_topk``, the top-k ids of every verified tree row.
   - ``observes_plain_steps`` (False): ``observe`` also after a step ``budget=auto`` ran without it (tree None).
   - ``keeps_state_across_generations`` (False): what it does in a generation depends on earlier ones (what
     ``learn`` gave it, what it kept): ``--repeats`` then times each repeat on a ``copy.deepcopy`` of the state
     before repeat 0, so such a drafter is cheap to copy. One that overrides ``learn`` or carries anything from
     one ``begin`` to the next must set it.
   - ``learn(prompt_ids, output_ids)`` and ``report()``: see ``BaseDrafter``.
8. **Extra rows and distributions** come only in a ``Proposal``: ``aux`` rows are verified in the same forward for
   their predictions alone (``StepResult.aux_predictions``, ``aux_rows.py``); ``draft_probs`` only from a drafter
   that *sampled* its tree (from ``ctx.sampler.generator``), one distribution per node; ``accept_depth`` caps what
   a step accepts.

Worked example: a drafter guessing the two likeliest next tokens from the context's bigrams. It reads no hidden
state and says so (7), ranks by count with ties by id and lists the best first (2), proposes two distinct
siblings (3) and leaves the context as it was (4):

>>> from collections import Counter
>>> class Bigrams(BaseDrafter):
...     reads_hidden_states = False
...     def propose(self, ctx: DraftContext) -> DraftTree | None:
...         seen = Counter(b for a, b in zip(ctx.tokens, ctx.tokens[1:]) if a == ctx.tokens[-1])
...         best = sorted(seen, key=lambda t: (-seen[t], t))[: min(2, ctx.max_depth)]
...         return DraftTree.from_chains([[t] for t in best]) if best else None
>>> ctx = DraftContext(tokens=[5, 6, 5, 7, 5, 6, 5], prompt_len=6, hidden=torch.zeros(4), max_depth=8)
>>> Bigrams().propose(ctx), ctx.tokens  # the root 5 was followed by 6 twice and 7 once
(DraftTree(tokens=(6, 7), parents=(-1, -1)), [5, 6, 5, 7, 5, 6, 5])

Glossary (used across the engine, records and reports):
- root / t0: the model's greedy next token, already certain when a step starts.
- draft token: a token a drafter proposes after the root (a node of a ``DraftTree``).
- accepted token: a draft token on the longest root-to-node path matching the model's greedy choices.
- bonus token: the model's greedy token after the last accepted position; it becomes the next root.
- at temperature > 0 the root and bonus are sampled and drafts accepted by rejection sampling
  (``engine/sampling.py``); the same glossary applies with "greedy" read as "sampled".
- tau: tokens emitted per forward pass (accepted + 1), averaged over the forward passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch

from specbench.engine.aux_rows import AuxRows
from specbench.engine.tree import DraftTree

if TYPE_CHECKING:  # (types only: the sampler and the self-draft view are built by the engine)
    from specbench.engine.sampling import Sampler
    from specbench.engine.backends.self_draft import SelfDraft


@dataclass
class DraftContext:
    """What a drafter may read at a step (all read-only: obligation 4 above).

    ``tokens`` is prompt + generated text and ends with the root t0; ``hidden`` is the target's last
    hidden state (after the final norm) at the position whose greedy prediction is the root, so
    ``argmax(lm_head(hidden)) == tokens[-1]`` (at temperature > 0 the root was sampled from it instead).
    ``max_depth`` is how many draft tokens can still be used before ``max_new_tokens`` is reached, or
    fewer under ``budget=auto``: how deep drafting pays on this machine (``budget/auto.py``). It is a
    hint: the engine still weighs whatever is proposed; a drafter that honours it saves drafting time.

    ``hidden_states`` are the target's hidden states at every position kept since the previous
    ``propose`` (after prefill: the whole prompt; after a step: the root and the accepted rows), ``[k, h]``,
    so a drafter that keeps its own cache over features (EAGLE) sees each position once. Row i is at
    position ``len(tokens) - 1 - k + i`` and predicts ``tokens[len(tokens) - k + i]``; the last row is
    ``hidden``. Example: prompt ``[5, 6, 7]``, root ``9``: k = 3, rows at positions 0..2 predicting
    ``6, 7, 9``.

    ``sampler`` (``engine/sampling.py``) is None when decoding is greedy; at temperature > 0 it holds the
    run's sampling settings (``sampler.config``), the target's processing (``sampler.probs``) and the
    generation's seeded ``sampler.generator``, so a drafter can sample its draft (and return the
    distributions it drew from as ``Proposal.draft_probs``).

    ``layer_states`` (only for a drafter that declares ``feature_layers``, see ``BaseDrafter``): the
    target's hidden states of those layers at the same rows as ``hidden_states``, ``[k, len(layers), h]``,
    in the declared order (layer indices as ``engine/backends/target.py``'s ``TargetModel``: 0 the embeddings, ``i``
    the input of decoder layer ``i``, ``L`` the final-norm state). Example: ``feature_layers = (2, 15, 27)``
    on a 30-layer target, prompt of 40 tokens -> ``[40, 3, h]`` at the first step; None for other drafters.

    ``target_draft`` (only for a drafter that declares ``drafts_with_target``): the generation's target and KV
    cache as a draft model with chosen sub-layers skipped (``engine/backends/self_draft.py``); the engine cuts the cache
    back after ``propose``. None for other drafters.
    """

    tokens: list[int]
    prompt_len: int
    hidden: torch.Tensor  # [hidden_size]
    max_depth: int
    hidden_states: torch.Tensor | None = None  # [k, hidden_size]
    sampler: Sampler | None = None  # None: greedy decoding
    layer_states: torch.Tensor | None = None  # [k, len(feature_layers), hidden_size]
    target_draft: SelfDraft | None = None  # for a drafter that drafts_with_target


@dataclass(frozen=True)
class Proposal:
    """A draft tree plus auxiliary rows verified in the same forward (``engine/aux_rows.py``).

    A drafter that needs nothing but a tree returns the ``DraftTree`` itself (or ``None``).

    ``draft_probs`` (only at temperature > 0): ``[len(tree), V]``, row ``i`` the distribution tree node
    ``i`` was SAMPLED from (over the target's vocabulary). None means a deterministic proposal (one-hot
    at each node); either way the engine alone accepts (``engine/sampling.py``).

    ``accept_depth``: at most this many draft tokens are accepted this step, whatever matches beyond;
    the accepted token at that depth is emitted as the step's last token (``Verification.capped``).
    The whole tree is still verified, so the cost is the reference's. Example: a method that, like
    LADE, emits at most N - 1 tokens per step from guesses of N - 1 tokens sets ``accept_depth=N-2``.
    """

    tree: DraftTree | None
    aux: AuxRows | None = None
    draft_probs: torch.Tensor | None = None
    accept_depth: int | None = None


@dataclass
class StepResult:
    """What the engine tells a drafter after verification: which of its nodes were accepted.

    ``aux_predictions``: the model's greedy token at each auxiliary row of the proposal, if it had any.

    ``row_topk``: ``[1 + len(tree), k]`` the ids of the k largest logits of every verified tree row, best
    first (row 0 is the step's root, the last token of the ``DraftContext`` the drafter was given; row
    ``i + 1`` is tree node ``i``; auxiliary rows excluded), on the target's device. Only a drafter whose
    ``row_topk`` attribute is k > 0 gets it, only after a step it proposed for (or, when it declares
    ``observes_plain_steps``, a step ``budget=auto`` ran without it: ``tree`` None, one row), so other methods pay
    nothing. Example: root 7, the chain ``[4, 9]``, k = 2 -> ``[[4, 1], [9, 4], [2, 0]]``: the model's two
    likeliest tokens after 7, after 7 4, after 7 4 9 (Token Recycling keeps them as each token's successors).
    """

    tree: DraftTree | None
    accepted_nodes: list[int]  # tree node indices on the accepted path, root excluded
    bonus: int
    aux_predictions: list[int] | None = None
    row_topk: torch.Tensor | None = None  # [1 + len(tree), k] token ids, when the drafter asks for them
    root: int | None = None  # the step's root: the input token of row 0


@runtime_checkable
class Drafter(Protocol):
    """A drafting method. ``propose`` returns a ``DraftTree`` (a chain is a tree), a ``Proposal``
    (tree + auxiliary rows) or ``None``. Its capabilities are declared, never probed: ``feature_layers``,
    ``reads_hidden_states``, ``row_topk``, ``keeps_state_across_generations``, ``drafts_with_target`` and ``learn``
    (``BaseDrafter`` documents them and declares them all off but ``reads_hidden_states``; a drafter is built on it)."""

    drafts_with_target: bool
    feature_layers: tuple[int, ...]
    keeps_state_across_generations: bool
    observes_plain_steps: bool
    reads_hidden_states: bool
    row_topk: int

    def begin(self, prompt_ids: list[int]) -> None:
        """Called once before each generation (reset per-sequence state)."""

    def propose(self, ctx: DraftContext) -> DraftTree | Proposal | None:
        """Draft continuations of ``ctx.tokens`` (which ends with the root)."""

    def observe(self, result: StepResult) -> None:
        """Called after each verification step (optional bookkeeping)."""

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        """Called after each timed generation of the drafter's (method, task) (``BaseDrafter``)."""

    def report(self) -> dict[str, Any] | None:
        """What the drafter says of itself at a generation's end, kept in its record (``BaseDrafter``)."""


class BaseDrafter:
    """Convenience base with no-op ``begin``/``observe``/``learn``; subclasses implement ``propose``.

    Optional capabilities, off here (``reads_hidden_states`` aside):
    - ``feature_layers``: the target layers whose hidden states the drafter reads (``DraftContext.layer_states``);
      empty (the default) costs nothing: the target then runs without collecting intermediate states. The
      engine reads it at the start of each generation.
    - ``reads_hidden_states`` (default True): whether the drafter reads ``DraftContext.hidden`` /
      ``hidden_states``. A drafter that never does may set it False: a backend for which they cost extra
      (llama.cpp outputs them only with every row's logits) then skips them and hands zero-width ``[k, 0]`` ones.
    - ``drafts_with_target`` (default False): the drafter's draft model is the target itself with sub-layers
      skipped (SWIFT): each ``DraftContext`` then carries ``target_draft`` (``engine/backends/self_draft.py``); a backend
      whose target cannot skip layers (``TargetCaps.skips_layers``: llama.cpp) refuses it in one line.
    - ``row_topk`` (int, 0 = off): how many top token ids of each verified row ``StepResult.row_topk``
      carries (the engine computes them only for a drafter that sets it).
    - ``observes_plain_steps`` (default False): ``observe`` is also called after a step ``budget=auto`` ran
      without the drafter (``StepResult.tree`` None, ``row_topk`` of the root's row alone), for a drafter whose
      state learns from every verified row, not only from its drafts (Token Recycling's matrix): skipped, it
      would otherwise never learn what would make drafting pay.
    - ``learn(prompt_ids, output_ids)``: the runner calls it after each timed generation of the drafter's
      (method, task) with that generation's finished output, and on a resumed run replays it from the
      records in plan order. A drafter whose state across generations comes only from ``learn`` (not from
      what it saw inside generations) therefore gives a resumed run the same records as an uninterrupted one.
      Warm-up generations run on separate instances and are never learned from.
    - ``report()`` (default None): a small JSON object the engine asks for at the end of each generation and
      the record keeps as ``drafter_state`` (SWIFT: the layer set it drafted with and its search's progress).
    - ``keeps_state_across_generations`` (default False): whether what the drafter does in a generation depends
      on earlier ones (what ``learn`` gave it, or what it kept from inside them, as Token Recycling's matrix;
      not a per-generation cache that ``begin`` resets). A drafter that overrides ``learn`` or carries anything
      from one ``begin`` to the next must set it: under ``--repeats`` the runner then times every repeat of a
      unit from the state before its repeat 0 (``run/drafter_state.py``, ``RepeatIsolation``), on deep copies,
      so a drafter that sets it must be cheap to ``copy.deepcopy`` (or define ``__deepcopy__``). Example:
      ``suffix`` sets it (its index of earlier answers), ``eagle`` does not (its draft cache is per generation).
    """

    drafts_with_target: bool = False
    feature_layers: tuple[int, ...] = ()
    keeps_state_across_generations: bool = False
    observes_plain_steps: bool = False
    reads_hidden_states: bool = True
    row_topk: int = 0

    def begin(self, prompt_ids: list[int]) -> None:
        return None

    def propose(self, ctx: DraftContext) -> DraftTree | Proposal | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, result: StepResult) -> None:
        return None

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        return None

    def report(self) -> dict[str, Any] | None:
        return None
