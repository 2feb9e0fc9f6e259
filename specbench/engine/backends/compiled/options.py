"""How the compiled backend compiles, from the environment (a backend's factory takes no options of its own).

- ``SPECBENCH_COMPILER``: ``inductor`` (the default: generated kernels; on CUDA with CUDA graphs), ``aot_eager``
  or ``eager`` (dynamo captures the graph, torch runs it: a check of the capture, fast to build, what the tests
  use), ``none`` (static shapes, not compiled).
- ``SPECBENCH_COMPILE_MODE``: torch.compile's ``mode`` for inductor; default ``reduce-overhead`` on CUDA (CUDA
  graphs), ``default`` elsewhere.
- ``SPECBENCH_COMPILE_BUCKETS``: the row buckets (default ``1,2,4,8,16,32,64``).

>>> CompileOptions.from_env({}, "cpu")
CompileOptions(compiler='inductor', mode='default', buckets=(1, 2, 4, 8, 16, 32, 64))
>>> CompileOptions.from_env({"SPECBENCH_COMPILER": "eager", "SPECBENCH_COMPILE_BUCKETS": "1,8"}, "cuda").mode
'reduce-overhead'
>>> CompileOptions.from_env({"SPECBENCH_COMPILER": "tvm"}, "cpu")
Traceback (most recent call last):
...
specbench.errors.ConfigError: SPECBENCH_COMPILER must be one of inductor, aot_eager, eager, none, got 'tvm'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from specbench.engine.backends.compiled.buckets import ROW_BUCKETS, parse_buckets
from specbench.errors import ConfigError

COMPILERS = ("inductor", "aot_eager", "eager", "none")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass(frozen=True)
class CompileOptions:
    """The compiler, its mode and the row buckets (module docstring)."""

    compiler: str = "inductor"
    mode: str = "default"
    buckets: tuple[int, ...] = ROW_BUCKETS

    @classmethod
    def from_env(cls, env: Mapping[str, str], device_type: str) -> "CompileOptions":
        """The options ``env`` sets on a device of ``device_type``; a one-line ``ConfigError`` for a bad value."""
        compiler = env.get("SPECBENCH_COMPILER", "inductor")
        if compiler not in COMPILERS:
            raise ConfigError(f"SPECBENCH_COMPILER must be one of {', '.join(COMPILERS)}, got {compiler!r}")
        mode = env.get("SPECBENCH_COMPILE_MODE", "reduce-overhead" if device_type == "cuda" else "default")
        if mode not in MODES:
            raise ConfigError(f"SPECBENCH_COMPILE_MODE must be one of {', '.join(MODES)}, got {mode!r}")
        buckets = parse_buckets(env["SPECBENCH_COMPILE_BUCKETS"]) if env.get("SPECBENCH_COMPILE_BUCKETS") else ROW_BUCKETS
        return cls(compiler, mode, buckets)

    @property
    def graphs(self) -> bool:
        """Whether a compiled forward is replayed as a CUDA graph (its outputs then live in the graph's pool)."""
        return self.compiler == "inductor" and self.mode == "reduce-overhead"
