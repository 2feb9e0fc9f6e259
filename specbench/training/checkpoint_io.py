"""This project's format for a trained drafter's checkpoint, shared by every trained method: a safetensors file of
the network's weights, an optional ``vocab.npy`` (the draft's reduced vocabulary), and ``config.json`` written
last (its presence marks the folder complete), holding the method's own fields and the weights' sha256, checked
on every load. The published layouts each method also reads stay in the method (``_reference_state``).

Example: ``save_weights(out, "heads.safetensors", heads.state_dict(), {"num_heads": 4})`` writes
``heads.safetensors`` and ``config.json`` = ``{"num_heads": 4, "weights_sha256": "..."}``;
``read_weights(out, "heads.safetensors", "medusa")`` returns the tensors after checking that hash.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.files.checkpoint_files import read_tensors
from specbench.files.content_hash import file_sha256, verify_checkpoint
from specbench.files.jsonfile import strict_json

VOCAB = "vocab.npy"  # the draft vocabulary's target ids, when the draft scores a reduced vocabulary


def save_weights(out: Path, weights_name: str, state: dict[str, torch.Tensor], info: dict[str, Any],
                 vocab: np.ndarray | None = None, with_vocab: bool = False) -> None:
    """Write ``state`` to ``out/weights_name`` and then ``config.json`` (``info`` and the weights' sha256, in that
    order). ``with_vocab``: the method keeps a draft vocabulary, saved as ``vocab.npy`` when given and removed
    when not (a retrained folder must not keep an old one)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(out / weights_name))
    if with_vocab and vocab is not None:
        np.save(out / VOCAB, vocab, allow_pickle=False)
    elif with_vocab and (out / VOCAB).exists():
        (out / VOCAB).unlink()
    info = {**info, "weights_sha256": file_sha256(out / weights_name)}  # checked on every load
    (out / "config.json").write_text(strict_json(info, indent=1), encoding="utf-8")  # written last: marks it complete


def read_weights(path: Path, weights_name: str, what: str, meta: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors of ``path/weights_name`` after checking them against ``meta``'s (``config.json``'s) sha256;
    one-line errors naming ``what`` (the method)."""
    verify_checkpoint(path / weights_name, meta.get("weights_sha256"), what)
    return read_tensors(path / weights_name, what)


def read_vocab(path: Path) -> np.ndarray | None:
    """The saved draft vocabulary, None when the draft scores the whole vocabulary."""
    return np.load(path / VOCAB, allow_pickle=False) if (path / VOCAB).is_file() else None
