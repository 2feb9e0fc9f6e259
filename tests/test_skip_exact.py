"""``budget=auto`` skipping steps stays exact for every registered method, on the four tiny families.

A skipped step calls neither the drafter's ``propose`` nor, unless it declares ``observes_plain_steps`` (Token
Recycling), its ``observe`` (``engine/step.py``); the target's states of the rows it verified are still queued for drafters that read them. Checked here:
- whatever the pattern of drafted and skipped steps, greedy output equals AR's, alone and batched (refilled and
  static); sampling runs and emits valid tokens, and a run that skips every step samples AR's very tokens;
- a draft the budget drops whole (``select`` keeps none of it) is exact too: the drafter proposed, then is
  told nothing was verified (SpS's draft model kept the dropped tokens and crashed at the next step);
- a drafter resumed after skipped steps proposes what a drafter called at every step proposes at the same
  context (caught up, not just exact: a stale EAGLE draft would still verify exactly).

The pattern is not the cost-based choice (``draft_or_skip.choose``) but a seeded random one (``SkipPattern``):
each candidate drafts with probability 1/2, and now and then skips ``RUN`` steps in a row, so drafters are
resumed after one skipped step and after many. Everything else (``select``, the depth hint) is
``AutoBudget``'s on a made-up flat cost, so most of each draft is verified.

Example: a sequence whose pattern is draft, skip, skip, draft: at its 4th step the drafter is called with the
context two plain steps longer than when it last proposed, and EAGLE's ``DraftContext.hidden_states`` holds
the three verified steps' rows it has not seen.

Methods are built as a run builds them (``build_drafter`` with ``tests/every_method.py``'s options) on
``hub_fixtures.tiny_family_dir``'s models; a new method is picked up automatically.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from every_method import QUESTIONS, every_method_options
from hub_fixtures import tiny_family_dir
from specbench.catalog import BASELINE
from specbench.conformance.skip_pattern import RUN, SkipPattern as CoreSkipPattern
from specbench.config.method_labels import label_options
from specbench.datastore import corpora
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.draft_or_skip import SequenceState
from specbench.engine.drafter import DraftContext, Drafter, Proposal
from specbench.engine.generation import Generation
from specbench.engine.loop import Engine
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.tree import DraftTree
from specbench.models.loading import load_model
from specbench.plugins.registry import CORPORA, METHODS, register_corpus
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]
ECHO_CORPUS = "tiny_skip_echo"
_ECHO_TEXTS: list[str] = []  # the echo corpus of the family whose drafters are being built
if ECHO_CORPUS not in CORPORA:
    register_corpus(ECHO_CORPUS)(lambda data_dir: iter(list(_ECHO_TEXTS)))
    corpora.PAIR_LOADERS.setdefault(ECHO_CORPUS, lambda data_dir: (("", t) for t in list(_ECHO_TEXTS)))
# samd@rec and samd@eagle: samd with an auxiliary drafter that learns (Token Recycling), that reads the target's
# states (EAGLE, on every position: also those of the steps samd's retrieval drafted or that were skipped)
EXTRA_OPTIONS = {"samd@eagle": {"auxiliary": "eagle", "aux_options": "checkpoint=random"}}
LABELS = [m for m in METHODS.names() if m != BASELINE] + ["samd@rec", "samd@eagle"]
MAX_NEW = 24
# lookahead proposes nothing before its window has filled (N - 2 drafted steps) and its pool has the root:
# it runs longer, so that its drafts are verified between skipped steps too
MAX_NEW_OF = {"lookahead": 48}
WIDTHS = [(2, True), (3, False)]  # (batch width, refill)
SAMPLING = SamplingConfig(temperature=0.3, top_k=4, seed=0)  # sharp enough that echoed drafts are accepted


class SkipPattern(CoreSkipPattern):
    """check-method's seeded skip pattern (``specbench/conformance/skip_pattern.py``) with the budget's own depth
    hints and, unless asked, no draft dropped.

    Each candidate drafts with probability ``draft_chance``; with probability ``run_chance`` (and always after its
    first draft) it first starts a run of ``RUN`` skipped steps. ``draft_chance`` 0 skips every step. With
    ``drop_chance`` a drafted step's draft is dropped whole after ``propose`` (the drafter is told that nothing
    was verified).

    >>> p = SkipPattern(seed=1, draft_chance=0.0)
    >>> s = SequenceState()
    >>> p.plan([s], 10), p.plan([s], 11), s.skipped_steps
    ([False], [False], 2)
    """

    def __init__(self, seed: int, draft_chance: float = 0.5, run_chance: float = 0.15, drop_chance: float = 0.0) -> None:
        super().__init__(seed, draft_chance, run_chance, drop_chance, depths=None)


def max_new(label: str) -> int:
    return MAX_NEW_OF.get(label, MAX_NEW)


class Family:
    """One family's tiny model (``tiny_family_dir``), its engine, prompts and AR outputs, and drafters built on
    demand, ``max(WIDTHS)`` instances per method label (a batch needs one per slot)."""

    def __init__(self, family: str, root: Path) -> None:
        model_dir = tiny_family_dir(root / f"model-{family}", family, seed=5)
        self.loaded = load_model(str(model_dir), "float32", "cpu")
        tok = self.loaded.tokenizer
        self.engine = Engine(self.loaded.model, set())  # no stop: every sequence has room to draft and to skip
        # echo prompts (a question, the model's answer, the question again) and an echo corpus (each prompt and
        # its answer) make the copying and retrieving drafters propose, and their drafts be accepted
        starts = [tok(q["turns"][0])["input_ids"] for q in QUESTIONS]
        self.prompts = [p + self.engine.generate(p, None, MAX_NEW).output_ids + p[1:] for p in starts]
        longest = max(MAX_NEW, *MAX_NEW_OF.values())  # (a shorter generation's output is a prefix of it)
        self._ar = [self.engine.generate(p, None, longest).output_ids for p in self.prompts]
        self.echo = [tok.decode(p[1:] + out) for p, out in zip(self.prompts, self._ar)]
        self.vocab = self.loaded.model.config.vocab_size
        self.options = {m: {**o, "corpus": ECHO_CORPUS} if "corpus" in o else o
                        for m, o in {**every_method_options(str(model_dir)), **EXTRA_OPTIONS}.items()}
        self.cache = root / f"cache-{family}"
        self._ar_sampled = [self.engine.generate(p, None, longest, sampling=SAMPLING, seed=i).output_ids
                            for i, p in enumerate(self.prompts)]
        self._drafters: dict[str, list[Drafter]] = {}

    def fresh(self, label: str) -> Drafter:
        """A new drafter of ``label`` on this family's model, built as a run builds it."""
        env = MethodEnv.for_task(self.loaded, None, self.cache, "synthetic")
        _ECHO_TEXTS[:] = self.echo  # what a datastore of this family indexes (each family has its own cache)
        return build_drafter(label, label_options(label, self.options), env)[0]

    def drafters(self, label: str) -> list[Drafter]:
        if label not in self._drafters:
            self._drafters[label] = [self.fresh(label) for _ in range(max(w for w, _ in WIDTHS))]
        return self._drafters[label]

    def ar(self, label: str, sampling: SamplingConfig | None = None) -> list[list[int]]:
        """AR's outputs (greedy, or sampled with each prompt's seed) at ``label``'s length."""
        return [out[: max_new(label)] for out in (self._ar if sampling is None else self._ar_sampled)]

    def alone(self, label: str, budget: SkipPattern, sampling: SamplingConfig | None = None,
              drafter: Drafter | None = None) -> list[Generation]:
        drafter = drafter or self.drafters(label)[0]
        return [self.engine.generate(p, drafter, max_new(label), sampling=sampling, seed=i, budget=budget)
                for i, p in enumerate(self.prompts)]

    def batched(self, label: str, budget: SkipPattern, width: int, refill: bool,
                sampling: SamplingConfig | None = None, drafters: list[Drafter] | None = None) -> list[Generation]:
        decoder = BatchDecoder(self.engine, max_new(label), sampling=sampling, budget=budget)
        requests = [Request(p, seed=i) for i, p in enumerate(self.prompts)]
        return decoder.generate(requests, drafters or self.drafters(label), width, refill)


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory):
    """family -> ``Family``, built on first use (one model, one datastore cache per family)."""
    root = tmp_path_factory.mktemp("skip_exact")
    built: dict[str, Family] = {}

    def get(family: str) -> Family:
        if family not in built:
            built[family] = Family(family, root)
        return built[family]

    return get


