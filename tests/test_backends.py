"""Engine backends agree with the transformers reference: logits within tolerance, greedy outputs equal."""
import random

import pytest
import torch
from transformers import DynamicCache

from conftest import make_tiny_model
from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.backends.kv_cache import PreallocatedCache
from specbench.engine.loop import Engine
from specbench.engine.backends.packed_linear import PackedLinear, describe, is_packed, pack_linears, packing_supported
from test_engine_exact import FAMILIES, RandomDrafter

CPU = torch.device("cpu")
pytestmark = pytest.mark.skipif(not packing_supported(CPU, torch.float32), reason="no oneDNN on this CPU build")


def _logits(model, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_fast_logits_match_reference(family):
    model = make_tiny_model(family, seed=5)
    prompt = list(range(3, 40, 3))
    ref = _logits(model, prompt)
    params = {n: p for n, p in model.named_parameters()}
    resolve_backend("fast", CPU, torch.float32).prepare(model)
    assert is_packed(model)
    torch.testing.assert_close(_logits(model, prompt), ref, atol=1e-5, rtol=1e-5)
    # the original parameters stay in place (tied weights, state_dict, drafters reading them)
    assert all(p is params[n] for n, p in model.named_parameters())
    resolve_backend("reference", CPU, torch.float32).prepare(model)
    assert not is_packed(model)
    assert torch.equal(_logits(model, prompt), ref)


def test_siblings_fused_by_shared_input_and_safe_when_called_alone():
    model = make_tiny_model("llama", seed=6)
    n = pack_linears(model)
    assert n == 2 * 7 + 1  # q k v o gate up down per layer + LM head
    assert describe(model) == {"packed_linears": 15, "fused_groups": 4}  # q/k/v and gate/up per layer
    attn = model.model.layers[0].self_attn
    assert isinstance(attn.k_proj, PackedLinear) and attn.k_proj._shared is attn.q_proj._shared
    assert attn.o_proj._shared is None and model.lm_head._shared is None
    x, other = torch.randn(1, 3, 32), torch.randn(1, 3, 32)
    with torch.inference_mode():
        q = attn.q_proj(x)
        k_other = attn.k_proj(other)  # a sibling called on another input computes its own slice
        k, v = attn.k_proj(x), attn.v_proj(x)
    for got, lin, inp in ((q, attn.q_proj, x), (k_other, attn.k_proj, other), (k, attn.k_proj, x), (v, attn.v_proj, x)):
        torch.testing.assert_close(got, torch.nn.functional.linear(inp, lin.weight), atol=1e-6, rtol=1e-5)
    assert pack_linears(model) == 0 and describe(model)["packed_linears"] == 15  # idempotent


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_outputs_identical_across_backends(family):
    model = make_tiny_model(family, seed=8)
    rng = random.Random(family)
    prompts = [[rng.randrange(64) for _ in range(rng.randint(3, 8))] for _ in range(2)]
    fast, ref = Engine(model, set(), "fast"), Engine(model, set(), "reference")
    for i, prompt in enumerate(prompts):
        want = ref.generate(prompt, None, 24).output_ids
        assert fast.generate(prompt, None, 24).output_ids == want
        assert fast.generate(prompt, RandomDrafter(i, 64), 24).output_ids == want
        assert ref.generate(prompt, RandomDrafter(i, 64), 24).output_ids == want


def test_backend_caches_and_errors():
    model = make_tiny_model("llama", seed=9)
    assert isinstance(resolve_backend("fast", CPU, torch.float32).new_cache(model, 8), PreallocatedCache)
    assert isinstance(resolve_backend("reference", CPU, torch.float32).new_cache(model, 8), DynamicCache)
    assert resolve_backend("auto", CPU, torch.float32).name == "fast"
    assert not resolve_backend("fast", torch.device("cuda"), torch.float16).packed  # preallocated cache alone
    with pytest.raises(ValueError, match="unknown backend"):
        resolve_backend("turbo", CPU, torch.float32)


@pytest.mark.skipif(not packing_supported(CPU, torch.bfloat16), reason="no oneDNN bf16 on this CPU")
def test_bfloat16_packed_logits_close_to_reference():
    model = make_tiny_model("qwen2", seed=10).to(torch.bfloat16)
    prompt = list(range(1, 30, 2))
    ref = _logits(model, prompt).float()
    pack_linears(model)
    torch.testing.assert_close(_logits(model, prompt).float(), ref, atol=3e-2, rtol=3e-2)


@pytest.mark.embedded
def test_embedded_greedy_identical_across_backends(embedded):
    from specbench.models.loading import stop_token_ids
    from specbench.prompts.task import encode_prompt

    tok, model = embedded.tokenizer, embedded.model
    prompt = encode_prompt(tok, [{"role": "user", "content": "List three prime numbers."}])
    stops = stop_token_ids(tok, model)
    want = Engine(model, stops, "reference").generate(prompt, None, 24).output_ids
    assert Engine(model, stops, "fast").generate(prompt, None, 24).output_ids == want
