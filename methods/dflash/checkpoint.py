"""DFlash drafts in the reference's published layout: ours are written in it, published ones load as they are.

The layout (z-lab's hub drafts, e.g. ``z-lab/Qwen3-8B-DFlash-b16``, read by ``dflash/model.py``'s
``DFlashDraftModel``):

- ``config.json``: a Qwen3 config of the draft (``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
  ``head_dim``, ``intermediate_size``, ``num_hidden_layers`` = draft layers, ``rms_norm_eps``, ``rope_theta``,
  ``vocab_size``), plus ``block_size``, ``num_target_layers`` and ``dflash_config`` with ``mask_token_id`` and
  ``target_layer_ids`` (the reference's ids: the *outputs* of those target layers; absent, the reference's
  spread over ``num_target_layers``);
- ``model.safetensors``: ``layers.{i}.*``, ``fc.weight``, ``hidden_norm.weight``, ``norm.weight``; no embedding
  and no head (both are the target's).

Ours add a ``specbench`` section to ``config.json`` (recipe, held-out metrics, the weights' sha256, checked on
every load), written last. Example: ``load_draft(folder, smollm2)`` -> ``(DFlashDraft, meta)``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from .network import DFlashDraft, reference_layers
from specbench.api import (ConfigError, LayerShape, checkpoint_errors, file_sha256, read_config, read_tensors,
                           strict_json, verify_checkpoint)

WEIGHTS = "model.safetensors"
SECTION = "specbench"


def new_draft(target: torch.nn.Module, layers: int, block_size: int, mask_token: int = -1) -> DFlashDraft:
    """An untrained draft for ``target``: ``layers`` decoder layers of the target's shape (no biases, as the
    reference's Qwen3 layers), tapping ``reference_layers``; ``mask_token`` -1 = the vocabulary's last id.
    ``norm`` starts as the target's final RMSNorm weight where it has one (the output is scored by its head)."""
    shape = dataclasses.replace(LayerShape.from_config(target.config), qkv_bias=False)
    vocab = int(target.get_input_embeddings().weight.shape[0])
    feature_layers = reference_layers(int(target.config.num_hidden_layers), layers)
    draft = DFlashDraft(shape, layers, feature_layers, block_size, vocab - 1 if mask_token < 0 else mask_token, target)
    norm = getattr(target.base_model, "norm", None)
    weight = getattr(norm, "weight", None)
    if weight is not None and getattr(norm, "bias", None) is None and weight.shape == (shape.hidden,):
        with torch.no_grad():
            draft.norm.weight.copy_(weight.detach().float())
    return draft.to(target.get_input_embeddings().weight.device)


def save_draft(draft: DFlashDraft, out: Path, num_target_layers: int, meta: dict[str, Any]) -> None:
    """Write ``draft`` in the reference's layout in ``out``; ``meta`` (recipe, metrics) goes to ``specbench``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().float().contiguous().cpu() for k, v in draft.state_dict().items()}, str(out / WEIGHTS))
    s = draft.shape
    cfg: dict[str, Any] = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_act": "silu", "hidden_size": s.hidden,
        "intermediate_size": s.intermediate, "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads,
        "head_dim": s.head_dim, "num_hidden_layers": len(draft.layers), "rms_norm_eps": s.eps, "rope_theta": s.rope_theta,
        "max_position_embeddings": s.max_positions, "attention_bias": False, "tie_word_embeddings": False,
        "vocab_size": int(draft._target[0].weight.shape[0]), "block_size": draft.block_size,
        "num_target_layers": num_target_layers, "torch_dtype": "float32",
        "dflash_config": {"mask_token_id": draft.mask_token_id, "target_layer_ids": [i - 1 for i in draft.feature_layers]},
    }
    if s.rope_type != "default":
        cfg["rope_scaling"] = {"type": s.rope_type, "factor": s.rope_factor}
    cfg[SECTION] = {**meta, "weights_sha256": file_sha256(out / WEIGHTS)}
    (out / "config.json").write_text(strict_json(cfg, indent=1), encoding="utf-8")  # written last: marks it complete


def load_draft(path: Path, target: torch.nn.Module) -> tuple[DFlashDraft, dict[str, Any]]:
    """(draft for ``target``, metadata); one-line ``ConfigError`` for anything that does not fit."""
    with checkpoint_errors("dflash", path):
        return _load_draft(path, target)


def _load_draft(path: Path, target: torch.nn.Module) -> tuple[DFlashDraft, dict[str, Any]]:
    cfg = read_config(path, "dflash", "a DFlash draft")
    if not (path / WEIGHTS).is_file():
        raise ConfigError(f"dflash: {path} holds no {WEIGHTS}")
    ours = cfg.get(SECTION) or {}
    if ours:
        verify_checkpoint(path / WEIGHTS, ours.get("weights_sha256"), "dflash", against="config.json's specbench.weights_sha256")
    # rotary frequencies are recomputed from the config (a non-persistent buffer, present in some exports)
    state = {k: v.float() for k, v in read_tensors(path / WEIGHTS, "dflash").items() if not k.startswith("rotary_emb.")}
    if "fc.weight" not in state or "block_size" not in cfg or not isinstance(cfg.get("dflash_config"), dict):
        raise ConfigError(f"dflash: {path} is not a DFlash draft (no fc weights, block_size or dflash_config)")
    if "sliding_attention" in (cfg.get("layer_types") or []):
        raise ConfigError(f"dflash: {path} has sliding-window draft layers, which this drafter does not implement")
    n_target = int(target.config.num_hidden_layers)
    embed = target.get_input_embeddings()
    target_hidden, vocab = int(embed.weight.shape[1]), int(embed.weight.shape[0])
    made_for = int(cfg.get("num_target_layers", n_target))
    if made_for != n_target or int(cfg.get("hidden_size", 0)) != target_hidden or int(cfg.get("vocab_size", vocab)) > vocab:
        raise ConfigError(f"dflash: {path} does not fit this target (draft for {made_for} layers, hidden "
                          f"{cfg.get('hidden_size')}, vocabulary {cfg.get('vocab_size')}; target {n_target} layers, "
                          f"hidden {target_hidden}, vocabulary {vocab})")
    try:
        shape = dataclasses.replace(LayerShape.from_config(SimpleNamespace(**{k: v for k, v in cfg.items() if k != SECTION})),
                                    qkv_bias=bool(cfg.get("attention_bias", False)))
    except ValueError as e:
        raise ConfigError(f"dflash: {path}'s config.json: {e}") from None
    extra = cfg["dflash_config"]
    ids = extra.get("target_layer_ids")
    layers = int(cfg.get("num_hidden_layers", 1))
    feature_layers = tuple(int(i) + 1 for i in ids) if ids else reference_layers(n_target, layers)
    if any(not 1 <= i <= n_target for i in feature_layers):
        raise ConfigError(f"dflash: {path} taps target layers {[i - 1 for i in feature_layers]}, outside 0..{n_target - 1}")
    mask = extra.get("mask_token_id")
    if mask is None or not 0 <= int(mask) < vocab:
        raise ConfigError(f"dflash: {path}'s mask_token_id {mask!r} is not an id of this target's embedding ({vocab} rows)")
    draft = DFlashDraft(shape, layers, feature_layers, int(cfg["block_size"]), int(mask), target)
    try:
        draft.load_state_dict(state)
    except RuntimeError as e:
        raise ConfigError(f"dflash: {path} does not fit this target: {str(e).splitlines()[0]}") from None
    meta = dict(ours) if ours else {"source": WEIGHTS}
    return draft, meta
