"""The cost of a batched forward: T_A(m), seconds of one forward of ``A`` sequences with ``m`` new rows each.

A batched step pads every sequence to the longest draft (``engine/batch_inputs.py``), so its cost is a
function of the batch size ``A`` and the rows per sequence ``m``, after each sequence's cached context.
``budget=auto`` at batch size A (``budget/auto.py``, ``select_batch``) weighs the whole batch's
expected tokens against T_A(m): a draft that pays alone can cost the other sequences their step.

Measured with the engine's own batched forward (``BatchedCache``, chain rows) for every batch size a run
uses, after each of ``cost_profile.CONTEXTS`` cached tokens, and cached beside the single-sequence profile
(``$SPECBENCH_CACHE/profiles/<key>-batch.json``, the same key); a run copies what it used into its folder
(``batch_profile.json``). No unit test may measure the embedded model: tests inject these curves.

Example: ``{"4": {"128": {"1": 0.046, "8": 0.071}}}``: 4 sequences of 1 row cost 46 ms, of 8 rows 71 ms.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.batch_inputs import batch_inputs
from specbench.engine.tree import CompiledTree
from specbench.engine.backends.target import TargetModel
from specbench.errors import ConfigError
from specbench.files.jsonfile import read_json, save_json
from specbench.models.device import synchronize
from specbench.profiling.cost_profile import cost_function

ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # new rows per sequence
REPEATS = 5
FORMAT = 1

BatchCost = Callable[[int, Any, Any], Any]  # (batch size, rows per sequence, context) -> seconds


def measure_batch_curve(model: Any, slots: int, context: int, rows: tuple[int, ...] = ROWS, repeats: int = REPEATS,
                        warmup: int = 2, backend: str = "auto", seed: int = 0) -> dict[int, float]:
    """Median seconds of a batched forward of ``slots`` sequences with ``m`` new rows each, after ``context``."""
    param = next(model.parameters())
    resolve_backend(backend, param.device, param.dtype).prepare(model)
    target = TargetModel(model)
    vocab = int(model.config.vocab_size)
    gen = torch.Generator().manual_seed(seed)
    times: dict[int, list[float]] = {m: [] for m in rows}
    with torch.inference_mode():
        cache = BatchedCache(slots, context + max(rows) + 1)
        for slot in range(slots):  # each sequence's context, one prefill each
            ids = torch.randint(0, vocab, (1, context), generator=gen).to(target.device)
            _run(target, cache, slot, [CompiledTree(ids, None, None, [], [])])
            cache.keep(slot, [list(range(context))])
        for i in range(warmup + repeats):  # rounds over every size: drift hits all sizes alike
            for m in rows:
                trees = [CompiledTree(torch.randint(0, vocab, (1, m), generator=gen).to(target.device), None, None, [], [])
                         for _ in range(slots)]
                synchronize(target.device)
                t = time.perf_counter()
                _run(target, cache, 0, trees)
                synchronize(target.device)
                if i >= warmup:
                    times[m].append(time.perf_counter() - t)
    return {m: statistics.median(ts) for m, ts in times.items()}


def _run(target: TargetModel, cache: BatchedCache, lo: int, trees: list[CompiledTree]) -> None:
    rows = trees[0].input_ids.shape[1]
    plan = cache.plan_step(lo, lo + len(trees), rows, target.device)
    ids, pos, mask = batch_inputs(trees, cache.lengths[lo : lo + len(trees)], plan.span, target.device, target.dtype,
                                  target.layout)
    target.forward_batch(ids, cache, pos, mask)


def cached_batch_costs(lm: Any, backend: str, profile_path: Path, sizes: list[int],
                       contexts: tuple[int, ...], quiet: bool = False) -> dict[str, Any]:
    """The batch curves of ``sizes`` beside the single-sequence profile at ``profile_path`` (measured now
    for the sizes the cached file lacks)."""
    path = profile_path.with_name(profile_path.stem + "-batch.json")
    data = load_batch_costs(path) if path.is_file() else {"format": FORMAT, "batch_curves": {}}
    missing = [a for a in sizes if str(a) not in data["batch_curves"]]
    for a in missing:
        if not quiet:
            print(f"[specbench] measuring batched forwards of {a} sequences for budget=auto (once; cached in {path})",
                  file=sys.stderr)
        data["batch_curves"][str(a)] = {str(c): {str(m): t for m, t in measure_batch_curve(lm.model, a, c,
                                                                                       backend=backend).items()}
                                        for c in contexts}
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_json(data, path)
    return data


def load_batch_costs(path: Path) -> dict[str, Any]:
    """A batch-curves file; a ``ConfigError`` naming it unless every curve maps counts to finite positive seconds."""
    try:
        data = read_json(path, "batch cost curves file")
    except ConfigError as e:
        raise ConfigError(f"{e}; delete it to measure them again") from None
    curves = data.get("batch_curves")
    ok = isinstance(curves, dict) and all(
        isinstance(by_ctx, dict) and all(isinstance(c, dict) and c and all(
            isinstance(t, (int, float)) and np.isfinite(t) and t > 0 for t in c.values()) for c in by_ctx.values())
        for by_ctx in curves.values())
    if not ok:
        raise ConfigError(f"{path}: malformed batch cost curves; delete it to measure them again")
    return data


def batch_cost_function(data: dict[str, Any], fallback: Callable[..., Any]) -> BatchCost:
    """``cost(A, m, context)``: the curve of batch size ``A`` read as a cost profile (``cost_profile.py``:
    linear between measured rows and contexts); a size not measured: ``fallback(A * m, context)``."""
    per_size = {int(a): cost_function({"latency_s": by[min(by, key=int)], "latency_by_context_s": by})
                for a, by in data.get("batch_curves", {}).items()}

    def cost(a: int, m: Any, context: Any = None) -> Any:
        f = per_size.get(int(a))
        return fallback(int(a) * np.asarray(m, dtype=float), context) if f is None else f(m, context)

    return cost
