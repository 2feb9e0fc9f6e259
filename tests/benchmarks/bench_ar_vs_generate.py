"""Engine AR vs transformers' greedy ``model.generate`` on the embedded model (same prompt, same tokens).

Run: ``make bench-ar`` (or ``pytest tests/benchmarks/bench_ar_vs_generate.py --benchmark-enable``). Both
functions are in one benchmark group so pytest-benchmark prints them side by side; compare the
ratio of their means from the same run, never absolute times across runs.
"""
import pytest
import torch

from specbench.engine.loop import Engine
from specbench.model import load_model
from specbench.task import encode_prompt

NEW_TOKENS = 64
PROMPT = "Explain in a few sentences why the sky is blue."


@pytest.fixture(scope="module")
def setup():
    lm = load_model("embedded", "float32", "cpu")
    prompt = encode_prompt(lm.tokenizer, [{"role": "user", "content": PROMPT}])
    return lm, prompt


@pytest.mark.benchmark(group="ar-vs-generate")
def test_engine_ar(benchmark, setup):
    lm, prompt = setup
    engine = Engine(lm.model, set())  # no EOS: both sides emit exactly NEW_TOKENS
    out = benchmark.pedantic(engine.generate, args=(prompt, None, NEW_TOKENS), rounds=5, warmup_rounds=1)
    assert len(out.output_ids) == NEW_TOKENS


@pytest.mark.benchmark(group="ar-vs-generate")
def test_transformers_generate(benchmark, setup):
    lm, prompt = setup
    ids = torch.tensor([prompt])

    def gen():
        with torch.inference_mode():
            return lm.model.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                                     pad_token_id=lm.tokenizer.pad_token_id)

    out = benchmark.pedantic(gen, rounds=5, warmup_rounds=1)
    assert out.shape[1] == len(prompt) + NEW_TOKENS
