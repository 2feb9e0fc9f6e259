"""``check``'s timing half: every speedup cell against the plausibility rule and every record against the stall
tests, in each view a reader has of the run (specbench's own methods against ``ar``, an engine's rows against
``engine:off``; every batch size or concurrency level), one line per finding.

Exit 1 (as a lossless MISMATCH: the run's figures are not to be trusted) on an implausible cell or a stalled
generation; the last line counts what was looked at: ``plausibility: 24 cells checked, 0 implausible; 0 stalled
generations``. Speedups here are point estimates (no bootstrap: the rule compares the figure, not its interval).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specbench.results.loaded_run import ALL, ENGINE, OWN, Run, has_engine, load_run, subject_view
from specbench.results.plausibility import Verdict, counts_line, judge
from specbench.results.stalls import stalled
from specbench.results.stats import run_stats


def _views(whole: Run) -> list[tuple[str, Run]]:
    """(prefix of its lines, view) for every view of the run: the engine's named, batch sizes above 1 named."""
    subjects = [("", subject_view(whole, OWN))] + ([("engine ", subject_view(whole, ENGINE))]
                                                   if has_engine(whole.records) else [])
    out = []
    for name, view in subjects:
        sizes = view.batch_sizes()
        level = "concurrency" if name else "batch size"
        for size in sizes:
            tag = f"{name}{level} {size}: " if sizes != [1] else name and f"{name}rows: "
            out.append((tag, view.at_batch(size) if sizes != [1] else view))
    return out


@dataclass(frozen=True)
class TimingFindings:
    """What the timing check found: one line per implausible cell and per stalled record, and the count line."""

    implausible: list[str]
    stalled: list[str]
    counts: str

    @property
    def failed(self) -> bool:
        return bool(self.implausible or self.stalled)

    def lines(self) -> list[str]:
        return [f"IMPLAUSIBLE {x}" for x in self.implausible] + [f"STALLED {x}" for x in self.stalled] + [self.counts]

    def verdict(self) -> str:
        """The failing verdict line (``failed`` only)."""
        return (f"FAIL: {len(self.implausible)} implausible cell(s), {len(self.stalled)} stalled generation(s): "
                "those timings are not a result")


def timing_check(run_dir: str | Path) -> TimingFindings:
    """Every view's cells judged and every record looked at for a stall."""
    whole = load_run(run_dir, every_batch=True, stored_labels=True, subject=ALL)
    verdicts: list[Verdict] = []
    implausible: list[str] = []
    for tag, view in _views(whole):
        found = judge(run_stats(view, n_boot=0))
        verdicts += found
        implausible += [f"{tag}{v.reason()}" for v in found if v.implausible]
    stalls = [s.line() for s in stalled(whole.records)]
    counts = f"{counts_line(verdicts)}; {len(stalls)} stalled generation{'s' if len(stalls) != 1 else ''}"
    return TimingFindings(implausible, stalls, counts)
