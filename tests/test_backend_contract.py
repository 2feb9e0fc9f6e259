"""Backends, targets, caches and drafters as declared contracts (``engine/backends/contract.py``, ``registry.py``):
a backend defined outside specbench runs every method exactly once registered, and everything that used to test a
backend's name now asks its spec."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

import toy_backend
from conftest import make_tiny_model
from specbench.config.run_config import RunConfig
from specbench.engine.backends import registry as backend_registry
from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.backends.contract import TargetCaps, TrimsRows
from specbench.engine.drafter import BaseDrafter, Drafter
from specbench.engine.backends.kv_cache import PreallocatedCache
from specbench.engine.backends.llamacpp.spec import LLAMACPP
from specbench.engine.loop import Engine
from specbench.engine.backends.target import TargetModel
from specbench.errors import ConfigError
from specbench.reports.labels import backend_label, checked_precision
from test_engine_exact import FAMILIES, RandomDrafter


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, spec in toy_backend.SPECS.items():
        monkeypatch.setitem(backend_registry._SPECS, name, spec)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_registered_backend_runs_drafts_exactly(toy: None, family: str) -> None:
    model = make_tiny_model(family, seed=3)
    backend = resolve_backend("toy", torch.device("cpu"), torch.float32)
    engine, plain = Engine(model, set(), backend), Engine(model, set(), "reference")
    before = toy_backend.ToyCache.trims
    for seed in range(3):
        prompt = [1 + seed, 5, 9, 2]
        want = plain.generate(prompt, None, 16).output_ids
        assert engine.generate(prompt, RandomDrafter(seed, 64), 16).output_ids == want
    assert toy_backend.ToyCache.trims > before  # its own cache kept the accepted rows
    batched = BatchDecoder(engine, 12).generate([Request([1, 2, 3]), Request([4, 5, 6, 7])],
                                               [RandomDrafter(s, 64) for s in range(2)], 2)
    assert [g.output_ids for g in batched] == [plain.generate(p, None, 12).output_ids for p in ([1, 2, 3], [4, 5, 6, 7])]


def test_the_run_configuration_and_reports_ask_the_spec(toy: None) -> None:
    RunConfig(methods=["pld"], backend="toy", batch_size=[1, 2]).validate()
    with pytest.raises(ConfigError, match=r"^--batch-size above 1 does not run on --backend toy-single \(it keeps one "
                                          r"sequence\); use --backend fast$"):
        RunConfig(methods=["pld"], backend="toy-single", batch_size=[1, 2]).validate()
    with pytest.raises(ConfigError, match="one sequence at a time"):
        model = make_tiny_model("llama", seed=3)
        BatchDecoder(Engine(model, set(), resolve_backend("toy-single", torch.device("cpu"), torch.float32)), 4)
    assert backend_label({"backend": {"name": "toy", "kv_cache": "toy"}}) == "toy (toy)"
    assert backend_label({"backend": {"name": "unknown-engine"}}) == "unknown-engine"  # (a run from elsewhere)
    assert checked_precision({"model": {"dtype": "float32"}, "backend": {"name": "toy"}}) == "fp32"


def test_built_in_backends_declare_their_caps() -> None:
    assert TargetModel.caps == TargetCaps(batching=True, intermediate_layers=True, prompt_states_cost=False)
    assert not LLAMACPP.caps.batching and LLAMACPP.caps.prompt_states_cost and not LLAMACPP.caps.intermediate_layers
    assert backend_registry.backend_names()[:3] == ("reference", "fast", "llamacpp")
    assert backend_registry.backend_spec("auto").name == "fast"
    assert isinstance(PreallocatedCache(8), TrimsRows)
    with pytest.raises(ConfigError, match=r" \(q8_0 and q4_1 run on --backend llamacpp\)$"):
        RunConfig(methods=["pld"], dtype="q8_0").validate()
    with pytest.raises(ValueError, match="already registered"):
        backend_registry.register_backend(LLAMACPP)


def test_drafters_declare_their_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    class Declared(BaseDrafter):
        def propose(self, ctx):
            return None

    class Undeclared:  # propose, begin and observe, but no declared capabilities
        def begin(self, prompt_ids): ...

        def propose(self, ctx): ...

        def observe(self, result): ...

    assert isinstance(Declared(), Drafter) and not isinstance(Undeclared(), Drafter)

    from specbench.plugins.registry import METHODS, MethodSpec
    from specbench.run.methods_factory import build_drafter

    METHODS.names()  # discovery first, so the entry added below is not overwritten
    monkeypatch.setitem(METHODS._entries, "undeclared", MethodSpec("undeclared", NoOptions, lambda c, e: Undeclared(),
                                                                   "a drafter without declared capabilities"))
    with pytest.raises(TypeError, match="does not declare the drafter contract"):
        build_drafter("undeclared", {}, None)


@dataclass(frozen=True)
class NoOptions:
    """A method without options."""


def test_doctests_of_the_new_modules() -> None:
    import doctest
    import importlib

    for name in ("specbench.engine.acceptance_stats", "specbench.engine.budget", "specbench.engine.backends.llamacpp.spec",
                 "specbench.training.windows", "specbench.drafting.layers", "specbench.drafting.trees",
                 "replay_accept"):
        module = importlib.import_module(name)
        result = doctest.testmod(module)
        assert result.failed == 0, name
    assert doctest.testmod(importlib.import_module("specbench.engine.backends.llamacpp.spec")).attempted == 2
