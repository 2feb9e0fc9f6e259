"""JSON and server-sent events over HTTP (the standard library's ``http.client``), every failure one line.

An engine that refuses a request (an HTTP error status), answers something that is not JSON, closes the
connection, or has not finished its answer ``timeout_s`` seconds after the request was sent (a hang: the whole
request's deadline, which bytes that keep the connection busy, such as an event stream's keep-alive comments,
do not extend) raises ``EngineError`` naming what happened; the caller adds which engine it was. Answers are read
in pieces of ``PIECE`` bytes and never held beyond ``MAX_BODY``: a non-streamed body, or one line of an event
stream, longer than that is refused once the cap is passed, not read to its end. Each call opens its own
connection, so threads can send requests at once.

>>> split_url("http://127.0.0.1:8123/v1")
('http', '127.0.0.1', 8123, '/v1')
>>> list(sse_payloads([b"data: {\\"a\\": 1}\\n", b"\\n", b": ping\\n", b"data: [DONE]\\n", b"data: {}\\n"]))
['{"a": 1}']
>>> list(capped_lines([b"ab\\ncd", b"e\\n\\nf"], cap=10))
[b'ab\\n', b'cde\\n', b'\\n', b'f']
>>> list(capped_lines([b"abc", b"def", b"\\n"], cap=4))
Traceback (most recent call last):
...
specbench.serving.process.EngineError: sent an event line longer than 4 bytes (the cap on one streamed line)
"""
from __future__ import annotations

import contextlib
import http.client
import json
import socket
import time
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

from specbench.serving.process import EngineError

MAX_BODY = 64 << 20  # bytes of a non-streamed answer, or of one streamed line, held at most (a flood is refused)
PIECE = 64 << 10  # bytes read at a time: what a refused answer costs beyond the cap


def size_text(n: int) -> str:
    """``64 MiB``, ``1.5 MiB``, ``4 bytes``."""
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


class Deadline:
    """The moment one request must have finished by (``timeout_s`` after it was sent); before each read the socket
    is given the time left, so neither silence nor a trickle of bytes outlasts it."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s, self.end = timeout_s, time.monotonic() + timeout_s

    def error(self) -> EngineError:
        return EngineError(f"gave no complete answer within {self.timeout_s:g} s (request_timeout_s)")

    def arm(self, conn: http.client.HTTPConnection) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.error()
        if conn.sock is not None:
            conn.sock.settimeout(left)


def split_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path prefix) of an ``http(s)://HOST:PORT[/PREFIX]`` URL; ``EngineError`` otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(f"not an http(s)://HOST:PORT URL: {url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise EngineError(f"not an http(s)://HOST:PORT URL: {url!r}") from None
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


def _connect(url: str, timeout_s: float) -> tuple[http.client.HTTPConnection, str]:
    scheme, host, port, prefix = split_url(url)
    cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    return cls(host, port, timeout=timeout_s), prefix


def _failure(e: BaseException, deadline: Deadline) -> EngineError:
    if isinstance(e, (socket.timeout, TimeoutError)):
        return deadline.error()
    if isinstance(e, ConnectionRefusedError):
        return EngineError("refused the connection (nothing listens on its port)")
    if isinstance(e, (ConnectionError, http.client.HTTPException)):
        return EngineError(f"closed the connection ({type(e).__name__}{': ' + str(e) if str(e) else ''})")
    return EngineError(f"{type(e).__name__}: {e}")


def _error_text(status: int, body: bytes) -> str:
    """``HTTP 400: <the server's own message>`` from an error answer (JSON ``{"error": ...}`` or plain text)."""
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
        err = data.get("error", data) if isinstance(data, dict) else data
        text = str(err.get("message", err)) if isinstance(err, dict) else str(err)
    except ValueError:
        pass
    return f"refused the request: HTTP {status}: {' '.join(text.split())[:300] or 'no message'}"


@contextlib.contextmanager
def _connection(url: str, timeout_s: float) -> Iterator[tuple[http.client.HTTPConnection, str, Deadline]]:
    """A connection to ``url`` (its path prefix, the request's deadline), closed after; a socket's failure as an
    ``EngineError``."""
    deadline = Deadline(timeout_s)
    conn, prefix = _connect(url, timeout_s)
    try:
        yield conn, prefix, deadline
    except EngineError:
        raise
    except (OSError, http.client.HTTPException) as e:
        raise _failure(e, deadline) from None
    finally:
        conn.close()


