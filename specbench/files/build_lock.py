"""The lock held while a cached artifact is built, so two processes that need it build it once.

The first takes the lock and builds; the second waits on it, then finds the artifact complete (each
builder re-checks after taking the lock) and uses it. The lock is an ``flock`` on ``<path>.lock``: the
kernel releases it when its holder dies, so a crashed build never blocks the next one. An ``flock`` also
excludes another thread of the same process, as each ``open`` is its own lock holder.

Example::

    with build_lock(folder):          # another process may be building the same thing
        if not (folder / DONE).is_file():
            build(folder)             # written under temporary names, the last file renamed into place
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (``<path>.lock``) held while a cached artifact is built."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "w") as fh:
        try:
            import fcntl

            fcntl.flock(fh, fcntl.LOCK_EX)
        except ImportError:  # no fcntl (Windows): no locking
            pass
        yield
