"""Property ``sampled``: at temperature 1 the method's first tokens are distributed as AR sampling's.

On the first family's target, after the echo prompt (so copying drafters propose), ``CheckLimits.samples``
generations of ``LENGTH`` tokens, seeds 0, 1, ...; their counts are compared with AR's exact distribution
(``distribution.py``; top-k 3 keeps it enumerable: 3 ** LENGTH sequences) by chi-square tests of the sequences and
of each position's token (``fit``), which fail below ``ALPHA`` (Bonferroni-corrected). All seeds are fixed, so a method passes or fails the same way every time; a correct method fails with
probability ``ALPHA``. A sequence the target cannot produce fails at once.

What breaks it through the contract: ``draft_probs`` that are not the distribution the draft was sampled from
(a drafter claiming a uniform ``q`` for a token it picked by argmax has it accepted too often), or a draft
sampled from ``ctx.sampler.generator`` that repeats a sibling (obligation 3).
"""
from __future__ import annotations

from collections import Counter

from specbench.conformance.distribution import exact_distribution, fit, total_variation
from specbench.conformance.outcome import Outcome, failed, passed, skipped
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.engine.sampling_config import SamplingConfig
from specbench.results.record import accepted_tokens

NAME = "sampled"
SAMPLING = SamplingConfig(temperature=1.0, top_k=3)
LENGTH = 4  # tokens per sampled generation: the prefill's and three steps'
ALPHA = 1e-4


def check(subject: Subject) -> Outcome:
    family = subject.families[0]
    world, log = subject.world(family), Log()
    drafter = subject.watched(family, log)
    prompt = world.prompts[-1]
    exact = exact_distribution(world.model, prompt, SAMPLING, LENGTH)
    counts: Counter = Counter()
    accepted = 0
    for seed in range(subject.limits.samples):
        gen = world.engine.generate(prompt, drafter, LENGTH, sampling=SAMPLING, seed=seed)
        out = tuple(gen.output_ids)
        if out not in exact:
            return failed(NAME, f"seed {seed} sampled {list(out)}, which AR sampling at T=1 top-k 3 cannot produce")
        counts[out] += 1
        accepted += accepted_tokens(gen.accept_lengths)
    n = subject.limits.samples
    if not log.drafted():
        return skipped(NAME, f"no draft in the first {LENGTH} tokens of {n} sampled generations: nothing to judge")
    (p, where), tv = fit(counts, exact), total_variation(counts, exact)
    what = (f"{n} generations of {LENGTH} tokens at T=1 top-k 3 on {family} ({log.drafted()} draft tokens, "
            f"{accepted} accepted) vs AR's exact distribution over {len(exact)} sequences: chi-square p = {p:.2g} "
            f"(Bonferroni, lowest at {where}), total variation {tv:.3f}")
    if p < ALPHA:
        return failed(NAME, f"{what} < {ALPHA:g}: not distributed as AR sampling (are draft_probs the distribution "
                            "the draft was drawn from?)")
    return passed(NAME, what)
