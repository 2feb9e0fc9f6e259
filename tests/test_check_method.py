"""``specbench check-method``: it passes built-in methods and fails, naming the property, on drafters that each
break one property of the drafter contract (registered in-process, as ``tests/test_faulty_drafters.py`` does).

Every check runs on one tiny family (``llama``; the CLI test adds ``gpt2``) with fewer sampled generations than the
command's default, and only the property a broken drafter breaks, so the file takes well under two minutes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch

from specbench.cli import main
from specbench.conformance.outcome import FAIL, PASS, SKIP
from specbench.conformance.suite import NAMES, check_method
from specbench.conformance.tiny import ECHO_CORPUS, VOCAB
from specbench.conformance.world import CheckLimits
from specbench.engine.drafter import BaseDrafter, DraftContext, Proposal, StepResult
from specbench.engine.tree import DraftTree
from specbench.plugins.registry import METHODS, MethodSpec

SMALL = CheckLimits(families=("llama",), max_new=20, samples=150)


@dataclass(frozen=True)
class NoOptions:
    def validate(self) -> None:
        return None


def copy_guess(tokens: list[int], n: int = 3) -> list[int]:
    """Prompt lookup: the ``n`` tokens after the latest earlier occurrence of the last token (none: [])."""
    root = tokens[-1]
    for i in range(len(tokens) - 2, -1, -1):
        if tokens[i] == root:
            return list(tokens[i + 1 : i + 1 + n])
    return []


class Copier(BaseDrafter):
    """A correct prompt-lookup drafter, the base of the broken ones below."""

    reads_hidden_states = False

    @classmethod
    def build(cls, env: Any) -> "Copier":
        return cls()

    def guess(self, ctx: DraftContext) -> list[int]:
        return copy_guess(ctx.tokens, max(1, min(3, ctx.max_depth)))

    def propose(self, ctx: DraftContext) -> Any:
        guess = self.guess(ctx)
        return DraftTree.chain(guess) if guess else None


class Silent(Copier):
    def propose(self, ctx: DraftContext) -> Any:
        return None


class GrowsTokens(Copier):
    """Appends to ``ctx.tokens``, the generation's own list (the engine's output stays exact all the same)."""

    def propose(self, ctx: DraftContext) -> Any:
        out = super().propose(ctx)
        ctx.tokens.append(ctx.tokens[-1])
        return out


class TunesSharedEmbedding(Copier):
    """Shares the target's token embedding (as EAGLE's draft layer does) and tunes it online, in place: the target
    itself changes, and its output is no longer AR's."""

    def __init__(self, embedding: torch.Tensor) -> None:
        self.embedding = embedding

    @classmethod
    def build(cls, env: Any) -> "TunesSharedEmbedding":
        return cls(env.model.get_input_embeddings().weight)

    def observe(self, result: StepResult) -> None:
        with torch.no_grad():
            self.embedding[result.bonus].neg_()  # (an update in place, at its simplest)


class AssumesEveryStep(Copier):
    """Keeps a draft cache that advances with every step, as a draft model would: it expects each context to be
    the last one plus what the step it observed emitted. A skipped step leaves it behind, and it raises."""

    def begin(self, prompt_ids: list[int]) -> None:
        self.last, self.expected = 0, None

    def propose(self, ctx: DraftContext) -> Any:
        if self.expected is not None and len(ctx.tokens) != self.expected:
            raise RuntimeError(f"draft cache at {self.expected} tokens, the sequence at {len(ctx.tokens)}")
        self.last = len(ctx.tokens)
        return super().propose(ctx)

    def observe(self, result: StepResult) -> None:
        self.expected = self.last + len(result.accepted_nodes) + 1


class GlobalCache(Copier):
    """One draft cache for every instance (a module-level singleton): two sequences in a batch overwrite it."""

    owner: list[Any] = [None]

    def begin(self, prompt_ids: list[int]) -> None:
        GlobalCache.owner[0] = self

    def propose(self, ctx: DraftContext) -> Any:
        if GlobalCache.owner[0] is not self:
            raise RuntimeError("the draft cache holds another sequence")
        return super().propose(ctx)


class ClaimsUniform(Copier):
    """Picks its draft deterministically but says it was drawn uniformly: accepted far too often at T=1."""

    def propose(self, ctx: DraftContext) -> Any:
        guess = self.guess(ctx)
        if not guess:
            return None
        probs = torch.full((len(guess), VOCAB), 1.0 / VOCAB) if ctx.sampler is not None else None
        return Proposal(DraftTree.chain(guess), draft_probs=probs)


class RemembersAnswers(Copier):
    """Drafts from earlier answers (``learn``) without declaring ``keeps_state_across_generations``."""

    def __init__(self) -> None:
        self.answers: list[int] = []

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        self.answers += list(output_ids)

    def guess(self, ctx: DraftContext) -> list[int]:
        return copy_guess(self.answers + ctx.tokens[-1:]) or super().guess(ctx)  # (earlier answers first)


class SharedCopy(RemembersAnswers):
    """Declares its state, but its copies share it."""

    keeps_state_across_generations = True

    def __deepcopy__(self, memo: dict) -> "SharedCopy":
        clone = SharedCopy()
        clone.answers = self.answers
        return clone


class LearnsInObserve(Copier):
    """Declared state, learned from verified steps (``observe``) rather than ``learn``: lost at a resume."""

    keeps_state_across_generations = True

    def __init__(self) -> None:
        self.seen: list[int] = []

    def observe(self, result: StepResult) -> None:
        self.seen.append(result.bonus)

    def guess(self, ctx: DraftContext) -> list[int]:
        return copy_guess(ctx.tokens, 1 + len(self.seen) % 3)  # (its depth follows the steps it has seen)


