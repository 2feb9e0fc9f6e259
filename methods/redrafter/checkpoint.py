"""Head checkpoints: ``head.safetensors`` (the head's own weights, fp32) + ``config.json``.

``config.json`` holds ``head`` (the ``HeadConfig``), and whatever training wrote (``train``, the
target's ``model_id``, ``metrics``, ``curve``). The borrowed embedding table is never saved.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from specbench_methods.redrafter.config import HeadConfig
from specbench.api import (ContentMismatch, DatastoreError, checkpoint_errors, file_sha256, read_config, read_tensors,
                           save_weights, verify_sha256)
from specbench_methods.redrafter.head import DraftHead

WEIGHTS = "head.safetensors"
CONFIG = "config.json"


def save_checkpoint(head: DraftHead, out_dir: Path, extra: dict[str, Any] | None = None) -> Path:
    """Write the head's fp32 weights, then ``config.json`` (the head config, ``extra``, the weights' sha256) in the
    kit's format (``save_weights``: the config written last marks the folder complete); returns the directory."""
    state = {k: v.detach().float() for k, v in head.state_dict().items()}
    save_weights(out_dir, WEIGHTS, state, {"head": dataclasses.asdict(head.config), **(extra or {})})
    return out_dir


def read_meta(ckpt_dir: Path) -> dict[str, Any]:
    if not (ckpt_dir / CONFIG).is_file() or not (ckpt_dir / WEIGHTS).is_file():
        raise FileNotFoundError(f"not a redrafter checkpoint (need {CONFIG} and {WEIGHTS}): {ckpt_dir}")
    return read_config(ckpt_dir, "redrafter", "a ReDrafter checkpoint", CONFIG)


def load_checkpoint(ckpt_dir: Path, model: torch.nn.Module | None = None) -> tuple[DraftHead, dict[str, Any]]:
    """Load a head (attached to ``model``'s input embedding when given) and its config dict."""
    fix = f"retrain it with `specbench train redrafter` (or delete {ckpt_dir})"
    with checkpoint_errors("redrafter", ckpt_dir, fix, DatastoreError):
        meta = read_meta(ckpt_dir)
        expected = meta.get("weights_sha256")
        if expected is not None:
            try:
                verify_sha256(ckpt_dir / WEIGHTS, str(expected), f"{CONFIG}'s weights_sha256")
            except ContentMismatch as e:
                raise DatastoreError(f"{e} (corrupt); {fix}") from None
        head = DraftHead(HeadConfig(**meta["head"]))
        head.load_state_dict(read_tensors(ckpt_dir / WEIGHTS, "redrafter"))
        if model is not None:
            param = next(model.parameters())
            head.to(device=param.device, dtype=param.dtype)
            head.attach(model.get_input_embeddings().weight)  # after the move: shares the target's table
    return head.eval(), meta


def checkpoint_hash(ckpt_dir: Path) -> str:
    """sha256 (first 16 hex digits) of the weights file, for run manifests."""
    return file_sha256(ckpt_dir / WEIGHTS)[:16]
