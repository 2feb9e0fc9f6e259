"""Temporary siblings of a build, named after the process writing them, and the sweep of those left behind.

A build writes into ``.NAME.tmp-PID-HOST`` and renames it into place when it is whole. A build killed with
SIGKILL (or a lost node) never cleans up, and its folder, hundreds of MB for a datastore, would stay for ever,
so the next build in the same folder removes every temporary sibling whose process is gone: one of this host
whose PID no longer runs (``os.kill(pid, 0)`` -> ``ProcessLookupError``). A live process's folder is never
touched, nor one of another host (its PID means nothing here: a cache on a shared file system). Names of the
older form ``.NAME.tmp-PID`` count as this host's; SQLite's ``-journal`` / ``-wal`` / ``-shm`` files beside
one go with it.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> tmp = tmp_sibling(d / "store")
>>> tmp.name == f".store.tmp-{os.getpid()}-{_host()}"
True
>>> _ = tmp.mkdir(), (d / ".store.tmp-999999999").mkdir()
>>> [p.name for p in remove_stale_tmp(d)], tmp.is_dir()
(['.store.tmp-999999999'], True)
"""
from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path

# .NAME.tmp-PID[-HOST][-journal|-wal|-shm]
_TMP_NAME = re.compile(r"^\..+\.tmp-(?P<pid>\d+)(?:-(?P<rest>.+))?$")
_SQLITE_SIDE_FILES = ("journal", "wal", "shm")


def _host() -> str:
    """This machine's name as a file name may hold it."""
    return re.sub(r"[^A-Za-z0-9.]+", "_", socket.gethostname()) or "host"


def tmp_sibling(path: Path) -> Path:
    """The temporary name beside ``path`` that this process builds it under."""
    return path.parent / f".{path.name}.tmp-{os.getpid()}-{_host()}"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (a process of another user counts: it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process, or no PID at all: never ours to judge
        return True
    return True


def _is_stale(name: str) -> bool:
    match = _TMP_NAME.match(name)
    if match is None:
        return False
    rest, host = match["rest"], _host()
    here = rest is None or rest in _SQLITE_SIDE_FILES or rest == host or rest.startswith(host + "-")
    return here and int(match["pid"]) != os.getpid() and not process_alive(int(match["pid"]))


def remove_stale_tmp(folder: Path) -> list[Path]:
    """Remove the temporary siblings in ``folder`` of builds whose process is gone; returns what was removed."""
    try:
        entries = list(Path(folder).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for entry in entries:
        if not _is_stale(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed
