"""Shared fixtures: tiny random models of several families (no download) and the embedded model."""
from __future__ import annotations

import os
import sys

# OpenMP threads that spin while they wait steal the cores a second job needs, and are starved by it: with
# another torch job on the 2 cores, the embedded model's tests ran 4x slower (test_pld 82 s instead of
# 19 s); waiting passively costs about 10% on a quiet machine (20 s) and keeps the loaded case at 28 s.
# libgomp reads this when torch loads it, so it is set before this file imports torch (tests only: timed
# benchmarks, run with --benchmark-enable / --benchmark-only, keep the default).
if not any(a.startswith(("--benchmark-enable", "--benchmark-only")) for a in sys.argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

import specbench  # noqa: E402,F401  (first: its finder maps specbench_methods / specbench_tasks onto this checkout)
import torch  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

TINY_VOCAB = 64


def make_tiny_model(family: str = "llama", seed: int = 0, vocab: int = TINY_VOCAB, layers: int = 2) -> torch.nn.Module:
    """A randomly initialised causal LM of ``family`` (llama, qwen2, gpt2, neox) in fp32, 2 layers by default."""
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, max_position_embeddings=1024, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    if family == "llama":
        cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, **common)
        model = LlamaForCausalLM(cfg)
    elif family == "qwen2":
        cfg = Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, **common)
        model = Qwen2ForCausalLM(cfg)
    elif family == "gpt2":
        cfg = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=layers, n_head=4, n_positions=1024, bos_token_id=None, eos_token_id=None)
        model = GPT2LMHeadModel(cfg)
    elif family == "neox":
        cfg = GPTNeoXConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4, **common)
        model = GPTNeoXForCausalLM(cfg)
    else:
        raise ValueError(family)
    return model.eval()


@pytest.fixture(scope="session")
def tiny_llama() -> torch.nn.Module:
    return make_tiny_model("llama")


@pytest.fixture(scope="session")
def embedded():
    """The embedded SmolLM2-135M (fp32, CPU), converted and cached on first use."""
    from specbench.models.loading import load_model

    return load_model("embedded", "float32", "cpu")


PROFILE_PARAMETER_LIMIT = 20_000_000  # tiny test models have thousands; the embedded model 135M


@pytest.fixture(autouse=True)
def no_profiling_of_real_models(monkeypatch):
    """No test may time a cost profile of the embedded (or any real-size) model: minutes on a loaded CI
    machine. Tests inject a profile, or profile a tiny model; this turns a violation into a failure."""
    import specbench.profiling.cost_profile as cost_profile
    import specbench.profiling.measure as measure
    import specbench.profiling.breakdown as breakdown

    def guarded(real):
        def wrapper(model, *args, **kwargs):
            n = sum(p.numel() for p in model.parameters())
            assert n < PROFILE_PARAMETER_LIMIT, (f"a test profiles a model of {n} parameters; inject a profile "
                                                 "(see tests/test_budget_report.py) or use a tiny model")
            return real(model, *args, **kwargs)
        return wrapper

    for module, name in ((measure, "measure_forward_curve"), (cost_profile, "measure_forward_curve"),
                         (breakdown, "measure_breakdown")):
        monkeypatch.setattr(module, name, guarded(getattr(module, name)))


@pytest.fixture(autouse=True)
def profiles_cache_on_a_busy_machine(monkeypatch):
    """A cost profile measured during the test suite is always cached: the suite itself keeps the machine busy,
    and whether the profile is cached must not depend on it (``tests/test_profile_busy.py`` tests the refusal)."""
    import specbench.profiling.cost_profile as cost_profile

    monkeypatch.setattr(cost_profile, "is_busy", lambda *args: False)


@pytest.fixture(scope="session")
def _feature_root(tmp_path_factory) -> object:
    return tmp_path_factory.mktemp("features")


@pytest.fixture(autouse=True)
def features_in_a_temporary_folder(monkeypatch, _feature_root):
    """Feature stores written by tests (tiny models' trainings) go to one folder of the session, never into
    the user's cache: ``specbench.training.feature_store.default_root`` points there."""
    import specbench.training.feature_store as feature_store

    monkeypatch.setattr(feature_store, "default_root", lambda: _feature_root)
