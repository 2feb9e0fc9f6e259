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

from methods.eagle.layer import EagleLayer, LayerShape
from specbench.api import (ConfigError, checkpoint_errors, file_sha256, read_config, read_tensors, strict_json,
                           verify_checkpoint)

OURS = "eagle.safetensors"
VOCAB = "vocab.npy"
REFERENCE_FILES = ("model.safetensors", "pytorch_model.bin")
_IGNORED = ("embed_tokens.weight",)


def save_layer(layer: EagleLayer, vocab: np.ndarray | None, out: Path, meta: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in layer.state_dict().items()}, str(out / OURS))
    if vocab is not None:
        np.save(out / VOCAB, vocab, allow_pickle=False)
    elif (out / VOCAB).exists():
        (out / VOCAB).unlink()
    info = {"shape": dataclasses.asdict(layer.shape), "fc_bias": layer.fc.bias is not None, **meta,
            "weights_sha256": file_sha256(out / OURS)}  # checked on every load
    (out / "config.json").write_text(strict_json(info, indent=1), encoding="utf-8")  # written last: marks it complete


def load_layer(path: Path, target: torch.nn.Module) -> tuple[EagleLayer, np.ndarray | None, dict[str, Any]]:
    """(layer for ``target``, reduced vocabulary or None, metadata); one-line errors for anything else."""
    with checkpoint_errors("eagle", path):
        return _load_layer(path, target)


def _load_layer(path: Path, target: torch.nn.Module) -> tuple[EagleLayer, np.ndarray | None, dict[str, Any]]:
    meta = read_config(path, "eagle", "an EAGLE checkpoint")
    embed = target.get_input_embeddings()
    if (path / OURS).is_file():
        shape, fc_bias = LayerShape(**meta["shape"]), bool(meta.get("fc_bias", True))
        verify_checkpoint(path / OURS, meta.get("weights_sha256"), "eagle")
        state = read_tensors(path / OURS, "eagle")
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
    vocab = np.load(path / VOCAB, allow_pickle=False) if (path / VOCAB).is_file() else None
    if vocab is not None and int(vocab.max()) >= int(embed.weight.shape[0]):
        raise ConfigError(f"eagle: {path}'s vocabulary has ids beyond this target's {embed.weight.shape[0]} tokens")
    return layer, vocab, meta


def _reference_state(file: Path) -> dict[str, torch.Tensor]:
    raw = read_tensors(file, "eagle")
    # the reference's first layer has no input norm; some exports still carry one that is never used
    return {k: v.float() for k, v in raw.items() if k not in _IGNORED and not k.endswith("input_layernorm.weight")}
