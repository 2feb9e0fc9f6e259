"""llama.cpp's server (``llama-server``) as an engine under test: one server process per speculation setting,
started by specbench on 127.0.0.1 and driven through its native ``/completion`` endpoint with token ids.

The binary: ``$SPECBENCH_LLAMA_SERVER`` if set, else the one ``scripts/setup.sh`` builds beside the llama.cpp
bindings from the same source (``llama_cpp/lib/llama-server`` in the installed package), else ``llama-server``
on the PATH. Its ``--version`` and sha256 go into the manifest with every flag it was started with.

Every request: the prompt's ids, ``n_predict`` = ``--max-new-tokens``, greedy (``temperature`` 0, ``top_k`` 1),
``cache_prompt`` off (every request prefills its whole prompt, as specbench's own loop does), streamed with
``timings_per_token`` (our pass count, ``passes.py``) and ``return_tokens``. A stream that left ids out
(``EngineReply.gaps``) is asked once more without streaming for the whole output, untimed. The tie rule's margin is
asked only where an output diverges (``margin_at``: untimed, ``n_probs`` 2, of the speculation-off server).

Example::

    server = LlamaServer("engine:ngram", binary, gguf_path, ["--spec-type", "ngram-simple"], run_dir / "engine",
                         threads=2, ctx=4096, parallel=1, vocab=49152)
    server.start()                       # ready and proven its own (own_server.py), or EngineError in one line
    reply = server.complete([1, 2, 3], 64)
    server.counters()                    # SpecCounters from its /metrics page
    server.stop()
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from specbench.serving.http_client import parse_object, request, stream_events
from specbench.serving.llama_stream import read_stream, token_ids, top2_margin
from specbench.serving.own_server import asked_of, listens, mismatches
from specbench.serving.process import EngineError, ServerProcess, free_port
from specbench.serving.prometheus import SpecCounters, read_counters
from specbench.serving.reply import EngineReply

BINARY_ENV = "SPECBENCH_LLAMA_SERVER"
BUILD_HINT = "SPECBENCH_LLAMACPP=1 bash scripts/setup.sh builds it beside the llama.cpp bindings"
BIND_TRIES = 3  # (a free port can be taken by another process before the server binds it)
BIND_FAILED = "couldn't bind"  # what llama-server logs when its port is taken (its last line is more general)
DYING_S = 2.0  # how long a failed request waits for its server to be gone, to say how it ended
GREEDY = {"temperature": 0.0, "top_k": 1, "repeat_penalty": 1.0, "seed": 0}


def find_binary() -> Path:
    """The llama-server this run starts (see the module docstring); ``EngineError`` naming how to get one."""
    given = os.environ.get(BINARY_ENV)
    if given:
        path = Path(given).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EngineError(f"${BINARY_ENV}={given} is not an executable file")
        return path
    spec = importlib.util.find_spec("llama_cpp")
    if spec is not None and spec.submodule_search_locations:
        built = Path(list(spec.submodule_search_locations)[0]) / "lib" / "llama-server"
        if built.is_file() and os.access(built, os.X_OK):
            return built
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    raise EngineError(f"--engine llama-server needs llama.cpp's server binary: {BUILD_HINT}, or set ${BINARY_ENV}")


def binary_facts(path: Path) -> dict[str, Any]:
    """What the manifest records of the binary: its path, sha256 and what ``--version`` prints."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
        version = " | ".join(ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip())[:300]
    except (OSError, subprocess.SubprocessError) as e:
        raise EngineError(f"{path} does not run ({type(e).__name__}: {e})") from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"binary": str(path), "sha256": digest, "version": version}


class PortTaken(EngineError):
    """The port picked for a server is answered by a process specbench did not start (one that bound it first)."""


