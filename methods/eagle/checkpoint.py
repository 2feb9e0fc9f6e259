"""Saving and loading EAGLE draft layers: this project's format and the reference's published checkpoints.

Ours: ``eagle.safetensors`` (``fc`` + ``layers.0.*``), ``vocab.npy`` when the draft scores a reduced
vocabulary (draft id -> target id; the head is the target's rows for those ids) and ``config.json``
(the layer's shape, recipe and metrics), written last. The reference's (SafeAILab/EAGLE, EAGLE-1/2
weights such as ``yuhuili/EAGLE-llama2-chat-7B``): a Llama ``config.json`` and ``model.safetensors`` or
``pytorch_model.bin`` (read only through ``torch.load(weights_only=True)``) with the same parameter
names, plus the target's ``embed_tokens.weight`` (ignored: the target's own embedding is used).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from specbench_methods.eagle.layer import EagleLayer, LayerShape
from specbench.api import (ConfigError, checkpoint_errors, read_config, read_tensors, read_vocab, read_weights,
                           save_weights)

OURS = "eagle.safetensors"
REFERENCE_FILES = ("model.safetensors", "pytorch_model.bin")
_IGNORED = ("embed_tokens.weight",)


def save_layer(layer: EagleLayer, vocab: np.ndarray | None, out: Path, meta: dict[str, Any]) -> None:
    save_weights(out, OURS, layer.state_dict(), {"shape": dataclasses.asdict(layer.shape),
                                                 "fc_bias": layer.fc.bias is not None, **meta}, vocab, with_vocab=True)


def load_layer(path: Path, target: torch.nn.Module) -> tuple[EagleLayer, np.ndarray | None, dict[str, Any]]:
    """(layer for ``target``, reduced vocabulary or None, metadata); one-line errors for anything else."""
    with checkpoint_errors("eagle", path):
        return _load_layer(path, target)


def _load_layer(path: Path, target: torch.nn.Module) -> tuple[EagleLayer, np.ndarray | None, dict[str, Any]]:
    meta = read_config(path, "eagle", "an EAGLE checkpoint")
    embed = target.get_input_embeddings()
    if (path / OURS).is_file():
        shape, fc_bias = LayerShape(**meta["shape"]), bool(meta.get("fc_bias", True))
        state = read_weights(path, OURS, "eagle", meta)
    else:
        found = [path / f for f in REFERENCE_FILES if (path / f).is_file()]
        if not found:
            raise ConfigError(f"eagle: {path} holds neither {OURS} nor a reference checkpoint ({', '.join(REFERENCE_FILES)})")
        state = _reference_state(found[0])
        if any(k.startswith("midlayer.") for k in state):
            raise ConfigError(f"eagle: {path} is an EAGLE-3 checkpoint (multi-layer features); only EAGLE-1/2 layers load")
        shape = LayerShape.from_config(SimpleNamespace(**meta))
        shape = dataclasses.replace(shape, qkv_bias="layers.0.self_attn.q_proj.bias" in state)
        fc_bias = "fc.bias" in state
        meta = {"source": found[0].name}
    hidden = int(embed.weight.shape[1])
    if shape.hidden != hidden:
        raise ConfigError(f"eagle: {path} does not fit this target (draft hidden {shape.hidden}, target hidden {hidden})")
    layer = EagleLayer(shape, embed, fc_bias)
    try:
        layer.load_state_dict(state)
    except RuntimeError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"eagle: {path} does not fit this target (hidden {hidden}): {first}") from None
    vocab = read_vocab(path)
    if vocab is not None and int(vocab.max()) >= int(embed.weight.shape[0]):
        raise ConfigError(f"eagle: {path}'s vocabulary has ids beyond this target's {embed.weight.shape[0]} tokens")
    return layer, vocab, meta


def _reference_state(file: Path) -> dict[str, torch.Tensor]:
    raw = read_tensors(file, "eagle")
    # the reference's first layer has no input norm; some exports still carry one that is never used
    return {k: v.float() for k, v in raw.items() if k not in _IGNORED and not k.endswith("input_layernorm.weight")}
