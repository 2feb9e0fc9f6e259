"""Saving and loading Medusa heads: this project's format and the reference's published checkpoints.

Ours: ``heads.safetensors`` (residual blocks, and LM heads when owned) + ``config.json``. The reference's
(FasterDecoding/Medusa): ``medusa_lm_head.safetensors`` (or ``.pt``/``.bin``, read only through
``torch.load(weights_only=True)``) with keys ``{k}.{j}.linear.weight|bias`` for head k's block j and
``{k}.{num_layers}.weight`` for its LM head, and ``config.json`` with ``medusa_num_heads`` and
``medusa_num_layers``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from specbench_methods.medusa.heads import MedusaHeads
from specbench.api import ConfigError, checkpoint_errors, read_config, read_tensors, read_weights, save_weights

OURS = "heads.safetensors"
REFERENCE_FILES = ("medusa_lm_head.safetensors", "medusa_lm_head.pt", "medusa_lm_head.bin")
_KEY = re.compile(r"(\d+)\.(\d+)\.(.+)")  # the reference's names: {head}.{block}.{parameter}


def save_heads(heads: MedusaHeads, out: Path, meta: dict[str, Any]) -> None:
    save_weights(out, OURS, heads.state_dict(), {"num_heads": heads.num_heads, "num_layers": heads.num_layers,
                                                 "own_lm_head": heads.own_heads is not None, **meta})


def load_heads(path: Path, target: torch.nn.Module) -> tuple[MedusaHeads, dict[str, Any]]:
    """Heads for ``target`` from our folder or the reference's; one-line errors for anything else."""
    with checkpoint_errors("medusa", path):
        return _load_heads(path, target)


def _load_heads(path: Path, target: torch.nn.Module) -> tuple[MedusaHeads, dict[str, Any]]:
    meta = read_config(path, "medusa", "a Medusa checkpoint")
    hidden, vocab = int(target.config.hidden_size), int(target.config.vocab_size)
    if (path / OURS).is_file():
        state = read_weights(path, OURS, "medusa", meta)
        heads = MedusaHeads(hidden, vocab, meta["num_heads"], meta["num_layers"],
                            None if meta["own_lm_head"] else target.get_output_embeddings())
    else:
        found = [path / f for f in REFERENCE_FILES if (path / f).is_file()]
        if not found or "medusa_num_heads" not in meta:
            raise ConfigError(f"medusa: {path} holds neither {OURS} nor a reference checkpoint ({', '.join(REFERENCE_FILES)})")
        state = _reference_state(found[0], int(meta.get("medusa_num_layers", 1)))
        meta = {"num_heads": int(meta["medusa_num_heads"]), "num_layers": int(meta.get("medusa_num_layers", 1)),
                "own_lm_head": True, "source": found[0].name}
        heads = MedusaHeads(hidden, vocab, meta["num_heads"], meta["num_layers"], None)
    try:
        heads.load_state_dict(state)
    except RuntimeError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"medusa: {path} does not fit this target (hidden {hidden}, vocab {vocab}): {first}") from None
    return heads, meta


def _reference_state(file: Path, num_layers: int) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = {}
    for key, value in read_tensors(file, "medusa").items():
        m = _KEY.fullmatch(key)
        if m is None:
            raise ConfigError(f"medusa: {file} holds weight {key!r}, not named as the reference's heads "
                              "({head}.{block}.linear.weight|bias, {head}.{num_layers}.weight)")
        k, j, rest = m.group(1), int(m.group(2)), m.group(3)
        if j == num_layers:  # the head's LM head
            state[f"own_heads.{k}.{rest}"] = value
        else:
            state[f"blocks.{k}.{j}.{rest}"] = value
    return state
