"""Config, drafter and registration of ``sps`` (speculative sampling's greedy case, Leviathan et al. 2023 /
Chen et al. 2023), with the draft-length schedules of transformers' assisted generation.

Example: ``--methods sps --method-opt sps.draft_model=HuggingFaceTB/SmolLM2-135M-Instruct`` with a
larger SmolLM2 target; each step the draft proposes ``gamma`` tokens as a chain, the engine verifies
them in one forward of the target, and the draft's cache is cut back to what was accepted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.config import ConfigError
from specbench.drafter import BaseDrafter, DraftContext, StepResult
from specbench.engine.tree import DraftTree
from specbench.method_env import MethodEnv
from specbench.registry import register_method

from methods.sps.draft_runner import DraftRunner

SCHEDULES = ("constant", "heuristic")


@dataclass(frozen=True)
class SpSConfig:
    """``schedule=heuristic`` is transformers' original assisted-generation rule (start at ``gamma``,
    +2 after a step that accepted every draft token, -1 otherwise, never below 1); ``constant`` keeps
    ``gamma``. ``min_confidence`` stops a draft early after a token the draft itself doubts (transformers
    5 uses 0.4 with a constant 20)."""

    draft_model: str = ""  # HF id or local directory of a causal LM with the target's tokenizer
    gamma: int = 5
    schedule: str = "heuristic"
    min_confidence: float = 0.0

    def validate(self) -> None:
        if self.gamma < 1:
            raise ConfigError("sps: gamma must be >= 1")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"sps: schedule must be one of {', '.join(SCHEDULES)}")
        if not 0 <= self.min_confidence < 1:
            raise ConfigError("sps: min_confidence must be in [0, 1)")


class SpSDrafter(BaseDrafter):
    """Drafts a chain with a small model; adapts its length by the schedule."""

    def __init__(self, config: SpSConfig, draft_model: Any) -> None:
        self.config = config
        self.runner = DraftRunner(draft_model)
        self.gamma = config.gamma
        self._proposed = 0
        self._seq_len = 0

    def begin(self, prompt_ids: list[int]) -> None:
        self.runner.reset()
        self.gamma = self.config.gamma

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        draft = self.runner.draft(ctx.tokens, min(self.gamma, ctx.max_depth), self.config.min_confidence)
        self._proposed, self._seq_len = len(draft), len(ctx.tokens)
        return DraftTree.chain(draft)

    def observe(self, result: StepResult) -> None:
        if result.tree is None:
            return
        accepted = len(result.accepted_nodes)
        # the draft fed every proposed token but the last; keep those the target accepted
        self.runner.keep(self._seq_len + min(accepted, self._proposed - 1))
        if self.config.schedule == "heuristic":
            self.gamma = self.gamma + 2 if accepted == self._proposed else max(1, self.gamma - 1)


_LOADED: dict[tuple[str, str, str], Any] = {}


def load_draft(name: str, env: MethodEnv) -> Any:
    """The draft model on the target's device and dtype, loaded once per process; one-line errors."""
    from specbench.model import ModelLoadError, load_model

    param = next(env.model.parameters())
    key = (name, str(param.dtype), str(param.device))
    if key not in _LOADED:
        dtype = str(param.dtype).removeprefix("torch.")
        try:
            lm = load_model(name, dtype, str(param.device))
        except ModelLoadError as e:
            raise ConfigError(f"sps: draft model {name!r}: {e}") from None
        if env.tokenizer is not None and lm.tokenizer is not None and lm.tokenizer.get_vocab() != env.tokenizer.get_vocab():
            raise ConfigError(f"sps: draft model {name!r} has another tokenizer than the target; SpS needs the same one")
        from specbench.engine.backends import resolve_backend

        # the draft runs on the engine's fastest backend too (packed, fused linears on CPU)
        resolve_backend("auto", param.device, param.dtype).prepare(lm.model)
        _LOADED[key] = lm.model.eval()
    return _LOADED[key]


@register_method("sps", SpSConfig)
def build_sps(config: SpSConfig, env: MethodEnv) -> SpSDrafter:
    """Speculative decoding with a smaller draft model of the same tokenizer (sps.draft_model=ID|DIR)."""
    if not config.draft_model:
        raise ConfigError("sps needs a draft model: --method-opt sps.draft_model=HF_ID_OR_DIR "
                          "(same tokenizer as the target; no distilled default for the embedded model yet)")
    draft = load_draft(config.draft_model, env)
    env.artifacts["draft_model"] = config.draft_model
    return SpSDrafter(config, draft)
