"""``ar``: the autoregressive baseline, i.e. the shared engine with no drafts (one token per forward)."""
from __future__ import annotations

from dataclasses import dataclass

from specbench.api import MethodEnv, register_method


@dataclass(frozen=True)
class ARConfig:
    """The baseline has no hyper-parameters."""


@register_method("ar", ARConfig)
def build_ar(config: ARConfig, env: MethodEnv) -> None:
    """Autoregressive greedy decoding with a KV cache (the baseline every speedup is relative to)."""
    return None
