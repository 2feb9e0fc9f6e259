"""The speculation counters of an engine's Prometheus ``/metrics`` page, and what they say between two readings.

llama.cpp's server (``llamacpp:``, with ``--metrics``) and vLLM (``vllm:``) publish the same counters: verification
steps that had a draft (``spec_decode_num_drafts``), draft tokens made (``..._num_draft_tokens``), draft tokens
accepted (``..._num_accepted_tokens``) and accepted tokens per draft position (``..._per_pos{position="i"}``).
SGLang (``sglang:``) publishes gauges instead: the recent mean accepted length and acceptance rate. Counters are
read before and after the timed requests and their difference kept (the warm-up's count stays out); gauges as the
last reading gives them.

The engine's own figures, in its own definitions: acceptance rate = accepted / draft tokens; mean accepted length =
1 + accepted / drafts, over the steps that drafted only (specbench's tau counts every forward pass, the prompt's
and the undrafted ones too, which is one reason the two disagree).

>>> text = ('llamacpp:spec_decode_num_drafts_total 10\\nllamacpp:spec_decode_num_draft_tokens_total 40\\n'
...         'llamacpp:spec_decode_num_accepted_tokens_total 12\\n'
...         'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 8\\n'
...         'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 4\\n')
>>> c = parse_counters(text)
>>> c.acceptance_rate(), c.mean_accepted_length(), c.per_position
(0.3, 2.2, (8.0, 4.0))
>>> c.minus(parse_counters(text)).drafts, parse_counters("up 1\\n") is None
(0.0, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from specbench.serving.http_client import request
from specbench.serving.process import EngineError

_COUNTERS = {"spec_decode_num_drafts": "drafts", "spec_decode_num_draft_tokens": "draft_tokens",
             "spec_decode_num_accepted_tokens": "accepted"}
_PER_POS = "spec_decode_num_accepted_tokens_per_pos"
_GAUGES = {"spec_accept_length": "accept_length", "spec_accept_rate": "accept_rate"}  # SGLang's


@dataclass(frozen=True)
class SpecCounters:
    """What an engine's metrics page says of its speculation (None: the page does not say)."""

    drafts: float | None = None
    draft_tokens: float | None = None
    accepted: float | None = None
    per_position: tuple[float, ...] = ()
    accept_length: float | None = None  # gauges (SGLang): the engine's recent means, not counters
    accept_rate: float | None = None

    def acceptance_rate(self) -> float | None:
        if self.draft_tokens:
            return round(self.accepted / self.draft_tokens, 6) if self.accepted is not None else None
        return self.accept_rate

    def mean_accepted_length(self) -> float | None:
        """1 + accepted / drafts: the engine's tokens per verification step that had a draft."""
        if self.drafts:
            return round(1 + self.accepted / self.drafts, 6) if self.accepted is not None else None
        return self.accept_length

    def minus(self, before: "SpecCounters | None") -> "SpecCounters":
        """The counters' growth since ``before`` (gauges: this reading's)."""
        if before is None:
            return self

        def d(a: float | None, b: float | None) -> float | None:
            return None if a is None else a - (b or 0.0)

        pos = tuple(a - (before.per_position[i] if i < len(before.per_position) else 0.0)
                    for i, a in enumerate(self.per_position))
        return SpecCounters(d(self.drafts, before.drafts), d(self.draft_tokens, before.draft_tokens),
                            d(self.accepted, before.accepted), pos, self.accept_length, self.accept_rate)

    def to_json(self) -> dict[str, Any]:
        return {"drafts": self.drafts, "draft_tokens": self.draft_tokens, "accepted": self.accepted,
                "accepted_per_position": list(self.per_position), "acceptance_rate": self.acceptance_rate(),
                "mean_accepted_length": self.mean_accepted_length()}


def _base(name: str) -> str:
    """``llamacpp:spec_decode_num_drafts_total`` -> ``spec_decode_num_drafts`` (namespace and suffix dropped)."""
    return name.rpartition(":")[2].removesuffix("_total")


def parse_counters(text: str) -> SpecCounters | None:
    """The speculation figures of a Prometheus text page, or None when it has none (or cannot be read)."""
    found: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                base = _base(sample.name)
                position = str(sample.labels.get("position", ""))
                if base == _PER_POS and position.isdigit():
                    per_pos[int(position)] = per_pos.get(int(position), 0.0) + sample.value
                elif base in _COUNTERS or base in _GAUGES:
                    key = _COUNTERS.get(base) or _GAUGES[base]
                    found[key] = found.get(key, 0.0) + float(sample.value)  # (summed over label sets: engines, models)
    except (ValueError, TypeError, IndexError):
        return None
    if not found and not per_pos:
        return None
    return SpecCounters(found.get("drafts"), found.get("draft_tokens"), found.get("accepted"),
                        tuple(per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)) if per_pos else (),
                        found.get("accept_length"), found.get("accept_rate"))


def read_counters(url: str) -> SpecCounters | None:
    """The counters of the metrics page at ``url``/metrics, None where it does not answer or says nothing of them."""
    try:
        return parse_counters(request(url, "GET", "/metrics", None, 10.0).decode("utf-8", "replace"))
    except EngineError:
        return None
