"""Engine AR vs transformers' greedy ``model.generate`` on the embedded model (same prompts, same tokens).

Run: ``make bench-ar`` (or ``pytest tests/benchmarks/bench_ar_vs_generate.py --benchmark-enable -s``).
``test_interleaved_ar_vs_generate`` is the figure to quote: for each round and prompt it times the
engine (default backend, on its own copy of the model, since that backend packs weights in place) and
transformers' ``generate`` on the untouched model, alternating which goes first, and prints both
tokens/s and their ratio. The two single-sided benchmarks below are kept for pytest-benchmark's own
statistics; compare ratios from one run, never absolute times across runs.
"""
import copy
import statistics
import time

import pytest
import torch

from specbench.engine.loop import Engine
from specbench.models.loading import load_model
from specbench.prompts.task import encode_prompt

NEW_TOKENS = 128
ROUNDS = 3
PROMPTS = (
    "Explain in a few sentences why the sky is blue.",
    "Write a Python function that checks whether a string is a palindrome.",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
)


@pytest.fixture(scope="module")
def setup():
    lm = load_model("embedded", "float32", "cpu")
    prompts = [encode_prompt(lm.tokenizer, [{"role": "user", "content": p}]) for p in PROMPTS]
    engine = Engine(copy.deepcopy(lm.model), set())  # no EOS: both sides emit exactly NEW_TOKENS
    return lm, prompts, engine


def _generate(lm, prompt: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return lm.model.generate(torch.tensor([prompt]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=False, pad_token_id=lm.tokenizer.pad_token_id)


def _interleaved(lm, prompts, engine) -> dict[str, float]:
    engine.generate(prompts[0], None, 8)  # warm-up both sides
    _generate(lm, prompts[0][:8])
    times: dict[str, list[float]] = {"engine": [], "generate": []}
    for r in range(ROUNDS):
        for i, prompt in enumerate(prompts):
            order = ("engine", "generate") if (r + i) % 2 == 0 else ("generate", "engine")
            for side in order:
                t = time.perf_counter()
                if side == "engine":
                    assert len(engine.generate(prompt, None, NEW_TOKENS).output_ids) == NEW_TOKENS
                else:
                    assert _generate(lm, prompt).shape[1] == len(prompt) + NEW_TOKENS
                times[side].append(time.perf_counter() - t)
    tps = {side: NEW_TOKENS / statistics.median(ts) for side, ts in times.items()}
    ratios = [g / e for e, g in zip(times["engine"], times["generate"])]
    return {"engine_tokens_per_s": tps["engine"], "generate_tokens_per_s": tps["generate"],
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}


@pytest.mark.benchmark(group="ar-vs-generate-interleaved")
def test_interleaved_ar_vs_generate(benchmark, setup):
    lm, prompts, engine = setup
    result = benchmark.pedantic(_interleaved, args=(lm, prompts, engine), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print(f"\n[bench-ar] backend {engine.backend.name}, {NEW_TOKENS} new tokens, {len(prompts)} prompts x {ROUNDS} "
          f"rounds: engine {result['engine_tokens_per_s']:.1f} tok/s, generate {result['generate_tokens_per_s']:.1f} "
          f"tok/s, engine/generate speed ratio median {result['ratio_median']:.2f} "
          f"(per pair {result['ratio_min']:.2f}-{result['ratio_max']:.2f})")
    assert result["ratio_median"] > 0


@pytest.mark.benchmark(group="ar-vs-generate")
def test_engine_ar(benchmark, setup):
    _, prompts, engine = setup
    out = benchmark.pedantic(engine.generate, args=(prompts[0], None, NEW_TOKENS), rounds=3, warmup_rounds=1)
    assert len(out.output_ids) == NEW_TOKENS


@pytest.mark.benchmark(group="ar-vs-generate")
def test_transformers_generate(benchmark, setup):
    lm, prompts, _ = setup
    out = benchmark.pedantic(_generate, args=(lm, prompts[0]), rounds=3, warmup_rounds=1)
    assert out.shape[1] == len(prompts[0]) + NEW_TOKENS
