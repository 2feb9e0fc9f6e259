"""What each method needs of the target model, asked before any drafter is built (``register_model_requirement``).

A method declares a check ``(config, model) -> str | None`` (why it cannot run on this target, None when it can);
the runner asks every method's once the model is loaded and before the estimate, the first-use builds and the
warm-up, so a method that cannot run is refused in one line before other methods' builds take their minutes.
Example: ``pard`` and ``sps`` distil their default draft from the target's own layers; on GPT-2 (no Llama-style
``layers``/``norm``) ``--methods rest,pard`` stops with ``method pard: GPT2LMHeadModel has no ...`` before REST's
datastore is built.
"""
from __future__ import annotations

from typing import Any

from specbench.config.method_labels import split_label
from specbench.errors import ConfigError
from specbench.plugins.registry import MODEL_REQUIREMENTS
from specbench.run.methods_factory import method_config


def check_model_requirements(plan: Any, model: Any) -> None:
    """One ``ConfigError`` line naming every method of ``plan`` whose requirement ``model`` does not meet."""
    refused = []
    for label in plan.methods:
        name = split_label(label)[0]
        if name in MODEL_REQUIREMENTS:
            why = MODEL_REQUIREMENTS.get(name)(method_config(label, plan.options_of(label)), model)
            if why:
                refused.append(f"method {label}: {why}")
    if refused:
        raise ConfigError("; ".join(refused))
