"""Lossless check: does a method's output equal the autoregressive baseline's, token for token?

Classes (per record): ``exact`` (identical ids); ``tie`` (they diverge where AR's top-2 logits differ by
less than ``threshold`` relative, ``(l1 - l2) / max(|l1|, 1)``: fp32 rounding between a one-token and a
multi-token forward can legitimately flip a near-tie); ``mismatch`` (anything else: a bug).

The check is exact in float32, where the default threshold is 1e-4. In float16/bfloat16 a one-token and
a multi-token forward round differently by ~2^-8 relative, so near-ties flip routinely; the default
there is 2e-2, and such runs test "equal up to half-precision rounding", not exactness. The runner
reads the margin AR recorded for the token it emitted (``specbench.engine.margins``), so the tie test sees
the same kind of forward that produced the AR output.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from specbench.catalog import BASELINE, OVERALL

EXACT, TIE, MISMATCH = "exact", "tie", "mismatch"
LOSSLESS_CLASSES = (EXACT, TIE, MISMATCH)  # the order reports count them in
DEFAULT_TIE_THRESHOLD = 1e-4
HALF_PRECISION_TIE_THRESHOLD = 2e-2


def default_tie_threshold(dtype: str) -> float:
    """The tie threshold for a model dtype (``float32`` is strict; half precisions are not)."""
    return DEFAULT_TIE_THRESHOLD if dtype == "float32" else HALF_PRECISION_TIE_THRESHOLD


@dataclass(frozen=True)
class LosslessResult:
    lossless: bool
    lossless_class: str
    first_divergence: int | None
    ar_margin: float | None

    def as_record(self) -> dict:
        return {
            "lossless": self.lossless,
            "lossless_class": self.lossless_class,
            "first_divergence": self.first_divergence,
            "ar_margin": self.ar_margin,
        }


def first_divergence(reference: Sequence[int], candidate: Sequence[int]) -> int | None:
    """Index of the first differing token (a length difference counts), or None if identical."""
    for i, (a, b) in enumerate(zip(reference, candidate)):
        if a != b:
            return i
    return None if len(reference) == len(candidate) else min(len(reference), len(candidate))


def classify(
    reference: Sequence[int],
    candidate: Sequence[int],
    margin_at: Callable[[int], float | None],
    threshold: float = DEFAULT_TIE_THRESHOLD,
) -> LosslessResult:
    """Compare ``candidate`` with the AR ``reference``; ``margin_at(i)`` gives AR's relative top-2 margin."""
    pos = first_divergence(reference, candidate)
    if pos is None:
        return LosslessResult(True, EXACT, None, None)
    margin = margin_at(pos) if pos < len(reference) else None
    cls = TIE if margin is not None and margin < threshold else MISMATCH
    return LosslessResult(False, cls, pos, margin)


def lossless_status(cells: dict[str, Any], method: str) -> str:
    """``baseline`` | ``exact`` | ``exact (k ties)`` | ``MISMATCH (k)`` | ``sampled`` (T > 0: checked in
    distribution, ``logprob_check``) | ``unchecked``."""
    if method == BASELINE:
        return "baseline"
    c = cells.get(OVERALL)
    if c is None:
        return "unchecked"
    n = c.lossless
    if n.get("mismatch"):
        return f"MISMATCH ({n['mismatch']})"
    if n.get("tie"):
        return f"exact ({n['tie']} ties)"
    if n.get("exact"):
        return "exact"
    return "sampled" if c.sampled else "unchecked"
