"""Replayed tau of several drafter configurations against the AR outputs of finished runs.

Script::

    python tests/benchmarks/replay_drafters.py --runs RUN[,RUN] --tasks gsm8k[,humaneval] \\
        --drafter 'chat=dresd:text_format=chat' --drafter 'qa=dresd:text_format=qa' \\
        --drafter 'rest=rest:corpus=gsm8k_train;max_tokens=100000'

Each ``--drafter LABEL=METHOD:K=V;K=V`` is built through the method registry exactly as a run would
build it for the task (cached default datastores included). Greedy verification accepts the longest
tree path equal to the AR continuation, so the forward passes of a run are replayed from the AR output
(``tests/replay_accept.py``). Drafters that read the target's hidden state (DReSD) get the
final-norm hidden state of one teacher-forced pass over prompt + AR output at the position that
predicted the root; it equals the engine's incremental state up to float rounding, so a neighbour at a
near-tie distance may differ and the replayed tau is close to, not identical with, the runner's
(``tests/benchmarks/draft_stats.py`` on a real run gives the measured figure). Prints, per (label,
task), the figures ``draft_stats.py`` prints: tau, nodes per drafted step, accepted draft tokens per
step without the bonus.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (tests/: replay_accept)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rest_retrieval import run_prompts  # noqa: E402
from draft_stats import summarize  # noqa: E402

from specbench.engine.drafter import BaseDrafter, DraftContext  # noqa: E402


class HiddenReplay(BaseDrafter):
    """Wraps a drafter: fills ``ctx.hidden`` from precomputed states and records tree sizes."""

    def __init__(self, drafter, hidden: np.ndarray) -> None:
        self.drafter, self.hidden, self.sizes = drafter, hidden, {}  # context length -> tree nodes

    def begin(self, prompt_ids) -> None:
        self.drafter.begin(prompt_ids)

    def propose(self, ctx: DraftContext):
        h = torch.from_numpy(self.hidden[len(ctx.tokens) - 2])  # [h]: the position that predicted the root
        tree = self.drafter.propose(DraftContext(ctx.tokens, ctx.prompt_len, h, ctx.max_depth))
        self.sizes[len(ctx.tokens)] = len(tree) if tree is not None else 0
        return tree


def parse_drafter(spec: str) -> tuple[str, str, dict[str, str]]:
    """``'chat=dresd:text_format=chat;k=50'`` -> ("chat", "dresd", {"text_format": "chat", "k": "50"})."""
    label, rest = spec.split("=", 1)
    method, _, opts = rest.partition(":")
    return label, method, dict(kv.split("=", 1) for kv in opts.split(";") if kv)


def main(argv: list[str]) -> int:
    from specbench_methods.dresd.datastore.embed import embed_batch
    from replay_accept import replay
    from specbench.models.loading import load_model
    from specbench.paths import cache_dir, default_data_dir
    from specbench.run.method_env import MethodEnv
    from specbench.run.methods_factory import build_drafter

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", required=True, help="comma-separated run folders holding AR records")
    p.add_argument("--tasks", required=True, help="comma-separated tasks")
    p.add_argument("--drafter", action="append", required=True, help="LABEL=METHOD:K=V;K=V (repeatable)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    args = p.parse_args(argv)
    lm = load_model("embedded", "float32", "cpu")
    specs = [parse_drafter(s) for s in args.drafter]
    for task in args.tasks.split(","):
        items = [it for run in args.runs.split(",") for it in run_prompts(Path(run), lm.tokenizer, task)[0]]
        if not items:
            continue
        hidden = [embed_batch(lm.model, [prompt + ar])[0] if any(m == "dresd" for _, m, _ in specs) else None
                  for prompt, ar in items]
        for label, method, opts in specs:
            env = MethodEnv.for_task(lm, default_data_dir(), cache_dir(), task)
            drafter, _ = build_drafter(method, opts, env)
            recs = []
            for (prompt, ar), h in zip(items, hidden):
                wrapped = HiddenReplay(drafter, h if h is not None else np.zeros((len(prompt) + len(ar), 1), np.float32))
                lengths = replay(wrapped, prompt, ar, args.max_new_tokens)
                ctx_len = len(prompt) + np.cumsum(lengths)  # context length before each decode pass
                sizes = [0] + [wrapped.sizes.get(int(n), 0) for n in ctx_len[:-1]]
                recs.append({"new_tokens": sum(lengths), "accept_lengths": lengths, "draft_sizes": sizes,
                             "lossless_class": "replay"})
            s = summarize(recs)
            print(f"{label:14s} {task:10s} n {s['n']:3d}  tau {s['tau']:.3f}  nodes/step {s['nodes_per_step']:5.1f}  "
                  f"drafted {s['drafted']:.2f}  acc/step {s['acc_per_step']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
