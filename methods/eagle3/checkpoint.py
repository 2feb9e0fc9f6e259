"""EAGLE-3 checkpoints in the reference's own layout: ours are written in it, published ones load as they are.

The layout (SafeAILab/EAGLE's EAGLE-3 drafts, e.g. ``yuhuili/EAGLE3-LLaMA3.1-Instruct-8B``):

- ``config.json``: a Llama config of the one draft layer (``hidden_size``, ``num_attention_heads``,
  ``num_key_value_heads``, ``intermediate_size``, ``rms_norm_eps``, ``vocab_size``, ...) plus
  ``draft_vocab_size`` and, for a draft narrower than its target, ``target_hidden_size``;
- ``model.safetensors`` or ``pytorch_model.bin`` (read only through ``torch.load(weights_only=True)``):
  ``fc.weight``, ``midlayer.*``, ``norm.weight``, ``lm_head.weight`` and the buffers ``d2t`` / ``t2d``
  (ignored, as by the reference, when the draft vocabulary is the whole one); ``embed_tokens.weight`` only
  in some (then used, as the reference's ``load_state_dict`` does).

Ours add a ``specbench`` section to ``config.json`` (the feature layers, recipe, held-out metrics and the
weights' sha256, checked on every load), written last. A published draft reads the reference's feature
layers (``reference_layers``). Example: ``load_draft(folder, smollm2)`` -> ``(Eagle3Layer, (2, 15, 27), meta)``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from specbench.api import LayerShape
from specbench_methods.eagle3.layer import Eagle3Layer, reference_layers
from specbench_methods.eagle3.vocab import DraftVocab
from specbench.api import (ConfigError, checkpoint_errors, file_sha256, read_config, read_tensors, strict_json,
                           verify_checkpoint)

WEIGHTS = ("model.safetensors", "pytorch_model.bin")
SECTION = "specbench"


def save_draft(layer: Eagle3Layer, layers: tuple[int, ...], out: Path, meta: dict[str, Any]) -> None:
    """Write ``layer`` in the reference's layout in ``out``; ``meta`` (recipe, metrics) goes to ``specbench``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in layer.state_dict().items()}
    save_file(state, str(out / WEIGHTS[0]))
    s = layer.shape
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": s.hidden, "intermediate_size": s.intermediate, "num_attention_heads": s.heads,
        "num_key_value_heads": s.kv_heads, "head_dim": s.head_dim, "num_hidden_layers": 1, "rms_norm_eps": s.eps,
        "rope_theta": s.rope_theta, "max_position_embeddings": s.max_positions,
        "vocab_size": int(layer.t2d.numel()), "draft_vocab_size": int(layer.lm_head.weight.shape[0]),
        "tie_word_embeddings": False, "torch_dtype": "float32",
    }
    if s.rope_type != "default":
        cfg["rope_scaling"] = {"type": s.rope_type, "factor": s.rope_factor}
    if layer.target_hidden != s.hidden:
        cfg["target_hidden_size"] = layer.target_hidden
    cfg[SECTION] = {"feature_layers": list(layers), **meta, "weights_sha256": file_sha256(out / WEIGHTS[0])}
    (out / "config.json").write_text(strict_json(cfg, indent=1), encoding="utf-8")  # written last: marks it complete


def load_draft(path: Path, target: torch.nn.Module) -> tuple[Eagle3Layer, tuple[int, ...], dict[str, Any]]:
    """(draft for ``target``, its feature layers, metadata); one-line ``ConfigError`` for anything that does not fit."""
    with checkpoint_errors("eagle3", path):
        return _load_draft(path, target)


def _load_draft(path: Path, target: torch.nn.Module) -> tuple[Eagle3Layer, tuple[int, ...], dict[str, Any]]:
    cfg = read_config(path, "eagle3", "an EAGLE-3 checkpoint")
    found = [path / f for f in WEIGHTS if (path / f).is_file()]
    if not found:
        raise ConfigError(f"eagle3: {path} holds no {' or '.join(WEIGHTS)}")
    ours = cfg.get(SECTION) or {}
    if ours:
        verify_checkpoint(found[0], ours.get("weights_sha256"), "eagle3", against="config.json's specbench.weights_sha256")
    state = _read(found[0])
    if "fc.weight" not in state or not any(k.startswith("midlayer.") for k in state):
        raise ConfigError(f"eagle3: {path} is not an EAGLE-3 draft (no fc / midlayer weights; EAGLE-1/2 load with eagle)")
    try:
        shape = dataclasses.replace(LayerShape.from_config(SimpleNamespace(**{k: v for k, v in cfg.items() if k != SECTION})),
                                    qkv_bias=False)
    except ValueError as e:
        raise ConfigError(f"eagle3: {path}'s config.json: {e}") from None
    embed = target.get_input_embeddings()
    target_hidden, vocab_size = int(embed.weight.shape[1]), int(target.get_output_embeddings().weight.shape[0])
    made_for = int(cfg.get("target_hidden_size", shape.hidden))  # the hidden size of the target it was trained on
    if made_for != target_hidden or int(cfg.get("vocab_size", vocab_size)) != vocab_size:
        raise ConfigError(f"eagle3: {path} does not fit this target (draft for hidden {made_for}, vocabulary "
                          f"{cfg.get('vocab_size')}; target hidden {target_hidden}, vocabulary {vocab_size})")
    draft_vocab = int(cfg.get("draft_vocab_size", vocab_size))
    own_embed = "embed_tokens.weight" in state
    if not own_embed and shape.hidden != target_hidden:
        raise ConfigError(f"eagle3: {path} is narrower than the target ({shape.hidden} < {target_hidden}) but has no embed_tokens")
    layer = Eagle3Layer(shape, target_hidden, vocab_size, draft_vocab, None if own_embed else embed,
                        features=int(state["fc.weight"].shape[1]) // target_hidden)
    if draft_vocab == vocab_size:  # the reference drops (or ignores) the maps when the draft scores the whole vocabulary
        state["d2t"], state["t2d"] = layer.d2t.clone(), layer.t2d.clone()
    elif "d2t" not in state or "t2d" not in state:
        raise ConfigError(f"eagle3: {path} has a {draft_vocab}-token draft vocabulary but no d2t / t2d")
    try:
        DraftVocab.from_buffers(state["d2t"], state["t2d"])
    except ValueError as e:
        raise ConfigError(f"eagle3: {path}: {e}") from None
    try:
        layer.load_state_dict(state)
    except RuntimeError as e:
        raise ConfigError(f"eagle3: {path} does not fit this target: {str(e).splitlines()[0]}") from None
    layers = tuple(int(i) for i in ours.get("feature_layers") or reference_layers(int(target.config.num_hidden_layers)))
    if len(layers) != layer.features:
        raise ConfigError(f"eagle3: {path} fuses {layer.features} features but names {len(layers)} layers")
    meta = {k: v for k, v in ours.items() if k != "feature_layers"} if ours else {"source": found[0].name}
    return layer, layers, meta


def _read(file: Path) -> dict[str, torch.Tensor]:
    raw = read_tensors(file, "eagle3")
    # weights in fp32 (published drafts are fp16 / bf16); the id maps keep their integer / bool types
    return {k: (v.float() if v.is_floating_point() else v) for k, v in raw.items()}
