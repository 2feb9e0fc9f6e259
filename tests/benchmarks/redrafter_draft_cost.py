"""Within-process A/B of ReDrafter's draft step cost: drafter configurations alternated over real contexts.

Script::

    OMP_NUM_THREADS=1 python tests/benchmarks/redrafter_draft_cost.py --reps 5 \\
        --drafter 'old=draft_vocab=0;dtype=float32' --drafter 'new='

Each ``--drafter LABEL=K=V;K=V`` is built through the method registry (default head unless
``checkpoint=`` is given). Contexts are the held-out positions of the default head's training data
(``data.safetensors``: the target's final-norm hidden state and its argmax as the root), so every
configuration drafts from the same real states. Configurations are timed round-robin per context, many
repetitions, and the medians are printed with the ratio to the first label: on a shared machine only
these within-process ratios mean something. Also prints how often all configurations drafted the same tree.
``--pieces`` first prints each part's share of the first label's draft (recurrence, features, LM head,
log-softmax, top-k per beam step at the step's batch size; the rest is beam bookkeeping and packing).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def pieces(drafter, ctxs: list, reps: int) -> None:
    """Median time of each part of a W=3, L=4 draft as a share of the whole ``propose``."""
    from specbench_methods.redrafter.beam import warped_log_probs

    head, parts, whole = drafter.head, {}, []

    def timed(name: str, fn):
        t = time.perf_counter()
        out = fn()
        parts.setdefault(name, []).append(time.perf_counter() - t)
        return out

    dtype = head.lm_head.weight.dtype
    for _ in range(reps):
        for c in ctxs:
            t = time.perf_counter()
            drafter.propose(c)
            whole.append(time.perf_counter() - t)
            for batch, state in ((1, None), (3, torch.zeros(3, head.config.hidden_size, dtype=dtype))):
                ctx = c.hidden.to(dtype)[None].expand(batch, -1)
                tok = torch.full((batch,), c.tokens[-1])
                with torch.inference_mode():
                    s = timed(f"recurrence B={batch}", lambda: torch.nn.functional.silu(
                        head.rnn_w(head.embed(tok)) + (head.rnn_u(state) if state is not None else 0)))
                    x = timed(f"features B={batch}", lambda: head.features(ctx, s))
                    logits = timed(f"lm_head B={batch}", lambda: head.lm_head(x))
                    logp = timed(f"log_softmax B={batch}", lambda: warped_log_probs(logits, 0))
                    timed(f"topk B={batch}", lambda: torch.topk(logp.reshape(-1), 3))
    total = statistics.median(whole)
    steps = {name: statistics.median(ts) * (1 if name.endswith("B=1") else 2) for name, ts in parts.items()}  # L-1 = 3 steps: 1 of 1 row, 2 of 3
    for name, t in steps.items():
        print(f"  {name:18s} {100 * t / total:5.1f}% of a draft")
    print(f"  {'rest (bookkeeping)':18s} {100 * (1 - sum(steps.values()) / total):5.1f}%")


def main(argv: list[str]) -> int:
    from specbench_methods.redrafter import ReDrafterConfig, default_checkpoint_dir
    from specbench_methods.redrafter.vocab import DATA
    from specbench.engine.drafter import DraftContext
    from specbench.models.loading import load_model
    from specbench.paths import cache_dir, default_data_dir
    from specbench.run.method_env import MethodEnv
    from specbench.run.methods_factory import build_drafter

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--drafter", action="append", required=True, help="LABEL=K=V;K=V (repeatable; the first is the baseline)")
    p.add_argument("--contexts", type=int, default=60, help="held-out positions drafted from")
    p.add_argument("--reps", type=int, default=5, help="passes over the contexts")
    p.add_argument("--pieces", action="store_true", help="also the share of each part of the first label's draft")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    lm = load_model("embedded", "float32", "cpu")
    env = MethodEnv.for_task(lm, default_data_dir(), cache_dir(), "mt_bench")
    drafters = {}
    for spec in args.drafter:
        label, _, opts = spec.partition("=")
        drafters[label] = build_drafter("redrafter", dict(kv.split("=", 1) for kv in opts.split(";") if kv), env)[0]
    from safetensors import safe_open

    with safe_open(str(default_checkpoint_dir(env, ReDrafterConfig()) / DATA), "pt") as f:
        hidden, argmax, starts = f.get_tensor("hidden"), f.get_tensor("argmax"), f.get_tensor("heldout_starts")
    prompt = lm.tokenizer("Hello")["input_ids"]
    ctxs = [DraftContext(prompt + [int(argmax[t])], len(prompt), hidden[t].float(), 8) for t in starts[: args.contexts].tolist()]
    for d in drafters.values():  # warm-up (oneDNN primitive creation)
        for c in ctxs[:5]:
            d.propose(c)
    if args.pieces:
        print(f"parts of a draft of {next(iter(drafters))}:")
        pieces(next(iter(drafters.values())), ctxs, args.reps)
    times: dict[str, list[float]] = {k: [] for k in drafters}
    same = 0
    for _ in range(args.reps):
        for c in ctxs:
            trees = []
            for label, d in drafters.items():
                t = time.perf_counter()
                trees.append(d.propose(c))
                times[label].append(time.perf_counter() - t)
            same += all(tr == trees[0] for tr in trees)
    base = statistics.median(next(iter(times.values())))
    for label, ts in times.items():
        med = statistics.median(ts)
        print(f"{label:12s} median {med * 1e3:7.2f} ms  ratio {med / base:.3f}  ({len(ts)} drafts)")
    print(f"identical trees across all configurations: {same} of {args.reps * len(ctxs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
