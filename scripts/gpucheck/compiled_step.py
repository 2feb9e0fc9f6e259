"""The ``compiled`` backend's steps (``--only compiled`` runs the environment and these alone, in one 8-minute call):

1. **T(n), compiled against eager**: the Llama-7B-shaped random model in bfloat16 (``profile_curve.LLAMA_7B``)
   after 1k cached tokens, one forward of ``n`` rows at the row buckets on ``fast`` (eager, preallocated cache)
   and on ``compiled`` (inductor; CUDA graphs on CUDA), against the floor: the weights one forward reads over the
   device's measured read bandwidth (``specbench.profiling.measure``). Sizes are compiled smallest first and the
   step stops, saying so, at its budget (each shape compiles once, tens of seconds for a 7B model).
2. **The CLI under both backends**: the same ``run_bench.py`` command (a small random Llama, pld and eagle, B = 1)
   with ``--backend fast`` and with ``--backend compiled``: each method's speedup under both, whether their
   ranking changes, 0 MISMATCH, and what the compiled run compiled (its manifest's ``backend_compile``).
3. **Exactness through ``compiled``**: every method on tiny random Llamas in float32, bfloat16 and float16
   (``exactness.run_cell`` with ``backend="compiled"``), until the step's budget.

CPU smoke mode: a tiny Llama, dynamo's ``eager`` compiler, few sizes (seconds).

Example of step 1's figures::

    {"floor_ms": 2.81, "bandwidth_gb_s": 4790.0, "eager_ms": {"1": 32.6, ...}, "compiled_ms": {"1": 3.9, ...},
     "t1_over_floor": {"eager": 11.6, "compiled": 1.39}}
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
CLI_METHODS = "pld,eagle"
# drafts with the target's own layers skipped, which the compiled backend refuses in one line (caps.skips_layers)
SELF_DRAFTING = ("swift",)


def _timed_forward(target: Any, cache: Any, ids: torch.Tensor, context: int, repeats: int) -> float:
    """Median seconds of one forward of ``ids`` after ``context`` cached positions (cache trimmed back each time)."""
    from specbench.engine.backends.kv_cache import trim_cache
    from specbench.models.device import synchronize

    times = []
    for i in range(repeats + 3):  # 3 untimed: compile, CUDA graph warm-up, recording
        synchronize(target.device)
        t = time.perf_counter()
        target.run(ids, cache, context, hidden=False)
        synchronize(target.device)
        if i >= 3:
            times.append(time.perf_counter() - t)
        trim_cache(cache, context, [])
    return sorted(times)[len(times) // 2]


def curve(model: Any, backend: Any, context: int, sizes: tuple[int, ...], deadline: float) -> dict[str, float]:
    """Milliseconds of a forward of each size on ``backend`` (stopping at ``deadline``)."""
    backend.prepare(model)
    target = backend.target(model)
    cache = backend.new_cache(model, context + max(sizes))
    gen = torch.Generator().manual_seed(0)
    vocab = int(model.config.vocab_size)
    with torch.inference_mode():
        target.run(torch.randint(0, vocab, (1, context), generator=gen).to(target.device), cache, 0,
                   last_logits_only=True, hidden=False)
        out = {}
        for n in sizes:
            if time.monotonic() > deadline:
                break
            ids = torch.randint(0, vocab, (1, n), generator=gen).to(target.device)
            out[str(n)] = round(_timed_forward(target, cache, ids, context, 5) * 1e3, 3)
    return out


def t_of_n(device: str, smoke: bool, deadline: float) -> dict[str, Any]:
    """Step 1 (module docstring)."""
    from gpucheck.profile_curve import LLAMA_7B, TINY, build_model
    from specbench.engine.backends.compiled.backend import CompiledBackend
    from specbench.engine.backends.compiled.options import CompileOptions
    from specbench.engine.backends.torch_backends import resolve_backend
    from specbench.profiling.measure import measure_read_bandwidth, weight_bytes_per_forward

    shape, context = (TINY, 32) if smoke else (LLAMA_7B, 1024)
    dtype = torch.float32 if smoke else torch.bfloat16
    sizes = (1, 2, 4) if smoke else (1, 2, 4, 8, 16, 32, 64)
    model = build_model(shape, device, dtype, context + 64)
    bandwidth = measure_read_bandwidth(torch.device(device), 64 if smoke else 2048)
    floor_ms = weight_bytes_per_forward(model) / bandwidth * 1e3
    eager = curve(model, resolve_backend("fast", torch.device(device), dtype), context, sizes, deadline)
    options = CompileOptions.from_env({"SPECBENCH_COMPILER": "eager"} if smoke else {}, device.split(":")[0])
    started = time.monotonic()
    compiled = curve(model, CompiledBackend(options), context, sizes, deadline)
    figures = {"shape": "tiny" if smoke else "llama-7b", "dtype": str(dtype)[6:], "context": context,
               "bandwidth_gb_s": round(bandwidth / 1e9, 1), "floor_ms": round(floor_ms, 3), "eager_ms": eager,
               "compiled_ms": compiled, "compiled_with_compile_s": round(time.monotonic() - started, 1),
               "t1_over_floor": {k: round(v["1"] / floor_ms, 2) for k, v in (("eager", eager), ("compiled", compiled))
                                 if "1" in v}}
    if len(compiled) < len(sizes):
        figures["error"] = f"stopped after {len(compiled)} of {len(sizes)} compiled sizes: past its time budget"
    return figures


def speedups(run_dir: Path) -> dict[str, float]:
    """Each method's speedup in a run folder: AR's total wall seconds over the method's, on the same units."""
    recs = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines() if line.strip()]
    wall: dict[str, float] = {}
    for r in recs:
        wall[r["method"]] = wall.get(r["method"], 0.0) + r["wall_time_s"]
    return {m: round(wall["ar"] / w, 3) for m, w in sorted(wall.items()) if m != "ar" and "ar" in wall}


