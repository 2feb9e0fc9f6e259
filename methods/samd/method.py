"""Config, drafter and registration of ``samd`` (Hu et al. 2024, SAM-Decoding: speculative decoding via suffix automata).

Each step the drafter moves two matches over the newly accepted tokens: in the dynamic automaton of
prompt + generated text (``dyn_sam.py``) and in the static automaton of a corpus (``static_sam.py``); then
it looks the root up in both and drafts by the reference's rule (``draft.py``): from the longer match
alone, or, with an auxiliary drafter (``auxiliary=eagle``: the leaderboard's SAMD[EAGLE2]), from the
auxiliary unless a match reaches ``len_threshold`` tokens.

The auxiliary is any registered method, built by name (``specbench.api.build_drafter``). It must see
every position the target computed, also on the steps where retrieval drafted: the drafter keeps those
hidden states and hands them over on the auxiliary's next turn, as the reference's tree model is
updated every step.

Example: ``--methods samd,samd@eagle --method-opt samd@eagle.auxiliary=eagle``. With the context
``the cat sat on the mat . the cat`` (one token per word) and the root ``sat``, the dynamic match is
``the cat sat`` (3 tokens): unless the corpus matches more, ``samd`` drafts the ``min(40, 1 + 4 * 3) - 1
= 12`` tokens after its first occurrence (``on the mat . the cat``, all there is); ``samd@eagle`` drafts
EAGLE's tree (3 < ``len_threshold``).
"""
from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch

from specbench_methods.samd.draft import alone_draft, retrieval_chain
from specbench_methods.samd.dyn_sam import DynamicSAM
from specbench_methods.samd.static_sam import StaticSAM
from specbench_methods.samd.store import cached_static_sam, load_static_sam, static_artifacts
from specbench.api import (BaseDrafter, ConfigError, DraftContext, Drafter, DraftTree, MethodEnv, Proposal, StepResult,
                           build_drafter, parse_corpora, parse_settings, register_method)

STATIC = ("auto", "true", "false")


