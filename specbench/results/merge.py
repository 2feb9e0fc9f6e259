"""Merging the shard folders of a distributed run (``--shard k/N``) into one run folder.

Shards must agree on everything that defines the work and the machine: model (id, hash, dtype),
config (except its shard), method configs, artifacts (paths ignored), task versions, hardware,
software versions and git commit. Otherwise ``merge_runs`` raises ``MergeError`` listing every
difference. Records are concatenated (a record key present in two shards is an error); the manifest
of the first shard is kept with the union of questions and a ``merged_from`` list.

Each shard must also be finished: every record its manifest plans present, and no process holding its lock
(``progress``). An unfinished shard is a one-line ``MergeError`` unless ``partial``, which merges what is there
and records ``partial`` in the merged manifest (``{"records", "planned", "running", "shards"}``).

A merge forced past differences (``force``) keeps them in ``merge_forced_differences`` (one line each) and what
differed in ``merge_forced_keys`` (``["model", "backend"]``): every figure of the merged run is then marked
``(forced merge: model, backend)`` (``results.cell_flags``), and ``check`` fails a forced merge of different models or
backends unless ``--allow-forced-merge``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.errors import writing
from specbench.files.jsonfile import write_json_atomic
from specbench.profiling.machine_state import pooled_machine_state
from specbench.results.cell_flags import FORCED_KEYS, forced_keys
from specbench.results.progress import run_progress
from specbench.results.record import Record
from specbench.results.run_folder import MANIFEST_FILE, RECORDS_FILE, UNRUNNABLE, read_manifest, write_records
from specbench.results.validation import read_validated_records

# per-shard or per-machine-path keys that may differ between shards
IGNORED_KEYS = {"timestamp", "command", "shard", "config_digest", "run_name", "questions", "turns", "resumed", "data_dir",
                "merged_from", "verified_files", "machine_state", UNRUNNABLE,
                "host_s"}  # (host_s: a timing of this process's host, measured anew by every shard)
IGNORED_CONFIG_KEYS = {"shard", "run_name", "out_dir", "data_dir", "verify"}


class MergeError(ValueError):
    """Shards that cannot be merged (message lists why)."""


def _strip_paths(obj: Any) -> Any:
    """``obj`` without dict keys that name local paths (they legitimately differ between machines)."""
    if isinstance(obj, dict):
        return {k: _strip_paths(v) for k, v in obj.items() if "path" not in k and "dir" not in k}
    if isinstance(obj, list):
        return [_strip_paths(v) for v in obj]
    return obj


def comparable_view(manifest: dict[str, Any]) -> dict[str, Any]:
    """The parts of a manifest that must be identical across shards."""
    view = {k: v for k, v in manifest.items() if k not in IGNORED_KEYS}
    view["config"] = {k: v for k, v in (manifest.get("config") or {}).items() if k not in IGNORED_CONFIG_KEYS}
    view["artifacts"] = _strip_paths(manifest.get("artifacts") or {})
    view["model"] = {k: v for k, v in (manifest.get("model") or {}).items() if k != "verified"}  # (its timing varies)
    if "chat_template" in manifest:  # each shard's first question differs; the probe's text must not
        view["chat_template"] = {k: v for k, v in manifest["chat_template"].items() if k != "first_prompt_sha256"}
    return view


def manifest_differences(manifests: list[dict[str, Any]], names: list[str]) -> list[str]:
    """One line per differing top-level (or config) key between the first manifest and each other."""
    base = comparable_view(manifests[0])
    out = []
    for m, name in zip(manifests[1:], names[1:]):
        view = comparable_view(m)
        for key in sorted(set(base) | set(view)):
            if base.get(key) == view.get(key):
                continue
            if isinstance(base.get(key), dict) and isinstance(view.get(key), dict):
                sub = sorted(k for k in set(base[key]) | set(view[key]) if base[key].get(k) != view[key].get(k))
                out.append(f"{names[0]} vs {name}: {key}." + f", {key}.".join(sub) + " differ")
            else:
                out.append(f"{names[0]} vs {name}: {key} differs ({base.get(key)!r} != {view.get(key)!r})")
    return out


def _shard(manifest: dict[str, Any]) -> tuple[int, int] | None:
    s = manifest.get("shard") or (manifest.get("config") or {}).get("shard")
    return (int(s[0]), int(s[1])) if s else None


def unfinished(dirs: list[Path], manifests: list[dict[str, Any]], records: list[list[Record]],
               partial: bool) -> tuple[dict[str, Any] | None, list[str]]:
    """(the merged manifest's ``partial`` entry, or None when every shard finished; the shards whose manifest
    plans nothing countable, an older one). An unfinished shard without ``partial`` is a one-line ``MergeError``."""
    notes, running, unknown, present, planned = [], [], [], 0, 0
    for d, manifest, recs in zip(dirs, manifests, records):
        p = run_progress(d, manifest, recs)
        if p is None:
            unknown.append(d.name)
            continue
        present, planned = present + p.present, planned + p.planned
        if p.partial:
            notes.append(f"{d.name}: {p.text()}")
        if p.running:
            running.append(d.name)
    if notes and not partial:
        raise MergeError(f"unfinished shard(s): {'; '.join(notes)}; resume (re-run) or wait for them, or pass "
                         "--partial to merge the records there")
    entry = {"records": present, "planned": planned, "running": running, "shards": notes} if notes else None
    return entry, unknown


def merge_runs(shard_dirs: list[str | Path], out_dir: str | Path, force: bool = False,
               partial: bool = False) -> dict[str, Any]:
    """Merge shard folders into ``out_dir`` (must not hold a run); returns the merged manifest. Unfinished
    shards are refused unless ``partial`` (see the module docstring)."""
    dirs = [Path(d) for d in shard_dirs]
    if len(dirs) < 2:
        raise MergeError("merge needs at least two shard folders")
    out = Path(out_dir)
    if (out / MANIFEST_FILE).exists() or (out / RECORDS_FILE).exists():
        raise MergeError(f"output folder already holds a run: {out}")
    manifests = [read_manifest(d) for d in dirs]
    names = [d.name for d in dirs]
    problems = manifest_differences(manifests, names)
    shards = [_shard(m) for m in manifests]
    if all(shards):
        totals = {s[1] for s in shards}  # type: ignore[index]
        got = sorted(s[0] for s in shards)  # type: ignore[index]
        if len(totals) > 1:
            problems.append(f"shards come from different splits: N in {sorted(totals)}")
        elif got != list(range(1, next(iter(totals)) + 1)):
            problems.append(f"shards {got} do not cover 1..{next(iter(totals))} exactly once")
    if problems and not force:
        raise MergeError("cannot merge (use --force to merge anyway):\n  " + "\n  ".join(problems))

    records: list[Record] = []
    seen: dict[tuple, str] = {}
    per_shard = [read_validated_records(d, manifest) for d, manifest in zip(dirs, manifests)]
    partial_entry, unchecked = unfinished(dirs, manifests, per_shard, partial)
    for d, shard_records in zip(dirs, per_shard):
        for r in shard_records:
            key = r.key
            if key in seen:
                raise MergeError(f"record {r.method} {r.unit} is in both {seen[key]} and {d.name} (overlapping shards)")
            seen[key] = d.name
            records.append(r)

    merged = dict(manifests[0])
    questions: dict[str, list[str]] = {}
    turns_of: dict[tuple[str, str], int] = {}
    for m in manifests:
        for task, ids in (m.get("questions") or {}).items():
            questions.setdefault(task, []).extend(i for i in ids if i not in questions.get(task, []))
            counts = (m.get("turns") or {}).get(task) or []
            turns_of.update({(task, str(i)): n for i, n in zip(ids, counts)})
    turns = {t: [turns_of.get((t, str(i))) for i in ids] for t, ids in questions.items()}
    merged.update(
        questions=questions,
        turns=turns if all(n is not None for ns in turns.values() for n in ns) else None,
        shard=None,
        run_name=out.name,
        config_digest=None,
        merged_from=[{"run": n, "shard": list(s) if s else None, "timestamp": m.get("timestamp"),
                      "command": m.get("command"), "config_digest": m.get("config_digest")}
                     for n, s, m in zip(names, shards, manifests)],
        machine_state=pooled_machine_state(manifests),  # every shard's sessions: each ran on its own machine
    )
    if problems:
        merged["merge_forced_differences"] = problems
        merged[FORCED_KEYS] = forced_keys(merged)  # (what differed, for every reader's flag: ``cell_flags``)
    if partial_entry:
        merged["partial"] = partial_entry
    if unchecked:  # older manifests: merged as before, and the command warns
        merged["merge_unchecked_shards"] = unchecked
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    write_records(out / RECORDS_FILE, records)
    write_json_atomic(out / MANIFEST_FILE, merged, indent=2)
    return merged