def assert_both_kinds_of_step(gens: list[Generation], budget: SkipPattern, where: str) -> None:
    """Every generation drafted and skipped, and some sequence drafted again after a long run of skips."""
    for g in gens:
        assert g.drafted_steps > 0 and g.skipped_steps > 0, f"{where}: {g.drafted_steps} drafted, " \
                                                             f"{g.skipped_steps} skipped steps"
    assert max(budget.resumed_after_skips()) >= RUN, f"{where}: never resumed after {RUN} skipped steps"


def verified(gens: list[Generation]) -> int:
    """Draft tokens verified over ``gens`` (a cell whose drafters never proposed would test nothing)."""
    return sum(sum(g.draft_sizes) for g in gens)


def assert_valid_sample(gens: list[Generation], vocab: int, length: int, where: str) -> None:
    for g in gens:
        out = g.output_ids
        assert len(out) == length and all(0 <= t < vocab for t in out), where
        assert len(g.token_logprobs) == len(out) and all(math.isfinite(x) and x <= 0 for x in g.token_logprobs), where


# every method on llama; on the others lookahead, the drafters that read the target's states of every row (queued
# over skipped steps) and SpS (whose draft model catches up over skipped tokens)
ELSEWHERE = ("lookahead", "eagle", "eagle3", "dflash", "ddtree", "hydra", "samd@eagle", "sps")
CELLS = [("llama", m) for m in LABELS] + [(f, m) for f in FAMILIES[1:] for m in LABELS if m in ELSEWHERE]


