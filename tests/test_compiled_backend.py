"""The ``compiled`` backend: static shapes (row buckets, a fixed-capacity cache) are exact on the four tiny
families, with drafts, trees, a prompt longer than the largest bucket and intermediate layers; what it compiled is
recorded, all before any timing; what it cannot do is refused in one line. The capture itself is checked with
dynamo's ``eager`` compiler (seconds); one test compiles with inductor on a tiny model."""
from __future__ import annotations

import random

import pytest
import torch

from conftest import make_tiny_model
from specbench.config.run_config import RunConfig
from specbench.engine.backends.compiled.backend import CompiledBackend
from specbench.engine.backends.compiled.options import CompileOptions
from specbench.engine.backends.compiled.static_cache import StaticKVCache
from specbench.engine.backends.contract import SkippingTarget, TrimsRows, WarmsUp, require
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from test_engine_exact import FAMILIES, OracleDrafter, RandomDrafter

CPU = torch.device("cpu")


def compiled(compiler: str = "eager", buckets: tuple[int, ...] = (1, 2, 4, 8, 16)) -> CompiledBackend:
    return CompiledBackend(CompileOptions(compiler, "default", buckets))


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_equals_the_reference_with_random_drafts_and_a_long_prompt(family: str) -> None:
    model = make_tiny_model(family, seed=8)
    rng = random.Random(family)
    prompt = [rng.randrange(64) for _ in range(37)]  # 3 prefill chunks of the largest bucket, 16
    want = Engine(model, set(), "reference").generate(prompt, None, 24).output_ids
    engine = Engine(model, set(), compiled())
    assert engine.generate(prompt, None, 24).output_ids == want
    gen = engine.generate(prompt, RandomDrafter(1, 64), 24)  # trees of up to 12 nodes: gathered trims
    assert gen.output_ids == want
    oracle = engine.generate(prompt, OracleDrafter(want, len(prompt)), 24)  # every draft accepted
    assert oracle.output_ids == want and len(oracle.accept_lengths) < len(want) / 2
    log = engine.backend.describe(model)["compile"]
    # every shape compiled by a warm-up before the clock started: 5 buckets x 1 capacity
    assert (log["shapes"], log["first_use"]) == (5, 0)
    assert {e["where"] for e in log["entries"]} == {"warm-up"} and {e["capacity"] for e in log["entries"]} == {512}


def test_intermediate_layers_equal_the_fast_backends() -> None:
    model = make_tiny_model("llama", seed=3, layers=3)
    ids = torch.tensor([[3, 9, 4, 1, 7]])
    fast = Engine(model, set(), "fast").target
    backend = compiled("eager")  # (transformers' own output_hidden_states is not capturable: layer hooks are)
    backend.prepare(model)
    target = backend.target(model)
    want = fast.run(ids, backend_cache_fast(model), 0, layers=(0, 1, 3))
    with torch.inference_mode():
        got = target.run(ids, target.new_cache(16), 0, layers=(0, 1, 3))
        plain = target.run(ids, target.new_cache(16), 0)
    torch.testing.assert_close(got.layer_states, want.layer_states, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.logits, want.logits, atol=1e-5, rtol=1e-5)
    assert plain.layer_states is None and torch.equal(plain.logits, got.logits)


def backend_cache_fast(model: torch.nn.Module):
    from specbench.engine.backends.kv_cache import PreallocatedCache

    return PreallocatedCache(16)


def test_the_static_cache_trims_in_place_and_keeps_its_buffers() -> None:
    backend = compiled("none", (1, 4))
    model = make_tiny_model("qwen2", seed=2)
    backend.prepare(model)
    target = backend.target(model)
    cache = target.new_cache(40)
    assert isinstance(cache, StaticKVCache) and isinstance(cache, TrimsRows) and cache.capacity == 512
    target.run(torch.tensor([[1, 2, 3]]), cache, 0)
    keys = cache.layers[0].keys
    before = keys[0, :, 4].clone()
    target.run(torch.tensor([[4, 5, 6]]), cache, 3)  # writes columns 3..6 (the padding row at 6)
    column_5 = keys[0, :, 5].clone()
    trim_cache(cache, 3, [0, 2])  # keep rows 0 and 2: column 5 gathered into 4
    assert cache.get_seq_length() == 5 and cache.layers[0].keys is keys
    assert torch.equal(keys[0, :, 4], column_5) and not torch.equal(keys[0, :, 4], before)
    assert target.new_cache(40) is cache and cache.length == 0  # pooled per capacity: same addresses
    with pytest.raises(ValueError, match="overflows the static cache of 512"):
        cache.place(510, 4)


def test_what_it_cannot_do_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^--batch-size above 1 does not run on --backend compiled \(its static"):
        RunConfig(methods=["pld"], backend="compiled", batch_size=[2]).validate()
    model = make_tiny_model("llama", seed=1)
    engine = Engine(model, set(), compiled())
    with pytest.raises(ConfigError, match="no forward with layers skipped"):
        require(engine.target, SkippingTarget)
    assert isinstance(engine.backend, WarmsUp)
    with pytest.raises(ConfigError, match=r"^SPECBENCH_COMPILE_MODE must be one of"):
        CompileOptions.from_env({"SPECBENCH_COMPILE_MODE": "fast"}, "cpu")
    windowed = make_tiny_model("qwen2", seed=1)
    windowed.config.layer_types = ["sliding_attention", "full_attention"]
    windowed.config.sliding_window = 4
    with pytest.raises(ConfigError, match="attention is not supported yet"):
        compiled().target(windowed)


def test_inductor_compiles_a_tiny_model_exactly() -> None:
    model = make_tiny_model("llama", seed=4)
    prompt = [5, 7, 11, 13]
    want = Engine(model, set(), "reference").generate(prompt, None, 12).output_ids
    engine = Engine(model, set(), compiled("inductor", (1, 4)))
    assert engine.generate(prompt, OracleDrafter(want, len(prompt), depth=3), 12).output_ids == want
    described = engine.backend.describe(model)
    assert described["compiler"] == "inductor" and described["compile"]["shapes"] == 2  # buckets 1 and 4
    assert engine.generate(prompt, RandomDrafter(2, 64), 12).output_ids == want  # trees past 4 rows: wider buckets
    log = engine.backend.describe(model)["compile"]
    assert log["first_use"] >= 1 and {e["rows"] for e in log["entries"]} > {1, 4}
    assert engine.backend.padded_rows(3) == 4 and engine.backend.padded_rows(9) == 16 and engine.backend.padded_rows(17) == 32
