"""Property ``hidden-states``: a drafter that declares ``reads_hidden_states = False`` proposes the same when the
hidden states it is handed (``ctx.hidden``, ``ctx.hidden_states``) are garbage: NaN, then large random values.

The declaration lets a backend for which the states cost extra (llama.cpp) skip them and hand zero-width rows; a
drafter that reads them anyway would draft from nothing there. A drafter that declares it reads them is not
checked (SKIP). ``feature_layers`` (the target layers read as ``ctx.layer_states``) need no such check: a drafter
that declares none is handed None.
"""
from __future__ import annotations

from specbench.conformance.outcome import Outcome, failed, passed, skipped
from specbench.conformance.repeats import first_difference
from specbench.conformance.watch import Drawn, Log
from specbench.conformance.world import Subject

NAME = "hidden-states"
GARBAGE = ("nan", "random")


def proposals(subject: Subject, family: str, garble: str | None) -> list[Drawn]:
    """Every proposal of a fresh drafter over ``family``'s prompts, its hidden states ``garble``d."""
    world, log = subject.world(family), Log()
    drafter = subject.watched(family, log, garble)
    for prompt in world.prompts:
        world.engine.generate(prompt, drafter, subject.limits.max_new)
    return log.proposals


def check(subject: Subject) -> Outcome:
    probe = subject.fresh(subject.families[0])
    if probe is None:
        return skipped(NAME, "no drafter")
    if probe.reads_hidden_states:
        return skipped(NAME, "declares reads_hidden_states = True (it may read them): nothing to check")
    families = subject.families[:2]
    compared = 0
    for family in families:
        real = proposals(subject, family, None)
        if proposals(subject, family, None) != real:
            return skipped(NAME, f"two fresh drafters proposed differently on {family} with the same inputs: "
                                 "its proposals are not reproducible, nothing to compare")
        for kind in GARBAGE:
            try:
                garbled = proposals(subject, family, kind)
            except Exception as e:  # noqa: BLE001 (reading the garbage is the finding)
                return failed(NAME, f"declares reads_hidden_states = False, but with {kind} hidden states on "
                                    f"{family} it raised {type(e).__name__}: {' '.join(str(e).split())}")
            if garbled != real:
                return failed(NAME, f"declares reads_hidden_states = False, but proposes differently with {kind} "
                                    f"hidden states on {family} (from proposal {first_difference(real, garbled)})")
        compared += len(real)
    return passed(NAME, f"declares reads_hidden_states = False: the same {compared} proposals on "
                        f"{', '.join(families)} with the hidden states replaced by {' and by '.join(GARBAGE)}")
