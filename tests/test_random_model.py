"""``specbench.models.random_model``: a target of a config's shape with random weights, made in its dtype and set
up with a run's precision flags (what the GPU check's device profile of the embedded shape is measured on)."""
from __future__ import annotations

import doctest

import pytest
import torch

import specbench.models.random_model as random_model_module
from specbench.errors import ModelLoadError
from specbench.models.random_model import random_model

TINY = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64}


def test_doctest() -> None:
    assert doctest.testmod(random_model_module).failed == 0


def test_made_in_its_dtype_with_the_default_dtype_restored_and_tf32_off_in_float32() -> None:
    lm = random_model(TINY, "bfloat16", "cpu", "tiny")
    assert {p.dtype for p in lm.model.parameters()} == {torch.bfloat16} and torch.get_default_dtype() == torch.float32
    assert lm.model.config.num_key_value_heads == 2 and lm.device == torch.device("cpu")
    random_model(TINY, "float32", "cpu", "tiny")
    assert torch.backends.cuda.matmul.allow_tf32 is False


def test_same_seed_same_weights_and_unknown_dtype_is_one_line() -> None:
    a, b = (random_model(TINY, "float32", "cpu", "tiny").model for _ in range(2))
    assert torch.equal(a.lm_head.weight, b.lm_head.weight)
    with pytest.raises(ModelLoadError, match="unknown dtype 'int8'"):
        random_model(TINY, "int8", "cpu", "tiny")
