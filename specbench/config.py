"""Configuration as dataclasses: the run config, and filling any config dataclass from dicts/YAML."""
from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from specbench.safe_yaml import YamlLimitError, load_limited
from specbench.task import DEFAULT_SPLIT, SPLITS

C = TypeVar("C")

SHARED_DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


class ConfigError(ValueError):
    """Invalid configuration value or key (reported as a one-line error by the CLI)."""


def default_data_dir() -> Path | None:
    """``$SPECBENCH_DATA_DIR``, else ``../shared/data`` beside the checkout when present, else None (hub)."""
    env = os.environ.get("SPECBENCH_DATA_DIR")
    if env:
        return Path(env)
    return SHARED_DATA_DIR if SHARED_DATA_DIR.is_dir() else None


def resolve_data_dir(given: str | Path | None) -> Path | None:
    """The ``--data-dir`` the user gave, else ``default_data_dir()`` (the one fallback every command uses)."""
    return Path(given) if given else default_data_dir()


def parse_settings(pairs: list[str] | None) -> dict[str, str]:
    """Repeated ``--set KEY=VALUE`` options as a dict; a malformed pair is a ValueError.

    >>> parse_settings(["k=5000", "m = 10"])
    {'k': '5000', 'm': '10'}
    """
    out: dict[str, str] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def cache_dir() -> Path:
    """Root of specbench's caches (models, datastores, checkpoints): ``$SPECBENCH_CACHE``; a ConfigError at
    once when it names something that is not a folder (rather than after a conversion or build)."""
    path = Path(os.environ.get("SPECBENCH_CACHE", Path.home() / ".cache" / "specbench"))
    for p in (path, *path.parents):  # the nearest existing one decides
        if p.exists():
            if not p.is_dir():
                raise ConfigError(f"SPECBENCH_CACHE={path}: {p} is not a folder; point it to a folder (or unset it)")
            break
    return path


def _coerce(name: str, value: Any, typ: Any) -> Any:
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        for i, arg in enumerate(args):  # the first member that reads the value wins (float | str: "0.4" is 0.4)
            try:
                return _coerce(name, value, arg)
            except ConfigError:
                if i == len(args) - 1:
                    raise
    if value is None:
        raise ConfigError(f"{name}: must not be null")
    if typ in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{name}: expected {typ.__name__}, got {value!r}")
    if typ is int and isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if origin is dict and not isinstance(value, dict):
        raise ConfigError(f"{name}: expected a mapping, got {value!r}")
    if origin in (tuple, list):
        if not isinstance(value, (str, list, tuple)):
            raise ConfigError(f"{name}: expected a list or a comma-separated string, got {_short(value)}")
        (inner, *_) = typing.get_args(typ) or (str,)
        items = value.split(",") if isinstance(value, str) else list(value)
        out = [_coerce(name, v, inner) for v in items if v != ""]
        return tuple(out) if origin is tuple else out
    try:
        if typ is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if not isinstance(value, (bool, int)):
                raise ValueError(value)
            return bool(value)
        if typ is str and not isinstance(value, (str, int, float)):
            raise ValueError(value)  # a list or mapping where one name belongs
        if typ in (int, float, str):
            out = typ(value)
            if typ is float and not math.isfinite(out):
                raise ConfigError(f"{name}: expected a finite number, got {value!r}")
            if typ is str and "\x00" in out:
                raise ConfigError(f"{name}: contains a NUL character")
            return out
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{name}: cannot read {_short(value)} as {typ.__name__}") from None
    return value


def _short(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (a YAML value may be a huge structure)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def from_dict(cls: type[C], values: dict[str, Any], where: str = "") -> C:
    """Build dataclass ``cls`` from ``values``, coercing strings; unknown keys raise ConfigError."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{where.rstrip('.') or cls.__name__}: unknown key(s) {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(names))})")
    kwargs = {k: _coerce(f"{where}{k}", v, hints[k]) for k, v in values.items()}
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        validate()
    return obj


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a clear ConfigError when missing or not a mapping."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = load_limited(p.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    except YamlLimitError as e:
        raise ConfigError(f"{p}: refused ({e})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    return data


MAX_NAME = 200  # characters of a run or folder name (file systems allow 255 bytes; room for suffixes)


def is_safe_name(name: str) -> bool:
    """A single path component that cannot leave its parent folder.

    >>> is_safe_name("my-run_2.1"), is_safe_name("../x"), is_safe_name("/tmp/x"), is_safe_name("..")
    (True, False, False, False)
    """
    return bool(re.fullmatch(r"[A-Za-z0-9._-]{1,%d}" % MAX_NAME, name)) and name not in (".", "..")


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
    backend: str = "auto"  # how the target's forward runs: auto, reference (transformers as is) or fast
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
        if self.dtype not in ("float32", "float16", "bfloat16"):
            raise ConfigError(f"--dtype must be float32, float16 or bfloat16, got {self.dtype!r}")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ConfigError(f"--device must be auto, cpu or cuda, got {self.device!r}")
        from specbench.engine.backends import BACKEND_CHOICES

        if self.backend not in BACKEND_CHOICES:
            raise ConfigError(f"--backend must be one of {', '.join(BACKEND_CHOICES)}, got {self.backend!r}")
        if not self.methods:
            raise ConfigError("--methods is empty")
        if self.budget not in ("default", "auto", "both"):
            raise ConfigError(f"--budget must be default, auto or both, got {self.budget!r}")
        if self.run_name is not None and not is_safe_name(self.run_name):
            raise ConfigError(f"--run-name must be a single folder name (letters, digits, '.', '_', '-'; not '.' "
                              f"or '..'; at most {MAX_NAME} characters), got {_short(self.run_name)}")
        for method, opts in self.method_options.items():
            if not isinstance(opts, dict):
                raise ConfigError(f"method_options.{method}: expected a mapping of options, got {opts!r}")
        if self.tie_threshold is not None and not 0 <= self.tie_threshold < 1:
            raise ConfigError(f"--tie-threshold must be in [0, 1), got {self.tie_threshold}")
        self.sampling.validate()

    @property
    def sampling(self) -> "SamplingConfig":  # noqa: F821 (imported lazily: specbench.sampling imports this module)
        from specbench.sampling import SamplingConfig

        return SamplingConfig(self.temperature, self.top_p, self.top_k, self.seed)
