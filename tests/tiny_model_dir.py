"""A tiny random Llama saved as a model directory with the embedded model's tokenizer (runs take seconds)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from specbench.paths import cache_dir

TOKENIZER_DIR = cache_dir() / "models" / "smollm2-135m-instruct"  # read at import, before tests repoint the cache
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def save_tiny_model(out: Path, seed: int = 0, context: int = 2048) -> Path:
    """A 2-layer Llama over the embedded tokenizer's vocabulary, saved as a model directory."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if not (TOKENIZER_DIR / "tokenizer.json").is_file():
        pytest.skip("embedded model cache (its tokenizer) not present")
    tok = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=context,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (TOKENIZER_DIR / name).is_file():
            shutil.copy(TOKENIZER_DIR / name, out / name)
    return out


def save_tiny_gpt2(out: Path, seed: int = 0) -> Path:
    """A 2-layer GPT-2 (not Llama-style: ``h`` and ``ln_f``, no ``layers``/``norm``) over the embedded tokenizer."""
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    if not (TOKENIZER_DIR / "tokenizer.json").is_file():
        pytest.skip("embedded model cache (its tokenizer) not present")
    tok = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=16, n_layer=2, n_head=2, n_positions=1024,
                     eos_token_id=tok.eos_token_id, bos_token_id=None)
    GPT2LMHeadModel(cfg).save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (TOKENIZER_DIR / name).is_file():
            shutil.copy(TOKENIZER_DIR / name, out / name)
    return out
