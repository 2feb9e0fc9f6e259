"""The EAGLE draft layer's rotary embedding equals transformers' for scaled RoPE configs (linear, dynamic),
as the reference's draft attention honours ``rope_scaling``; unsupported scalings are refused in one line."""
from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from specbench_methods.eagle.layer import Attention, LayerShape
from specbench.api import RopeScaling
from specbench.errors import ConfigError


def _config(scaling: dict | None) -> LlamaConfig:
    return LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=96,
                       max_position_embeddings=32, rope_scaling=scaling)


@pytest.mark.parametrize("scaling", [None, {"rope_type": "linear", "factor": 4.0}, {"rope_type": "dynamic", "factor": 2.0}])
@pytest.mark.parametrize("last", [20, 90])  # within and beyond max_position_embeddings (32)
def test_draft_rotation_equals_transformers(scaling: dict | None, last: int) -> None:
    cfg = _config(scaling)
    attention = Attention(LayerShape.from_config(cfg))
    positions = torch.arange(last - 7, last + 1)
    x = torch.randn(4, len(positions), 16)
    cos, sin = LlamaRotaryEmbedding(cfg)(x, positions[None])  # [1, n, d]
    half = 8
    expected = x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin
    assert torch.allclose(attention._rope(x, positions), expected, atol=1e-5)


def test_scaling_changes_the_rotation() -> None:
    """A guard that the test above can fail: ignoring the scaling gives other angles."""
    base = torch.tensor([1.0, 0.1])
    positions = torch.tensor([40])
    plain = RopeScaling().angles(positions, base)
    assert not torch.allclose(RopeScaling("linear", 4.0, 32).angles(positions, base), plain)
    assert not torch.allclose(RopeScaling("dynamic", 2.0, 32).angles(positions, base), plain)
    assert torch.allclose(RopeScaling("dynamic", 2.0, 64).angles(positions, base), plain)  # within the trained length


def test_unsupported_scaling_is_one_line() -> None:
    with pytest.raises(ConfigError, match="yarn"):
        LayerShape.from_config(_config({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 16}))
