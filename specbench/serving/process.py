"""A server process on 127.0.0.1: started on a free port, awaited until it answers, its output kept in a log file,
always stopped, never left behind.

Three guards keep it from outliving specbench: ``stop`` in the caller's ``finally`` (a failed, interrupted or
finished run), an ``atexit`` hook for whatever a caller forgot, and, on Linux, the kernel's parent-death signal
(``PR_SET_PDEATHSIG``), which kills the server when specbench itself is killed (``kill -9``, out of memory), where
no Python code runs. The signal is set by a few lines of Python that then ``exec`` the server, so the server keeps
the pid ``ServerProcess`` knows. It is started in a session of its own, so ``stop`` signals its whole group.

Example::

    proc = ServerProcess("llama-server engine:off", ["/path/llama-server", "--port", "8123", ...], log_path,
                         ready=lambda: probe_health(8123), ready_timeout_s=120)
    proc.start()     # returns once ``ready()`` says so; EngineError if it exits or hangs first
    ...
    proc.stop()      # SIGTERM to its group, SIGKILL after 5 s

>>> 1024 <= free_port() < 65536
True
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from specbench.errors import UserError

STOP_GRACE_S = 5.0  # SIGTERM, then this long before SIGKILL
POLL_S = 0.05
_LIVE: set["ServerProcess"] = set()

# runs in the child before the server: on Linux, SIGKILL when the parent (this specbench) dies; then the server
_GUARD = """import ctypes, os, sys
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    if os.getppid() != int(sys.argv[1]):  # the parent died before the signal was set
        sys.exit(70)
os.execv(sys.argv[2], sys.argv[2:])
"""


class EngineError(UserError):
    """An engine under test failed: it exited, hung, answered garbage or refused a request (one line)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def last_line(path: Path, limit: int = 300) -> str:
    """The last non-empty line of a log file (cut to ``limit`` characters), or ``""``."""
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:limit] if lines else ""


class ServerProcess:
    """One server process: ``argv`` started with its output in ``log_path``, ready once ``ready()`` is true."""

    def __init__(self, name: str, argv: list[str], log_path: Path, ready: Callable[[], bool],
                 ready_timeout_s: float) -> None:
        self.name, self.argv, self.log_path = name, argv, log_path
        self.ready, self.ready_timeout_s = ready, ready_timeout_s
        self.proc: subprocess.Popen | None = None
        self.log_start = 0  # where this start's output begins in the log (a retry appends to the same file)

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self) -> None:
        """Start it and wait until it is ready; ``EngineError`` (the process stopped) if it exits or is not ready
        within ``ready_timeout_s``."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_start = self.log_path.stat().st_size if self.log_path.is_file() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-c", _GUARD, str(os.getpid()), *self.argv],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        _LIVE.add(self)
        deadline = time.monotonic() + self.ready_timeout_s
        while not self._is_ready():
            if self.proc.poll() is not None:
                self.stop()
                raise EngineError(f"{self.name} exited with code {self.proc.returncode} while starting: "
                                  f"{last_line(self.log_path) or 'no output'} (log: {self.log_path})")
            if time.monotonic() > deadline:
                self.stop()
                raise EngineError(f"{self.name} was not ready within {self.ready_timeout_s:g} s "
                                  f"(ready_timeout_s; log: {self.log_path})")
            time.sleep(POLL_S)

    def _is_ready(self) -> bool:
        try:
            return bool(self.ready())
        except OSError:
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_text(self, wait_s: float = 0.0) -> str:
        """How it ended, for an error line: ``exited with code 1: <its last log line>``, or ``""`` while alive
        (``wait_s``: how long to give a server that is going down, as a cut answer suggests, to be gone)."""
        if self.proc is not None and self.alive() and wait_s > 0:
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is None or self.alive():
            return ""
        code = self.proc.returncode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return f"{how}: {last_line(self.log_path) or 'no output'} (log: {self.log_path})"

    def output(self, limit: int = 1 << 16) -> str:
        """What the server wrote to its log since this start (the last ``limit`` bytes of it), ``""`` if none."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(self.log_start, f.seek(0, os.SEEK_END) - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def peak_rss_bytes(self) -> int | None:
        """The server's peak resident memory so far (Linux ``VmHWM``), None where it cannot be read."""
        if not self.alive():
            return None
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after ``STOP_GRACE_S``; a no-op once it has ended."""
        _LIVE.discard(self)
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue


@atexit.register
def _stop_all() -> None:
    """Whatever a caller left running when the interpreter exits."""
    for proc in list(_LIVE):
        proc.stop()
