"""Where specbench reads and keeps things: its cache folder and the task data folder.

>>> resolve_data_dir("my/data")
PosixPath('my/data')
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from specbench.errors import ConfigError

SHARED_DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def default_data_dir() -> Path | None:
    """``$SPECBENCH_DATA_DIR``, else ``../shared/data`` beside the checkout when present, else None (hub)."""
    env = os.environ.get("SPECBENCH_DATA_DIR")
    if env:
        return Path(env)
    return SHARED_DATA_DIR if SHARED_DATA_DIR.is_dir() else None


def resolve_data_dir(given: str | Path | None) -> Path | None:
    """The ``--data-dir`` the user gave, else ``default_data_dir()`` (the one fallback every command uses)."""
    return Path(given) if given else default_data_dir()


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


def writable_cache_dir(path: Path | None = None) -> Path:
    """The cache folder (``path``, by default ``cache_dir()``), created if missing, once a file could be written
    in it; else a one-line ConfigError naming it and how to choose another. Called before anything slow whose
    result goes there (the embedded model's 30-s conversion, a drafter's training), so an unwritable cache
    fails at once, not after the work.

    >>> writable_cache_dir(Path("/proc/no-cache"))
    Traceback (most recent call last):
    ...
    specbench.errors.ConfigError: cache folder /proc/no-cache is not writable (No such file or directory: /proc/no-cache); choose another with SPECBENCH_CACHE=<folder>
    """
    path = path or cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise ConfigError(f"cache folder {path} is not writable ({e.strerror or e}: {e.filename or path}); "
                          "choose another with SPECBENCH_CACHE=<folder>") from None
    return path
