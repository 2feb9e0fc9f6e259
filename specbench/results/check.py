"""The lossless regression check of a run folder (``specbench check RUN_DIR`` prints it; exit 1 on any MISMATCH),
and its timing check (``specbench.results.timing_check``: exit 1 on a speedup above what tau allows or a stalled
generation, one line each, and a line counting the cells and records looked at).

For each mismatching record it prints the question, turn, repeat, the first divergent position, the AR
top-2 margin there, and both token windows around the divergence (decoded with the run's tokenizer
when it can be loaded offline, else raw ids). Ties (near-equal AR logits) are listed but do not fail
unless ``--strict``. A sampling run (temperature > 0) cannot match AR token for token: it is checked in
distribution instead (``specbench.results.logprob_check``): a method whose interval excludes AR's is flagged
(exit 1 only with ``--strict``: one sampled generation per question makes the flag a signal, not a proof).

A run missing records its manifest's plan expects (an interrupted or crashed run) fails, naming them,
unless ``--partial``, and says whether a process still runs it (holds its lock: then it is not interrupted); records that do not belong to the run are refused when it is read
(``specbench.results.validation``), token ids beyond the vocabulary included (for manifests from before the
vocabulary size was recorded: the run's tokenizer's, when it can be loaded).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.catalog import is_engine_row, reference_method
from specbench.engine.sampling_config import manifest_sampling
from specbench.errors import UserError
from specbench.results.cell_flags import forced_merge_check
from specbench.results.logprob_check import logprob_stats, logprob_table_rows
from specbench.results.lossless import EXACT, LOSSLESS_CLASSES, MISMATCH, TIE
from specbench.results.record import Record
from specbench.results.relabel import is_checked, rederived, references
from specbench.results.loaded_run import ALL, load_run
from specbench.results.progress import lock_holder
from specbench.results.timing_check import timing_check
from specbench.results.run_folder import UNRUNNABLE, read_numbered_records
from specbench.results.validation import missing_records, validate_records

BEFORE, AFTER = 8, 8  # window of tokens shown around the divergence
MISSING_SHOWN = 5  # missing records named in the failure line


def load_run_tokenizer(manifest: dict[str, Any]) -> Any | None:
    """The run's tokenizer from local files only (embedded model cache, a directory, or the HF cache)."""
    name = (manifest.get("config") or {}).get("model") or (manifest.get("model") or {}).get("id")
    if not name:
        return None
    try:
        from transformers import AutoTokenizer

        if name == "embedded":
            from specbench.models.embedded import embedded_dir

            path = embedded_dir()
            return AutoTokenizer.from_pretrained(str(path)) if (path / "tokenizer_config.json").is_file() else None
        return AutoTokenizer.from_pretrained(str(name), local_files_only=True)
    except Exception:  # any failure just means ids are shown instead of text
        return None


def _show(ids: list[int], tokenizer: Any | None) -> str:
    if tokenizer is None:
        return str(ids)
    return f"{tokenizer.decode(ids)!r} {ids}"


def describe(rec: Record, ar: Record | None, tokenizer: Any | None) -> list[str]:
    """Lines describing one non-exact record against its AR reference."""
    pos = rec.first_divergence
    margin_txt = f"{rec.ar_margin:.3g}" if rec.ar_margin is not None else "n/a"
    head = (f"{(rec.lossless_class or '').upper()} {rec.method} {rec.task}/{rec.question_id} "
            f"turn {rec.turn} repeat {rec.repeat}: first divergence at token {pos}, "
            f"AR top-2 margin {margin_txt}")
    lines = [head]
    if ar is None or pos is None:
        lines.append("  (no AR reference record in this run)")
        return lines
    a, m = ar.output_ids, rec.output_ids
    lo = max(0, pos - BEFORE)
    width = max(7, len(ar.method), len(rec.method))
    lines.append(f"  {'common':<{width}}: {_show(a[lo:pos], tokenizer)}")
    lines.append(f"  {ar.method:<{width}}: {_show(a[pos:pos + AFTER], tokenizer)}")
    lines.append(f"  {rec.method:<{width}}: {_show(m[pos:pos + AFTER], tokenizer)}")
    return lines


