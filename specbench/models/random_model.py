"""A target of a given shape with random weights, set up on its device as ``load_model`` sets a loaded one up.

A forward's cost depends on the model's shape, not on its weights' values, so a machine without the model's
files (a GPU machine without network) can still measure what a run of that model would cost there: build this
from the model's config and time it. The same code runs on every device; only the device string and dtype
differ. It has no tokenizer (a shape's tokenizer hash is recorded beside its config by whoever needs it).

>>> lm = random_model({"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
...                    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64}, "float32", "cpu", "tiny")
>>> lm.model.config.num_hidden_layers, lm.dtype, lm.model_hash, lm.tokenizer is None
(1, 'float32', 'random', True)
"""
from __future__ import annotations

from typing import Any

import torch

from specbench.errors import ModelLoadError
from specbench.models.device import select_device
from specbench.models.dtypes import DTYPES
from specbench.models.loading import LoadedModel, resolve_device, set_precision

RANDOM = "random"  # the model hash of random weights (no file to hash)


def random_model(config: dict[str, Any], dtype: str, device: str, model_id: str, seed: int = 0) -> LoadedModel:
    """A causal LM of ``config`` (an HF ``config.json`` as a dict, ``model_type`` included) made directly on
    ``device`` in ``dtype`` (its weights never pass through CPU memory), with the run's precision flags."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}")
    fields = {k: v for k, v in config.items() if k != "model_type"}
    cfg = AutoConfig.for_model(config["model_type"], **fields)
    dev = resolve_device(device)
    select_device(dev)
    tf32 = set_precision(dtype)
    before = torch.get_default_dtype()
    torch.set_default_dtype(DTYPES[dtype])  # (made in dtype: no float32 copy first)
    try:
        torch.manual_seed(seed)
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").eval()
    finally:
        torch.set_default_dtype(before)
    return LoadedModel(model, None, model_id, RANDOM, dev, dtype, tf32, {"weights": "random, of the config's shape"})
