"""samd as a method: exact on tiny models of four families (alone, and with an auxiliary that must see every
position), samd@eagle on the golden outputs and AR's sampling distribution, options and their errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.samd.method import SamdConfig, SamdDrafter, aux_options
from specbench_methods.samd.static_sam import StaticSAM
from specbench.engine.drafter import BaseDrafter, DraftContext
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from specbench.errors import USER_ERRORS
from specbench.paths import default_data_dir
from specbench.run.golden import verify_golden
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from test_golden import ECHO_CORPUS, TINY_OPTIONS, tiny  # noqa: F401  (the fixture: tiny model, tokenizer, golden, cache)
from test_sampling_lossless import ALPHA, LONG_RUNS, LONG_TOKENS, SAMPLING, chi_square_pvalue, sample_counts
from test_sampling_lossless import setup as sampling_setup  # noqa: F401  (a fixture)

SAMD_EAGLE = {"auxiliary": "eagle", "aux_options": "checkpoint=random", "corpus": ECHO_CORPUS}


def _prompts_and_refs(model: torch.nn.Module, n: int = 3, new: int = 40) -> tuple[list[list[int]], list[list[int]]]:
    """Prompts that repeat themselves (so the dynamic automaton drafts) and their AR continuations."""
    rng = np.random.default_rng(0)
    prompts = []
    for _ in range(n):
        piece = rng.integers(0, 64, size=8).tolist()
        prompts.append(piece + rng.integers(0, 64, size=4).tolist() + piece)
    engine = Engine(model, set())
    return prompts, [engine.generate(p, None, new).output_ids for p in prompts]


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2", "neox"])
def test_samd_alone_is_exact_and_drafts_from_both_automata(family: str) -> None:
    model = make_tiny_model(family, seed=3)
    prompts, refs = _prompts_and_refs(model)
    # the corpus holds the AR continuations of two prompts (static drafts get accepted) plus noise
    rng = np.random.default_rng(1)
    corpus = [t for p, r in zip(prompts[:2], refs[:2]) for t in p + r] + rng.integers(0, 64, size=400).tolist()
    drafter = SamdDrafter(SamdConfig(), StaticSAM.from_tokens(corpus, 64), None)
    engine = Engine(model, set())
    accepted = 0
    for p, ref in zip(prompts, refs):
        gen = engine.generate(p, drafter, 40)
        assert gen.output_ids == ref
        accepted += sum(gen.accept_lengths) - gen.forward_passes
    assert accepted > 20
    assert drafter.sources["static"] > 0 and drafter.sources["dynamic"] > 0


class RowCheckingAux(BaseDrafter):
    """An auxiliary that checks it is handed the target's hidden state of every position exactly once
    (as EAGLE's draft cache needs), and proposes a random chain."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(2)
        self.proposed = self.observed = 0

    def begin(self, prompt_ids: list[int]) -> None:
        self.seen = 0

    def propose(self, ctx: DraftContext) -> DraftTree:
        k = ctx.hidden_states.shape[0]
        assert self.seen == len(ctx.tokens) - 1 - k, "the auxiliary missed (or got twice) some positions"
        assert torch.equal(ctx.hidden_states[-1], ctx.hidden)
        self.seen = len(ctx.tokens) - 1
        self.proposed += 1
        return DraftTree.chain(self.rng.integers(0, 64, size=3).tolist())

    def observe(self, result) -> None:
        self.observed += 1


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_the_auxiliary_sees_every_position_and_only_its_own_steps(family: str) -> None:
    model = make_tiny_model(family, seed=3)
    prompts, refs = _prompts_and_refs(model)
    aux = RowCheckingAux()
    drafter = SamdDrafter(SamdConfig(auxiliary="eagle", len_threshold=2), None, aux)  # a 2-token match retrieves
    for p, ref in zip(prompts, refs):
        assert Engine(model, set()).generate(p, drafter, 40).output_ids == ref
    assert drafter.sources["auxiliary"] == aux.proposed == aux.observed > 0
    assert drafter.sources["dynamic"] > 0  # both sources took turns, so the rows were carried across


def test_samd_eagle_reproduces_golden_outputs(tiny) -> None:  # noqa: F811
    model, tok, golden, cache = tiny

    def env_for(task: str) -> MethodEnv:
        return MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, task)

    result = verify_golden(golden, model, env_for, ["samd@eagle"], {"samd@eagle": SAMD_EAGLE})
    assert result.ok, "\n".join(result.failures["samd@eagle"])
    assert result.passed["samd@eagle"] == len(golden["entries"]) and result.drafted["samd@eagle"] > 0
    drafter, config = build_drafter("samd@eagle", SAMD_EAGLE, env_for("synthetic"))
    assert config["auxiliary"] == "eagle" and drafter.static is None  # static=auto: off with an auxiliary
    engine = Engine(model, set(golden["stop_ids"]))
    for e in golden["entries"]:
        assert engine.generate(e["prompt_ids"], drafter, 40).output_ids == e["output_ids"]
    assert drafter.sources["auxiliary"] > 0 and drafter.sources["dynamic"] > 0


def test_samd_eagle_samples_ar_distribution(sampling_setup) -> None:  # noqa: F811
    engine, prompt, exact, env, _options = sampling_setup
    drafter, _ = build_drafter("samd@eagle", SAMD_EAGLE, env())
    counts, accepted = sample_counts(engine, prompt, drafter)
    assert chi_square_pvalue(counts, exact) >= ALPHA
    for seed in range(LONG_RUNS if not accepted else 0):
        gen = engine.generate(prompt, drafter, LONG_TOKENS, sampling=SAMPLING, seed=seed)
        accepted += sum(a - 1 for a in gen.accept_lengths)
    assert accepted > 0


