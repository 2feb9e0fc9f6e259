"""Reading llama.cpp's server answers: the native ``/completion`` event stream and its final event.

Each event carries one output token (``tokens``), its position (``tokens_predicted`` counts the tokens decoded
so far, this one included) and the slot's timings with the running draft counters (``timings_per_token``;
``draft_n`` and ``draft_n_accepted`` appear once the slot has drafted). The last event has ``stop: true`` and the
request's own timings.

>>> events = [{"tokens": [7], "tokens_predicted": 1, "timings": {"predicted_n": 1}, "stop": False},
...           {"tokens": [8], "tokens_predicted": 2, "timings": {"draft_n": 3, "draft_n_accepted": 1}, "stop": False},
...           {"tokens": [9], "tokens_predicted": 3, "timings": {"draft_n": 3, "draft_n_accepted": 1}, "stop": False},
...           {"tokens": [], "stop": True, "stop_type": "limit", "tokens_predicted": 3,
...            "timings": {"prompt_n": 5, "prompt_ms": 9.0, "predicted_n": 3, "predicted_ms": 20.0, "draft_n": 3,
...                        "draft_n_accepted": 1}}]
>>> reply = read_stream(iter(events), clock=iter([0.1, 0.2, 0.2, 0.25]).__next__, vocab=100)
>>> reply.output_ids, reply.as_generation().accept_lengths, reply.engine_stats["draft_n_accepted"]
([7, 8, 9], [1, 2], 1)
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from specbench.serving.process import EngineError
from specbench.serving.reply import EngineReply, TokenEvent

# what the final event's timings say of the request, kept as the engine's own figures in the record
STAT_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "draft_n", "draft_n_accepted")


def token_ids(value: Any, vocab: int | None, what: str) -> list[int]:
    """``value`` as a list of token ids inside ``[0, vocab)``; ``EngineError`` for anything else (garbage)."""
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise EngineError(f"answered {what} without a list of token ids: {str(value)[:80]!r}")
    bad = [t for t in value if t < 0 or (vocab is not None and t >= vocab)]
    if bad:
        raise EngineError(f"answered token id {bad[0]} in {what}, outside the vocabulary [0, {vocab})")
    return value


def top2_margin(probabilities: Any, position: int) -> float | None:
    """``log p1 - log p2`` of the two most likely tokens at output ``position`` of a non-streamed answer's
    ``completion_probabilities`` (asked with ``n_probs`` 2), or None where it is not there.

    >>> top2_margin([{"top_logprobs": [{"logprob": -0.25}, {"logprob": -1.5}]}], 0)
    1.25
    """
    try:
        top = probabilities[position]["top_logprobs"]
        return round(float(top[0]["logprob"]) - float(top[1]["logprob"]), 7)
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def read_stream(events: Iterator[dict[str, Any]], clock: Callable[[], float], vocab: int | None) -> EngineReply:
    """The ``EngineReply`` of one streamed ``/completion`` answer (``clock()``: seconds since the request was
    sent, read as each event arrives); ``EngineError`` for a stream that ends before its final event or that
    carries anything but token ids."""
    out: list[TokenEvent] = []
    for event in events:
        at = clock()
        timings = event.get("timings") if isinstance(event.get("timings"), dict) else {}
        if event.get("stop") is True:
            stats = {k: timings[k] for k in STAT_KEYS if k in timings}
            stats["stop_type"] = event.get("stop_type")
            stats.setdefault("draft_n", 0)
            stats.setdefault("draft_n_accepted", 0)
            ids = token_ids(event.get("tokens", []), vocab, "its final event")
            if ids:  # (a server that puts the last tokens in the final event, as a non-streamed answer does)
                out.append(TokenEvent(ids, at))
            return EngineReply(out, at, stats)
        ids = token_ids(event.get("tokens"), vocab, "an event")
        n = event.get("tokens_predicted")
        index = n - len(ids) if isinstance(n, int) and not isinstance(n, bool) else None
        counters = (timings.get("draft_n", 0), timings.get("draft_n_accepted", 0)) if timings else (None, None)
        out.append(TokenEvent(ids, at, index, *counters))
    raise EngineError("ended its answer before the final event (the stream was cut)")