@dataclass(frozen=True)
class SamdConfig:
    """Defaults: Spec-Bench's run of SAM-Decoding (``--samd_n_predicts 40 --samd_len_threshold 5
    --samd_len_bias 5``; ``alpha`` 4 and ``top_k`` 8 as its automata). ``auxiliary``: ``none`` or a
    registered method (``eagle``), with ``aux_options`` ``"key=value;key=value"``. ``static``: use the
    corpus automaton (``auto``: only without an auxiliary, see README); built from ``corpus`` (default: the
    task's REST corpora) capped at ``max_tokens``, or read from a built ``datastore`` directory."""

    auxiliary: str = "none"
    aux_options: str = ""
    n_predicts: int = 40
    len_threshold: int = 5
    len_bias: int = 5
    alpha: float = 4.0
    top_k: int = 8
    static: str = "auto"
    corpus: str | None = None
    max_tokens: int | None = None
    datastore: str | None = None

    def validate(self) -> None:
        if self.n_predicts < 2 or self.top_k < 1:
            raise ConfigError("samd: n_predicts must be >= 2 and top_k >= 1")
        if self.alpha <= 0 or self.len_threshold < 0 or self.len_bias < 0:
            raise ConfigError("samd: alpha must be > 0, len_threshold and len_bias >= 0")
        if self.static not in STATIC:
            raise ConfigError(f"samd: static must be one of {', '.join(STATIC)}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError("samd: max_tokens must be >= 1")
        if self.auxiliary.split("@")[0] in ("samd", "ar"):
            raise ConfigError("samd: auxiliary must be none or a drafting method other than samd (e.g. eagle)")
        aux_options(self.aux_options)

    @property
    def uses_static(self) -> bool:
        return self.static == "true" or (self.static == "auto" and self.auxiliary == "none")


def aux_options(spec: str) -> dict[str, str]:
    """``"checkpoint=random;top_k=4"`` -> ``{"checkpoint": "random", "top_k": "4"}``.

    >>> aux_options(" checkpoint=random ; top_k=4 ")
    {'checkpoint': 'random', 'top_k': '4'}
    """
    try:
        opts = parse_settings([p for p in spec.split(";") if p.strip()])
    except ValueError:
        raise ConfigError(f"samd: aux_options expects 'key=value;key=value', got {spec!r}") from None
    if "budget" in opts:
        raise ConfigError("samd: the auxiliary has no budget of its own (set samd's budget instead)")
    return opts


class SamdDrafter(BaseDrafter):
    """SAM-Decoding over a dynamic and an optional static automaton, with an optional auxiliary drafter.

    ``sources`` counts the steps drafted from each source (dynamic, static, auxiliary)."""

    def __init__(self, config: SamdConfig, static: StaticSAM | None, aux: Drafter | None) -> None:
        self.config, self.static, self.aux = config, static, aux
        self.sources: Counter[str] = Counter()
        # an auxiliary that learns from verified rows' top-k (Token Recycling) gets them on its own steps
        self.row_topk = 0 if aux is None else int(aux.row_topk or 0)
        # the target's hidden states go to the auxiliary alone (EAGLE reads them; Token Recycling does not)
        self.reads_hidden_states = aux is not None and bool(aux.reads_hidden_states)
        # both automata are per generation or fixed: what outlives a generation is the auxiliary's alone
        self.keeps_state_across_generations = aux is not None and bool(aux.keeps_state_across_generations)
        # an auxiliary that drafts with the target itself (SWIFT) needs the engine's view of it on its steps
        self.drafts_with_target = aux is not None and bool(aux.drafts_with_target)
        self._reset()

    def _reset(self) -> None:
        self.dyn = DynamicSAM()
        self.static_match = (0, 0)
        self.rows: list[torch.Tensor] = []  # target hidden states the auxiliary has not seen yet
        self.turn = ""

    def begin(self, prompt_ids: list[int]) -> None:
        self._reset()
        if self.aux is not None:
            self.aux.begin(prompt_ids)

    def _catch_up(self, tokens: list[int]) -> None:
        """Move both automata over the tokens accepted since the last step (all but the root)."""
        state, length = self.static_match
        for token in tokens[len(self.dyn) : -1]:
            self.dyn.extend(token)
            if self.static is not None:
                state, length = self.static.transfer(state, length, token)
        self.static_match = (state, length)

    def propose(self, ctx: DraftContext) -> DraftTree | Proposal | None:
        c = self.config
        self._catch_up(ctx.tokens)
        if self.aux is not None:
            self.rows.append(ctx.hidden_states if ctx.hidden_states is not None else ctx.hidden[None])
        root = ctx.tokens[-1]
        d = self.dyn.lookup(root)
        s = self.static.transfer(*self.static_match, root) if self.static is not None else (0, 0)
        if self.aux is None:
            tree, self.turn = alone_draft(self.dyn, d, self.static, s, root, c.n_predicts, c.alpha, c.top_k, ctx.max_depth)
            self.sources[self.turn] += 1
            return tree
        chain, self.turn = retrieval_chain(self.dyn, d, self.static, s, c.n_predicts, c.len_threshold, c.len_bias, ctx.max_depth)
        self.sources[self.turn] += 1
        if chain is not None:
            return DraftTree.chain(chain) if chain else None
        rows = self.rows[0] if len(self.rows) == 1 else torch.cat(self.rows)  # [k, hidden] since the auxiliary's last turn
        self.rows = []
        return self.aux.propose(dataclasses.replace(ctx, hidden_states=rows))

    def observe(self, result: StepResult) -> None:
        if self.turn == "auxiliary" and self.aux is not None:
            self.aux.observe(result)  # only its own steps: a retrieval step's tree is not its proposal

    def __deepcopy__(self, memo: dict[int, Any]) -> "SamdDrafter":
        """A copy for another repeat of a unit (``RepeatIsolation``, only with a learning auxiliary): the corpus
        automaton is read-only and may be large (read from disk), so the copy shares it."""
        memo[id(self.static)] = self.static
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        """Cross-generation state is the auxiliary's alone (both automata are per generation or fixed)."""
        if self.aux is not None:
            self.aux.learn(prompt_ids, output_ids)


def open_static(config: SamdConfig, env: MethodEnv) -> StaticSAM:
    """The corpus automaton a config asks for: ``datastore=DIR`` or the cached per-task build."""
    if config.datastore:
        return load_static_sam(config.datastore, env.tokenizer)
    corpora = parse_corpora(config.corpus, env.task)
    return cached_static_sam(env.cache_dir, corpora, env.tokenizer, env.model_id, env.data_dir, config.max_tokens)


def build_auxiliary(config: SamdConfig, env: MethodEnv) -> tuple[Drafter | None, dict[str, Any] | None]:
    """The auxiliary drafter, built by name in its own env; its config and artifacts for the manifest."""
    if config.auxiliary == "none":
        return None, None
    aux_env = dataclasses.replace(env, artifacts={})
    drafter, aux_config = build_drafter(config.auxiliary, aux_options(config.aux_options), aux_env)
    return drafter, {"method": config.auxiliary, "config": aux_config, "artifacts": aux_env.artifacts}


@register_method("samd", SamdConfig)
def build_samd(config: SamdConfig, env: MethodEnv) -> SamdDrafter:
    """SAM-Decoding: suffix automata over the context and a corpus, optionally switching to an auxiliary drafter."""
    static = open_static(config, env) if config.uses_static else None
    if static is not None:
        env.artifacts.update(static_artifacts(static))
    aux, aux_record = build_auxiliary(config, env)
    parameters = None
    if aux_record is not None:
        env.artifacts["auxiliary"] = aux_record
        parameters = (aux_record["artifacts"].get("overhead") or {}).get("parameters")
    env.declare_overhead(storage_bytes=env.artifacts.get("static_bytes"), parameters=parameters)
    return SamdDrafter(config, static, aux)
