"""The OpenAI-compatible adapter (``--engine openai:URL``): an engine the user started (vLLM, SGLang, llama.cpp's
server), reached at ``URL/v1/completions`` with the prompt's token ids, read back as token ids.

Token ids come from what the server offers, never from its text: ``choices[0].token_ids`` (vLLM's
``return_token_ids``), else llama.cpp's ``__verbose.tokens`` (``verbose`` and ``return_tokens``), else logprob tokens
written ``token_id:N`` (vLLM's ``return_tokens_as_token_ids``); a server giving none of them is refused in one line.
No timed request asks for log-probabilities (their softmax would slow the baseline more than a speculating row).
Which extras are sent depends on the server (``dialect``: llama.cpp answers ``/props``, vLLM ``/version``, SGLang
``/get_server_info``); only llama.cpp's was run here. The speculation counters come from ``/metrics`` beside it.

>>> ids_of({"choices": [{"token_ids": [3, 4]}]}), ids_of({"__verbose": {"tokens": [5]}, "choices": [{}]})
([3, 4], [5])
>>> ids_of({"choices": [{"logprobs": {"tokens": ["token_id:9"]}}]}), ids_of({"choices": [{"text": ""}]})
([9], None)
"""
from __future__ import annotations

import time
from typing import Any, Iterator

from specbench.serving.http_client import parse_object, request, split_url, stream_events
from specbench.serving.llama_stream import token_ids
from specbench.serving.process import EngineError
from specbench.serving.prometheus import SpecCounters, read_counters
from specbench.serving.reply import EngineReply, TokenEvent

DIALECT_PROBES = (("llama.cpp", "/props"), ("vllm", "/version"), ("sglang", "/get_server_info"))
EXTRAS = {  # per dialect, what asks for token ids and counters (and, for llama.cpp, no prompt cache)
    "llama.cpp": {"verbose": True, "return_tokens": True, "timings_per_token": True, "cache_prompt": False},
    "vllm": {"return_token_ids": True, "top_k": 1},
    "sglang": {"return_token_ids": True, "top_k": 1},
}


def ids_of(chunk: dict[str, Any]) -> list[int] | None:
    """The token ids a completions chunk carries, or None when it carries none (see the module docstring)."""
    choice = (chunk.get("choices") or [{}])[0] if isinstance(chunk.get("choices"), list) else {}
    if isinstance(choice, dict) and isinstance(choice.get("token_ids"), list):
        return choice["token_ids"]
    verbose = chunk.get("__verbose")
    if isinstance(verbose, dict) and isinstance(verbose.get("tokens"), list):
        return verbose["tokens"]
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    tokens = logprobs.get("tokens") if isinstance(logprobs, dict) else None
    if isinstance(tokens, list) and tokens and all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
        try:
            return [int(t.partition(":")[2]) for t in tokens]
        except ValueError:
            return None
    return None


class OpenAIEngine:
    """One OpenAI-compatible server of one speculation setting, at ``url`` (started by the user)."""

    def __init__(self, label: str, url: str, *, vocab: int | None, model: str | None = None,
                 request_timeout_s: float = 600.0) -> None:
        scheme, host, port, prefix = split_url(url)
        self.label, self.vocab, self.model, self.request_timeout_s = label, vocab, model, request_timeout_s
        self.root = f"{scheme}://{host}:{port}"
        self.base = self.root + prefix.removesuffix("/v1")
        self.dialect = "unknown"

    def start(self) -> None:
        """Reach the server: its model name (``/v1/models``) and dialect; ``EngineError`` if it does not answer."""
        try:
            models = parse_object(request(self.base, "GET", "/v1/models", None, 30.0))
        except EngineError as e:
            raise self.failure(e) from None
        data = models.get("data")
        if self.model is None and isinstance(data, list) and data and isinstance(data[0], dict):
            self.model = str(data[0].get("id"))
        for dialect, path in DIALECT_PROBES:
            try:
                request(self.root, "GET", path, None, 10.0)
                self.dialect = dialect
                break
            except EngineError:
                continue

    def stop(self) -> None:
        """Nothing to stop: the user started it."""

    def failure(self, e: EngineError) -> EngineError:
        return EngineError(f"engine {self.label} at {self.base} {e}")

    def describe(self) -> dict[str, Any]:
        return {"url": self.base, "model": self.model, "dialect": self.dialect}

    def payload(self, prompt: list[int], max_new_tokens: int) -> dict[str, Any]:
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_new_tokens, "temperature": 0.0,
                "stream": True, "stream_options": {"include_usage": True}}
        return {**body, **EXTRAS.get(self.dialect, EXTRAS["vllm"])}

    def complete(self, prompt: list[int], max_new_tokens: int) -> EngineReply:
        """One greedy generation, timed from sending the request to the end of its stream."""
        t0 = time.perf_counter()
        try:
            chunks = stream_events(self.base, "/v1/completions", self.payload(prompt, max_new_tokens),
                                   self.request_timeout_s)
            return self._read(chunks, t0)
        except EngineError as e:
            raise self.failure(e) from None

    def _read(self, chunks: Iterator[dict[str, Any]], t0: float) -> EngineReply:
        events: list[TokenEvent] = []
        finished, stats = None, {}
        for chunk in chunks:
            at = time.perf_counter() - t0
            choices = chunk.get("choices")
            if not isinstance(choices, list):
                raise EngineError(f"answered a chunk without choices: {str(chunk)[:80]!r}")
            timings = chunk.get("timings") if isinstance(chunk.get("timings"), dict) else None
            if choices and isinstance(choices[0], dict):
                ids = ids_of(chunk)
                if ids is None and choices[0].get("text"):
                    raise EngineError("answered text without token ids (vLLM: a version with return_token_ids; "
                                      "llama.cpp: its verbose answers)")
                ids = token_ids(ids or [], self.vocab, "a chunk")
                if ids:
                    n = timings.get("predicted_n") if timings else None
                    counters = ((timings.get("draft_n", 0), timings.get("draft_n_accepted", 0)) if timings
                                else (None, None))
                    events.append(TokenEvent(ids, at, n - len(ids) if isinstance(n, int) else None, *counters))
                finished = choices[0].get("finish_reason") or finished
            if timings:
                stats = {k: timings[k] for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "draft_n",
                                                 "draft_n_accepted") if k in timings}
            if isinstance(chunk.get("usage"), dict):
                stats["completion_tokens"] = chunk["usage"].get("completion_tokens")
        if finished is None:
            raise EngineError("ended its answer before a finish_reason (the stream was cut)")
        stats["finish_reason"] = finished
        return EngineReply(events, time.perf_counter() - t0, stats)

    def margin_at(self, prompt: list[int], output: list[int], position: int) -> float | None:
        """No margin is asked of an OpenAI-compatible server (a divergence there counts as a mismatch)."""
        return None

    def counters(self) -> SpecCounters | None:
        return read_counters(self.root)

    def peak_rss_bytes(self) -> int | None:
        return None