def _pieces(resp: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: Deadline) -> Iterator[bytes]:
    """The answer's body as it arrives, ``PIECE`` bytes at most at a time, each read within the deadline."""
    while True:
        deadline.arm(conn)
        piece = resp.read1(PIECE)
        if not piece:
            return
        yield piece


def _body(pieces: Iterator[bytes], cap: int) -> bytes:
    parts, size = [], 0
    for piece in pieces:
        parts.append(piece)
        size += len(piece)
        if size > cap:
            raise EngineError(f"answered more than {size_text(cap)}")
    return b"".join(parts)


def _start_of(pieces: Iterator[bytes], n: int = 2000) -> bytes:
    """The first ``n`` bytes or so of an answer (an error's message), the rest left unread."""
    out = b""
    for piece in pieces:
        out += piece
        if len(out) >= n:
            break
    return out


def _send(conn: http.client.HTTPConnection, deadline: Deadline, method: str, path: str,
          payload: dict[str, Any] | None, accept: str) -> http.client.HTTPResponse:
    body = None if payload is None else json.dumps(payload).encode()
    conn.request(method, path, body=body, headers={"Content-Type": "application/json", "Accept": accept})
    deadline.arm(conn)
    return conn.getresponse()


def request(url: str, method: str, path: str, payload: dict[str, Any] | None, timeout_s: float) -> bytes:
    """The body of ``method path`` (JSON ``payload``) answered with a 2xx status; ``EngineError`` otherwise."""
    with _connection(url, timeout_s) as (conn, prefix, deadline):
        resp = _send(conn, deadline, method, prefix + path, payload, "application/json")
        pieces = _pieces(resp, conn, deadline)
        if resp.status // 100 != 2:
            raise EngineError(_error_text(resp.status, _start_of(pieces)))
        return _body(pieces, MAX_BODY)


def parse_object(data: bytes | str) -> dict[str, Any]:
    """A JSON object, or ``EngineError`` quoting the start of what came instead."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        obj = None
    if not isinstance(obj, dict):
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        raise EngineError(f"answered something that is not a JSON object: {' '.join(text.split())[:120]!r}")
    return obj


def capped_lines(pieces: Iterable[bytes], cap: int) -> Iterator[bytes]:
    """The lines (each with its ``\\n``; the last maybe without) of a byte stream that arrives in ``pieces``;
    ``EngineError`` once a line passes ``cap`` bytes, having held no more than ``cap`` and one piece of it."""
    held: list[bytes] = []
    size = 0

    def hold(part: bytes) -> None:
        nonlocal size
        held.append(part)
        size += len(part)
        if size > cap:
            raise EngineError(f"sent an event line longer than {size_text(cap)} (the cap on one streamed line)")

    for piece in pieces:
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            hold(piece[start:end + 1])
            yield b"".join(held)
            held, size, start = [], 0, end + 1
        if start < len(piece):
            hold(piece[start:])
    if held:
        yield b"".join(held)


def sse_payloads(lines: Iterable[bytes]) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent event stream, up to ``[DONE]`` (comments and blank lines skipped)."""
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        yield payload


def stream_events(url: str, path: str, payload: dict[str, Any], timeout_s: float,
                  max_line: int | None = None) -> Iterator[dict[str, Any]]:
    """POST ``payload`` and yield each event of the answer's event stream as a JSON object; an event carrying
    ``error``, a stream cut before its end, garbage, a line over ``max_line`` bytes (default ``MAX_BODY``) or an
    answer not finished ``timeout_s`` after the request was sent raise ``EngineError``."""
    cap = MAX_BODY if max_line is None else max_line
    with _connection(url, timeout_s) as (conn, prefix, deadline):
        resp = _send(conn, deadline, "POST", prefix + path, payload, "text/event-stream")
        pieces = _pieces(resp, conn, deadline)
        if resp.status // 100 != 2:
            raise EngineError(_error_text(resp.status, _start_of(pieces)))
        for text in sse_payloads(capped_lines(pieces, cap)):
            event = parse_object(text)
            if "error" in event:
                raise EngineError(_error_text(500, text.encode()).replace("HTTP 500", "an error event"))
            yield event
