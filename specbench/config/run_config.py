"""``RunConfig``: everything that defines a benchmark run, validated, and written into the manifest.

>>> RunConfig(methods=("ar", "pld"), limit=2).validate()
>>> RunConfig(limit=0).validate()
Traceback (most recent call last):
...
specbench.errors.ConfigError: --limit must be a positive integer, got 0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specbench.catalog import ENGINE_BASELINE, ENGINE_PREFIX, is_engine_row
from specbench.config.coerce import short_repr
from specbench.config.context_length import MIN_LENGTH
from specbench.config.engine_choice import parse_engine
from specbench.engine.backends.registry import backend_choices, backend_spec, dtype_hint
from specbench.budget.names import RUN_BUDGETS
from specbench.engine.sampling_config import SamplingConfig
from specbench.errors import ConfigError
from specbench.files.safe_names import MAX_NAME, NAME_RULE, is_safe_name  # noqa: F401  (MAX_NAME: run folder names)
from specbench.models.dtypes import DTYPE_NAMES
from specbench.prompts.task import DEFAULT_SPLIT, SPLITS

@dataclass
class RunConfig:
    """Everything that defines a benchmark run (written into the manifest)."""

    methods: tuple[str, ...] = ("ar", "pld")
    tasks: tuple[str, ...] = ("all",)
    limit: int | None = None
    split: str = DEFAULT_SPLIT  # which questions of each task: eval (default), dev (calibration, e.g. sweeps) or all
    max_new_tokens: int = 128
    repeats: int = 1
    warmup: int = 1
    model: str = "embedded"
    dtype: str = "float32"
    device: str = "auto"
    backend: str = "auto"  # how the target's forward runs: auto, reference (transformers as is), fast or llamacpp
    threads: int | None = None  # CPU threads of the target's forward (llama.cpp's; torch's when set); None = default
    data_dir: str | None = None
    out_dir: str = "results"
    run_name: str | None = None
    seed: int = 0  # sampling: each generation's generator is seeded from it and the unit of work
    temperature: float = 0.0  # 0 = greedy (exact lossless check); > 0 = speculative sampling
    top_p: float = 1.0
    top_k: int = 0
    allow_mismatch: bool = False
    tie_threshold: float | None = None  # None: 1e-4 in float32, 2e-2 in half precision (see lossless.py)
    budget: str = "default"  # default | auto | both: verify whole drafts, the cost-aware subset, or both side by side
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    verify: bool = True  # stream every weight and datastore file against its reference hash (--no-verify: trust it)
    chat_template: str = "auto"  # how turns become prompt text: auto, model, vicuna, llama-2, raw or a file (chat_templates.py)
    preset: str | None = None  # a named protocol whose values filled the unset settings (presets.py), e.g. spec-bench
    context_length: tuple[int, ...] = ()  # input lengths (tokens) of long-input tasks; () = their defaults (context_length.py)
    batch_size: tuple[int, ...] = (1,)  # sequences decoded together; several = each size side by side (batch_loop.py)
    refill: bool = False  # batches refilled from the queue as sequences finish (continuous batching), not static
    engine: str | None = None  # an engine under test: llama-server, or openai:URL (specbench.serving)
    engine_options: dict[str, str] = field(default_factory=dict)  # --engine-opt KEY=VALUE (timeouts, flags)
    concurrency: tuple[int, ...] = (1,)  # requests in flight at once at the engine (each level side by side)

    def validate(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be a positive integer, got {self.limit}")
        if self.split not in SPLITS:
            raise ConfigError(f"--split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        if self.max_new_tokens < 1:
            raise ConfigError(f"--max-new-tokens must be a positive integer, got {self.max_new_tokens}")
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be a positive integer, got {self.repeats}")
        if self.warmup < 0:
            raise ConfigError(f"--warmup must be >= 0, got {self.warmup}")
        spec = backend_spec(self.backend)
        dtypes = spec.dtypes if spec is not None and spec.dtypes else DTYPE_NAMES
        if self.dtype not in dtypes:
            on = f" on --backend {spec.name}" if dtypes is not DTYPE_NAMES else ""
            raise ConfigError(f"--dtype must be one of {', '.join(dtypes)}{on}, got {self.dtype!r}"
                              f"{dtype_hint(self.dtype)}")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or self.threads < 1):
            raise ConfigError(f"--threads must be a positive integer, got {self.threads!r}")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ConfigError(f"--device must be auto, cpu or cuda, got {self.device!r}")
        if self.backend not in backend_choices():
            raise ConfigError(f"--backend must be one of {', '.join(backend_choices())}, got {self.backend!r}")
        if not self.methods:
            raise ConfigError("--methods is empty")
        if self.budget not in RUN_BUDGETS:
            raise ConfigError(f"--budget must be one of {', '.join(RUN_BUDGETS)}, got {self.budget!r}")
        if self.run_name is not None and not is_safe_name(self.run_name):
            raise ConfigError(f"--run-name must be a single folder name ({NAME_RULE}), got {short_repr(self.run_name)}")
        for method, opts in self.method_options.items():
            if not isinstance(opts, dict):
                raise ConfigError(f"method_options.{method}: expected a mapping of options, got {opts!r}")
        if self.tie_threshold is not None and not 0 <= self.tie_threshold < 1:
            raise ConfigError(f"--tie-threshold must be in [0, 1), got {self.tie_threshold}")
        for n in self.context_length:
            if isinstance(n, bool) or not isinstance(n, int) or n < MIN_LENGTH:
                raise ConfigError(f"--context-length: each length must be an integer of at least {MIN_LENGTH} tokens, got {n!r}")
        if not self.batch_size or any(b < 1 for b in self.batch_size):
            raise ConfigError(f"--batch-size must be positive integers, got {','.join(map(str, self.batch_size))}")
        if len(set(self.batch_size)) != len(self.batch_size):
            raise ConfigError(f"--batch-size lists a size twice: {','.join(map(str, self.batch_size))}")
        if spec is not None and not spec.caps.batching and max(self.batch_size) > 1:
            raise ConfigError(f"--batch-size above 1 does not run on --backend {spec.name} ({spec.batch_refusal}); "
                              f"use --backend fast")
        if self.refill and max(self.batch_size) == 1:
            raise ConfigError("--refill needs --batch-size above 1 (it refills a batch's finished slots)")
        self._validate_engine()
        self.sampling.validate()

    def _validate_engine(self) -> None:
        engine_rows = [m for m in self.methods if is_engine_row(m.strip())]
        if self.engine is not None:
            parse_engine(self.engine)
            if not engine_rows:
                raise ConfigError(f"--engine {self.engine}: name its speculation settings in --methods, e.g. "
                                  f"{ENGINE_PREFIX}ngram (the baseline {ENGINE_BASELINE} is added)")
        elif engine_rows:
            raise ConfigError(f"--methods {engine_rows[0]}: engine rows need --engine (llama-server or openai:URL)")
        if not self.concurrency or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in self.concurrency):
            raise ConfigError(f"--concurrency must be positive integers, got {','.join(map(str, self.concurrency))}")
        if len(set(self.concurrency)) != len(self.concurrency):
            raise ConfigError(f"--concurrency lists a level twice: {','.join(map(str, self.concurrency))}")
        if max(self.concurrency) > 1 and self.engine is None:
            raise ConfigError("--concurrency above 1 sends requests to an engine under test: give --engine")
        if not self.sampling.greedy and self.engine is not None:
            raise ConfigError("--engine runs greedy decoding (--temperature 0): its lossless check compares token ids")

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig(self.temperature, self.top_p, self.top_k, self.seed)
