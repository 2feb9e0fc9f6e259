"""Every engine path in bfloat16 and float16 on the tiny models (CPU runs both): a drafted generation
equals the same-dtype AR output, or diverges only where AR's own recorded top-2 margin says near-tie."""
from __future__ import annotations

import random

import pytest
import torch

from conftest import make_tiny_model
from specbench.engine.margins import margin_at
from specbench.engine.loop import Engine
from specbench.results.lossless import MISMATCH, classify, default_tie_threshold
from test_engine_exact import FAMILIES, OracleDrafter, RandomDrafter

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def lossless_class(ar, gen, dtype: str) -> str:
    margins = ar.token_margins()
    return classify(ar.output_ids, gen.output_ids, lambda pos: margins[pos], default_tie_threshold(dtype)).lossless_class


@pytest.mark.parametrize("backend", ["reference", "fast"])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("family", FAMILIES)
def test_engine_paths_in_half_precision(family, dtype, backend) -> None:
    model = make_tiny_model(family, seed=3).to(DTYPES[dtype])
    engine = Engine(model, stop_ids=set(), backend=backend)
    rng = random.Random(11)
    for trial in (0,):
        prompt = [rng.randrange(64) for _ in range(6)]
        ar = engine.generate(prompt, None, 24, record_margins=True)
        assert len(ar.token_margins()) == len(ar.output_ids) == 24
        for drafter in (RandomDrafter(trial, 64), OracleDrafter(ar.output_ids, len(prompt))):
            gen = engine.generate(prompt, drafter, 24)
            assert sum(gen.accept_lengths) == len(gen.output_ids) == 24
            assert lossless_class(ar, gen, dtype) != MISMATCH, (family, dtype, backend, type(drafter).__name__)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_recorded_margins_equal_a_fresh_forward_in_fp32(family) -> None:
    model = make_tiny_model(family, seed=5)
    engine = Engine(model, stop_ids=set())
    prompt = [3, 1, 4, 1, 5, 9]
    ar = engine.generate(prompt, RandomDrafter(0, 64), 12, record_margins=True)  # emitted through trees too
    fresh = margin_at(engine.target, prompt, ar.output_ids)
    recorded = ar.token_margins()
    assert len(recorded) == 12
    for pos in range(12):
        assert recorded[pos] == pytest.approx(fresh(pos), abs=1e-5)
    assert engine.generate(prompt, None, 12).token_margins() is None  # off unless asked
