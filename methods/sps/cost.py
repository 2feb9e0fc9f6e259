"""SpS's draft model, declared to device profiles (``specbench.api.register_draft_cost``): its shape is the draft
model's (the distilled default's layers and vocabulary, or the named model) and the head vocabulary; a profile
times a random draft of the distilled shape drafting chains of each depth (``gamma`` varied by the profile)."""
from __future__ import annotations

from typing import Any

from specbench.api import DEEPEST_PROBE, distilled_shape, random_distilled_draft, register_draft_cost

from specbench_methods.sps.method import SpSConfig, SpSDrafter, load_draft


def shape(config: dict[str, Any]) -> dict[str, Any]:
    return {**distilled_shape(config["draft_model"], config["recipe"]), "vocab": config["vocab"]}


def probe(config: dict[str, Any], env: Any) -> SpSDrafter:
    """The drafter with a random draft of the distilled shape (a named draft model is loaded as a run loads it)."""
    cfg = SpSConfig(**{**config, "gamma": DEEPEST_PROBE, "schedule": "constant", "min_confidence": 0.0})
    if config["draft_model"] == "distilled":
        draft, vocab = random_distilled_draft(env.model, config["recipe"])
    else:
        draft, vocab = load_draft(config["draft_model"], env, config["recipe"])
    return SpSDrafter(cfg, draft, vocab, int(env.model.config.vocab_size))


register_draft_cost("sps", shape, probe=probe)