class LlamaServer:
    """One llama-server process for one speculation setting (``flags``), and the requests sent to it."""

    def __init__(self, label: str, binary: Path, model: Path, flags: list[str], log_dir: Path, *, threads: int,
                 ctx: int, parallel: int, vocab: int | None, ready_timeout_s: float = 300.0,
                 request_timeout_s: float = 600.0) -> None:
        self.label, self.binary, self.model, self.flags = label, binary, model, list(flags)
        self.threads, self.ctx, self.parallel, self.vocab = threads, ctx, parallel, vocab
        self.request_timeout_s = request_timeout_s
        self.log_path = log_dir / f"{label.replace(':', '_').replace('@', '_')}.log"
        self.port = 0
        self.proc: ServerProcess | None = None
        self.ready_timeout_s = ready_timeout_s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        """The command line: the model, 127.0.0.1 and the port, threads, context (per slot times the slots),
        slots, the metrics page, then the setting's flags."""
        return [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
                "-t", str(self.threads), "-tb", str(self.threads), "-c", str(self.ctx * self.parallel),
                "-np", str(self.parallel), "--metrics", *self.flags]

    def start(self) -> None:
        """Start it on a free port and prove that the server answering there is this one (``_prove_own``); another
        free port when the one picked was taken before the server bound it (its log says it could not bind, or
        another process listens there), up to ``BIND_TRIES`` ports; else ``EngineError`` in one line."""
        for attempt in range(BIND_TRIES):
            self.port = free_port()
            self.proc = ServerProcess(f"llama-server {self.label}", self.argv(), self.log_path, self._healthy,
                                      self.ready_timeout_s)
            try:
                self.proc.start()
                self._prove_own()
                return
            except PortTaken as e:
                self.proc.stop()
                if attempt == BIND_TRIES - 1:
                    raise EngineError(f"{e} ({BIND_TRIES} ports tried; log: {self.log_path})") from None
            except EngineError:
                self.proc.stop()
                if BIND_FAILED not in self.proc.output() or attempt == BIND_TRIES - 1:
                    raise

    def _prove_own(self) -> None:
        """The server that answered ``/health`` is the process this started (its socket, while it is alive) and
        serves what its command line asked (``/props``, ``/slots``: ``own_server.py``); it is alive after both."""
        assert self.proc is not None
        owner = listens(self.proc.pid or 0, self.port)
        if owner is False or (owner is None and not self.proc.alive() and BIND_FAILED in self.proc.output()):
            raise PortTaken(f"llama-server {self.label}: port {self.port} is answered by another process, not the "
                            "server specbench started")
        self._still_alive("as its port answered")
        props, slots = self._get("/props"), self._get("/slots")
        bad = mismatches(asked_of(self.argv()), props if isinstance(props, dict) else {},
                         slots if isinstance(slots, list) else None)
        if bad:
            raise EngineError(f"llama-server {self.label} on port {self.port} is not the server specbench asked for: "
                              f"{'; '.join(bad)} (log: {self.log_path})")
        self._still_alive("right after it answered")

    def _still_alive(self, when: str) -> None:
        assert self.proc is not None
        if not self.proc.alive():
            raise EngineError(f"llama-server {self.label} {self.proc.exit_text()} {when}")

    def _get(self, path: str) -> Any:
        """The JSON of ``GET path``, None where the server does not answer it (a flag may turn ``/slots`` off)."""
        try:
            return json.loads(request(self.url, "GET", path, None, 10.0))
        except (EngineError, ValueError):
            return None

    def _healthy(self) -> bool:
        try:
            request(self.url, "GET", "/health", None, 2.0)
            return True
        except EngineError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def failure(self, e: EngineError) -> EngineError:
        """``e`` as one line naming this server, and how it ended if it died."""
        died = self.proc.exit_text(wait_s=DYING_S) if self.proc is not None else ""
        return EngineError(f"llama-server {self.label} {died or e}")

    def describe(self) -> dict[str, Any]:
        return {"argv": self.argv()[1:], "log": self.log_path.name, "port": self.port}

    def props(self) -> dict[str, Any]:
        """What the server says of itself (``/props``: its build and default generation settings)."""
        props = self._get("/props")
        if not isinstance(props, dict):
            return {}
        keep = ("build_info", "total_slots", "model_path")
        return {k: props[k] for k in keep if k in props}

    def payload(self, prompt: list[int], max_new_tokens: int, stream: bool = True, n_probs: int = 0) -> dict[str, Any]:
        return {"prompt": prompt, "n_predict": max_new_tokens, "stream": stream, "return_tokens": True,
                "timings_per_token": stream, "cache_prompt": False, "n_probs": n_probs, **GREEDY}

    def complete(self, prompt: list[int], max_new_tokens: int) -> EngineReply:
        """One greedy generation, timed from sending the request to its final event."""
        t0 = time.perf_counter()
        try:
            events = stream_events(self.url, "/completion", self.payload(prompt, max_new_tokens),
                                   self.request_timeout_s)
            reply = read_stream(events, lambda: time.perf_counter() - t0, self.vocab)
            if reply.gaps(reply.engine_stats.get("predicted_n")):
                reply.refetched_ids = self._whole_output(prompt, max_new_tokens)["tokens"]
                reply.engine_stats["refetched"] = True
        except EngineError as e:
            raise self.failure(e) from None
        return reply

    def _whole_output(self, prompt: list[int], max_new_tokens: int, n_probs: int = 0) -> dict[str, Any]:
        data = parse_object(request(self.url, "POST", "/completion",
                                    self.payload(prompt, max_new_tokens, stream=False, n_probs=n_probs),
                                    self.request_timeout_s))
        token_ids(data.get("tokens"), self.vocab, "its whole output")
        return data

    def margin_at(self, prompt: list[int], output: list[int], position: int) -> float | None:
        """The tie rule's margin of ``output`` (this server's own answer to ``prompt``) at ``position``: ``log p1 -
        log p2`` there, asked again untimed with ``n_probs`` 2; None if the answer does not reproduce ``output`` up
        to ``position`` (then no margin is trusted)."""
        try:
            data = self._whole_output(prompt, position + 1, n_probs=2)
        except EngineError as e:
            raise self.failure(e) from None
        if data["tokens"][:position] != output[:position]:
            return None
        return top2_margin(data.get("completion_probabilities"), position)

    def counters(self) -> SpecCounters | None:
        return read_counters(self.url)

    def peak_rss_bytes(self) -> int | None:
        return None if self.proc is None else self.proc.peak_rss_bytes()
