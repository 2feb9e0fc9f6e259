"""Property ``exact-greedy``: on every family's tiny target the method's greedy output is AR's, token for token,
and it did draft (a method that never drafts is exact for nothing).

The engine alone accepts, so what can break exactness goes through the contract: a drafter that changes
``ctx.tokens`` (the generation's own list: the positions shift), or one whose ``drafts_with_target`` leaves the
target's cache changed. Example of a failing line: ``FAIL exact-greedy: gpt2 prompt 2 diverges from AR at
token 5 (AR [7, 3, 9], got [7, 3, 2])``.
"""
from __future__ import annotations

from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.results.lossless import first_divergence
from specbench.results.record import accepted_tokens

NAME = "exact-greedy"


def divergence(where: str, want: list[int], got: list[int]) -> str:
    """``where diverges from AR at token i (AR [...], got [...])`` (None-free: call it on differing lists)."""
    i = first_divergence(want, got) or 0
    return f"{where} diverges from AR at token {i} (AR {want[i:i + 3]}, got {got[i:i + 3]})"


def never_drafted(name: str, what: str) -> Outcome:
    """``FAIL name: never drafted (what)``: a property that holds for nothing."""
    return failed(name, f"never drafted ({what}): exactness holds vacuously; give it options or prompts it drafts on")


def check(subject: Subject) -> Outcome:
    drafted = accepted = outputs = 0
    for family in subject.families:
        world, log = subject.world(family), Log()
        drafter = subject.watched(family, log)
        for i, (prompt, want) in enumerate(zip(world.prompts, world.ar)):
            gen = world.engine.generate(prompt, drafter, len(want))
            if gen.output_ids != want:
                return failed(NAME, divergence(f"{family} prompt {i}", want, gen.output_ids))
            drafted += sum(gen.draft_sizes)
            accepted += accepted_tokens(gen.accept_lengths)
            outputs += 1
    if not drafted:
        return never_drafted(NAME, f"{outputs} greedy generations on {', '.join(subject.families)}")
    return passed(NAME, f"{outputs} generations on {', '.join(subject.families)} equal AR's; {drafted} draft tokens "
                        f"verified, {accepted} accepted{subject.refused_note()}")
