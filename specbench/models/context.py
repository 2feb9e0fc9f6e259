"""The longest sequence a model takes, from its config: a loaded model's, or the config file on disk (for
a plan made before any weights load).

>>> config_context(type("C", (), {"n_positions": 1024})())
1024
>>> config_context(None) is None
True
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.files.jsonfile import parse_json
from specbench.models.embedded import EMBEDDED, embedded_model_dir

CONTEXT_ATTRS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def config_context(cfg: Any) -> int | None:
    """The maximum sequence length a config object (or a config.json dict) names, or None."""
    for attr in CONTEXT_ATTRS:
        value = cfg.get(attr) if isinstance(cfg, dict) else getattr(cfg, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def declared_context(name: str) -> int | None:
    """The context of ``--model name`` without loading it: the embedded model's (converting it on first use),
    a local folder's ``config.json``, or a hub id's cached ``config.json``; None when none can be read here."""
    if name == EMBEDDED:
        path: Path | None = embedded_model_dir() / "config.json"
    elif Path(name).expanduser().is_dir():
        path = Path(name).expanduser() / "config.json"
    else:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        path = Path(cached) if isinstance(cached, str) else None
    try:
        return config_context(parse_json(path.read_text(encoding="utf-8"))) if path is not None else None
    except (OSError, ValueError):  # (parse_json: every bad file is a ValueError, a RecursionError included)
        return None
