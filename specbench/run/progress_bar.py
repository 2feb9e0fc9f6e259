"""The run's progress bar: tqdm, its ETA from the mean rate of the timed generations, seeded with the estimate.

A question's methods run at very different speeds (AR first, then each method), so the ETA divides what is
left by the mean rate since the bar started (``smoothing=0``), not by a recent average; the runner
``unpause``s it after each warm-up, which keeps the warm-up's minutes out of that rate, and the bar is made
after the drafters' first-use builds. Until enough generations are timed the rate also counts
``prior_weight`` generations of the estimate's ``prior_s`` seconds each (``estimate.RunEstimate.per_record_s``),
so the first generation (AR's, the slowest of its question) does not set the ETA alone.

Example: prior 10 s per generation weighted as 4 generations, one generation timed in 20 s: the rate is
(1 + 4) / (20 + 40) generations per second, so 99 generations left take about 1188 s, not 99 x 20 s.
"""
from __future__ import annotations

from typing import Any

from tqdm import tqdm


class SeededBar(tqdm):
    """``tqdm`` (same keyword arguments) whose rate starts from ``prior_s`` seconds per unit (None: tqdm's
    own mean rate) weighted as ``prior_weight`` units."""

    def __init__(self, prior_s: float | None, prior_weight: int, **kwargs: Any) -> None:
        self.prior_s = prior_s if prior_s and prior_s > 0 else None
        self.prior_weight = max(prior_weight, 1)
        super().__init__(smoothing=0, **kwargs)

    @property
    def format_dict(self) -> dict[str, Any]:
        d = super().format_dict
        if self.prior_s is not None and not self.disable:
            timed = self.n - self.initial  # (a resumed run's bar starts at its records: they took no time here)
            d["rate"] = (timed + self.prior_weight) / (d["elapsed"] + self.prior_weight * self.prior_s)
        return d
