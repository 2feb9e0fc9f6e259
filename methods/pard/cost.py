"""PARD's parallel draft, declared to device profiles (``specbench.api.register_draft_cost``): its shape is the
draft model's (sps's distilled draft plus a mask token, or the named PARD checkpoint); a profile times a random
draft of that shape drafting each depth in one forward (``k`` varied by the profile)."""
from __future__ import annotations

from typing import Any

from specbench.api import DEEPEST_PROBE, distilled_shape, random_distilled_draft, register_draft_cost

from specbench_methods.pard.method import TRAINED, PardConfig, PardDrafter, load_parallel_draft
from specbench_methods.pard.runner import ParallelRunner


def shape(config: dict[str, Any]) -> dict[str, Any]:
    return distilled_shape(config["draft_model"], config["recipe"])


def probe(config: dict[str, Any], env: Any) -> PardDrafter:
    """The drafter with a random draft of the adapted distilled shape (its mask the last id), or the named one."""
    cfg = PardConfig(**{**config, "k": DEEPEST_PROBE})
    if config["draft_model"] == TRAINED:
        draft, vocab = random_distilled_draft(env.model, "quick", extra_tokens=1)
        mask = len(vocab)
    else:
        draft, mask, vocab = load_parallel_draft(cfg, env)
    return PardDrafter(cfg, ParallelRunner(draft, mask, vocab, int(env.model.config.vocab_size)))


register_draft_cost("pard", shape, probe=probe)
