"""Tiny GGUF files for the llama.cpp backend's tests, written with gguf-py from the tiny transformers models.

``write_tiny_gguf(model, path)`` writes a ``LlamaForCausalLM`` (architecture ``llama``) or ``Qwen2ForCausalLM``
(``qwen2``) in F32 with llama.cpp's tensor names. llama.cpp's llama architecture rotates interleaved pairs
while transformers rotates the two halves of each head, so llama's q and k rows are permuted the way
llama.cpp's converter does; qwen2 runs the halves layout (NEOX rope) as it is. The vocabulary is a
made-up SentencePiece one (``<t0>``, ``<t1>``, ...): the engine feeds token ids, llama.cpp never tokenises.

``needs_llamacpp`` skips a test, with the reason, where llama-cpp-python is not installed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from specbench.engine.backends.llamacpp.library import INSTALL_HINT, available

needs_llamacpp = pytest.mark.skipif(not available(), reason=f"llama-cpp-python not installed: {INSTALL_HINT}")


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """transformers' rotate-half row order -> llama.cpp's interleaved pairs (per head)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(model: torch.nn.Module, path: Path) -> Path:
    from gguf import GGUFWriter, LlamaFileType, TokenType

    cfg = model.config
    arch = {"llama": "llama", "qwen2": "qwen2"}[cfg.model_type]
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = cfg.hidden_size // heads
    w = GGUFWriter(path, arch)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(float((getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0)))
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>".encode() for i in range(cfg.vocab_size)])
    w.add_token_scores([0.0] * cfg.vocab_size)
    w.add_token_types([TokenType.NORMAL] * cfg.vocab_size)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    if "lm_head.weight" in sd and not cfg.tie_word_embeddings:
        w.add_tensor("output.weight", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        if arch == "llama":
            q, k = _permute(q, heads), _permute(k, kv_heads)
        names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
        w.add_tensor(f"blk.{i}.attn_q.weight", np.ascontiguousarray(q))
        w.add_tensor(f"blk.{i}.attn_k.weight", np.ascontiguousarray(k))
        for ours, theirs in names.items():
            w.add_tensor(f"blk.{i}.{ours}.weight", sd[p + theirs + ".weight"])
        for ours in ("q", "k", "v"):  # qwen2's attention biases
            bias = sd.get(p + f"self_attn.{ours}_proj.bias")
            if bias is not None:
                w.add_tensor(f"blk.{i}.attn_{ours}.bias", bias)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def tiny_backend(model: torch.nn.Module, folder: Path, dtype: str = "float32", threads: int = 1):
    """A ``LlamaCppBackend`` running ``model`` written as a tiny GGUF in ``folder`` (quantised by llama.cpp for
    ``q8_0`` / ``q4_1``)."""
    from specbench.engine.backends.llamacpp.backend import LlamaCppBackend
    from specbench.engine.backends.llamacpp.gguf_files import FTYPES, GgufModel, _quantise

    path = write_tiny_gguf(model, folder / "tiny-f32.gguf")
    if dtype != "float32":
        out = folder / f"tiny-{dtype}.gguf"
        _quantise(path, out, FTYPES[dtype], threads)
        path = out
    return LlamaCppBackend(GgufModel(path, "0" * 64, dtype, "written by the test"), threads)
