"""An exclusive lock on a run folder, so two processes never write the same ``records.jsonl``.

The lock is the file ``.specbench.lock`` created with O_EXCL, holding the owner's pid and host. A lock
left by a dead process on this host is taken over with a message; a live owner (or one on another host,
which cannot be probed) makes the second process stop with a one-line ``UserError``.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> with RunLock(d):
...     (d / LOCK_FILE).is_file()
True
>>> (d / LOCK_FILE).exists()
False
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from specbench.errors import UserError

LOCK_FILE = ".specbench.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _owner(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class RunLock:
    """Context manager holding ``run_dir/.specbench.lock`` (the folder is created if needed)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "host": socket.gethostname()}, fh)
        return True

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._try_create():
            return
        owner = _owner(self.path)
        pid, host = (owner or {}).get("pid"), (owner or {}).get("host")
        stale = isinstance(pid, int) and host == socket.gethostname() and not _alive(pid)
        if not stale:
            who = f"pid {pid} on {host}" if owner else "an unknown process (unreadable lock file)"
            raise UserError(f"run folder {self.path.parent} is in use by {who}; wait for it to finish, or delete "
                            f"{self.path} if that process is gone")
        print(f"[specbench] taking over a stale lock of dead pid {pid}: {self.path}", file=sys.stderr)
        self.path.unlink(missing_ok=True)
        if not self._try_create():  # another process took it over first
            raise UserError(f"run folder {self.path.parent} was just locked by another process")

    def release(self) -> None:
        owner = _owner(self.path)
        if owner and owner.get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