@pytest.mark.parametrize("family,label", CELLS)
def test_skipped_steps_stay_exact(families, family: str, label: str) -> None:
    fam = families(family)
    budget = SkipPattern(seed=0)
    gens = fam.alone(label, budget)
    assert [g.output_ids for g in gens] == fam.ar(label), f"{label} on {family} alone"
    assert_both_kinds_of_step(gens, budget, f"{label} on {family} alone")
    drafts = verified(gens)
    for width, refill in WIDTHS:
        where = f"{label} on {family} at width {width}{' refilled' if refill else ''}"
        budget = SkipPattern(seed=width)
        gens = fam.batched(label, budget, width, refill)
        assert [g.output_ids for g in gens] == fam.ar(label), where
        assert_both_kinds_of_step(gens, budget, where)
        drafts += verified(gens)
    assert drafts, f"{label} on {family}: no draft token was verified"


@pytest.mark.parametrize("family,label", CELLS)
def test_skipped_steps_sample(families, family: str, label: str) -> None:
    """At T > 0: a mixed pattern runs and emits valid tokens, alone and batched; skipping every step samples
    AR's own tokens (the same seeded draws: a skipped step is a plain one)."""
    fam = families(family)
    budget = SkipPattern(seed=1)
    gens = fam.alone(label, budget, SAMPLING)
    assert_valid_sample(gens, fam.vocab, max_new(label), f"{label} on {family} sampled alone")
    assert_both_kinds_of_step(gens, budget, f"{label} on {family} sampled alone")
    budget = SkipPattern(seed=2)
    drafts = verified(gens)
    gens = fam.batched(label, budget, 2, True, SAMPLING)
    assert_valid_sample(gens, fam.vocab, max_new(label), f"{label} on {family} sampled at width 2")
    assert_both_kinds_of_step(gens, budget, f"{label} on {family} sampled at width 2")
    assert drafts + verified(gens), f"{label} on {family}: no draft token was verified"
    never = fam.alone(label, SkipPattern(seed=3, draft_chance=0.0), SAMPLING)
    assert [g.output_ids for g in never] == fam.ar(label, SAMPLING)
    assert all(g.drafted_steps == 0 for g in never)


