"""tau, tree size, draft time and a rough speed of EAGLE configurations on the first turns of three tasks.

Script: ``python tests/benchmarks/eagle_trees.py N CONFIG_JSON [CONFIG_JSON ...]`` (``CONFIG_JSON`` holds
``eagle`` options, ``'{}'`` = the defaults), e.g.
``python tests/benchmarks/eagle_trees.py 3 '{}' '{"tree": "static"}' '{"top_k": 4, "depth": 3, "total_tokens": 10}'``.
Per task it times AR once on the first N questions (turn 1, 128 tokens), then each configuration
once (one short warm-up generation first). The tau figures do not depend on load; the speeds are
single passes taken one after another, so they only indicate a trend. ``specbench run`` measures speed.
"""
from __future__ import annotations

import json
import sys
import time

from specbench.engine.loop import Engine
from specbench.models.loading import load_model, stop_token_ids
from specbench.paths import cache_dir, default_data_dir
from specbench.plugins.discovery import load_plugins
from specbench.plugins.registry import TASKS
from specbench.prompts.task import encode_prompt
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter

TASK_NAMES = ("gsm8k", "mt_bench", "humaneval")
MAX_NEW = 128


def main(argv: list[str]) -> int:
    n, configs = int(argv[0]), [json.loads(a) for a in argv[1:]]
    load_plugins()
    lm = load_model("embedded", "float32", "cpu")
    engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model))
    data = default_data_dir()
    cache = cache_dir()
    for name in TASK_NAMES:
        task = TASKS.get(name)()
        prompts = [encode_prompt(lm.tokenizer, task.messages(q, 0, [])) for q in task.load(data)[:n]]
        t0 = time.perf_counter()
        for p in prompts:
            engine.generate(p, None, MAX_NEW)
        ar_s = time.perf_counter() - t0
        for cfg in configs:
            drafter, _ = build_drafter("eagle", cfg, MethodEnv.for_task(lm, data, cache, name))
            engine.generate(prompts[0], drafter, 16)
            tokens = passes = nodes = 0
            draft_s = 0.0
            t0 = time.perf_counter()
            for p in prompts:
                g = engine.generate(p, drafter, MAX_NEW)
                tokens, passes = tokens + len(g.output_ids), passes + g.forward_passes
                nodes, draft_s = nodes + sum(g.draft_sizes), draft_s + sum(g.draft_times_s)
            speed = ar_s / (time.perf_counter() - t0)
            print(f"{name:10s} {json.dumps(cfg):50s} tau {tokens / passes:.3f}  nodes/pass {nodes / passes:.1f}  "
                  f"draft {1000 * draft_s / passes:.1f} ms/pass  speed {speed:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
