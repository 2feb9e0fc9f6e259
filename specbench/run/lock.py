"""An exclusive lock on a run folder, so two processes never write the same ``records.jsonl``.

The lock is an ``flock`` on the file ``.specbench.lock``, which holds the owner's pid and host for the
messages. The kernel releases an flock when its process dies, so taking over a dead owner's lock is atomic:
of any number of processes that find it, exactly one gets the flock (the others see a live holder and
stop). A left-behind file of a dead process is taken over with a message; a live owner makes the second
process stop with a one-line ``UserError``.

Unlinking and locking race unless a holder checks that the path still names the file it locked: a
process that opened the file just before its owner unlinked it would otherwise lock an orphan while a
third process locks the new file. So after its flock a taker compares the inode of its descriptor with
the path's, and starts again when they differ.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> with RunLock(d):
...     (d / LOCK_FILE).is_file()
True
>>> (d / LOCK_FILE).exists()
False
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from specbench.errors import UserError, writing
from specbench.files.jsonfile import parse_json
from specbench.files.stale_tmp import process_alive
from specbench.results.run_folder import LOCK_FILE, open_run_file

__all__ = ["LOCK_FILE", "RunLock"]
ATTEMPTS = 20  # reopenings after the file was replaced under us (each needs another process to intervene)


_alive = process_alive  # (a module name of its own: tests slow it down to widen races)


def _owner(path: Path) -> dict | None:
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class RunLock:
    """Context manager holding ``run_dir/.specbench.lock`` (the folder is created if needed)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.fd: int | None = None

    def _open_locked(self) -> tuple[int, bool] | None:
        """(fd, True) holding the flock of the file the path names; (fd, False) when another process holds
        it; None when the file was replaced between open and flock (try again)."""
        fd = open_run_file(self.path, os.O_RDWR)  # (a link is refused: the lock's file is truncated and written)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return fd, False
        try:
            same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the owner released (unlinked) it between our open and flock: an orphan
            os.close(fd)
            return None
        return fd, True

    def acquire(self) -> None:
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for _ in range(ATTEMPTS):
                got = self._open_locked()
                if got is not None:
                    break
            else:
                raise UserError(f"run folder {self.path.parent} keeps being locked and released by other processes")
            fd, held = got
            if not held:
                os.close(fd)
                self._refuse()
            previous = _owner(self.path)
            try:
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode())
            except OSError:
                self.path.unlink(missing_ok=True)  # (no empty lock file left behind on a full disk)
                os.close(fd)
                raise
        self.fd = fd
        pid, host = (previous or {}).get("pid"), (previous or {}).get("host")
        if isinstance(pid, int) and (pid, host) != (os.getpid(), socket.gethostname()):
            if host == socket.gethostname() and not _alive(pid):
                who = f"dead pid {pid}"
            else:
                who = f"pid {pid} on {host} (it no longer holds the lock)"
            print(f"[specbench] taking over a stale lock of {who}: {self.path}", file=sys.stderr)

    def _refuse(self) -> None:
        owner = _owner(self.path)
        pid, host = (owner or {}).get("pid"), (owner or {}).get("host")
        if isinstance(pid, int) and host == socket.gethostname() and not _alive(pid):
            raise UserError(f"run folder {self.path.parent} was just locked by another process")  # (a taker)
        who = f"pid {pid} on {host}" if owner else "another process (it is just taking the lock)"
        raise UserError(f"run folder {self.path.parent} is in use by {who}; wait for it to finish, or delete "
                        f"{self.path} if that process is gone")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still holding the flock: see the module docstring
        except OSError:
            pass  # a read-only folder: the flock alone is the lock, and it goes with the descriptor
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
