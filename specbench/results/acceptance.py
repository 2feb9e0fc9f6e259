"""Where drafts stop being accepted: per-position acceptance and the accepted-length distribution.

Over the decode passes that verified a draft (``draft_sizes[i] > 0``; the prefill and passes without a
draft are left out), with ``a = accept_lengths[i] - 1`` accepted draft tokens and ``d = draft_depths[i]``
the draft's depth (its longest root-to-leaf path; a chain's depth is its length):

- **accepted-length histogram**: ``histogram[k]`` = passes that accepted exactly ``k`` draft tokens;
  for a tree this is the distribution of the accepted depth.
- **per-position acceptance** at depth ``i`` = P(a >= i | a >= i - 1 and d >= i): among the passes
  whose draft reached depth ``i`` and whose first ``i - 1`` tokens were accepted, the share that
  accepted depth ``i`` too. For a chain this is P(accept token i | token i-1 accepted); for a tree,
  "accepted at depth i" means some node at depth i on the accepted path. Records written before
  ``draft_depths`` existed (schema < 4) give no per-position figures, only the histogram.

A pass cut short by EOS counts the tokens up to EOS (a slight undercount on the last pass).

>>> p = acceptance_profile([([1, 3, 1, 2], [0, 4, 4, 4], [0, 4, 4, 4])])
>>> p.histogram, [round(x, 2) for x in p.per_position]
([1, 1, 1], [0.67, 0.5, 0.0])
>>> p.shape
'chain'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

CHAIN, TREE, NO_DRAFTS, UNKNOWN = "chain", "tree", "none", "unknown"


@dataclass
class AcceptanceProfile:
    """Per-position acceptance and the accepted-length histogram of a set of records."""

    decode_steps: int = 0  # passes after the prefill
    drafted_steps: int = 0  # of those, passes that verified a draft
    histogram: list[int] = field(default_factory=list)  # [k] = drafted passes accepting exactly k tokens
    per_position: list[float | None] | None = None  # [i - 1] = P(accept depth i | depth i - 1 accepted)
    reached: list[int] | None = None  # [i - 1] = passes whose draft reached depth i with i - 1 accepted
    shape: str = NO_DRAFTS  # chain | tree | none | unknown (depths not recorded)

    def histogram_shares(self) -> list[float]:
        """``histogram`` as shares of the drafted passes."""
        n = sum(self.histogram)
        return [c / n for c in self.histogram] if n else []

    def to_json(self) -> dict:
        return {"shape": self.shape, "decode_steps": self.decode_steps, "drafted_steps": self.drafted_steps,
                "accepted_histogram": list(self.histogram), "per_position": self.per_position,
                "per_position_n": self.reached}


PassLists = tuple[Sequence[int], Sequence[int], Sequence[int] | None]  # accept_lengths, draft_sizes, draft_depths


def acceptance_profile(records: Iterable[PassLists]) -> AcceptanceProfile:
    """The profile of ``(accept_lengths, draft_sizes, draft_depths or None)`` triples (one per record)."""
    out = AcceptanceProfile()
    hist: list[int] = []
    num: list[int] = []
    den: list[int] = []
    depths_known, is_tree = True, False
    for accept, sizes, depths in records:
        if len(sizes) < len(accept):  # draft sizes not recorded (imported runs): every step counts as drafted
            sizes, depths = [1] * len(accept), None
        depths_known = depths_known and depths is not None
        for i in range(1, len(accept)):
            out.decode_steps += 1
            if not sizes[i]:
                continue
            out.drafted_steps += 1
            a = accept[i] - 1
            hist.extend([0] * (a + 1 - len(hist)))
            hist[a] += 1
            if depths is None:
                continue
            d = depths[i]
            is_tree = is_tree or d < sizes[i]
            num.extend([0] * (d - len(num)))
            den.extend([0] * (d - len(den)))
            for depth in range(1, min(a + 1, d) + 1):  # depth i reached with i - 1 accepted
                den[depth - 1] += 1
                num[depth - 1] += a >= depth
    out.histogram = hist
    if out.drafted_steps:
        out.shape = (TREE if is_tree else CHAIN) if depths_known else UNKNOWN
    while den and not den[-1]:  # depths drafted but never reached with the tokens before accepted
        den.pop()
    if depths_known and den:
        out.per_position = [n / d if d else None for n, d in zip(num, den)]
        out.reached = den
    return out


def record_profile(records: Iterable) -> AcceptanceProfile:
    """``acceptance_profile`` of ``specbench.results.record.Record`` objects."""
    return acceptance_profile((r.accept_lengths, r.draft_sizes, r.draft_depths) for r in records)