class ReadsHidden(Copier):
    """Declares ``reads_hidden_states = False`` but picks its token from ``ctx.hidden``."""

    def guess(self, ctx: DraftContext) -> list[int]:
        return [int(ctx.hidden.nan_to_num(0.0).abs().argmax()) % VOCAB]


class Siblings(Copier):
    """The copied guess and a poor one as the root's two children: best first, or (``worst_first``) not."""

    worst_first = False

    def propose(self, ctx: DraftContext) -> Any:
        guess = self.guess(ctx)[:1]
        if not guess:
            return None
        pair = [guess[0], (guess[0] + 1) % VOCAB]
        return DraftTree.from_chains([[t] for t in (pair[::-1] if self.worst_first else pair)])


class WorstFirst(Siblings):
    worst_first = True


class ZeroesHidden(Copier):
    """Zeroes the hidden state it is handed, in place (the engine's own row)."""

    def propose(self, ctx: DraftContext) -> Any:
        ctx.hidden.mul_(0)
        return super().propose(ctx)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Callable[[type], str]:
    """Registers a drafter class as method ``faulty`` (restored after the test); returns the name."""
    METHODS.names()  # discovery first, so the entry added below is not overwritten

    def add(cls: type) -> str:
        monkeypatch.setitem(METHODS._entries, "faulty", MethodSpec("faulty", NoOptions, lambda c, e: cls.build(e), "x"))
        return "faulty"

    return add


def only(name: str, options: dict[str, str] | None = None, prop: str | None = None,
         limits: CheckLimits = SMALL) -> tuple[str, str]:
    """(status, line) of property ``prop`` (all: the one outcome asked) on method ``name``."""
    outcome, = check_method(name, options or {}, limits, only=(prop,))
    return outcome.status, str(outcome)


# drafter class -> (the property it breaks, what its FAIL line says)
BROKEN: dict[type, tuple[str, str]] = {
    Silent: ("exact-greedy", "never drafted"),
    TunesSharedEmbedding: ("exact-greedy", "diverges from AR at token"),
    AssumesEveryStep: ("exact-skips", "raised RuntimeError: draft cache at"),
    GlobalCache: ("exact-batched", "the draft cache holds another sequence"),
    ClaimsUniform: ("sampled", "not distributed as AR sampling"),
    RemembersAnswers: ("repeats", "does not declare keeps_state_across_generations"),
    SharedCopy: ("repeats", "the copy shares state with the live drafter"),
    LearnsInObserve: ("resume", "state kept from inside generations is not replayed by learn()"),
    ReadsHidden: ("hidden-states", "proposes differently with nan hidden states"),
    WorstFirst: ("best-first", "rank 0 accepted less often than rank 1"),
    ZeroesHidden: ("read-only", "propose changed ctx.hidden"),
    GrowsTokens: ("read-only", "propose changed ctx.tokens ("),
}


@pytest.mark.parametrize("cls", list(BROKEN), ids=lambda c: c.__name__)
def test_a_broken_drafter_fails_the_property_it_breaks(registered, cls: type) -> None:
    prop, says = BROKEN[cls]
    status, line = only(registered(cls), prop=prop)
    assert status == FAIL and line.startswith(f"FAIL {prop}: ") and says in line, line


@pytest.mark.parametrize("prop", sorted({p for p, _ in BROKEN.values()}))
def test_the_correct_drafter_passes_each_of_them(registered, prop: str) -> None:
    """The control: the same drafter without the fault passes (best first: the right order of the siblings)."""
    status, line = only(registered(Siblings if prop == "best-first" else Copier), prop=prop)
    assert status == PASS, line


def test_pld_passes_from_the_command_line(capsys) -> None:
    code = main(["check-method", "pld", "--families", "llama,gpt2", "--samples", "100", "--max-new-tokens", "24"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert [line.split(":")[0] for line in out[:-1]] == [f"{s} {n}" for s, n in zip(
        ["PASS"] * 7 + ["SKIP", "PASS"], NAMES)]  # (a chain drafter: best first trivially)
    assert out[-1].startswith("check-method pld: 8 passed, 0 failed, 1 skipped in ")


def test_rest_passes_with_its_tiny_defaults(capsys) -> None:
    """A tree method: no option given, the command builds its datastore over the tiny models' echo corpus."""
    code = main(["check-method", "rest", "--families", "llama", "--samples", "200", "--max-new-tokens", "24"])
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert f"corpus={ECHO_CORPUS}" in captured.err
    lines = captured.out.splitlines()[:-1]
    assert len(lines) == len(NAMES) and all(line.startswith(("PASS", "SKIP")) for line in lines), lines
    assert sum(line.startswith("PASS") for line in lines) >= 7, lines


class Unbuildable(Copier):
    @classmethod
    def build(cls, env: Any) -> "Unbuildable":
        raise FileNotFoundError("no checkpoint at /nowhere")


def test_bad_input_is_one_line_exit_2(registered, capsys) -> None:
    assert main(["check-method", "pdl"]) == 2
    assert "unknown method 'pdl'; did you mean 'pld'?" in capsys.readouterr().err
    assert main(["check-method", "pld", "--method-opt", "nonsense=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nonsense" in err, err
    assert main(["check-method", registered(Unbuildable), "--families", "llama"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "could not be built" in err and "/nowhere" in err, err
    assert captured.out == ""  # (refused before any property ran)
