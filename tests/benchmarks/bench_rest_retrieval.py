"""REST/CREST retrieval latency on a built datastore, over contexts cut from held-out text.

Script: ``python tests/benchmarks/bench_rest_retrieval.py --datastore DIR [--crest DIR] [--steps 500]``
prints median / mean / p95 latency of one REST step (longest-suffix search + continuations + top-c trie)
and of one CREST lookup. ``--sweep-run RUN_DIR --rest A,B --crest-dirs C,D`` instead replays the AR
outputs of a finished run through each datastore (``tests/replay_accept.py``) and prints tau vs
bytes on disk, plus the replayed tau of the run's own rest/crest configs next to the measured one. Under pytest (``pytest tests/benchmarks/bench_rest_retrieval.py --benchmark-enable``)
the same step is timed by pytest-benchmark when ``SPECBENCH_BENCH_DATASTORE`` names a datastore.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (tests/: replay_accept)

from specbench_methods.rest import RESTConfig, rest_tree  # noqa: E402
from specbench.datastore.suffix_array import TokenDatastore  # noqa: E402


def heldout_contexts(tokenizer, steps: int, seed: int = 0) -> list[list[int]]:
    """Context windows (64 tokens) cut at random places from GSM8K test answers and HumanEval prompts."""
    from specbench.paths import default_data_dir

    texts: list[str] = []
    data = default_data_dir()
    if data is not None and (data / "gsm8k" / "test.jsonl").is_file():
        for line in (data / "gsm8k" / "test.jsonl").read_text().splitlines()[:400]:
            rec = json.loads(line)
            texts.append(rec["question"] + "\n" + rec["answer"])
    from specbench.datastore.corpora import read_gz_jsonl
    from specbench_tasks.humaneval import humaneval_file

    texts += [r["prompt"] for r in read_gz_jsonl(humaneval_file())]
    ids = [s for s in tokenizer(texts, add_special_tokens=False)["input_ids"] if len(s) > 70]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        seq = ids[int(rng.integers(len(ids)))]
        end = int(rng.integers(64, len(seq)))
        out.append(seq[end - 64 : end])
    return out


def time_steps(fn, contexts) -> np.ndarray:
    lat = []
    for ctx in contexts:
        t = time.perf_counter()
        fn(ctx)
        lat.append(time.perf_counter() - t)
    return np.asarray(lat) * 1e3


def summary(name: str, lat_ms: np.ndarray, hits: int) -> str:
    return (f"{name}: median {np.median(lat_ms):.3f} ms, mean {lat_ms.mean():.3f} ms, p95 {np.percentile(lat_ms, 95):.3f} ms, "
            f"drafted on {hits}/{len(lat_ms)} steps")


def run_prompts(run_dir: Path, tokenizer, task_filter: str | None = None) -> tuple[list[tuple[list[int], list[int]]], dict]:
    """(prompt ids, AR output ids) of every AR record of a run (earlier turns from AR answers)."""
    from specbench.paths import default_data_dir
    from specbench.plugins.registry import TASKS
    from specbench.prompts.task import encode_prompt
    from specbench.results.run_folder import read_manifest, read_records

    records = read_records(run_dir)
    ar = {(r.task, r.question_id, r.turn): r for r in records if r.method == "ar" and r.repeat == 0}
    if task_filter:
        ar = {k: v for k, v in ar.items() if k[0] == task_filter}
    tasks = {name: TASKS.get(name)() for name in {k[0] for k in ar}}
    questions = {(name, q.question_id): q for name, t in tasks.items() for q in t.load(default_data_dir())}
    out = []
    for (task, qid, turn), rec in sorted(ar.items()):
        answers = [tokenizer.decode(ar[(task, qid, t)].output_ids, skip_special_tokens=True) for t in range(1, turn)]
        prompt = encode_prompt(tokenizer, tasks[task].messages(questions[(task, qid)], turn - 1, answers))
        assert len(prompt) == rec.prompt_tokens, (task, qid, turn)
        out.append((prompt, list(rec.output_ids)))
    return out, read_manifest(run_dir)


def replay_tau(drafter, items, max_new: int) -> float:
    from replay_accept import replay

    lengths = [x for prompt, ar in items for x in replay(drafter, prompt, ar, max_new)]
    return sum(lengths) / len(lengths)


def sweep(args, tok) -> int:
    from specbench_methods.crest import CRESTDrafter
    from specbench_methods.rest import RESTDrafter
    from specbench.datastore.ngram_store import NgramStore
    from specbench.results.run_folder import read_records

    items, manifest = run_prompts(Path(args.sweep_run), tok, args.task)
    max_new = int(manifest["config"]["max_new_tokens"]) if "config" in manifest else 128
    recs = [r for r in read_records(Path(args.sweep_run)) if not args.task or r.task == args.task]
    for method in ("rest", "crest"):
        mine = [r for r in recs if r.method == method]
        if mine:
            measured = sum(r.new_tokens for r in mine) / sum(r.forward_passes for r in mine)
            print(f"measured tau of {method} in the run: {measured:.3f} ({len(mine)} records)")
    print(f"replaying {len(items)} AR outputs (max_new_tokens {max_new})")
    print("| kind | datastore | tokens or keys | bytes on disk | tau |")
    print("|---|---|---|---|---|")
    for path in [p for p in (args.rest or "").split(",") if p]:
        ds = TokenDatastore.load(path, vocab_size=len(tok))
        tau = replay_tau(RESTDrafter(ds, RESTConfig()), items, max_new)
        print(f"| REST | {Path(path).name} | {ds.n_tokens:,} tokens | {ds.nbytes_on_disk():,} | {tau:.3f} |", flush=True)
    for path in [p for p in (args.crest_dirs or "").split(",") if p]:
        store = NgramStore(path, vocab_size=len(tok))
        tau = replay_tau(CRESTDrafter(store), items, max_new)
        print(f"| CREST t={store.header['top_t']} | {Path(path).name} | {store.header['n_keys']:,} keys | {store.nbytes_on_disk():,} | {tau:.3f} |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datastore", default=None)
    ap.add_argument("--crest", default=None)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--sweep-run", default=None, help="replay this run's AR outputs through the datastores")
    ap.add_argument("--rest", default=None, help="(sweep) comma-separated REST datastore dirs")
    ap.add_argument("--crest-dirs", default=None, help="(sweep) comma-separated CREST datastore dirs")
    ap.add_argument("--task", default=None, help="(sweep) only this task's records")
    args = ap.parse_args(argv)
    if args.sweep_run:
        from specbench.models.loading import load_model

        return sweep(args, load_model("embedded", "float32", "cpu").tokenizer)
    if not args.datastore:
        ap.error("--datastore is required (or --sweep-run)")
    from specbench.models.loading import load_model

    tok = load_model("embedded", "float32", "cpu").tokenizer
    t = time.perf_counter()
    ds = TokenDatastore.load(args.datastore, vocab_size=len(tok))
    print(f"opened {args.datastore} ({ds.n_tokens:,} tokens, {ds.nbytes_on_disk():,} bytes) in {1e3 * (time.perf_counter() - t):.1f} ms")
    ctxs = heldout_contexts(tok, args.steps)
    cfg = RESTConfig()
    time_steps(lambda c: rest_tree(ds, c, cfg), ctxs[:20])  # warm the page cache
    lat = time_steps(lambda c: rest_tree(ds, c, cfg), ctxs)
    print(summary("REST step", lat, sum(rest_tree(ds, c, cfg) is not None for c in ctxs)))
    if args.crest:
        from specbench.datastore.ngram_store import NgramStore

        store = NgramStore(args.crest, vocab_size=len(tok))
        lat = time_steps(store.lookup, ctxs)
        print(summary(f"CREST lookup ({store.header['n_keys']:,} keys, {store.nbytes_on_disk():,} bytes)", lat,
                      sum(store.lookup(c) is not None for c in ctxs)))
    return 0


def test_rest_step_benchmark(benchmark) -> None:  # pragma: no cover - opt-in benchmark
    import pytest

    path = os.environ.get("SPECBENCH_BENCH_DATASTORE")
    if not path:
        pytest.skip("set SPECBENCH_BENCH_DATASTORE to a built REST datastore")
    from specbench.models.loading import load_model

    tok = load_model("embedded", "float32", "cpu").tokenizer
    ds = TokenDatastore.load(path)
    ctxs = heldout_contexts(tok, 200)
    cfg = RESTConfig()
    benchmark(lambda: [rest_tree(ds, c, cfg) for c in ctxs])


if __name__ == "__main__":
    sys.exit(main())
