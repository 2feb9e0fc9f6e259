"""Each record's lossless class derived again from its output ids, the one way every reader does it: ``check``
compares it with the stored label (and says RELABELLED where they differ), ``load_run`` hands the derived
records to ``report``, ``compare``, ``leaderboard`` and the rest, so a label edited by hand (or a token id edited
under it) counts the same everywhere, and a report never says "0 MISMATCH" where ``check`` fails.

The AR margin cannot be recomputed without the model, so the stored margin counts only where it was measured
at the divergence found now; anything else that differs is a mismatch. A run that wrote its labels itself
derives the same ones again (same ids, same margin, same threshold), so its report is unchanged.

>>> from specbench.results.record import Record
>>> ar = Record("ar", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 4, 0.1, 4, 0.0, 0.1, output_ids=[5, 6, 7, 8])
>>> pld = Record("pld", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 4, 0.1, 2, 0.0, 0.1, output_ids=[5, 6, 9, 8],
...              lossless=True, lossless_class="exact")
>>> [r.lossless_class for r in rederived([ar, pld], {"config": {"dtype": "float32"}})]
[None, 'mismatch']
"""
from __future__ import annotations

import dataclasses
from typing import Any

from specbench.catalog import is_baseline, reference_method
from specbench.engine.sampling_config import manifest_sampling
from specbench.results.lossless import classify, default_tie_threshold, first_divergence
from specbench.results.record import Record, Unit


def tie_threshold(manifest: dict[str, Any]) -> float:
    """The tie threshold the run classified with: its config's, else its dtype's default (older manifests)."""
    config = manifest.get("config") or {}
    stored = config.get("tie_threshold")
    return stored if isinstance(stored, (int, float)) else default_tie_threshold(config.get("dtype", "float32"))


def is_checked(rec: Record) -> bool:
    """Whether ``rec`` carries a lossless verdict: every method's record, and AR's decoded in a batch (AR alone
    at batch size 1 is the reference itself, or a repeat of it); an engine's rows likewise against ``engine:off``."""
    return not is_baseline(rec.method) or rec.unit.batch != 1


def rederive(rec: Record, ar: Record | None, threshold: float) -> Record:
    """``rec`` with its lossless class derived again from the output ids against ``ar`` (the stored label is
    not trusted); without an AR reference, unchecked."""
    if ar is None:
        return dataclasses.replace(rec, lossless=None, lossless_class=None)
    pos = first_divergence(ar.output_ids, rec.output_ids)
    stored = rec.ar_margin if pos is not None and pos == rec.first_divergence else None
    result = classify(ar.output_ids, rec.output_ids, lambda _i: stored, threshold)
    return dataclasses.replace(rec, **result.as_record())


def rederived(records: list[Record], manifest: dict[str, Any]) -> list[Record]:
    """``records`` with every checked record's class derived again (``rederive``), in the same order.

    Runs with nothing to derive are returned as they are: sampled runs (T > 0: outputs differ from AR's by
    design, ``logprob_check`` instead) and imported answers (other software's outputs, no token check)."""
    if manifest.get("imported") or not manifest_sampling(manifest).greedy:
        return records
    refs = references(records)
    threshold = tie_threshold(manifest)
    return [rederive(r, refs.get((reference_method(r.method), r.unit.reference())), threshold) if is_checked(r) else r
            for r in records]


def references(records: list[Record]) -> dict[tuple[str, Unit], Record]:
    """(baseline, unit) -> the baseline's record of repeat 0 (``ar``'s, and an engine's ``engine:off``'s)."""
    return {(r.method, r.unit): r for r in records if is_baseline(r.method) and r.repeat == 0}
