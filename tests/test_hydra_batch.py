"""Hydra in the batched engine (``--batch-size``): each slot's drafter keeps Hydra++'s prefix-layer cache for
the sequence in its slot, fed by the batched loop's ``DraftContext.hidden_states``; with refill a slot's drafter
is handed the next request (``begin`` clears the cache). Every output must equal AR decoded alone, and the
drafter's own check (``HydraDrafter._context``: cache rows == context rows before the new ones) fails loudly
if the batched loop ever hands a slot too few or too many hidden-state rows."""
from __future__ import annotations

import random

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.eagle.layer import LayerShape
from specbench_methods.hydra.heads import HydraHeads, SubHead
from specbench_methods.hydra.method import HydraConfig, HydraDrafter, build_hydra
from specbench_methods.hydra.tree import TREES
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine
from specbench.run.method_env import MethodEnv


def _prompts(n: int) -> list[list[int]]:
    rng = random.Random(7)
    return [[rng.randrange(4, 64) for _ in range(rng.randint(3, 20))] for _ in range(n)]


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("width,refill", [(2, False), (2, True), (3, True)])
def test_batched_hydra_equals_ar_alone(family: str, width: int, refill: bool, tmp_path) -> None:
    model = make_tiny_model(family, seed=1)
    prompts = _prompts(5)
    engine = Engine(model, stop_ids=set())
    ref = [engine.generate(p, None, 24).output_ids for p in prompts]
    env = MethodEnv(model, None, "tiny", torch.device("cpu"), None, tmp_path / "cache", "synthetic")
    # identity heads (they repeat the target's prediction: drafts get accepted) in every slot
    drafters = [build_hydra(HydraConfig(checkpoint="random", dtype="float32"), env) for _ in range(width)]
    gens = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], drafters, width, refill)
    assert [g.output_ids for g in gens] == ref
    assert max(max(g.accept_lengths) for g in gens) > 1  # the heads' drafts were accepted inside the batch
    assert all(d.cache.length > 0 for d in drafters)  # the prefix layer did run on each slot's context


def test_batched_hydra_random_weights_stays_exact(tmp_path) -> None:
    """Heads with random (not identity) weights: drafts mostly wrong, the output still AR's."""
    model = make_tiny_model("qwen2", seed=1)
    prompts = _prompts(4)
    engine = Engine(model, stop_ids=set())
    ref = [engine.generate(p, None, 16).output_ids for p in prompts]
    torch.manual_seed(5)
    drafters = []
    for _ in range(2):
        heads = HydraHeads(32, 4, 2, LayerShape.from_config(model.config), head=SubHead(model.get_output_embeddings(), None))
        drafters.append(HydraDrafter(heads, model.get_input_embeddings(), TREES["mc_sim_7b_63"]))
    gens = BatchDecoder(engine, 16).generate([Request(p) for p in prompts], drafters, 2, True)
    assert [g.output_ids for g in gens] == ref
