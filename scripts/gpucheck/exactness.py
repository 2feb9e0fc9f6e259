"""Step 2: every registered method, run by the real ``Runner`` on tiny random models of four families in
each dtype, must match AR: 0 MISMATCH records (ties, where the dtype allows them, are counted per method).

The options that build every method on a tiny model are the tests' (``tests/every_method.py``); the model
is ``tests/hub_fixtures.tiny_family_dir``'s (a character tokenizer, so no hub). Example of one cell's result::

    {"family": "llama", "dtype": "bfloat16", "methods": {"pld": {"exact": 4, "tie": 1, "MISMATCH": 0}, ...}}
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from every_method import QUESTIONS, every_method_options
from hub_fixtures import tiny_family_dir
from specbench.config.run_config import RunConfig
from specbench.plugins.registry import METHODS
from specbench.results.run_folder import read_records
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner


def count_classes(records: list[Any]) -> dict[str, dict[str, int]]:
    """method -> lossless class -> records (AR, whose class is null, left out).

    >>> from types import SimpleNamespace as R
    >>> count_classes([R(method="pld", lossless_class="tie"), R(method="ar", lossless_class=None)])
    {'pld': {'exact': 0, 'tie': 1, 'MISMATCH': 0}}
    """
    out: dict[str, dict[str, int]] = {}
    for r in records:
        if r.lossless_class is not None:
            cell = out.setdefault(r.method, {"exact": 0, "tie": 0, "MISMATCH": 0})
            cell[r.lossless_class] = cell.get(r.lossless_class, 0) + 1
    return out


def run_cell(root: Path, family: str, dtype: str, device: str, methods: tuple[str, ...],
             max_new_tokens: int, limit: int, backend: str = "auto") -> dict[str, Any]:
    """Run ``methods`` on a tiny ``family`` model in ``dtype`` on ``device`` through ``backend``; the cell's
    per-method counts."""
    model_dir = root / f"model-{family}"
    if not (model_dir / "config.json").is_file():
        tiny_family_dir(model_dir, family, seed=5)
    tasks = root / "questions.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    options = {m: o for m, o in every_method_options(str(model_dir)).items() if m in methods}
    config = RunConfig(methods=methods, tasks=(f"jsonl:{tasks}",), limit=limit, max_new_tokens=max_new_tokens,
                       repeats=1, warmup=0, model=str(model_dir), device=device, dtype=dtype, chat_template="raw",
                       out_dir=str(root / "runs" / f"{family}-{dtype}-{backend}"), method_options=options,
                       backend=backend)
    start = time.perf_counter()
    plan = make_plan(config)
    Runner(plan, run_dir_for(plan), progress=False).execute()
    counts = count_classes(read_records(run_dir_for(plan)))
    missing = sorted(set(methods) - {"ar"} - set(counts))
    return {"family": family, "dtype": dtype, "backend": backend, "methods": counts, "missing": missing,
            "seconds": round(time.perf_counter() - start, 1)}


def all_methods() -> tuple[str, ...]:
    """Every registered method (``ar`` included: the baseline)."""
    return tuple(METHODS.names())
