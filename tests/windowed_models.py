"""Tiny random models whose attention does not see the whole context: the layouts of ``engine/attention_layout.py``.

- ``gemma3``: Gemma-3-style interleaved layers, two sliding-window (window ``WINDOW``) then one global;
- ``mistral``: Mistral-style, every layer sliding-window (``WINDOW``), no ``layer_types`` in its config;
- ``llama4``: Llama-4-style chunked attention (chunks of ``WINDOW``) interleaved with global layers, dense (no
  expert layers). ``Llama4ForCausalLM`` names its base model ``language_model`` but holds it as ``model``, so
  ``base_model`` is the whole model and no engine forward can run it; ``runnable`` gives the loaded model a
  subclass that names it right (the layout is what is tested here, not that naming).

Example: ``make_windowed("gemma3").config.layer_types`` -> ``["sliding_attention", "sliding_attention",
"full_attention"]``; ``windowed_dir(tmp / "m", "mistral")`` saves a Mistral-style model with ``hub_fixtures``'
character tokenizer, loadable by ``load_model`` (then ``runnable(loaded.model)``).
"""
from __future__ import annotations

from pathlib import Path

import torch

WINDOW = 16
FAMILIES = ("gemma3", "mistral", "llama4")
COMMON = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=1024, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def make_windowed(family: str, vocab: int = 64, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised fp32 causal LM of ``family`` (module docstring), in eval mode."""
    from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, Llama4TextConfig, MistralConfig,
                              MistralForCausalLM)

    torch.manual_seed(seed)
    if family == "gemma3":
        cfg = Gemma3TextConfig(vocab_size=vocab, num_hidden_layers=3, head_dim=8, sliding_window=WINDOW,
                               layer_types=["sliding_attention", "sliding_attention", "full_attention"], **COMMON)
        return Gemma3ForCausalLM(cfg).eval()
    if family == "mistral":
        return MistralForCausalLM(MistralConfig(vocab_size=vocab, num_hidden_layers=2, sliding_window=WINDOW,
                                                **COMMON)).eval()
    if family == "llama4":
        cfg = Llama4TextConfig(vocab_size=vocab, num_hidden_layers=2, head_dim=8, intermediate_size_mlp=64,
                               num_local_experts=1, moe_layers=[], attention_chunk_size=WINDOW,
                               no_rope_layer_interval=2, **COMMON)
        return runnable(chunked_class()(cfg).eval())
    raise ValueError(family)


def chunked_class() -> type:
    """``Llama4ForCausalLM`` with its base model named as it holds it (``model``)."""
    from transformers import Llama4ForCausalLM

    class ChunkedLM(Llama4ForCausalLM):
        base_model_prefix = "model"

    return ChunkedLM


def runnable(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` itself, or a Llama-4 model as ``chunked_class`` (the same weights and modules)."""
    if type(model).__name__ == "Llama4ForCausalLM":
        model.__class__ = chunked_class()
    return model


def windowed_dir(out: Path, family: str, seed: int = 0) -> Path:
    """``make_windowed(family)`` over ``hub_fixtures.vicuna_like_tokenizer``, saved with it in ``out``."""
    from hub_fixtures import vicuna_like_tokenizer

    tok = vicuna_like_tokenizer()
    make_windowed(family, vocab=len(tok), seed=seed).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def plain_greedy(model: torch.nn.Module, prompt: list[int], n: int) -> list[int]:
    """``n`` greedy tokens after ``prompt``, each from a forward over the whole sequence with no cache and no mask
    given: the library's own masks, the ground truth every engine output is held to."""
    seq = list(prompt)
    with torch.inference_mode():
        for _ in range(n):
            seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    return seq[len(prompt):]
