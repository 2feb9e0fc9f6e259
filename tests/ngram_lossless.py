"""The lossless check shared by the n-gram drafters that keep state across requests (``ngram-map-k`` and the
types after it): one instance across three requests (as one server slot), two slots batched, and fresh
instances under ``budget=auto``, each equal to AR's output on a tiny family, and each drafting something."""
from __future__ import annotations

from typing import Callable

import numpy as np

from conftest import make_tiny_model
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.drafter import Drafter
from specbench.engine.loop import Engine
from test_engine_exact import greedy_reference


def check_lossless(family: str, make: Callable[[], Drafter]) -> None:
    """Prompts with repeats, one of them the model's own answer between two copies of its prompt."""
    model = make_tiny_model(family, seed=3)
    engine = Engine(model, stop_ids=set())
    base = [5, 9, 2, 7, 7, 1, 3, 4]
    prompts = [base * 3, [11, 4, 6] * 5 + [1, 2], base + greedy_reference(model, base, 24) + base]
    refs = [greedy_reference(model, p, 24) for p in prompts]
    drafter = make()  # one instance across the requests, as one server slot
    alone = [engine.generate(p, drafter, 24) for p in prompts]
    assert [g.output_ids for g in alone] == refs
    assert sum(sum(g.draft_sizes) for g in alone) > 0
    batched = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], [make(), make()], 2, refill=True)
    assert [g.output_ids for g in batched] == refs
    flat = AutoBudget(lambda n, context=None: 1.0 + 0.01 * (np.asarray(n) - 1), calibrate=False)
    auto = [engine.generate(p, make(), 24, budget=flat) for p in prompts]
    assert [g.output_ids for g in auto] == refs and sum(sum(g.draft_sizes) for g in auto) > 0
