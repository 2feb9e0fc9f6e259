"""A transformers Llama draft written as a GGUF llama.cpp's server drafts with: ``engine:draft``'s default
(``model=sps``) is the SpS distilled draft, so the engine's draft-model speculation and specbench's ``sps`` run the
same draft weights.

The file takes every metadata field of the target's GGUF (its tokenizer, so llama.cpp finds the two vocabularies
compatible, and its chat template), the draft's own sizes (layers, widths, heads, norm epsilon, rotary base) and its
tensors in llama.cpp's
layout: names ``token_embd``, ``blk.N.attn_q`` ..., ``output``; the query and key projections' rows permuted back to
llama.cpp's rotary order (the inverse of what transformers undoes when it loads a Llama GGUF); all F32.

A reduced draft vocabulary (the distilled draft scores 8,191 of SmolLM2's 49,152 tokens plus one slot for "any
other token", never proposed) is widened to the target's: an input token outside it is embedded as that slot is
(what ``sps`` feeds the draft), and the output rows of tokens outside it are zero, so their logit is 0. **Deviation
from ``sps``**: ``sps`` never proposes a token outside the kept vocabulary; here one is proposed where every kept
token's logit is below 0, and the 40,961 zero-logit rows lower the draft's probabilities, which a
``--spec-draft-p-min`` cut-off would read (llama.cpp's default has none; the weights are the same).
``tests/test_draft_gguf.py`` writes the embedded target itself this way and gets the F32 rewrite's tensors back,
value for value.

Example: ``write_draft_gguf(draft_model, vocab_map, target_gguf, out)`` -> ``out`` (a 2-layer draft: ~40 MB).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from specbench.files.content_hash import stream_sha256

SIZES = {"llama.block_count": "num_hidden_layers", "llama.embedding_length": "hidden_size",
         "llama.feed_forward_length": "intermediate_size", "llama.attention.head_count": "num_attention_heads",
         "llama.attention.head_count_kv": "num_key_value_heads"}
LAYER_TENSORS = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_norm": "post_attention_layernorm",
                 "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
STAMP = "llama-draft.json"


def rotary_rows(w: np.ndarray, heads: int) -> np.ndarray:
    """A query or key projection's rows from transformers' rotary layout (each head's two halves) to llama.cpp's
    (the halves' rows interleaved), per head.

    >>> rotary_rows(np.arange(8).reshape(8, 1), 2)[:, 0].tolist()
    [0, 2, 1, 3, 4, 6, 5, 7]
    """
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _rope_theta(cfg: Any, default: float) -> float:
    """The draft's rotary base (transformers 5 keeps it in ``rope_parameters``)."""
    params = getattr(cfg, "rope_parameters", None) or {}
    return params.get("rope_theta") or getattr(cfg, "rope_theta", None) or default


def _widened(rows: np.ndarray, vocab_map: np.ndarray | None, target_vocab: int, fill: np.ndarray | None) -> np.ndarray:
    """Rows per target id: a kept token's own row, every other token ``fill`` (None: zeros)."""
    if vocab_map is None:
        return rows
    shape = (target_vocab, rows.shape[1])
    out = np.zeros(shape, dtype=np.float32) if fill is None else np.tile(fill, (target_vocab, 1))
    out[vocab_map[1:]] = rows[1:]  # (draft id 0 is "any other token")
    return out


def write_draft_gguf(draft: Any, vocab_map: np.ndarray | None, template: Path, out: Path) -> Path:
    """Write ``draft`` (a transformers Llama) as a GGUF at ``out`` with ``template``'s metadata (see above)."""
    from gguf import GGUFReader, GGUFValueType, GGUFWriter

    cfg = draft.config
    state = {k: v.detach().float().cpu().numpy() for k, v in draft.state_dict().items()}
    reader = GGUFReader(template)
    target_vocab = int(reader.fields["llama.vocab_size"].contents()) if "llama.vocab_size" in reader.fields \
        else len(reader.fields["tokenizer.ggml.tokens"].contents())
    tmp = out.with_suffix(".partial")
    writer = GGUFWriter(tmp, "llama")
    for key, fld in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = fld.contents()
        if key in SIZES:
            value = int(getattr(cfg, SIZES[key]))
        elif key == "llama.rope.dimension_count":  # (rotary dimensions: the draft's head size)
            value = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        elif key == "llama.attention.layer_norm_rms_epsilon":
            value = float(cfg.rms_norm_eps)
        elif key == "llama.rope.freq_base":
            value = float(_rope_theta(cfg, value))
        elif key == "general.file_type":
            value = 0
        elif key == "general.name":
            value = f"{value} draft ({cfg.num_hidden_layers} layers)"
        array = fld.types[0] == GGUFValueType.ARRAY
        writer.add_key_value(key, value, fld.types[0], sub_type=fld.types[-1] if array else None)
    embed = state["model.embed_tokens.weight"]
    head = state.get("lm_head.weight", embed)
    writer.add_tensor("token_embd.weight", _widened(embed, vocab_map, target_vocab, embed[0]))
    for i in range(cfg.num_hidden_layers):
        for name, hf in LAYER_TENSORS.items():
            w = state[f"model.layers.{i}.{hf}.weight"]
            if name == "attn_q":
                w = rotary_rows(w, cfg.num_attention_heads)
            elif name == "attn_k":
                w = rotary_rows(w, cfg.num_key_value_heads)
            writer.add_tensor(f"blk.{i}.{name}.weight", np.ascontiguousarray(w))
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    writer.add_tensor("output.weight", _widened(head, vocab_map, target_vocab, None))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return out


def sps_draft_gguf(env: Any, target_gguf: Path) -> Path:
    """The SpS distilled draft of ``env``'s target (trained on first use, as ``sps`` does) as a GGUF beside it,
    written once per target file (a stamp names the target file's sha256 and the GGUF's)."""
    import torch

    from specbench.training.draft_distill import distilled_draft_folder, load_distilled

    folder = distilled_draft_folder(env)
    out, stamp_file = folder / "llama-draft-f32.gguf", folder / STAMP
    target_sha = stream_sha256(target_gguf)
    try:
        stamp = json.loads(stamp_file.read_text())
    except (OSError, ValueError):
        stamp = {}
    if out.is_file() and stamp.get("target_sha256") == target_sha and stamp.get("sha256") == stream_sha256(out):
        return out
    draft, vocab = load_distilled(folder, torch.device("cpu"), torch.float32)
    write_draft_gguf(draft, vocab, target_gguf, out)
    stamp_file.write_text(json.dumps({"target_sha256": target_sha, "sha256": stream_sha256(out)}))
    return out