def test_factory_records_the_auxiliary_and_the_static_store(tiny) -> None:  # noqa: F811
    model, tok, _golden, cache = tiny
    env = MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, "synthetic")
    drafter, _ = build_drafter("samd", TINY_OPTIONS["samd"], env)
    assert drafter.static is not None and drafter.aux is None
    assert env.artifacts["static_corpora"] == [ECHO_CORPUS] and len(env.artifacts["static_sha256"]) == 8
    assert env.artifacts["overhead"] == {"storage_bytes": env.artifacts["static_bytes"], "parameters": None}
    env2 = MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, "synthetic")
    drafter2, _ = build_drafter("samd", {**SAMD_EAGLE, "static": "true"}, env2)
    aux = env2.artifacts["auxiliary"]
    assert aux["method"] == "eagle" and aux["config"]["checkpoint"] == "random"
    assert env2.artifacts["overhead"]["parameters"] == aux["artifacts"]["overhead"]["parameters"] > 0
    assert drafter2.static is not None and env2.artifacts["static_sam"] == env.artifacts["static_sam"]  # cached


@pytest.mark.parametrize("options, message", [
    ({"static": "maybe"}, "static must be one of"),
    ({"auxiliary": "samd"}, "other than samd"),
    ({"auxiliary": "ar"}, "other than samd"),
    ({"n_predicts": "1"}, "n_predicts"),
    ({"alpha": "0"}, "alpha"),
    ({"aux_options": "checkpoint"}, "key=value"),
    ({"aux_options": "budget=auto"}, "no budget of its own"),
    ({"auxiliary": "eagel", "static": "false"}, "unknown method 'eagel'"),
])
def test_bad_options_are_one_line_errors(tiny, options: dict, message: str) -> None:  # noqa: F811
    model, tok, _golden, cache = tiny
    env = MethodEnv(model, tok, "tiny", torch.device("cpu"), default_data_dir(), cache, "synthetic")
    with pytest.raises(USER_ERRORS, match=message):
        build_drafter("samd", options, env)


@pytest.mark.parametrize("family", ["llama", "neox"])
def test_samd_in_the_batched_engine(family: str) -> None:
    """``--batch-size 2``: each slot's samd drafter (alone with a corpus automaton, and with an auxiliary that
    checks it is handed every position's hidden state once) proposes per sequence; outputs equal AR alone."""
    model = make_tiny_model(family, seed=3)
    prompts, refs = _prompts_and_refs(model, n=4)
    corpus = [t for p, r in zip(prompts[:2], refs[:2]) for t in p + r]
    engine = Engine(model, set())
    alone = [SamdDrafter(SamdConfig(), StaticSAM.from_tokens(corpus, 64), None) for _ in range(2)]
    auxes = [RowCheckingAux() for _ in range(2)]
    with_aux = [SamdDrafter(SamdConfig(auxiliary="eagle", len_threshold=2), None, a) for a in auxes]
    for drafters in (alone, with_aux):
        gens = BatchDecoder(engine, 40).generate([Request(p) for p in prompts], drafters, 2, True)
        assert [g.output_ids for g in gens] == refs
        assert sum(sum(g.accept_lengths) - g.forward_passes for g in gens) > 10  # retrieval drafts accepted
    assert sum(d.sources["static"] for d in alone) > 0 and sum(d.sources["dynamic"] for d in alone) > 0
    assert sum(a.proposed for a in auxes) == sum(d.sources["auxiliary"] for d in with_aux) > 0


class LearningAux(RowCheckingAux):
    """Asks for each verified row's top-3 ids and records what it is taught across generations."""

    row_topk = 3

    def __init__(self) -> None:
        super().__init__()
        self.learned: list[tuple[list[int], list[int]]] = []
        self.topk_rows = 0

    def observe(self, result) -> None:
        super().observe(result)
        assert result.tree is not None and result.row_topk.shape == (1 + len(result.tree), 3)
        self.topk_rows += 1

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        self.learned.append((prompt_ids, output_ids))


def test_the_auxiliary_gets_row_topk_and_learns_across_generations() -> None:
    """A composed auxiliary keeps its optional capabilities: ``row_topk`` on its own steps (Token Recycling's
    update) and ``learn`` after each generation (the runner calls samd's)."""
    model = make_tiny_model("llama", seed=3)
    prompts, refs = _prompts_and_refs(model)
    aux = LearningAux()
    drafter = SamdDrafter(SamdConfig(auxiliary="recycling", len_threshold=2), None, aux)
    assert drafter.row_topk == 3
    for p, ref in zip(prompts, refs):
        assert Engine(model, set()).generate(p, drafter, 40).output_ids == ref
        drafter.learn(p, ref)
    assert aux.topk_rows == aux.observed == drafter.sources["auxiliary"] > 0
    assert aux.learned == list(zip(prompts, refs))


def test_spec_bench_preset_runs_samd_eagle_as_eval_sh() -> None:
    """``--preset spec-bench``: SAMD[EAGLE2] as Spec-Bench's eval.sh ran it, EAGLE's published draft as its tree model."""
    from specbench.config.presets import preset_values

    options = preset_values("spec-bench", "lmsys/vicuna-7b-v1.3", "cpu")["method_options"]["samd@eagle"]
    config = SamdConfig(**options)
    config.validate()
    assert not config.uses_static and (config.n_predicts, config.len_threshold, config.len_bias) == (40, 5, 5)
    assert aux_options(config.aux_options) == {"tree": "dynamic", "top_k": "8", "depth": "5", "total_tokens": "62",
                                               "checkpoint": "yuhuili/EAGLE-Vicuna-7B-v1.3"}
    plain = preset_values("spec-bench", "gpt2", "cpu")["method_options"]["samd@eagle"]
    assert "checkpoint" not in aux_options(plain["aux_options"])
