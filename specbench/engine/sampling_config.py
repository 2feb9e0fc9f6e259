"""Sampling settings of a run: greedy (temperature 0, the default) or speculative *sampling*.

``SamplingConfig`` is what the CLI's ``--temperature/--top-p/--top-k/--seed`` build; the engine's
``specbench.engine.sampling`` turns logits into the distribution it describes. Each generation gets its
own seed from the run seed and the unit of work, so a run is reproducible and methods on the same
question draw from independent, fixed streams.

>>> SamplingConfig().label(), SamplingConfig(1.0, top_p=0.9).label()
('T=0', 'T=1 top_p=0.9')
>>> generation_seed(0, "gsm8k", "q1", 1, 0) == generation_seed(0, "gsm8k", "q1", 1, 0)
True
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from specbench.errors import ConfigError


@dataclass(frozen=True)
class SamplingConfig:
    """``temperature`` 0 = greedy (bit-exact, checked token for token against AR); > 0 samples from
    ``softmax(logits / T)`` restricted to the ``top_k`` most likely tokens (0 = all) and then to the
    smallest set whose probability reaches ``top_p`` (1 = all)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0

    def validate(self) -> None:
        if not self.temperature >= 0:
            raise ConfigError(f"--temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"--top-p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ConfigError(f"--top-k must be >= 0 (0 = no limit), got {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def label(self) -> str:
        """Short label reports group runs by: ``T=0`` for greedy, else temperature and active filters."""
        if self.greedy:
            return "T=0"
        parts = [f"T={self.temperature:g}"]
        if self.top_p < 1:
            parts.append(f"top_p={self.top_p:g}")
        if self.top_k:
            parts.append(f"top_k={self.top_k}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k, "seed": self.seed}


def sampling_from_dict(data: dict[str, Any] | None) -> SamplingConfig:
    """The settings stored in a manifest or record (absent = greedy: runs from before sampling existed)."""
    if not data:
        return SamplingConfig()
    return SamplingConfig(float(data.get("temperature") or 0.0), float(data.get("top_p") or 1.0),
                          int(data.get("top_k") or 0), int(data.get("seed") or 0))


def manifest_sampling(manifest: dict[str, Any]) -> SamplingConfig:
    """A run's sampling settings from its manifest (``sampling``, else its config, else greedy)."""
    if manifest.get("sampling"):
        return sampling_from_dict(manifest["sampling"])
    cfg = manifest.get("config") or {}
    return sampling_from_dict({k: cfg.get(k) for k in ("temperature", "top_p", "top_k", "seed")})


def sampling_label(manifest: dict[str, Any]) -> str:
    """``T=0`` or ``T=1 top_p=0.9`` ...: the label ``compare`` and the leaderboard group runs by."""
    return manifest_sampling(manifest).label()


def generation_seed(seed: int, *identity: Any) -> int:
    """A 63-bit seed from the run seed and a unit's identity (task, question, turn, repeat)."""
    text = "\x1f".join(str(x) for x in (seed, *identity))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1
