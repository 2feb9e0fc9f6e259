"""Building a registered method's drafter from options (CLI ``--set``/YAML) and a ``MethodEnv``."""
from __future__ import annotations

import dataclasses
from typing import Any

from specbench.config import from_dict
from specbench.drafter import Drafter
from specbench.method_env import MethodEnv
from specbench.registry import METHODS


def method_config(name: str, options: dict[str, Any] | None = None) -> Any:
    """The frozen config dataclass of method ``name`` filled from ``options`` (unknown keys raise)."""
    spec = METHODS.get(name)
    return from_dict(spec.config_cls, dict(options or {}), where=f"{name}.")


def build_drafter(name: str, options: dict[str, Any] | None, env: MethodEnv) -> tuple[Drafter | None, dict[str, Any]]:
    """Return (drafter or None for AR, config as a dict for the manifest)."""
    config = method_config(name, options)
    drafter = METHODS.get(name).factory(config, env)
    return drafter, dataclasses.asdict(config)
