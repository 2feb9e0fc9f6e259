"""Helpers of the fault-injection tests: the CLI in-process with its one-line contract, tiny runs, damaged
files and fake run folders."""
from __future__ import annotations

import json
import os
from pathlib import Path

from specbench.cli import main

ROOT = Path(__file__).resolve().parent.parent


def cli(argv: list[str], capsys) -> tuple[int, str]:
    """Exit code and stderr of ``specbench ARGV`` in-process, asserting the one-line contract on exit 2."""
    code, _out, err = cli_out(argv, capsys)
    return code, err


def cli_out(argv: list[str], capsys) -> tuple[int, str, str]:
    """``cli`` with the standard output too: (exit code, stdout, stderr)."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse errors
        code = e.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    if code == 2:  # progress lines of the model loader may precede it: the error is one line, and the last
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and err.splitlines()[-1] == errors[0] and "Traceback" not in err, err
    return code, captured.out, err


def run_args(model: Path, out: Path, name: str = "r", tokens: int = 4, *extra: str) -> list[str]:
    """``specbench run`` of AR and PLD on one GSM8K question of ``model`` into ``out/name``."""
    return ["run", "--model", str(model), "--tasks", "gsm8k", "--limit", "1", "--methods", "pld",
            "--max-new-tokens", str(tokens), "--warmup", "0", "--out-dir", str(out), "--run-name", name,
            "--no-progress", "--device", "cpu", *extra]


def flip_middle(path: Path, n: int = 4096, keep_mtime: bool = False) -> None:
    """Overwrite ``n`` bytes in the middle of ``path`` in place (same size); ``keep_mtime`` restores its
    modification time afterwards, as a careful tamperer or a silent disk error would leave it."""
    st = path.stat()
    size = st.st_size
    with path.open("r+b") as fh:
        fh.seek(size // 2)
        block = fh.read(n)
        fh.seek(size // 2)
        fh.write(bytes(255 - b for b in block))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


DEFAULT_MANIFEST = {"config": {"dtype": "float32", "methods": ["ar", "pld"]}, "config_digest": "x",
                    "questions": {"gsm8k": ["1"]}}


def fake_run(run_dir: Path, records: list[dict | str] | None = None, manifest: str | dict | None = None) -> Path:
    """A run folder with ``records`` (dicts, or raw strings as lines) and a manifest (a dict, raw text, or
    by default ``DEFAULT_MANIFEST``: methods ar and pld on GSM8K question 1)."""
    run_dir.mkdir(parents=True)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest if manifest is not None else DEFAULT_MANIFEST)
    (run_dir / "manifest.json").write_text(text)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records or []]
    (run_dir / "records.jsonl").write_text("".join(line + "\n" for line in lines))
    return run_dir


def record(method: str, ids: list[int], cls: str | None = None, **kw) -> dict:
    """A schema-2 record of ``method`` on GSM8K question 1 emitting ``ids`` (``cls``: its lossless class)."""
    rec = {"schema_version": 2, "method": method, "task": "gsm8k", "subtask": "GSM8K", "task_version": "1",
           "question_id": "1", "category": "", "turn": 1, "repeat": 0, "prompt_tokens": 3, "new_tokens": len(ids),
           "wall_time_s": 0.1, "forward_passes": len(ids), "draft_time_s": 0.0, "verify_time_s": 0.1,
           "accept_lengths": [1] * len(ids), "draft_sizes": [0] * len(ids), "draft_times_s": [0.0] * len(ids),
           "output_ids": ids, "lossless": None if cls is None else cls == "exact", "lossless_class": cls,
           "first_divergence": None, "ar_margin": None}
    return rec | kw
