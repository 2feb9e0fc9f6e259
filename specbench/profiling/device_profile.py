"""A device profile: one machine's measured costs as a file you can carry to another machine (issue 69).

One file per (machine, backend, dtype, threads, model shape), written by ``specbench profile``; ``specbench
project RUN --onto PROFILE`` prices a run's per-step records with it (``reports/projection.py``). It holds:

- ``machine``: the hardware fingerprint (``fingerprint.py``) and ``backend``: name, key, threads;
- ``dtype`` and ``model``: the target's id and **shape** (``model_shape.py``: layers, widths, vocabulary and the
  tokenizer's hash), since a forward's cost depends on the shape, not on the weights' values;
- ``target``: T(n) after each measured context (``latency_by_context_s``, as ``cost_profile.py`` keeps it) and the
  prefill P(L) by prompt length (``prefill_s``, ``prefill.py``);
- ``drafters``: per drafter that runs a model of its own, keyed by ``draft_cost.drafter_key``, its ``propose``
  seconds and width by draft depth (``steps``);
- ``host_s``: the seconds of the fixed model-free drafting benchmark (``host_factor.py``) on this host;
- ``created`` (UTC) and ``fields``: one line per field, so the file explains itself to whoever receives it.

Example (the smallest valid profile, every cost made up for the example):

>>> prof = make_device_profile(ProfileParts(
...     machine={"cpu": "Example CPU", "cores": 4}, backend={"name": "fast", "key": "fast", "threads": 2},
...     dtype="float32", model={"id": "tiny", "shape": {"layers": 2}},
...     latency_by_context_s={128: {1: 0.01, 4: 0.02}}, prefill_s={16: 0.02, 64: 0.05}, drafters={},
...     host_s=0.004, created="2026-01-01T00:00:00+00:00"))
>>> check_device_profile(prof, "p.json")["schema"] == DEVICE_PROFILE_SCHEMA
True
>>> profile_label(prof)
'Example CPU, fast 2 threads, float32, 2026-01-01'
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.errors import ConfigError
from specbench.files.jsonfile import load_json, save_json
from specbench.profiling.device_profile_checks import structure_problem
from specbench.profiling.profile_sense import sense_problem
from specbench.profiling.profile_spread import SPREAD

DEVICE_PROFILE_SCHEMA = "specbench-device-profile/1"  # bump on an incompatible change; readers refuse others
DEVICE_PROFILE_FILE = "device-profile.json"

FIELDS = {
    "machine": "hardware fingerprint of the machine measured (CPU, cores, GPU, torch)",
    "backend": "the engine backend measured: name, key (what distinguishes its costs), threads",
    "dtype": "the target's precision",
    "model": "the target's id and shape (layers, widths, vocabulary, tokenizer hash): what a forward's cost depends on",
    "target.latency_by_context_s": "seconds of one target forward of n new tokens (inner key) after c cached tokens "
                                   "(outer key)",
    "target.prefill_s": "seconds of the prefill of a prompt of L tokens (key) into an empty cache",
    "drafters": "per drafter running a model of its own (method:shape hash): propose seconds and draft width by depth",
    "host_s": "seconds of the fixed model-free drafting benchmark on this host (lower: faster PLD-like drafting)",
    "created": "when the profile was measured (UTC)",
    "drafter_threads": "the torch threads the drafters were timed on (a run drafting on others is not priced with them)",
    "spread": "per figure, the interquartile range of its repeats over their median (target by context and n, "
              "prefill by length, host; a drafter's in its steps): how much its median is worth",
}


@dataclass(frozen=True)
class ProfileParts:
    """What ``specbench profile`` measured, to be written as a device profile."""

    machine: dict[str, Any]
    backend: dict[str, Any]
    dtype: str
    model: dict[str, Any]
    latency_by_context_s: dict[int, dict[int, float]]
    prefill_s: dict[int, float]
    drafters: dict[str, dict[str, Any]]
    host_s: float
    created: str | None = None
    drafter_threads: int | None = None  # the torch threads the drafters were timed on
    spread: dict[str, Any] | None = None  # each figure's relative spread (``profile_spread``); None: not recorded


def make_device_profile(parts: ProfileParts) -> dict[str, Any]:
    """The device profile's JSON object (see the module docstring)."""
    created = parts.created or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    by_context = {str(c): {str(n): float(t) for n, t in sorted(curve.items())}
                  for c, curve in sorted(parts.latency_by_context_s.items())}
    return {
        "schema": DEVICE_PROFILE_SCHEMA,
        "created": created,
        "machine": parts.machine,
        "backend": parts.backend,
        "dtype": parts.dtype,
        "model": parts.model,
        "target": {"latency_by_context_s": by_context,
                   "prefill_s": {str(n): float(t) for n, t in sorted(parts.prefill_s.items())}},
        "drafters": parts.drafters,
        "host_s": float(parts.host_s),
        **({"drafter_threads": parts.drafter_threads} if parts.drafter_threads else {}),
        **({SPREAD: parts.spread} if parts.spread else {}),
        "fields": FIELDS,
    }


def save_device_profile(profile: dict[str, Any], path: str | Path) -> None:
    save_json(profile, path, indent=1)


def check_device_profile(data: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``data`` when it is a well-formed device profile, else a one-line ``ConfigError`` naming ``path``."""
    if data.get("schema") != DEVICE_PROFILE_SCHEMA:
        raise ConfigError(f"{path}: not a device profile (schema {DEVICE_PROFILE_SCHEMA}); write one with "
                          "`specbench profile`")
    bad = structure_problem(data)
    if bad:
        raise ConfigError(f"{path}: not a valid device profile ({bad})")
    bad = sense_problem(data)
    if bad:  # (measured beside another job, or edited: refused rather than priced into a figure without a word)
        raise ConfigError(f"{path}: not a physically possible device profile ({bad}); measure it again on a quiet "
                          "machine with `specbench profile`")
    return data


def load_device_profile(path: str | Path) -> dict[str, Any]:
    """A device profile file, checked (a missing or malformed file is a one-line ``ConfigError``)."""
    try:
        data = load_json(path, DEVICE_PROFILE_SCHEMA, "target", "device profile")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such device profile") from None
    return check_device_profile(data, path)


def profile_label(profile: dict[str, Any]) -> str:
    """``machine, backend threads, dtype, date``: how every projected cell names the profile it used."""
    machine = profile.get("machine") or {}
    name = machine.get("gpu") or machine.get("cpu") or "unknown machine"
    backend = profile.get("backend") or {}
    threads = f" {backend['threads']} threads" if backend.get("threads") else ""
    date = str(profile.get("created") or "")[:10] or "undated"
    return f"{name}, {backend.get('name', '?')}{threads}, {profile.get('dtype', '?')}, {date}"
