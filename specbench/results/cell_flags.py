"""Why a figure is not a plain measurement: the one rule every output marks a run's cells by (issue 85).

A cell (a method on a subtask, a category or Overall) carries a ``Flag`` for each reason, a short ``mark`` its table
writes beside the figure (``1.21x ±0.08 (stalled) (partial)``) and a one-line ``note`` listed under the table:

- ``implausible``: above what its passes allow, or far below what its work explains (``results.plausibility``);
- ``stalled``: a generation whose time it carries was stopped or starved (``results.stalls``: a baseline record's
  stall touches every method's cells of its subtask and Overall, a method's its own);
- ``partial``: the run lacks records its plan expects, or a process still writes it (``results.progress``), or it
  was merged from unfinished shards (``merge --partial``);
- ``forced merge: model, backend``: shards that differed were merged with ``--force``; the mark names what differed
  (the manifest's ``merge_forced_keys``; older merges: read from ``merge_forced_differences``' lines);
- ``machine not idle``: other processes kept cores busy during the run (``profiling.machine_state``);
- ``sampled`` (projection only, ``SAMPLED``): a run at temperature > 0, whose drafts a projection prices as greedy.

``run_stats`` sets every cell's ``flags`` (``flag_cells``), so ``report``, ``summary.*``, ``compare``, the
leaderboard and ``project`` all read the same ones; ``flag_notes`` gives the lines under a table.

>>> from types import SimpleNamespace as C
>>> manifest = {"merge_forced_differences": ["a vs b: model.id differs", "a vs b: backend differs ('x' != 'y')"]}
>>> [f.mark for f in run_flags(C(path=Path("/nonexistent"), manifest=manifest, records=[], every=None))]
['forced merge: model, backend']
>>> cell = C(implausible=None, flags=())
>>> cell.flags = (Flag("stalled", "stalled: ar gsm8k/1 turn 1 repeat 0: ..."),)
>>> flag_notes({"pld": {"GSM8K": cell}})
['stalled: ar gsm8k/1 turn 1 repeat 0: ...']
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.catalog import OVERALL, is_baseline
from specbench.profiling.machine_state import machine_note
from specbench.results.progress import progress_of
from specbench.results.stalls import stalled

IMPLAUSIBLE, STALLED, PARTIAL, FORCED_MERGE, NOT_IDLE, SAMPLED = (
    "implausible", "stalled", "partial", "forced merge", "machine not idle", "sampled")
FORCED_KEYS = "merge_forced_keys"  # the merged manifest's list of what differed (``results.merge``)
HARD_KEYS = ("model", "backend")  # forced merges ``check`` fails unless ``--allow-forced-merge``


@dataclass(frozen=True)
class Flag:
    """One reason a figure is not a plain measurement: its table mark and its note."""

    mark: str
    note: str

    @property
    def kind(self) -> str:
        """``forced merge`` for ``forced merge: model``; the mark itself otherwise."""
        return self.mark.split(":")[0]


def forced_keys(manifest: dict[str, Any]) -> list[str]:
    """What differed between the shards of a forced merge (empty: not one).

    >>> forced_keys({"merge_forced_differences": ["a vs b: model.id, model.hash differ", "shards [1, 1] do not cover"]})
    ['model', 'shards']
    """
    keys = manifest.get(FORCED_KEYS)
    if isinstance(keys, list):
        return [str(k) for k in keys]
    out: list[str] = []
    for line in manifest.get("merge_forced_differences") or []:
        found = re.match(r"(?:.*? vs [^:]*: )?(\w+)", str(line))
        key = found.group(1) if found else "manifest"
        out += [] if key in out else [key]
    return out


def forced_merge_check(manifest: dict[str, Any], allow: bool) -> tuple[int, list[str]]:
    """``check``'s word on a forced merge: (1, a FAIL line) for one of different models or backends unless ``allow``,
    else (0, a FORCED MERGE line), (0, []) for no forced merge.

    >>> forced_merge_check({"merge_forced_keys": ["model"]}, allow=False)[0]
    1
    >>> forced_merge_check({"merge_forced_keys": ["git_commit"]}, allow=False)
    (0, ['FORCED MERGE: shards that differ in git_commit were merged with --force; its figures are marked'])
    """
    keys = forced_keys(manifest)
    if not keys:
        return 0, []
    hard = [k for k in keys if k in HARD_KEYS]
    if hard and not allow:
        return 1, [f"FAIL: a forced merge of shards that differ in {', '.join(hard)}: its figures are not one "
                   f"{' on one '.join(hard)}'s (merge_forced_differences in its manifest); pass --allow-forced-merge "
                   "to accept it"]
    tag = " (allowed)" if hard else ""
    return 0, [f"FORCED MERGE{tag}: shards that differ in {', '.join(keys)} were merged with --force; its figures "
               "are marked"]


def run_flags(run: Any) -> list[Flag]:
    """The flags of a whole run (every cell carries them): partial, forced merge, machine not idle."""
    out = []
    progress = progress_of(run)
    merged_partial = run.manifest.get("partial")
    if progress is not None and progress.partial:
        out.append(Flag(PARTIAL, f"{PARTIAL}: {run.path.name} holds {progress.text()}"))
    elif isinstance(merged_partial, dict):
        out.append(Flag(PARTIAL, f"{PARTIAL}: {run.path.name} was merged from unfinished shards "
                                 f"({merged_partial.get('records')} of {merged_partial.get('planned')} records)"))
    keys = forced_keys(run.manifest)
    if keys:
        lines = "; ".join(map(str, run.manifest.get("merge_forced_differences") or []))
        out.append(Flag(f"{FORCED_MERGE}: {', '.join(keys)}",
                        f"{FORCED_MERGE}: {run.path.name} merges shards that differ ({lines or ', '.join(keys)})"))
    busy = machine_note(run.manifest)
    if busy:
        out.append(Flag(NOT_IDLE, busy.replace("**", "").replace("Machine not idle:", f"{NOT_IDLE}:", 1)))
    return out


def _stall_flags(run: Any, cells: dict[str, dict[str, Any]], by_category: bool) -> dict[tuple[str, str], list[Flag]]:
    """(method, cell key) -> the stalls whose time the cell carries."""
    category = {(r.method, r.unit): r.category for r in run.records}
    out: dict[tuple[str, str], list[Flag]] = {}
    for s in stalled(run.records):
        key = category.get((s.method, s.unit), "") if by_category else s.subtask
        methods = list(cells) if is_baseline(s.method) else [s.method]
        for m in methods:
            for where in (key, OVERALL):
                out.setdefault((m, where), []).append(Flag(STALLED, f"{STALLED}: {s.line()}"))
    return out


def flag_cells(run: Any, stats: dict[str, dict[str, Any]], by_category: bool = False) -> None:
    """Set every cell's ``flags`` (implausible first, then stalled, then the run's own); ``stats`` is judged."""
    whole = run_flags(run)
    stalls = _stall_flags(run, stats, by_category)
    for method, cells in stats.items():
        for key, c in cells.items():
            own = [Flag(IMPLAUSIBLE, f"{IMPLAUSIBLE}: {c.implausible}")] if c.implausible else []
            c.flags = tuple(own + stalls.get((method, key), []) + whole)


def sampled_flag(manifest: dict[str, Any]) -> Flag | None:
    """``sampled`` for a run at temperature > 0 (projection only: its drafts are priced as greedy ones)."""
    from specbench.engine.sampling_config import manifest_sampling

    sampling = manifest_sampling(manifest)
    if sampling.greedy:
        return None
    return Flag(SAMPLED, f"{SAMPLED}: the run sampled at temperature {sampling.temperature}; a projection prices its "
                         "drafts as greedy ones")


def marks(flags: Any) -> str:
    """What a table writes after a figure: `` (implausible) (stalled)``, each mark once; empty without flags.

    >>> marks((Flag("stalled", "x"), Flag("stalled", "z"), Flag("partial", "y")))
    ' (stalled) (partial)'
    """
    return "".join(f" ({m})" for m in dict.fromkeys(f.mark for f in flags or ()))


def flag_notes(stats: dict[str, dict[str, Any]]) -> list[str]:
    """Each distinct note of the cells' flags but ``implausible`` (listed on its own), in order."""
    notes = [f.note for cells in stats.values() for c in cells.values() for f in getattr(c, "flags", ()) or ()
             if f.kind != IMPLAUSIBLE]
    return list(dict.fromkeys(notes))
