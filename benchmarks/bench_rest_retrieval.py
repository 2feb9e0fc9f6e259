"""REST/CREST retrieval latency on a built datastore, over contexts cut from held-out text.

Script: ``python benchmarks/bench_rest_retrieval.py --datastore DIR [--crest DIR] [--steps 500]``
prints median / mean / p95 latency of one REST step (longest-suffix search + continuations + top-c trie)
and of one CREST lookup. Under pytest (``pytest benchmarks/bench_rest_retrieval.py --benchmark-enable``)
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from methods.rest import RESTConfig, rest_tree  # noqa: E402
from specbench.datastore.suffix_array import TokenDatastore  # noqa: E402


def heldout_contexts(tokenizer, steps: int, seed: int = 0) -> list[list[int]]:
    """Context windows (64 tokens) cut at random places from GSM8K test answers and HumanEval prompts."""
    from specbench.config import default_data_dir

    texts: list[str] = []
    data = default_data_dir()
    if data is not None and (data / "gsm8k" / "test.jsonl").is_file():
        for line in (data / "gsm8k" / "test.jsonl").read_text().splitlines()[:400]:
            rec = json.loads(line)
            texts.append(rec["question"] + "\n" + rec["answer"])
    from specbench.corpora import read_gz_jsonl
    from tasks.humaneval import humaneval_file

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datastore", required=True)
    ap.add_argument("--crest", default=None)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args(argv)
    from specbench.model import load_model

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
    from specbench.model import load_model

    tok = load_model("embedded", "float32", "cpu").tokenizer
    ds = TokenDatastore.load(path)
    ctxs = heldout_contexts(tok, 200)
    cfg = RESTConfig()
    benchmark(lambda: [rest_tree(ds, c, cfg) for c in ctxs])


if __name__ == "__main__":
    sys.exit(main())
