"""DReSD variant sweep: one AR generation per prompt, then every variant, timed in the same process.

    python -m methods.dresd.sweep --tasks gsm8k --limit 5 --max-new-tokens 64 \\
        --variant 10x10:datastore=DIR/ood-{corpus} --variant 3x6:datastore=DIR/ood-{corpus},num_drafts=3,draft_len=6

Each ``--variant NAME:KEY=VALUE,...`` is a set of ``dresd`` options. Prints one row per variant:
acceptance rate (accepted / drafted nodes), tau (tokens per forward pass), draft ms per step and
speedup (AR wall time / variant wall time over the same prompts). Output must equal AR (checked).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch


def _parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition(":")
    opts = dict(item.split("=", 1) for item in rest.split(",") if item) if rest else {}
    return name, opts


def main(argv: list[str] | None = None) -> int:
    from tabulate import tabulate

    from specbench.config import cache_dir, default_data_dir
    from specbench.engine.loop import Engine
    from specbench.method_env import MethodEnv
    from specbench.methods_factory import build_drafter
    from specbench.model import load_model, stop_token_ids
    from specbench.registry import TASKS
    from specbench.task import encode_prompt

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="gsm8k")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--variant", action="append", required=True)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    lm = load_model("embedded", "float32", "cpu")
    engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model))
    data_dir = default_data_dir()
    variants = [_parse_variant(v) for v in args.variant]
    stats = {name: {"wall": 0.0, "ar_wall": 0.0, "tokens": 0, "passes": 0, "accepted": 0, "drafted": 0, "draft_s": 0.0,
                    "mismatch": 0, "gens": 0} for name, _ in variants}
    for task_name in args.tasks.split(","):
        task = TASKS.get(task_name)()
        drafters = {}
        for name, opts in variants:
            env = MethodEnv(lm.model, lm.tokenizer, lm.model_id, lm.device, data_dir, cache_dir(), task_name)
            drafters[name] = build_drafter("dresd", opts, env)[0]
        questions = task.load(data_dir)[: args.limit]
        warm = encode_prompt(lm.tokenizer, task.messages(questions[0], 0, []))
        engine.generate(warm, None, 16)
        for q in questions:
            prompt = encode_prompt(lm.tokenizer, task.messages(q, 0, []))  # first turn only
            t = time.perf_counter()
            ar = engine.generate(prompt, None, args.max_new_tokens)
            ar_wall = time.perf_counter() - t
            for name, drafter in drafters.items():
                t = time.perf_counter()
                gen = engine.generate(prompt, drafter, args.max_new_tokens)
                s = stats[name]
                s["wall"] += time.perf_counter() - t
                s["ar_wall"] += ar_wall
                s["tokens"] += len(gen.output_ids)
                s["passes"] += gen.forward_passes
                s["accepted"] += sum(gen.accept_lengths) - gen.forward_passes
                s["drafted"] += sum(gen.draft_sizes)
                s["draft_s"] += sum(gen.draft_times_s)
                s["mismatch"] += gen.output_ids != ar.output_ids
                s["gens"] += 1
            print(f"{task_name}/{q.question_id} done", flush=True)
    rows = []
    for name, s in stats.items():
        rows.append([name, s["gens"], round(s["accepted"] / max(1, s["drafted"]), 3), round(s["tokens"] / max(1, s["passes"]), 3),
                     round(s["drafted"] / max(1, s["passes"] - s["gens"]), 1), round(s["draft_s"] / max(1, s["passes"]) * 1e3, 2),
                     round(s["ar_wall"] / s["wall"], 3), s["mismatch"]])
    print(tabulate(rows, headers=["variant", "gens", "accept rate", "tau", "nodes/step", "draft ms/step", "speedup", "mismatch"]))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "stats": stats}, indent=1))
    return 0


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    raise SystemExit(main())
