"""Saving and loading Hydra heads: this project's format and the reference's published checkpoints.

Ours: ``hydra.safetensors`` (the heads' MLPs, the prefix layer for Hydra++, the per-head bias or own LM heads),
``vocab.npy`` when the shared head scores a draft vocabulary (draft id -> target id) and ``config.json``
(architecture, recipe, metrics, the weights' sha256), written last.

The reference's (zankner/Hydra, e.g. ``ankner/hydra-vicuna-7b-v1.3``): ``config.json`` with
``hydra_num_heads``, ``hydra_num_layers``, ``hydra_head_arch`` (``mlp`` or ``prefix-mlp``), ``grounded_heads``
and ``hidden_state_offset``, and ``hydra_lm_head.pt`` (read only through ``torch.load(weights_only=True)``)
holding the head module's state dict:

    hydra_mlp.{k}.{j}.linear.weight|bias, hydra_mlp.{k}.{j}.res_connection.weight|bias   head k's blocks
        (j: 0, 1, ... for ``mlp``; 1, 3, 5, ... after each Dropout for ``prefix-mlp``; the blocks after the
        first are copies of one module)
    hydra_lm_head.{k}.weight|bias (``mlp``) or hydra_lm_head.{k}.1.weight|bias (``prefix-mlp``)
    prefix_embeding_layer.layers.0.*, prefix_embeding_layer.norm.weight          Hydra++'s prefix layer
    prefix_embeding_layer.embed_tokens.weight                                    unused (ignored)
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.api import LayerShape
from specbench_methods.hydra.heads import HydraHeads, SubHead
from specbench.api import (ConfigError, checkpoint_errors, file_sha256, read_config, read_tensors, read_vocab,
                           read_weights, save_weights)

OURS = "hydra.safetensors"
REFERENCE_FILES = ("hydra_lm_head.pt", "hydra_lm_head.safetensors")
ARCHS = ("prefix-mlp", "mlp")
_BLOCK = re.compile(r"hydra_mlp\.(\d+)\.(\d+)\.(.+)")
_LM_HEAD = re.compile(r"hydra_lm_head\.(\d+)\.(?:1\.)?(weight|bias)")


def save_heads(heads: HydraHeads, vocab: np.ndarray | None, out: Path, meta: dict[str, Any]) -> None:
    info = {"head": heads.arch, "num_heads": heads.num_heads, "num_layers": heads.num_layers,
            "shape": None if heads.prefix is None else dataclasses.asdict(heads.prefix.shape),
            "own_vocab": 0 if heads.own is None else heads.own[0].out_features, **meta}
    save_weights(out, OURS, heads.state_dict(), info, vocab, with_vocab=True)


def load_heads(path: Path, target: torch.nn.Module) -> tuple[HydraHeads, dict[str, Any]]:
    """Heads for ``target`` from our folder or the reference's; one-line errors for anything else."""
    with checkpoint_errors("hydra", path):
        return _load_heads(path, target)


def _load_heads(path: Path, target: torch.nn.Module) -> tuple[HydraHeads, dict[str, Any]]:
    meta = read_config(path, "hydra", "a Hydra checkpoint")
    hidden = int(target.get_input_embeddings().weight.shape[1])
    if (path / OURS).is_file():
        state = read_weights(path, OURS, "hydra", meta)
        vocab = read_vocab(path)
        if vocab is not None and int(vocab.max()) >= int(target.get_output_embeddings().weight.shape[0]):
            raise ConfigError(f"hydra: {path}'s vocabulary has ids beyond this target's vocabulary")
        shape = LayerShape(**meta["shape"]) if meta.get("shape") else None
        own = int(meta.get("own_vocab", 0))
        shared = None if own else SubHead(target.get_output_embeddings(), vocab)
        heads = HydraHeads(hidden, int(meta["num_heads"]), int(meta["num_layers"]), shape, head=shared, own_vocab=own)
    else:
        found = [path / f for f in REFERENCE_FILES if (path / f).is_file()]
        if not found or "hydra_num_heads" not in meta:
            raise ConfigError(f"hydra: {path} holds neither {OURS} nor a reference checkpoint "
                              f"({', '.join(REFERENCE_FILES)} with config.json's hydra_num_heads)")
        arch = str(meta.get("hydra_head_arch", "mlp"))
        if arch not in ARCHS:
            raise ConfigError(f"hydra: {path} has head architecture {arch!r}; only {', '.join(ARCHS)} heads load")
        if not meta.get("grounded_heads", False) or int(meta.get("hidden_state_offset", 0)) != 0:
            raise ConfigError(f"hydra: {path} has ungrounded heads or reads an earlier layer (hidden_state_offset); "
                              "only grounded heads on the last hidden state load")
        state = _reference_state(found[0])
        own = int(state["own.0.weight"].shape[0]) if "own.0.weight" in state else 0
        if own == 0:
            raise ConfigError(f"hydra: {path} has no hydra_lm_head.* weights")
        shape = LayerShape.from_config(target.config) if arch == "prefix-mlp" else None
        heads = HydraHeads(hidden, int(meta["hydra_num_heads"]), int(meta.get("hydra_num_layers", 1)), shape, own_vocab=own)
        meta = {"source": found[0].name, "head": arch, "weights_sha256": file_sha256(found[0])}
    try:
        heads.load_state_dict(state)
    except RuntimeError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"hydra: {path} does not fit this target (hidden {hidden}): {first}") from None
    if heads.own is not None and heads.own[0].out_features != int(target.get_output_embeddings().weight.shape[0]):
        raise ConfigError(f"hydra: {path}'s LM heads score {heads.own[0].out_features} tokens, the target has "
                          f"{target.get_output_embeddings().weight.shape[0]}")
    return heads, meta


def _reference_state(file: Path) -> dict[str, torch.Tensor]:
    """The reference's state dict renamed to ours; the repeated blocks' copies must agree."""
    raw = read_tensors(file, "hydra")
    state: dict[str, torch.Tensor] = {}
    blocks: dict[int, list[int]] = {}
    for key in raw:
        m = _BLOCK.fullmatch(key)
        if m:
            blocks.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    for key, value in raw.items():
        value = value.float()
        if key.startswith("prefix_embeding_layer."):
            rest = key[len("prefix_embeding_layer."):]
            if not rest.startswith("embed_tokens.") and "rotary_emb" not in rest:
                state[f"prefix.{rest}"] = value
        elif (m := _LM_HEAD.fullmatch(key)) is not None:
            state[f"own.{m.group(1)}.{m.group(2)}"] = value
        elif (m := _BLOCK.fullmatch(key)) is not None:
            k, j, rest = int(m.group(1)), int(m.group(2)), m.group(3)
            order = sorted(set(blocks[k]))
            name = f"mlps.{k}.first.{rest}" if j == order[0] else f"mlps.{k}.repeated.{rest}"
            if name in state and not torch.equal(state[name], value):
                raise ConfigError(f"hydra: {file.name}: head {k}'s blocks after the first differ (not the "
                                  "reference's repeated block)")
            state[name] = value
    return state
