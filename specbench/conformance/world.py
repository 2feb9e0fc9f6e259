"""What a check runs on: each family's tiny target with its prompts and AR's outputs (``World``), and the method
under check built on it as a run builds it (``Subject``: ``build_drafter`` with the user's options).

``CheckLimits`` sizes the whole check; its defaults are ``check-method``'s (about a minute on 2 cores for a
model-free method), and tests pass smaller ones.

>>> CheckLimits().families
('llama', 'qwen2', 'gpt2', 'gpt-neox')
>>> CheckLimits(families=("llama",), prompts=2).prompt_count
2
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specbench.config.method_labels import split_label
from specbench.conformance.tiny import FAMILIES, PROMPT_TEXTS, char_tokenizer, tiny_model, use_echo_corpus
from specbench.conformance.watch import Log, Watched
from specbench.engine.loop import Engine
from specbench.errors import UserError
from specbench.plugins.registry import MODEL_REQUIREMENTS
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter, method_config

MODEL_SEED = 5  # every family's weights (a fixed seed: a check passes or fails the same way everywhere)
BUILD_SEED = 0  # torch's seed before each drafter is built (an untrained head's random weights)


@dataclass(frozen=True)
class CheckLimits:
    """How much a check runs: the families, how many prompts (the echo prompt always among them, last), tokens
    per generation, and the sampled generations of the distributional check."""

    families: tuple[str, ...] = FAMILIES
    prompts: int = len(PROMPT_TEXTS) + 1
    max_new: int = 32
    samples: int = 600

    @property
    def prompt_count(self) -> int:
        return max(1, min(self.prompts, len(PROMPT_TEXTS) + 1))


class World:
    """One family's tiny target (no stop token: every generation runs ``max_new`` tokens), its engine, prompts (the
    repetitive ones, then the echo: the first prompt, its greedy answer, the first prompt again), AR's outputs and
    the echo texts a datastore of this family indexes (each prompt with a longer greedy answer)."""

    def __init__(self, family: str, limits: CheckLimits, cache: Path) -> None:
        self.family, self.cache = family, cache
        self.model = tiny_model(family, MODEL_SEED)
        self.tokenizer = char_tokenizer()
        self.engine = Engine(self.model, set())
        starts = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in PROMPT_TEXTS]
        echo = starts[0] + self.greedy(starts[0], limits.max_new) + starts[0]
        self.prompts = (starts[: limits.prompt_count - 1] + [echo])
        longer = [self.greedy(p, 2 * limits.max_new) for p in self.prompts]
        self.ar = [out[: limits.max_new] for out in longer]
        self.echo_texts = [self.tokenizer.decode(p + out) for p, out in zip(self.prompts, longer)]

    def greedy(self, prompt: list[int], max_new: int) -> list[int]:
        return self.engine.generate(prompt, None, max_new).output_ids


class Subject:
    """The method under check (a name or label, with its options), built on each family's world on demand.

    ``fresh(family)`` builds a new drafter exactly as a run would (``build_drafter``), ``watched`` wraps one in
    a ``Watched`` recorder. A family whose target the method refuses (``register_model_requirement``) is left out
    of ``families`` with its reason in ``refused``; a build that fails is one ``UserError`` line (exit 2)."""

    def __init__(self, name: str, options: dict[str, str], limits: CheckLimits, cache: Path) -> None:
        self.name, self.options, self.limits, self.cache = name, dict(options), limits, cache
        self.config = method_config(name, options)  # (unknown names and options: one line before any model)
        self._worlds: dict[str, World] = {}
        self.refused: dict[str, str] = {}
        self.families = [f for f in limits.families if not self._refuses(f)]
        if not self.families:
            raise UserError(f"method {name} runs on none of the tiny models: "
                            + "; ".join(f"{f}: {why}" for f, why in self.refused.items()))

    def _refuses(self, family: str) -> bool:
        base = split_label(self.name)[0]
        if base in MODEL_REQUIREMENTS:
            why = MODEL_REQUIREMENTS.get(base)(self.config, self.world(family).model)
            if why:
                self.refused[family] = str(why)
        return family in self.refused

    def world(self, family: str) -> World:
        if family not in self._worlds:
            self._worlds[family] = World(family, self.limits, self.cache / family)
        return self._worlds[family]

    def fresh(self, family: str) -> Any:
        """A new drafter of the method on ``family``'s target (None for a method without one: AR)."""
        world = self.world(family)
        use_echo_corpus(world.echo_texts)
        env = MethodEnv(world.model, world.tokenizer, f"check-method-tiny-{family}", torch.device("cpu"), None,
                        world.cache, "synthetic")
        torch.manual_seed(BUILD_SEED)
        try:
            return build_drafter(self.name, self.options, env)[0]
        except Exception as e:  # noqa: BLE001 (any failure to build is the user's input: one line, exit 2)
            why = " ".join(f"{type(e).__name__}: {e}".split())
            raise UserError(f"method {self.name} could not be built on the tiny {family} model ({why}); give it "
                            "the options it needs with --method-opt (see check-method --help)") from None

    def watched(self, family: str, log: Log, garble: str | None = None) -> Watched | None:
        drafter = self.fresh(family)
        return None if drafter is None else Watched(drafter, log, garble)

    def refused_note(self) -> str:
        """`` (not on gpt2: why)`` for the families the method refuses, or nothing."""
        return "".join(f" (not on {f}: {why})" for f, why in self.refused.items())