def check_ids_against_tokenizer(run: Any) -> None:
    """For a manifest without ``model.vocab_size``: every token id below the run's tokenizer's vocabulary."""
    tokenizer = load_run_tokenizer(run.manifest)
    if tokenizer is not None:
        manifest = {**run.manifest, "model": {**(run.manifest.get("model") or {}), "vocab_size": len(tokenizer)}}
        validate_records(run.path, manifest, read_numbered_records(run.path))


def completeness(run: Any, partial: bool) -> tuple[int, list[str]]:
    """(1 unless ``partial``, lines) when records the manifest's plan expects are missing, else (0, [])."""
    missing = missing_records(run.manifest, run.records)
    if not missing:
        return 0, []
    shown = ", ".join(f"{m} {u}" for m, u in missing[:MISSING_SHOWN]) + (", ..." if len(missing) > MISSING_SHOWN else "")
    running = lock_holder(run.path)  # (a live writer: its missing records are still to come)
    if partial:
        still = f" (still running: {running} holds its lock)" if running else ""
        return 0, [f"PARTIAL: {len(missing)} expected record(s) missing, not checked{still}: {shown}"]
    if running:
        return 1, [f"FAIL: {len(missing)} expected record(s) missing: {shown}; the run is still running ({running} "
                   "holds its lock): check it once it has finished, or pass --partial to check the records so far"]
    stop = run.manifest.get(UNRUNNABLE)
    if isinstance(stop, dict) and stop.get("reason"):  # (a resume would stop at the same place: none is suggested)
        return 1, [f"FAIL: {len(missing)} expected record(s) missing: {shown}; the run stopped where it can never go "
                   f"on ({stop['reason']}): re-running its command stops there again; start another run without that "
                   "question, or pass --partial to check the records there"]
    return 1, [f"FAIL: {len(missing)} expected record(s) missing: {shown} (an interrupted run? re-run its command to "
               "resume it, or pass --partial to check only the records there)"]


def check_run(run_dir: str | Path, strict: bool = False, decode: bool = True,
              partial: bool = False, allow_forced_merge: bool = False) -> tuple[int, list[str]]:
    """(exit code, report lines): 1 if any record is a mismatch (or a tie with ``strict``), or records the
    manifest expects are missing (unless ``partial``), or the run is a forced merge of different models or backends
    (unless ``allow_forced_merge``: ``cell_flags.forced_merge_check``), else 0."""
    run = load_run(run_dir, every_batch=True, stored_labels=True, subject=ALL)  # (to say which labels are wrong)
    if run.manifest.get("imported"):
        raise UserError(f"{run_dir}: {run.manifest['imported'].get('note')}")
    if not run.records:
        running = lock_holder(run.path)
        raise FileNotFoundError(f"run folder has no records: {run_dir}" + (
            f" yet; it is still running ({running} holds its lock)" if running else ""))
    if decode and not (run.manifest.get("model") or {}).get("vocab_size"):
        check_ids_against_tokenizer(run)
    incomplete, missing_lines = completeness(run, partial)
    forced, forced_lines = forced_merge_check(run.manifest, allow_forced_merge)
    incomplete, missing_lines = max(incomplete, forced), _failing_last(missing_lines + forced_lines)
    if not manifest_sampling(run.manifest).greedy:
        code, lines = 0, []
        for size in run.batch_sizes():  # each batch size against AR at the same size
            c, ls = check_sampled(run.at_batch(size), strict)
            code, lines = max(code, c), lines + ([f"batch {size}: {x}" for x in ls] if run.batch_sizes() != [1] else ls)
        return _with_timing(run_dir, max(code, incomplete), _verdict_last(lines, missing_lines))
    refs = references(run.records)
    records = rederived(run.records, run.manifest)  # (the classes every reader sees: ``load_run`` derives them too)
    lines = [f"RELABELLED {r.method} {r.unit}: stored {r.lossless_class}, output ids say "
             f"{d.lossless_class or 'unchecked (no AR reference)'}"
             for r, d in zip(run.records, records) if d.lossless_class != r.lossless_class]
    counts: dict[str, dict[str, int]] = {}
    bad = [r for r in records if r.lossless_class in (MISMATCH, TIE)]
    for r in records:
        if is_checked(r):
            level = "concurrency" if is_engine_row(r.method) else "batch"
            name = r.method if r.unit.batch == 1 else f"{r.method} at {level} {r.unit.batch}"
            c = counts.setdefault(name, dict.fromkeys((*LOSSLESS_CLASSES, "unchecked"), 0))
            c[r.lossless_class or "unchecked"] += 1
    tokenizer = load_run_tokenizer(run.manifest) if decode and bad else None
    for r in sorted(bad, key=lambda r: (r.lossless_class != MISMATCH, r.method, r.task, r.question_id)):
        lines += describe(r, refs.get((reference_method(r.method), r.unit.reference())), tokenizer)
    for method, c in counts.items():
        lines.append(f"{method}: {c[EXACT]} exact, {c[TIE]} tie, {c[MISMATCH]} mismatch"
                     + (f", {c['unchecked']} unchecked" if c["unchecked"] else ""))
    failed = sum(c[MISMATCH] + (c[TIE] if strict else 0) for c in counts.values())
    engine = " (the engine's rows engine:off)" if any(is_engine_row(r.method) for r in records) else ""
    lines.append(f"FAIL: {failed} record(s) not lossless" if failed else f"OK: every method reproduces ar{engine}")
    return _with_timing(run_dir, max(1 if failed else 0, incomplete), _verdict_last(lines, missing_lines))


