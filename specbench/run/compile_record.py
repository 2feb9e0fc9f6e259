"""A backend's compile record, kept in the manifest once the run's generations are done.

The manifest is written before the first generation, when a compiled backend has compiled nothing; what it
compiled (each shape, its seconds, and whether a warm-up or a generation paid for it) is known only as the run
ends. Each invocation (the first and every resume) appends its backend's ``compile`` summary to
``manifest["backend_compile"]``; a backend that compiles nothing adds nothing.

Example: after a ``--backend compiled`` run, ``manifest["backend_compile"]`` ->
``[{"shapes": 7, "seconds": 41.2, "first_use": 0, "entries": [...]}]``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.files.jsonfile import write_json_atomic
from specbench.results.run_folder import MANIFEST_FILE, read_manifest

COMPILE_KEY = "backend_compile"


def record_compile(run_dir: Path, described: dict[str, Any]) -> None:
    """Append ``described["compile"]`` (a backend's ``describe``) to the manifest's ``backend_compile``."""
    summary = described.get("compile")
    if summary is None or not (run_dir / MANIFEST_FILE).is_file():
        return
    manifest = read_manifest(run_dir)
    manifest.setdefault(COMPILE_KEY, []).append(summary)
    write_json_atomic(run_dir / MANIFEST_FILE, manifest, indent=2)
