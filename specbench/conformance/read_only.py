"""Property ``read-only``: ``begin``, ``propose``, ``observe`` and ``learn`` never change what they are handed
(the contract's obligation 4): ``ctx.tokens`` is the generation's own list, the hidden-state tensors are views of
the engine's rows, ``StepResult.tree`` is the tree the engine verified. Each input is copied before each call and
compared after it (``watch.Watched``), alone greedy on every family, and on the first family at width 2, under
forced skips and sampled.
"""
from __future__ import annotations

from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.skip_pattern import SkipPattern
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.sampling_config import SamplingConfig
from specbench.run.drafter_state import learn

NAME = "read-only"
SAMPLED = 8  # sampled generations (seeds 0..7) watched


def check(subject: Subject) -> Outcome:
    log, calls = Log(), 0
    for n, family in enumerate(subject.families):
        world = subject.world(family)
        drafter = subject.watched(family, log)
        if drafter is None:
            return passed(NAME, "no drafter: nothing handed over")
        for prompt in world.prompts:
            learn(drafter, prompt, world.engine.generate(prompt, drafter, subject.limits.max_new).output_ids)
        if n == 0:
            budget = SkipPattern(seed=7)
            for prompt in world.prompts:
                world.engine.generate(prompt, drafter, subject.limits.max_new, budget=budget)
            sampling = SamplingConfig(temperature=1.0, top_k=3)
            for seed in range(SAMPLED):
                world.engine.generate(world.prompts[-1], drafter, subject.limits.max_new, sampling=sampling, seed=seed)
            pair = [drafter, subject.watched(family, log)]
            BatchDecoder(world.engine, subject.limits.max_new).generate([Request(p) for p in world.prompts], pair, 2,
                                                                       refill=True)
        calls = len(log.proposals)
        if log.mutations:
            return failed(NAME, f"on {family}: " + "; ".join(log.mutations[:3]))
    return passed(NAME, f"no input changed by the drafter over {calls} proposals and their observe, begin and "
                        f"learn calls, alone on {', '.join(subject.families)}, and on {subject.families[0]} at "
                        "width 2, under forced skips and sampled")
