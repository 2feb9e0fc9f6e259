"""What a method factory receives: the loaded target, where data and caches live, and the task."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch


@dataclass
class MethodEnv:
    """Read-only handles for building a drafter for one (method, task) pair.

    ``artifacts`` is for the factory to fill with what a run depends on (datastore path, size, hash;
    checkpoint hash); the runner writes it into the manifest under the method's name.
    """

    model: Any
    tokenizer: Any
    model_id: str
    device: torch.device
    data_dir: Path | None
    cache_dir: Path
    task: str | None = None
    artifacts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_task(cls, loaded: Any, data_dir: Path | None, cache_dir: Path, task: str | None) -> "MethodEnv":
        """The env of ``task`` for a ``specbench.model.LoadedModel`` (model, tokenizer, id and device).

        >>> from types import SimpleNamespace
        >>> lm = SimpleNamespace(model=None, tokenizer=None, model_id="tiny", device=torch.device("cpu"))
        >>> MethodEnv.for_task(lm, None, Path("/cache"), "gsm8k").model_id
        'tiny'
        """
        return cls(loaded.model, loaded.tokenizer, loaded.model_id, loaded.device, data_dir, cache_dir, task)
