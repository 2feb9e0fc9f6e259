"""A target model's shape: what fixes the cost of its forward apart from its weights' values, and its tokenizer.

Two models of one shape cost the same on one machine whatever their weights, so a device profile measured on
random weights (the GPU check's) prices a run of the trained model; a profile of another shape, or of another
tokenizer (other prompts' token counts), prices nothing of it. The run's manifest records the shape of its
target (``model.shape``); runs from before it get theirs from the model's config when it is on this machine.

>>> shape_difference({"hidden": 576, "layers": 30}, {"hidden": 576, "layers": 32})
'layers 30 != 32'
>>> shape_difference({"hidden": 576, "tokenizer": None}, {"hidden": 576, "tokenizer": "ab12"}) is None
True
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.errors import ConfigError

# (shape key, HF config attribute): the fields compared; the tokenizer hash is compared when both sides know it
FIELDS = (("family", "model_type"), ("hidden", "hidden_size"), ("layers", "num_hidden_layers"),
          ("heads", "num_attention_heads"), ("kv_heads", "num_key_value_heads"), ("intermediate", "intermediate_size"),
          ("vocab", "vocab_size"))
TOKENIZER = "tokenizer"


def shape_of_config(config: Any, tokenizer: Any = None) -> dict[str, Any]:
    """The shape of an HF config (``model.config``) and the hash of ``tokenizer``'s vocabulary (None without one).

    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
    ...                       num_key_value_heads=None, intermediate_size=128, vocab_size=512)
    >>> shape_of_config(cfg)["kv_heads"], shape_of_config(cfg)["tokenizer"]
    (4, None)
    """
    from specbench.datastore.tokenize_corpus import tokenizer_hash

    out = {key: getattr(config, attr, None) for key, attr in FIELDS}
    if out["kv_heads"] is None:  # (a config without grouped attention: every head has its own keys)
        out["kv_heads"] = out["heads"]
    out[TOKENIZER] = tokenizer_hash(tokenizer) if tokenizer is not None and hasattr(tokenizer, "get_vocab") else None
    return out


def shape_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """How shape ``a`` differs from ``b`` (``"layers 30 != 32"``), or None; a tokenizer either side does not know
    is not compared."""
    diffs = [f"{k} {a.get(k)} != {b.get(k)}" for k, _ in FIELDS if a.get(k) != b.get(k)]
    if a.get(TOKENIZER) and b.get(TOKENIZER) and a[TOKENIZER] != b[TOKENIZER]:
        diffs.append(f"tokenizer {a[TOKENIZER]} != {b[TOKENIZER]}")
    return "; ".join(diffs) or None


def run_model_shape(manifest: dict[str, Any], run_name: str) -> dict[str, Any]:
    """The target's shape of a run: its manifest's ``model.shape``, else (runs from before it) read from the
    model's config on this machine (the embedded model, or a local folder); a one-line ``ConfigError`` otherwise."""
    model = manifest.get("model") or {}
    if isinstance(model.get("shape"), dict):
        return model["shape"]
    name = str((manifest.get("config") or {}).get("model") or "")
    folder = _local_folder(name)
    if folder is None or not (folder / "config.json").is_file():
        raise ConfigError(f"run {run_name}: its manifest has no model shape and the model {name or '?'} is not on this "
                          "machine to read it from; re-run it with this version of specbench")
    from transformers import AutoConfig

    return shape_of_config(AutoConfig.from_pretrained(str(folder), local_files_only=True))


def _local_folder(name: str) -> Path | None:
    from specbench.models.embedded import EMBEDDED, embedded_dir

    if name == EMBEDDED:
        return embedded_dir()
    path = Path(name)
    return path if path.is_dir() else None
