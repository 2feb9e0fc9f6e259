"""Property ``best-first``: a node's children come best first (the contract's obligation 2), as ``budget=auto``
assumes when it learns an acceptance rate per sibling rank and keeps the best ranks.

The drafter's own ranking cannot be read from outside, so this is the observed rule of
``tests/test_best_first.py``: over every verified sibling group whose parent was accepted (the root always is),
on every family's greedy runs, the rank-0 child must be accepted at least once and at least as often as the
rank-1 child. With fewer than ``MIN_GROUPS`` such groups the comparison means nothing (SKIP); a drafter that
proposes chains only is best first trivially (SKIP). A breach fails only when it is significant: rank 1 accepted more
often than a fair coin between the two ranks would give with probability ``ALPHA`` (a sign test); fewer accepts
are too few to judge (SKIP), as with an untrained head, whose ranking the target barely ever agrees with.

>>> sign_test(0, 3), sign_test(2, 30) < 1e-6
(0.125, True)
"""
from __future__ import annotations

import math

from specbench.conformance.outcome import Outcome, failed, passed, skipped
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject

NAME = "best-first"
MIN_GROUPS = 20
MIN_ACCEPTS = 10  # accepted children of rank 0 or 1 (fewer: an untrained head's few lucky accepts judge nothing)
ALPHA = 1e-3


def sign_test(first: int, second: int) -> float:
    """P(rank 1 accepted ``second`` times or more out of ``first + second``, were both ranks equally good)."""
    n = first + second
    return sum(math.comb(n, k) for k in range(second, n + 1)) / 2 ** n


def check(subject: Subject) -> Outcome:
    log = Log()
    for family in subject.families:
        world = subject.world(family)
        drafter = subject.watched(family, log)
        if drafter is None:
            return skipped(NAME, "no drafter")
        for prompt in world.prompts:
            world.engine.generate(prompt, drafter, subject.limits.max_new)
    if not log.trees:
        return skipped(NAME, "proposes chains only: best first trivially")
    ranks = dict(sorted(log.accepted_ranks.items()))
    if log.groups < MIN_GROUPS:
        return skipped(NAME, f"not enough sibling groups to judge ({log.groups} verified with their parent "
                             f"accepted, fewer than {MIN_GROUPS})")
    first, second = log.accepted_ranks[0], log.accepted_ranks[1]
    what = f"over {log.groups} verified sibling groups whose parent was accepted, accepted by rank {ranks}"
    if first + second < MIN_ACCEPTS:
        return skipped(NAME, f"{what}: too few accepts of rank 0 or 1 to judge (fewer than {MIN_ACCEPTS})")
    if (first == 0 or first < second) and sign_test(first, second) >= ALPHA:
        return skipped(NAME, f"{what}: too few accepts to judge (rank 1 ahead by chance with p = "
                             f"{sign_test(first, second):.2g})")
    if first == 0 or first < second:
        return failed(NAME, f"{what}: rank 0 accepted less often than rank 1, so children are not listed best "
                            "first (budget=auto would cut the better guess)")
    return passed(NAME, what)
