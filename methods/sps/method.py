"""Config, drafter and registration of ``sps`` (speculative sampling, Leviathan et al. 2023 / Chen et al.
2023: greedy at temperature 0, the draft sampled at temperature > 0), with the draft-length schedules of
transformers' assisted generation.

Example: ``--methods sps --method-opt sps.draft_model=HuggingFaceTB/SmolLM2-135M-Instruct`` with a
larger SmolLM2 target; each step the draft proposes ``gamma`` tokens as a chain, the engine verifies
them in one forward of the target, and the draft's cache is cut back to what was accepted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.api import (
    BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, Proposal, StepResult, check_recipe,
    choose_draft_vocab, distill_refusal, is_hub_id, parse_vocab, record_head_rows, register_method,
    register_model_requirement, resolve_checkpoint, stop_token_ids)

from specbench_methods.sps.adaptive import AdaptiveThreshold, require_sklearn
from specbench.api import (DISTILL_META_FILE, DISTILL_RECIPES, DISTILL_VOCAB_FILE, distilled_dir,  # noqa: F401
                           distilled_draft_folder, load_distilled)  # (distilled_dir: tests read sps's folder there)
from specbench_methods.sps.draft_runner import DraftRunner

SCHEDULES = ("constant", "heuristic")


@dataclass(frozen=True)
class SpSConfig:
    """``schedule=heuristic`` is transformers' original assisted-generation rule (start at ``gamma``,
    +2 after a step that accepted every draft token, -1 otherwise, never below 1); ``constant`` keeps
    ``gamma``. ``min_confidence`` stops a draft early after a token the draft itself doubts (transformers
    5 uses 0.4 with a constant 20); ``adaptive`` re-fits it after every step as transformers does with
    scikit-learn installed (``adaptive.py``). A draft also ends at a stop token, as transformers' does.
    ``recipe`` of the distilled draft: ``quick`` (first use, minutes) or ``full`` (``DISTILL_RECIPES``, ``specbench/training/draft_distill.py``). ``vocab``: the
    tokens the draft scores, ``trained`` = ``full`` (the draft's own vocabulary; the distilled one's is reduced) or
    FR-Spec's ``fr:N`` (the N most frequent tokens of a corpus, within the draft's vocabulary)."""

    draft_model: str = "distilled"  # "distilled" (trained from the target on first use), an HF id or a local directory
    gamma: int = 5
    schedule: str = "heuristic"
    min_confidence: float | str = 0.0  # a probability in [0, 1), or "adaptive"
    recipe: str = "quick"
    vocab: str = "trained"

    def validate(self) -> None:
        check_recipe("sps", self.recipe, DISTILL_RECIPES)
        parse_vocab(self.vocab)
        if self.gamma < 1:
            raise ConfigError("sps: gamma must be >= 1")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"sps: schedule must be one of {', '.join(SCHEDULES)}")
        if isinstance(self.min_confidence, str):
            if self.min_confidence != "adaptive":
                raise ConfigError("sps: min_confidence must be a number in [0, 1) or adaptive")
        elif not 0 <= self.min_confidence < 1:
            raise ConfigError("sps: min_confidence must be in [0, 1)")


class SpSDrafter(BaseDrafter):
    """Drafts a chain with a small model; adapts its length by the schedule."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, config: SpSConfig, draft_model: Any, vocab: np.ndarray | None = None, target_vocab: int = 0,
                 stop_ids: frozenset[int] = frozenset(), keep: np.ndarray | None = None) -> None:
        self.config = config
        self.runner = DraftRunner(draft_model, vocab=vocab, target_vocab=target_vocab, stop_ids=stop_ids, keep=keep)
        self.gamma = config.gamma
        self.adaptive: AdaptiveThreshold | None = None
        if config.min_confidence == "adaptive":
            require_sklearn()
            self.runner.record_probs = True
        self._proposed = 0
        self._seq_len = 0

    def begin(self, prompt_ids: list[int]) -> None:
        self.runner.reset()
        self.gamma = self.config.gamma
        if self.config.min_confidence == "adaptive":
            self.adaptive = AdaptiveThreshold()  # per generation, as transformers' candidate generator

    def _threshold(self) -> float:
        return self.adaptive.threshold if self.adaptive is not None else float(self.config.min_confidence)

    def propose(self, ctx: DraftContext) -> DraftTree | Proposal | None:
        gamma = min(self.gamma, ctx.max_depth)
        self._seq_len = len(ctx.tokens)
        if ctx.sampler is None:
            draft = self.runner.draft(ctx.tokens, gamma, self._threshold())
            proposal: DraftTree | Proposal = DraftTree.chain(draft)
        else:
            # temperature > 0: sample the chain from the draft's own processed distribution; the engine
            # accepts each token with min(1, p / q) (Leviathan et al. 2023)
            draft, q = self.runner.draft_sampled(ctx.tokens, gamma, ctx.sampler, self._threshold())
            proposal = Proposal(DraftTree.chain(draft), draft_probs=q)
        self._proposed = len(draft)
        if self.adaptive is not None:
            self.adaptive.drafted(self.runner.last_probs)
        return proposal

    def observe(self, result: StepResult) -> None:
        proposed, self._proposed = self._proposed, 0  # (a later step that did not propose cuts nothing)
        if result.tree is None:
            if proposed:  # budget=auto verified none of the draft: the draft model forgets the tokens it was fed
                self.runner.keep(self._seq_len)
            return
        accepted = len(result.accepted_nodes)
        # the draft fed every proposed token but the last; keep those the target accepted
        self.runner.keep(self._seq_len + min(accepted, proposed - 1))
        if self.adaptive is not None:
            self.adaptive.update(accepted)
        if self.config.schedule == "heuristic":
            self.gamma = self.gamma + 2 if accepted == proposed else max(1, self.gamma - 1)


