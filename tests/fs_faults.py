"""Injected file-system faults under one folder: a full disk (``ENOSPC``) or a read-only mount (``EROFS``).

Tests may run as root (CI containers), where ``chmod`` stops no write, and mounting a small tmpfs needs
privileges; so the faults are injected into the OS calls Python's file API goes through (``os.open``,
``os.write``, ``io.open``, ``os.mkdir``, renames and unlinks), for paths under ``root`` only. A full disk
still lets files be created (free inodes) but no byte be written; a read-only one refuses any change.

``match`` narrows the fault to paths containing it, ``after`` lets that many writes through first (the
disk fills up midway); ``FaultSwitch.off()`` frees the space again.
"""
from __future__ import annotations

import builtins
import errno
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@dataclass
class FaultSwitch:
    root: Path
    code: int
    match: str = ""
    after: int = 0
    on: bool = True
    hits: int = 0

    def off(self) -> None:
        self.on = False

    def applies(self, path: Any) -> bool:
        if not self.on or isinstance(path, int):
            return False
        p = Path(os.fsdecode(path)).resolve()
        return (p == self.root or self.root in p.parents) and self.match in str(p)

    def fail(self, path: Any) -> None:
        raise OSError(self.code, os.strerror(self.code), os.fsdecode(path))

    def write_fails(self, path: Any) -> bool:
        if not self.applies(path):
            return False
        self.hits += 1
        return self.hits > self.after


class _FullFile:
    """A file object whose writes fail with ENOSPC (what a full disk does at write or flush time)."""

    def __init__(self, fh: Any, switch: FaultSwitch, path: Any) -> None:
        self._fh, self._switch, self._path = fh, switch, path

    def write(self, data: Any) -> int:
        if self._switch.write_fails(self._path):
            self._switch.fail(self._path)
        return self._fh.write(data)

    def __enter__(self) -> "_FullFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


def inject(monkeypatch: Any, root: Path, code: int, match: str = "", after: int = 0) -> FaultSwitch:
    """Make writes under ``root`` fail with ``code`` (``errno.ENOSPC`` or ``errno.EROFS``)."""
    switch = FaultSwitch(Path(root).resolve(), code, match, after)
    real_open, real_os_open, real_write = io.open, os.open, os.write
    read_only = code == errno.EROFS

    def os_open(path, flags, mode=0o777, *args, **kwargs):
        if read_only and flags & WRITE_FLAGS and switch.applies(path):
            switch.fail(path)
        return real_os_open(path, flags, mode, *args, **kwargs)

    def os_write(fd, data):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = None
        if path is not None and switch.write_fails(path):
            switch.fail(path)
        return real_write(fd, data)

    def py_open(file, mode="r", *args, **kwargs):
        writes = any(c in mode for c in "wax+")
        if writes and switch.applies(file):
            if read_only:
                switch.fail(file)
            return _FullFile(real_open(file, mode, *args, **kwargs), switch, file)
        return real_open(file, mode, *args, **kwargs)

    def refuse(real):
        def call(path, *args, **kwargs):
            if read_only and switch.applies(path):
                switch.fail(path)
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(os, "write", os_write)
    monkeypatch.setattr(io, "open", py_open)
    monkeypatch.setattr(builtins, "open", py_open)
    for name in ("mkdir", "unlink", "rmdir", "replace", "rename", "truncate"):
        monkeypatch.setattr(os, name, refuse(getattr(os, name)))
    return switch
