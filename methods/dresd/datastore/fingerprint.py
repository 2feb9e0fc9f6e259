"""Cheap identities of a target model and tokenizer, stored in a datastore header to catch mismatches."""
from __future__ import annotations

import hashlib
import json
from typing import Any

import torch

from specbench.api import tokenizer_hash


def hidden_size(model: Any) -> int:
    """Width of the final-norm hidden state (= the input width of the output head)."""
    head = model.get_output_embeddings()
    if head is not None and hasattr(head, "in_features"):
        return int(head.in_features)
    return int(model.config.hidden_size)


def model_fingerprint(model: Any) -> str:
    """Hash of the architecture config and a slice of the embedding and output weights (fp32 view)."""
    h = hashlib.sha256()
    cfg = model.config.to_dict()
    keep = {k: cfg.get(k) for k in ("model_type", "hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size")}
    h.update(json.dumps(keep, sort_keys=True).encode())
    with torch.no_grad():
        for w in (model.get_input_embeddings().weight, model.get_output_embeddings().weight):
            h.update(w.detach().reshape(-1)[:4096].float().cpu().numpy().round(4).tobytes())
    return h.hexdigest()[:16]


def tokenizer_fingerprint(tokenizer: Any | None) -> str | None:
    """Hash of the vocabulary (token -> id); None when there is no tokenizer (raw-id datastores)."""
    return None if tokenizer is None else tokenizer_hash(tokenizer)
