"""``suffix``: SuffixDecoding's drafter, config and registration.

Two indexes (``automaton.py``): a per-request one over the prompt and the answer so far, and a global one
over the answers of the drafter's (method, task): the earlier questions' finished answers plus the
current one as it grows. Each step both are asked for a speculation of the context's last ``max_depth``
tokens (``speculate.py``); the higher score wins, the prompt's on ties, as the reference.

The global index learns only from answers: the current one token by token (as the reference's
``add_active_response``), and each finished one through ``learn``, which the runner calls after every
timed generation and replays from the records on a resumed run. ``learn`` after a generation just keeps
the answer already inserted (adding what the last step emitted); ``learn`` of an answer this drafter did
not generate (a replay) inserts it whole. Either way the index holds the same sequences in the same
order, so a resumed run drafts as an uninterrupted one.

Example: an earlier answer ``... x = foo(a, b) ...`` is in the global index; the current answer ends
with ``x = foo(``: the match ``x = foo(`` (4 tokens) earns up to 4 draft tokens, ``a, b)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from specbench_methods.suffix.automaton import SuffixAutomaton
from specbench_methods.suffix.speculate import Limits, speculate
from specbench_methods.suffix.warm import warm_answers
from specbench.api import BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, register_method


@dataclass(frozen=True)
class SuffixConfig:
    """Defaults: ArcticInference's SuffixDecoding as its simulator evaluates it (the paper's setting)."""

    max_depth: int = 64  # suffix tree depth, and the pattern's length (suffix_cache_max_depth)
    max_spec_tokens: int = 64  # the simulator's 0 = max_depth
    alpha: float = 1.0  # max_spec_factor: a match of m tokens earns alpha * m + offset draft tokens
    offset: float = 0.0  # max_spec_offset
    min_token_prob: float = 0.1
    tree: bool = True  # use_tree_spec
    use_prompt: bool = True  # use_cached_prompt: the per-request index also holds the prompt
    use_global: bool = True  # the global index of earlier answers (the reference's global cache)
    warm: int = 0  # pre-fill the global index with the answers to N dev-split questions (warm.py; the simulator's)
    warm_tokens: int = 128  # new tokens per warm answer at most (set it to the run's --max-new-tokens)

    def validate(self) -> None:
        if self.max_depth < 2:
            raise ConfigError("suffix: max_depth must be >= 2")
        if self.max_spec_tokens < 1:
            raise ConfigError("suffix: max_spec_tokens must be >= 1")
        if self.alpha < 0:
            raise ConfigError("suffix: alpha must be >= 0")
        if not 0 <= self.min_token_prob <= 1:
            raise ConfigError("suffix: min_token_prob must be in [0, 1]")
        if self.warm < 0 or self.warm_tokens < 1:
            raise ConfigError("suffix: warm must be >= 0 and warm_tokens >= 1")
        if self.warm and not self.use_global:
            raise ConfigError("suffix: warm pre-fills the global index, so it needs use_global=true")


class SuffixDrafter(BaseDrafter):
    """Speculates from the prompt's index and the global index of answers; learns finished answers."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, config: SuffixConfig) -> None:
        self.config = config
        self.keeps_state_across_generations = config.use_global  # the global index outlives a generation
        self.answers = SuffixAutomaton()  # the global index: one sequence per answer
        self.request = SuffixAutomaton()  # per request: prompt + answer so far, one sequence
        self._request_end = 0
        self._answer: list[int] | None = None  # the current answer's tokens in ``answers`` (None: none begun)
        self._answer_end = 0
        self._seen = 0  # tokens of the context already inserted

    def begin(self, prompt_ids: list[int]) -> None:
        # an answer never handed to ``learn`` stays in the global index, as the reference keeps every response
        self.request = SuffixAutomaton()
        self._request_end = self.request.extend_all(0, prompt_ids) if self.config.use_prompt else 0
        self._answer, self._answer_end = [], 0
        self._seen = len(prompt_ids)

    def _sync(self, tokens: list[int]) -> None:
        """Insert the tokens emitted since the last step into both indexes."""
        new = tokens[self._seen:]
        self._seen = len(tokens)
        for t in new:
            self._request_end = self.request.extend(self._request_end, t)
        if self.config.use_global and self._answer is not None:
            self._answer_end = self.answers.extend_all(self._answer_end, new)
            self._answer.extend(new)

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        self._sync(ctx.tokens)
        c = self.config
        lim = Limits(c.max_depth, c.max_spec_tokens, c.alpha, c.offset, c.min_token_prob, c.tree, ctx.max_depth)
        pattern = ctx.tokens[-c.max_depth:]
        draft = speculate(self.request, pattern, lim)
        if c.use_global:
            other = speculate(self.answers, pattern, lim)
            if other.score > draft.score:
                draft = other
        return DraftTree(tuple(draft.tokens), tuple(draft.parents)) if draft.tokens else None

    def prefill(self, answers: list[list[int]]) -> None:
        """Put answers no timed question gave (``warm.py``) into the global index, each a sequence of its own."""
        for ids in answers:
            self.answers.extend_all(0, ids)

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        if not self.config.use_global:
            return
        done = self._answer
        if done is not None and output_ids[: len(done)] == done:  # the answer this drafter generated
            self.answers.extend_all(self._answer_end, output_ids[len(done):])
        else:  # an answer it did not see (a resumed run's replay): a sequence of its own
            self.answers.extend_all(0, output_ids)
        self._answer = None


@register_method("suffix", SuffixConfig)
def build_suffix(config: SuffixConfig, env: MethodEnv) -> SuffixDrafter:
    """SuffixDecoding: model-free; indexes the prompt and the run's earlier answers on this task (and, with
    ``warm``, the target's answers to dev-split questions first)."""
    drafter = SuffixDrafter(config)
    if config.warm:
        questions, answers = warm_answers(env, config.warm, config.warm_tokens)
        drafter.prefill(answers)
        env.artifacts["warm"] = {"questions": questions, "answers": len(answers), "tokens": sum(map(len, answers))}
    return drafter