_LOADED: dict[tuple[str, str, str], tuple[Any, np.ndarray | None]] = {}
_SOURCES: dict[str, dict[str, Any]] = {}  # hub drafts: repository, commit and hashes (for every manifest)


def load_draft(name: str, env: MethodEnv, recipe: str = "quick") -> tuple[Any, np.ndarray | None]:
    """(draft model on the target's device and dtype, its vocabulary map or None), loaded once per
    process; the distilled default (of ``recipe``) is trained on first use. One-line errors for bad drafts."""
    param = next(env.model.parameters())
    key = (name if name != "distilled" else f"distilled@{recipe}", str(param.dtype), str(param.device))
    if key not in _LOADED:
        if name == "distilled":
            _LOADED[key] = _distilled(env, param, recipe)
        elif (Path(name) / DISTILL_VOCAB_FILE).is_file():
            loaded = load_distilled(Path(name), param.device, param.dtype)
            if loaded is None:
                raise ConfigError(f"sps: {name} is an incomplete distilled draft (no {DISTILL_META_FILE}); train it again")
            _LOADED[key] = loaded
        else:
            _LOADED[key] = (_pretrained(name, env, param), None)
        from specbench.api import resolve_backend

        # the draft runs on the engine's fastest backend too (packed, fused linears on CPU)
        resolve_backend("auto", param.device, param.dtype).prepare(_LOADED[key][0])
    return _LOADED[key]


def _distilled(env: MethodEnv, param: torch.Tensor, name: str) -> tuple[Any, np.ndarray]:
    loaded = load_distilled(distilled_draft_folder(env, name), param.device, param.dtype)
    assert loaded is not None  # complete: its DISTILL_META_FILE is written last
    return loaded


def _pretrained(name: str, env: MethodEnv, param: torch.Tensor) -> Any:
    from specbench.api import ModelLoadError, load_model

    path = name
    if is_hub_id(name):  # ORG/NAME[@REVISION]: fetched through the hub cache, revision and bytes recorded
        source = resolve_checkpoint(name, "sps.draft_model")
        _SOURCES[name] = source.record()
        path = str(source.path)
    try:
        lm = load_model(path, str(param.dtype).removeprefix("torch."), str(param.device))
    except ModelLoadError as e:
        raise ConfigError(f"sps: draft model {name!r}: {e}") from None
    if env.tokenizer is not None and lm.tokenizer is not None and lm.tokenizer.get_vocab() != env.tokenizer.get_vocab():
        raise ConfigError(f"sps: draft model {name!r} has another tokenizer than the target; SpS needs the same one")
    return lm.model.eval()


@register_model_requirement("sps")
def sps_needs(config: SpSConfig, model: Any) -> str | None:
    """The distilled default draft is the target's own architecture cut short: a Llama-style target only."""
    why = distill_refusal(model) if config.draft_model == "distilled" else None
    return f"{why}; give it a draft model of the target's tokenizer (sps.draft_model=HF_ID or DIR)" if why else None


@register_method("sps", SpSConfig)
def build_sps(config: SpSConfig, env: MethodEnv) -> SpSDrafter:
    """Speculative decoding with a small draft model (default: distilled from the target on first use)."""
    if not config.draft_model:
        raise ConfigError("sps needs a draft model: sps.draft_model=distilled, an HF id or a directory")
    draft, vocab = load_draft(config.draft_model, env, config.recipe)
    env.artifacts["draft_model"] = config.draft_model
    if config.draft_model == "distilled":
        env.artifacts["recipe"] = config.recipe
    if config.draft_model in _SOURCES:
        env.artifacts["draft_source"] = _SOURCES[config.draft_model]
    stops = frozenset(stop_token_ids(env.tokenizer, env.model)) if env.tokenizer is not None else frozenset()
    keep = choose_draft_vocab(config.vocab, None, env)  # FR-Spec's ``fr:N``: the N most frequent tokens
    drafter = SpSDrafter(config, draft, vocab, int(env.model.config.vocab_size), stops, keep)
    if drafter.runner.out_ids is not None:
        record_head_rows(env, len(drafter.runner.out_ids))
    return drafter
