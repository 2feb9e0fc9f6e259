"""JSON and server-sent events over HTTP (the standard library's ``http.client``), every failure one line.

An engine that refuses a request (an HTTP error status), answers something that is not JSON, closes the
connection, or sends nothing for ``timeout_s`` seconds (a hang) raises ``EngineError`` naming what happened; the
caller adds which engine it was. Each call opens its own connection, so threads can send requests at once.

>>> split_url("http://127.0.0.1:8123/v1")
('http', '127.0.0.1', 8123, '/v1')
>>> list(sse_payloads([b"data: {\\"a\\": 1}\\n", b"\\n", b": ping\\n", b"data: [DONE]\\n", b"data: {}\\n"]))
['{"a": 1}']
"""
from __future__ import annotations

import contextlib
import http.client
import json
import socket
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

from specbench.serving.process import EngineError

MAX_BODY = 64 << 20  # bytes of a non-streamed answer read at most (a garbage flood is refused, not read)


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


def _failure(e: BaseException, timeout_s: float) -> EngineError:
    if isinstance(e, (socket.timeout, TimeoutError)):
        return EngineError(f"no answer within {timeout_s:g} s (request_timeout_s)")
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
def _connection(url: str, timeout_s: float) -> Iterator[tuple[http.client.HTTPConnection, str]]:
    """A connection to ``url`` (and its path prefix), closed after; a socket's failure as an ``EngineError``."""
    conn, prefix = _connect(url, timeout_s)
    try:
        yield conn, prefix
    except EngineError:
        raise
    except (OSError, http.client.HTTPException) as e:
        raise _failure(e, timeout_s) from None
    finally:
        conn.close()


def request(url: str, method: str, path: str, payload: dict[str, Any] | None, timeout_s: float) -> bytes:
    """The body of ``method path`` (JSON ``payload``) answered with a 2xx status; ``EngineError`` otherwise."""
    with _connection(url, timeout_s) as (conn, prefix):
        body = None if payload is None else json.dumps(payload).encode()
        conn.request(method, prefix + path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read(MAX_BODY + 1)
        if resp.status // 100 != 2:
            raise EngineError(_error_text(resp.status, data))
        if len(data) > MAX_BODY:
            raise EngineError(f"answered more than {MAX_BODY >> 20} MiB")
        return data


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


def stream_events(url: str, path: str, payload: dict[str, Any], timeout_s: float) -> Iterator[dict[str, Any]]:
    """POST ``payload`` and yield each event of the answer's event stream as a JSON object; an event carrying
    ``error``, a stream cut before its end, garbage or silence for ``timeout_s`` raise ``EngineError``."""
    with _connection(url, timeout_s) as (conn, prefix):
        conn.request("POST", prefix + path, body=json.dumps(payload).encode(),
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status // 100 != 2:
            raise EngineError(_error_text(resp.status, resp.read(MAX_BODY)))
        for text in sse_payloads(iter(resp.readline, b"")):
            event = parse_object(text)
            if "error" in event:
                raise EngineError(_error_text(500, text.encode()).replace("HTTP 500", "an error event"))
            yield event
