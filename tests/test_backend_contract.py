"""Backends, targets, caches and drafters as declared contracts (``engine/backends/contract.py``, ``registry.py``):
a backend defined outside specbench runs every method exactly once registered, and everything that used to test a
backend's name now asks its spec."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch

import toy_backend
from conftest import make_tiny_model
from specbench.config.run_config import RunConfig
from specbench.engine.backends import registry as backend_registry
from specbench.engine.backends.contract import BackendSpec, TargetCaps, TrimsRows
from specbench.engine.backends.kv_cache import PreallocatedCache
from specbench.engine.backends.llamacpp.spec import LLAMACPP
from specbench.engine.backends.self_draft import SelfDraft
from specbench.engine.backends.target import TargetModel
from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import BaseDrafter, Drafter
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.reports.labels import backend_label, checked_precision
from test_engine_exact import FAMILIES, RandomDrafter

CPU = torch.device("cpu")


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


def test_a_backend_with_the_base_target_alone_runs_one_sequence_and_refuses_the_rest(toy: None) -> None:
    """``toy-plain``'s caps declare no batching and no skipped layers: it decodes exactly, and every optional part
    is refused in one line where it is asked for (the run configuration, the batched loop, a self-drafting view)."""
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, set(), resolve_backend("toy-plain", CPU, torch.float32))
    plain = Engine(model, set(), "reference")
    assert isinstance(engine.target, toy_backend.PlainTarget)
    for seed in range(2):
        prompt = [1 + seed, 5, 9, 2]
        want = plain.generate(prompt, None, 16).output_ids
        assert engine.generate(prompt, RandomDrafter(seed, 64), 16).output_ids == want
    with pytest.raises(ConfigError, match=r"^--batch-size above 1 does not run on --backend toy-plain \(its target has "
                                          r"no batched forward\); use --backend fast$"):
        RunConfig(methods=["pld"], backend="toy-plain", batch_size=[1, 2]).validate()
    with pytest.raises(ConfigError, match=r"^the toy-plain backend decodes one sequence at a time: --batch-size 1$"):
        BatchDecoder(engine, 4)
    with pytest.raises(ConfigError, match=r"^this backend's target has no forward with layers skipped "
                                          r"\(caps.skips_layers is False\)$"):
        SelfDraft(engine.target, None, 0)


@pytest.mark.parametrize("caps, lacks", [
    (TargetCaps(), "caps.batching, but its target PlainTarget has no head, layout, run_batch"),
    (TargetCaps(batching=False), "caps.skips_layers, but its target PlainTarget has no run_skipping"),
])
def test_caps_claiming_what_the_target_lacks_are_refused_when_it_is_made(monkeypatch: pytest.MonkeyPatch,
                                                                         caps: TargetCaps, lacks: str) -> None:
    liar = BackendSpec("toy-liar", "claims more than its target has", "toy_backend:build_plain", caps=caps)
    monkeypatch.setitem(backend_registry._SPECS, "toy-liar", liar)
    backend = resolve_backend("toy-liar", CPU, torch.float32)
    with pytest.raises(TypeError, match=rf"^backend 'toy-liar' declares {lacks}$"):
        Engine(make_tiny_model("llama", seed=3), set(), backend)


def test_caps_are_declared_once_and_every_reader_agrees_with_the_spec(toy: None) -> None:
    model = make_tiny_model("llama", seed=3)
    stand_in = {"prepare": lambda m: None, "target": lambda m: TargetModel(m)}  # a full torch target, default caps
    with pytest.raises(TypeError, match=r"^backend 'toy-single': its target TargetModel declares "
                                        r"TargetCaps\(batching=True, .*, not its spec's TargetCaps\(batching=False, "):
        Engine(model, set(), SimpleNamespace(name="toy-single", caps=TargetCaps(batching=False), **stand_in))
    with pytest.raises(TypeError, match=r"^backend 'toy-nocache' declares caps.batching, but its backend "
                                        r"SimpleNamespace has no new_batch_cache$"):
        Engine(model, set(), SimpleNamespace(name="toy-nocache", caps=TargetCaps(), **stand_in))
    other = dataclasses.replace(toy_backend.SPECS["toy"], caps=TargetCaps(batching=False))  # not the registered one
    with pytest.raises(TypeError, match=r"^backend 'toy' declares TargetCaps\(batching=True, .*, not its spec's "
                                        r"TargetCaps\(batching=False, "):
        other.create(CPU, torch.float32)


def test_built_in_backends_declare_their_caps() -> None:
    from specbench.engine.backends.llamacpp.backend import LlamaCppBackend
    from specbench.engine.backends.llamacpp.target import LlamaTarget

    fast = backend_registry.backend_spec("fast").caps
    assert fast == TargetCaps(batching=True, intermediate_layers=True, prompt_states_cost=False)
    engine = Engine(make_tiny_model("llama", seed=3), set(), "fast")
    assert engine.backend.caps is fast and engine.target.caps is fast  # declared once, in the spec; read from it
    assert LlamaCppBackend.caps is LLAMACPP.caps and LlamaTarget.caps is LLAMACPP.caps
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

    for name in ("specbench.budget.acceptance_stats", "specbench.budget.auto", "specbench.engine.backends.llamacpp.spec",
                 "specbench.training.windows", "specbench.drafting.layers", "specbench.drafting.trees",
                 "replay_accept"):
        module = importlib.import_module(name)
        result = doctest.testmod(module)
        assert result.failed == 0, name
    assert doctest.testmod(importlib.import_module("specbench.engine.backends.llamacpp.spec")).attempted == 2


def test_doctests_of_the_backend_contract() -> None:
    import doctest

    from specbench.engine.backends import contract, registry

    for module, examples in ((contract, 4), (registry, 2)):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted >= examples, module.__name__
