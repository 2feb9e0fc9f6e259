"""The engine's intermediate-layer hidden states for drafters that ask (``feature_layers``), on the four tiny
families and both backends: the right layers, the right rows, exact values, and nothing for drafters that do not ask."""
from __future__ import annotations

import random

import pytest
import torch

from conftest import make_tiny_model
from specbench.engine.drafter import BaseDrafter, DraftContext
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine
from test_engine_exact import FAMILIES, OracleDrafter, greedy_reference, random_tree


class LayerRecorder(BaseDrafter):
    """Declares ``layers``, keeps every ``DraftContext``'s hidden and layer states, drafts random trees or the oracle."""

    def __init__(self, layers: tuple[int, ...], seed: int, oracle: OracleDrafter | None = None) -> None:
        self.feature_layers = layers
        self.rng, self.oracle = random.Random(seed), oracle
        self.hidden: list[torch.Tensor] = []
        self.layers: list[torch.Tensor] = []
        self.tokens: list[int] = []

    def propose(self, ctx: DraftContext):
        assert ctx.hidden_states is not None and ctx.layer_states is not None
        assert ctx.layer_states.shape == (ctx.hidden_states.shape[0], len(self.feature_layers), ctx.hidden.shape[-1])
        self.hidden.append(ctx.hidden_states.clone())
        self.layers.append(ctx.layer_states.clone())
        self.tokens = list(ctx.tokens)
        return self.oracle.propose(ctx) if self.oracle is not None else random_tree(self.rng, 64)


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The family's list of decoder blocks (``model.layers``, ``transformer.h``, ``gpt_neox.layers``)."""
    n = model.config.num_hidden_layers
    return next(m for m in model.base_model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n)


def plain_states(model: torch.nn.Module, ids: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(final-norm states [S, h], the input of every decoder layer [S, h] each), from one uncached forward with hooks."""
    inputs: list[torch.Tensor] = []
    hooks = [layer.register_forward_pre_hook(lambda mod, args: inputs.append(args[0][0].clone()))
             for layer in decoder_layers(model)]
    try:
        with torch.inference_mode():
            out = model.base_model(input_ids=torch.tensor([ids]))
    finally:
        for h in hooks:
            h.remove()
    return out.last_hidden_state[0], inputs


@pytest.mark.parametrize("backend", ["reference", "fast"])
@pytest.mark.parametrize("family", FAMILIES)
def test_layer_states_are_the_layers_inputs_at_every_kept_row(family: str, backend: str) -> None:
    model = make_tiny_model(family, seed=5)
    engine = Engine(model, stop_ids=set(), backend=backend)
    prompt = [random.Random(1).randrange(64) for _ in range(7)]
    ref = greedy_reference(model, prompt, 24)
    for drafter in (LayerRecorder((1, 0, 2), seed=3), LayerRecorder((2, 1), 0, OracleDrafter(ref, len(prompt), 3))):
        gen = engine.generate(prompt, drafter, 24)
        assert gen.output_ids == ref  # asking for layers changes nothing in the output
        rows = torch.cat(drafter.layers)  # [positions kept, m, h]: each position delivered exactly once
        assert rows.shape[0] == len(drafter.tokens) - 1 == torch.cat(drafter.hidden).shape[0]
        final, layer_inputs = plain_states(model, drafter.tokens[:-1])
        by_index = {0: layer_inputs[0], 1: layer_inputs[1], 2: final}  # 2 layers: index 2 is the final-norm state
        for j, index in enumerate(drafter.feature_layers):
            torch.testing.assert_close(rows[:, j], by_index[index], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(torch.cat(drafter.hidden), final, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_drafters_that_do_not_ask_get_none_and_cost_nothing(family: str) -> None:
    model = make_tiny_model(family, seed=6)
    seen: list[dict] = []
    hook = model.base_model.register_forward_pre_hook(lambda mod, args, kwargs: seen.append(dict(kwargs)),
                                                      with_kwargs=True)

    class Plain(BaseDrafter):
        def __init__(self) -> None:
            self.got: list[object] = []

        def propose(self, ctx: DraftContext):
            self.got.append(ctx.layer_states)
            return random_tree(random.Random(len(self.got)), 64)

    try:
        drafter = Plain()
        Engine(model, stop_ids=set()).generate([3, 4, 5, 6], drafter, 12)
        plain_calls, seen[:] = list(seen), []
        Engine(model, stop_ids=set()).generate([3, 4, 5, 6], LayerRecorder((1,), seed=0), 12)
    finally:
        hook.remove()
    assert drafter.got and all(g is None for g in drafter.got)
    assert len(plain_calls) > len(drafter.got)  # prefill + every step's forward
    assert not any(k.get("output_hidden_states") for k in plain_calls)  # the target collects nothing ...
    assert seen and all(k.get("output_hidden_states") for k in seen)  # ... unless a drafter asks


def test_layer_indices_out_of_range_are_refused() -> None:
    model = make_tiny_model("llama", seed=7)
    with pytest.raises(ValueError, match=r"layer indices \[3\] out of range.*0\.\.2"):
        Engine(model, stop_ids=set()).generate([1, 2, 3], LayerRecorder((0, 3), seed=0), 4)



class Blind(BaseDrafter):
    """Asks for no layers; records that it got none, drafts random trees."""

    def __init__(self, seed: int) -> None:
        self.rng, self.got, self.tokens = random.Random(seed), [], []

    def propose(self, ctx: DraftContext):
        self.got.append(ctx.layer_states)
        self.tokens = list(ctx.tokens)
        return random_tree(self.rng, 64)


def _recorder(layers: tuple[int, ...], seed: int) -> BaseDrafter:
    return LayerRecorder(layers, seed) if layers else Blind(seed)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_slots_get_their_own_layer_states(family: str) -> None:
    """Batch width 2 with refill: three prompts of different lengths whose drafters ask for different layers
    (one for none); each drafter sees the same tokens, rows and values in the batch as decoding alone."""
    model = make_tiny_model(family, seed=8)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(4)
    prompts = [tuple(rng.randrange(64) for _ in range(n)) for n in (5, 11, 3)]
    asks = dict(zip(prompts, [(2, 0), (), (1,)]))  # the layers each prompt's drafter declares
    alone = {}
    for i, p in enumerate(prompts):
        alone[p] = _recorder(asks[p], seed=i)
        alone[p].out = engine.generate(list(p), alone[p], 16).output_ids

    batched: dict[tuple[int, ...], BaseDrafter] = {}

    class Slot(BaseDrafter):  # a slot's drafter: a fresh recorder for whichever prompt enters it
        def begin(self, prompt_ids: list[int]) -> None:
            p = tuple(prompt_ids)
            self.cur = batched[p] = _recorder(asks[p], seed=prompts.index(p))
            self.feature_layers = self.cur.feature_layers  # the batched loop reads it after begin

        def propose(self, ctx: DraftContext):
            return self.cur.propose(ctx)

    gens = BatchDecoder(engine, 16).generate([Request(list(p)) for p in prompts], [Slot(), Slot()], 2, refill=True)
    assert [g.output_ids for g in gens] == [alone[p].out for p in prompts]
    for p in prompts:
        got, ref = batched[p], alone[p]
        assert got.tokens == ref.tokens
        if isinstance(got, Blind):
            assert got.got and all(g is None for g in got.got)
            continue
        assert torch.cat(got.layers).shape == torch.cat(ref.layers).shape
        torch.testing.assert_close(torch.cat(got.layers), torch.cat(ref.layers), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(torch.cat(got.hidden), torch.cat(ref.hidden), atol=1e-4, rtol=1e-4)