def _failing_last(lines: list[str]) -> list[str]:
    """The failing lines after the others (``_verdict_last`` makes the first failing one and what follows the
    verdict)."""
    return [x for x in lines if not x.startswith("FAIL")] + [x for x in lines if x.startswith("FAIL")]


def _verdict_last(lines: list[str], missing: list[str]) -> list[str]:
    """The completeness (and forced-merge) lines go before the verdict; failing ones become the verdict."""
    if not missing:
        return lines
    notes = [x for x in missing if not x.startswith("FAIL")]
    failing = missing[len(notes):]
    return lines[:-1] + notes + lines[-1:] + failing


def check_sampled(run: Any, strict: bool = False) -> tuple[int, list[str]]:
    """The distributional sanity check of a sampling run: flags methods whose NLL-ratio interval excludes
    AR's; exit 1 for a flag only with ``strict``.

    A flag is a signal, not a proof: each question has one sampled generation per method, and every method
    is compared with the same AR draws, so one unlucky AR draw flags several methods at once. Losslessness
    in distribution is what ``tests/test_sampling_lossless.py`` proves on exact distributions.
    """
    cells = logprob_stats(run)
    lines = [f"{m}: mean log-prob {mean}, NLL ratio vs AR {ratio}: {status}"
             for m, mean, ratio, status in logprob_table_rows(cells)]
    flagged = [m for m, c in cells.items() if c.flagged]
    lines.append((f"{'FAIL' if strict else 'FLAG'}: {', '.join(flagged)} outside AR's interval (temperature > 0, "
                  "distributional sanity check; one sampled generation per question)") if flagged
                 else "OK: no method's interval excludes AR (temperature > 0, distributional check)")
    return (1 if flagged and strict else 0), lines


def _with_timing(run_dir: str | Path, code: int, lines: list[str]) -> tuple[int, list[str]]:
    """The lossless check's result with the timing check's (``timing_check``) before its verdict, and a failing
    timing check's verdict after it."""
    found = timing_check(run_dir)
    verdict = [found.verdict()] if found.failed else []
    return max(code, int(found.failed)), lines[:-1] + found.lines() + lines[-1:] + verdict
