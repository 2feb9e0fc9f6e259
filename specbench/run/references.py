"""A run's lossless references and the verdict of every record against them.

Two baselines can be in one run: specbench's ``ar`` (the reference of its own methods, and the turn-1 answers
later turns are prompted with, for every row) and, with ``--engine``, the engine's ``engine:off`` (the reference of
the engine's rows: an engine's speculation must reproduce the engine's own greedy output). A baseline record of
repeat 0 at batch size (concurrency) 1 becomes the reference of its unit; every other record of a greedy run is
classified against its baseline's (``results.lossless.classify``). The tie rule's margin comes from AR's recorded
margins (recomputed on the run's own target when missing), or, for an engine row, from the engine where the two
outputs diverge (``margin_at``: untimed, the speculation-off server's two most likely tokens there).

Example: ``refs.checked(record_of_pld, unit, prompt)`` -> the record with ``lossless_class`` "exact" when its ids
equal AR's; ``refs.mismatches`` counts the MISMATCH verdicts of this invocation and of the records resumed.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from specbench.catalog import BASELINE, reference_method
from specbench.engine.margins import recorded_or_recomputed
from specbench.results.lossless import MISMATCH, classify
from specbench.results.record import Record, Unit


class References:
    """The references of one run; ``target`` (the AR-margin forward) and ``margin_at`` (an engine's) are read
    when a divergence needs its margin."""

    def __init__(self, greedy: bool, threshold: float, target: Any = None,
                 margin_at: Callable[[str, list[int], list[int], int], float | None] | None = None) -> None:
        self.greedy, self.threshold, self.target, self.margin_at = greedy, threshold, target, margin_at
        self.ar_outputs: dict[Unit, list[int]] = {}  # AR outputs of repeat 0: references and turn-2 context
        self.ar_margins: dict[Unit, list[float] | None] = {}  # their per-token top-2 margins (lossless ties)
        self.engine_outputs: dict[Unit, list[int]] = {}  # engine:off's: the references of the engine's rows
        self.mismatches = 0

    def resume(self, records: list[Record]) -> None:
        """Take the references and the MISMATCH count of a resumed run's records."""
        for r in records:
            self._keep(r)
            self.mismatches += r.lossless_class == MISMATCH

    def _keep(self, rec: Record) -> bool:
        """Keep ``rec`` as its unit's reference if it is one (a baseline's, repeat 0, batch size 1)."""
        baseline = reference_method(rec.method)
        if rec.method != baseline or rec.unit != rec.unit.reference():
            return False
        if baseline == BASELINE:
            self.ar_outputs[rec.unit], self.ar_margins[rec.unit] = rec.output_ids, rec.token_margins
        else:
            self.engine_outputs[rec.unit] = rec.output_ids
        return True

    def checked(self, rec: Record, unit: Unit, prompt: list[int]) -> Record:
        """``rec`` with its lossless verdict against its baseline's output of ``unit.reference()`` (greedy runs);
        a baseline's record of repeat 0 at batch size 1 becomes that reference instead."""
        if self._keep(rec):
            return rec
        baseline, ref_unit = reference_method(rec.method), unit.reference()
        if not self.greedy or (rec.method == baseline and unit.batch == 1):
            return rec  # sampled outputs differ from AR's by design: checked in distribution instead
        if baseline == BASELINE:
            ref = self.ar_outputs[ref_unit]
            margin = recorded_or_recomputed(self.ar_margins.get(ref_unit), self.target, prompt, ref)
        else:  # an engine's row against its own engine:off
            ref = self.engine_outputs[ref_unit]
            margin = lambda i: self.margin_at(baseline, prompt, ref, i) if self.margin_at else None  # noqa: E731
        result = classify(ref, rec.output_ids, margin, self.threshold)
        self.mismatches += result.lossless_class == MISMATCH
        return dataclasses.replace(rec, **result.as_record())
