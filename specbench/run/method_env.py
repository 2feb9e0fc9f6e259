"""What a method factory receives: the loaded target, where data and caches live, and the task."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specbench.catalog import OVERHEAD_KEY
from specbench.prompts.task import DEFAULT_SPLIT


@dataclass
class MethodEnv:
    """Read-only handles for building a drafter for one (method, task) pair.

    ``artifacts`` is for the factory to fill with what a run depends on (datastore path, size, hash;
    checkpoint hash); the runner writes it into the manifest under the method's name. A method states
    what it adds to the target with ``declare_overhead`` (reports show it next to the speedup).
    """

    model: Any
    tokenizer: Any
    model_id: str
    device: torch.device
    data_dir: Path | None
    cache_dir: Path
    task: str | None = None
    artifacts: dict[str, Any] = field(default_factory=dict)
    split: str = DEFAULT_SPLIT  # the run's --split of the task: the questions it times (a method must not learn them early)

    def declare_overhead(self, storage_bytes: int | None = None, parameters: int | None = None) -> None:
        """Record the method's own cost: bytes of its stores (datastores, on disk) and parameters of its
        own model (a draft head; the target's borrowed weights excluded), under ``artifacts["overhead"]``.

        >>> env = MethodEnv(None, None, "tiny", torch.device("cpu"), None, Path("/cache"))
        >>> env.declare_overhead(storage_bytes=1024); env.artifacts
        {'overhead': {'storage_bytes': 1024, 'parameters': None}}
        """
        self.artifacts[OVERHEAD_KEY] = {"storage_bytes": storage_bytes, "parameters": parameters}

    @classmethod
    def for_task(cls, loaded: Any, data_dir: Path | None, cache_dir: Path, task: str | None,
                 split: str = DEFAULT_SPLIT) -> "MethodEnv":
        """The env of ``task`` (timed on its ``split``) for a ``specbench.models.loading.LoadedModel`` (model,
        tokenizer, id and device).

        >>> from types import SimpleNamespace
        >>> lm = SimpleNamespace(model=None, tokenizer=None, model_id="tiny", device=torch.device("cpu"))
        >>> MethodEnv.for_task(lm, None, Path("/cache"), "gsm8k").model_id
        'tiny'
        """
        return cls(loaded.model, loaded.tokenizer, loaded.model_id, loaded.device, data_dir, cache_dir, task, split=split)
