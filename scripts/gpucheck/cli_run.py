"""Step 3: the real CLI (``run_bench.py``) end to end on a small random-weight Llama saved to disk, at batch
sizes 1 and 4, each drafting method with its default budget and ``budget=auto`` (which measures this
machine's cost profile of that model first): records, manifest, report, CUDA-synchronised timers, TTFT
(``prefill_time_s``) and peak memory all run. It runs as a child process, so a hang stops at the step's
time limit and a crash is the child's exit status, not this script's.

Example of its figures::

    {"exit": 0, "records": 72, "mismatch": 0, "tie": 1, "ttft_s": 0.004, "peak_memory_mb": 41.2,
     "files": ["manifest.json", "records.jsonl", "report.md", "summary.json"]}
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from every_method import CORPUS_TEXTS
from hub_fixtures import vicuna_like_tokenizer

ROOT = Path(__file__).resolve().parents[2]
METHODS = "pld,suffix,eagle"  # a model-free drafter, a learning one, a hidden-state head on the device
EXPECTED_FILES = ("manifest.json", "records.jsonl", "report.md", "summary.json")
# one-turn questions, enough for full batches of 4 (a batch size needs at least as many questions)
QUESTIONS = [{"id": f"c{i}", "turns": [CORPUS_TEXTS[i % 3][: 12 + 3 * i]]} for i in range(8)]


def save_small_llama(out: Path, hidden: int) -> Path:
    """A 4-layer random Llama of width ``hidden`` over the character tokenizer, saved in ``out``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = vicuna_like_tokenizer()
    torch.manual_seed(7)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=1, eos_token_id=None, pad_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def run_cli(root: Path, device: str, dtype: str, hidden: int, max_new_tokens: int, limit: int,
            time_limit_s: float) -> dict[str, Any]:
    """Run ``run_bench.py`` on the small Llama; its exit status, record counts and timer figures."""
    model = save_small_llama(root / "small-llama", hidden)
    tasks = root / "cli-questions.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    argv = [sys.executable, str(ROOT / "run_bench.py"), "--model", str(model), "--tasks", f"jsonl:{tasks}",
            "--methods", METHODS, "--method-opt", "eagle.checkpoint=random", "--limit", str(limit),
            "--max-new-tokens", str(max_new_tokens), "--batch-size", "1,4", "--budget", "both",
            "--device", device, "--dtype", dtype, "--chat-template", "raw", "--warmup", "1", "--no-progress",
            "--out-dir", str(root / "cli-runs"), "--run-name", "cli"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=time_limit_s)
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": f"stopped at its time limit of {time_limit_s:.0f} s"}
    out: dict[str, Any] = {"exit": done.returncode}
    if done.returncode != 0:
        out["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    out.update(run_figures(root / "cli-runs" / "cli"))
    return out


def run_figures(run_dir: Path) -> dict[str, Any]:
    """Record counts and timer figures of the run folder ``run_dir`` (what the check reads from it)."""
    path = run_dir / "records.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    ttft = [r["prefill_time_s"] for r in recs if r.get("prefill_time_s") is not None]
    peaks = [r["peak_memory_bytes"] for r in recs if r.get("peak_memory_bytes")]
    return {"records": len(recs), "mismatch": sum(r.get("lossless_class") == "MISMATCH" for r in recs),
            "tie": sum(r.get("lossless_class") == "tie" for r in recs),
            "methods": sorted({r["method"] for r in recs}), "batch_sizes": sorted({r.get("batch_size") or 1 for r in recs}),
            "ttft_s": round(sorted(ttft)[len(ttft) // 2], 5) if ttft else None,
            "peak_memory_mb": round(max(peaks) / 2**20, 1) if peaks else None,
            "peak_memory_kind": next((r.get("peak_memory_kind") for r in recs if r.get("peak_memory_kind")), None),
            "files": sorted(f for f in EXPECTED_FILES if (run_dir / f).is_file())}