def cli_both(root: Path, device: str, smoke: bool, time_limit_s: float) -> dict[str, Any]:
    """Step 2 (module docstring): the same command on ``fast`` and on ``compiled``."""
    from gpucheck.cli_run import QUESTIONS, run_figures, save_small_llama

    model = save_small_llama(root / "small-llama-compiled", 64 if smoke else 256)
    tasks = root / "compiled-questions.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    env = {**os.environ, "SPECBENCH_COMPILE_BUCKETS": "1,4,16,64"} | ({"SPECBENCH_COMPILER": "eager"} if smoke else {})
    out: dict[str, Any] = {}
    deadline = time.monotonic() + time_limit_s
    for backend in ("fast", "compiled"):
        argv = [sys.executable, str(ROOT / "run_bench.py"), "--model", str(model), "--tasks", f"jsonl:{tasks}",
                "--methods", CLI_METHODS, "--method-opt", "eagle.checkpoint=random", "--limit", "4",
                "--max-new-tokens", "32", "--device", device, "--dtype", "float32" if smoke else "float16",
                "--backend", backend, "--chat-template", "raw", "--warmup", "1", "--no-progress",
                "--out-dir", str(root / "compiled-runs"), "--run-name", backend]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env,
                                  timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            out[backend] = {"exit": None, "error": "stopped at its time limit"}
            continue
        run_dir = root / "compiled-runs" / backend
        figures = {"exit": done.returncode, **run_figures(run_dir)}
        if done.returncode != 0:
            figures["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        else:
            figures["speedup"] = speedups(run_dir)
            manifest = json.loads((run_dir / "manifest.json").read_text())
            figures["compiled"] = [{k: c[k] for k in ("shapes", "seconds", "first_use")}
                                   for c in manifest.get("backend_compile", [])]
        out[backend] = figures
    ranks = {b: sorted(f.get("speedup", {}), key=lambda m: -f["speedup"][m]) for b, f in out.items()}
    out["ranking_changes"] = ranks.get("fast") != ranks.get("compiled")
    return out


def exact_compiled(work: Path, device: str, methods: tuple[str, ...], deadline: float, smoke: bool) -> dict[str, Any]:
    """Step 3 (module docstring): cells of tiny Llamas through ``--backend compiled`` until ``deadline``."""
    from gpucheck.exactness import run_cell

    os.environ["SPECBENCH_COMPILE_BUCKETS"] = "1,4,16,64"  # (a cell compiles 4 shapes, not 7)
    if smoke:
        os.environ["SPECBENCH_COMPILER"] = "eager"
    methods = tuple(m for m in methods if m not in SELF_DRAFTING)
    cells, stopped = [], None
    for dtype in ("float32", "bfloat16", "float16"):
        if time.monotonic() > deadline:
            stopped = f"stopped before {dtype}: past its time budget"
            break
        cells.append(run_cell(work / "compiled", "llama", dtype, device, methods, 12 if smoke else 24, 1,
                              backend="compiled"))
    for name in ("SPECBENCH_COMPILE_BUCKETS", "SPECBENCH_COMPILER"):
        os.environ.pop(name, None)
    return {"cells": cells, "stopped": stopped}