@pytest.mark.parametrize("family,label", [c for c in CELLS if c[0] == "llama"])
def test_dropped_drafts_stay_exact(families, family: str, label: str) -> None:
    """A draft of which the budget keeps nothing (``select`` found no node worth its cost) verifies only the root,
    as a skipped step, but the drafter did propose: it must forget what it proposed (SpS had fed its draft
    model the dropped tokens and next failed with "draft cache is ahead of the sequence")."""
    fam = families(family)
    budget = SkipPattern(seed=0, drop_chance=0.5)
    gens = fam.alone(label, budget)
    assert [g.output_ids for g in gens] == fam.ar(label), f"{label} on {family} alone"
    budget_b = SkipPattern(seed=1, drop_chance=0.5)
    gens = fam.batched(label, budget_b, 2, True)
    assert [g.output_ids for g in gens] == fam.ar(label), f"{label} on {family} at width 2"
    assert budget.dropped + budget_b.dropped, f"{label} on {family}: no draft was dropped"


class FixedDepth(SkipPattern):
    """A ``SkipPattern`` that always asks the drafter for ``DEPTH`` tokens (the budget's hint is a random draw)."""

    def depth_hint(self, context: int | None = None, hot: bool = False) -> int:
        self._rates, self._hot = {}, hot  # (a new step: ``select`` draws its own rates)
        return DEPTH


DEPTH = 4
# lookahead's window and Token Recycling's matrix learn from each verified step: their proposals depend on which
# steps drafted; every other drafter's depend on the context (tokens and the target's states) alone. ngram-map-k
# caps a key's draft at what its last draft accepted, and its table takes the starts of the steps it drafted at;
# ngram-mod adds n-grams at the steps it drafts at and resets its pool after low acceptance; ngram-cache counts
# n-grams inside the chunk each drafted step adds
LEARN_FROM_STEPS = ("lookahead", "recycling", "samd@rec", "ngram-map-k", "ngram-map-k4v",
                    "ngram-mod", "ngram-cache")


def recording(drafter: Drafter, log: dict[tuple, tuple | None]) -> Drafter:
    """``drafter``, its every proposal also kept in ``log``: (prompt, context length) -> (tokens, parents) or None."""
    propose = drafter.propose

    def recorded(ctx: DraftContext):
        out = propose(ctx)
        tree = out.tree if isinstance(out, Proposal) else out
        log[tuple(ctx.tokens[: ctx.prompt_len]), len(ctx.tokens)] = None if tree is None else (tree.tokens, tree.parents)
        return out

    drafter.propose = recorded  # type: ignore[method-assign]
    return drafter


@pytest.mark.parametrize("family,label", [c for c in CELLS if c[1] not in LEARN_FROM_STEPS])
def test_resumed_drafter_proposes_as_if_it_never_skipped(families, family: str, label: str) -> None:
    """After skipped steps a drafter catches up: at every context where it is called, alone or batched, it
    proposes what a drafter called at every step proposes there (EAGLE: from the queued states of the skipped
    rows; SpS: its draft model fed the skipped tokens). The reference proposes at every step and has each
    draft dropped, so it emits one token a step and proposes at every context length."""
    fam = families(family)
    every: dict[tuple, tuple | None] = {}
    fam.alone(label, FixedDepth(seed=0, draft_chance=1.0, run_chance=0.0, drop_chance=1.0),
              drafter=recording(fam.fresh(label), every))
    alone: dict[tuple, tuple | None] = {}
    assert [g.output_ids for g in fam.alone(label, FixedDepth(seed=1), drafter=recording(fam.fresh(label), alone))] \
        == fam.ar(label)
    batched: dict[tuple, tuple | None] = {}
    drafters = [recording(fam.fresh(label), batched) for _ in range(2)]
    assert [g.output_ids for g in fam.batched(label, FixedDepth(seed=2), 2, True, drafters=drafters)] == fam.ar(label)
    for log, where in ((alone, "alone"), (batched, "at width 2")):
        assert any(log.values()), f"{label} on {family} {where}: nothing proposed"
        differ = sorted(n for (prompt, n), tree in log.items() if every[prompt, n] != tree)
        assert not differ, f"{label} on {family} {where}: after skips, other proposals at context lengths {differ}"
