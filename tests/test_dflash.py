"""DFlash's block drafter: the tapped layers, the training blocks' attention mask, positions and labels by hand, the
block attention against a hand-written computation, training blocks equal to drafting, the drafter's chain and
cache, losslessness on the four tiny families (batched too), checkpoints in the reference's layout."""
from __future__ import annotations

import json
import math

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.dflash.blocks import BlockArrays, block_mask, block_positions, draw_anchors, make_blocks
from specbench_methods.dflash.checkpoint import load_draft, new_draft, save_draft
from specbench_methods.dflash.method import DFlashConfig, DFlashDrafter
from specbench_methods.dflash.network import reference_layers
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from test_engine_exact import FAMILIES, greedy_reference


def _draft(family: str = "llama", layers: int = 2, block: int = 4, seed: int = 0):
    target = make_tiny_model(family, seed=1)
    torch.manual_seed(seed)
    draft = new_draft(target, layers, block).eval()
    with torch.no_grad():
        for name, p in draft.named_parameters():  # non-trivial weights everywhere, norms included
            p.copy_(1.0 + 0.2 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))
    return target, draft


# -- the tapped layers and the training blocks ------------------------------------------------------------------


def test_reference_layers_spread_from_1_to_L_minus_3_as_engine_indices() -> None:
    assert reference_layers(32, 5) == (2, 9, 16, 23, 30)  # a 32-layer target's ids 1, 8, 15, 22, 29, read as outputs
    assert reference_layers(36, 5) == (2, 10, 18, 26, 34)  # Qwen3-8B: 1, 9, 17, 25, 33
    assert reference_layers(30, 5) == (2, 9, 15, 21, 28)  # the embedded SmolLM2: 7.5 and 20.5 round to even
    assert reference_layers(2, 2) == (1, 1)  # the tiny test models: clamped to the first layer's output


def test_block_mask_and_positions_by_hand() -> None:
    """Two sequences: anchors [1, 3] of a 4-row context, and one real anchor (2) beside a padding one."""
    anchors = torch.tensor([[1, 3], [2, -1]])
    mask = block_mask(anchors, 4, 2).int()
    assert mask.shape == (2, 4, 8)
    assert mask[0].tolist() == [[1, 0, 0, 0, 1, 1, 0, 0], [1, 0, 0, 0, 1, 1, 0, 0],  # anchor 1: context row 0
                                [1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0, 1, 1]]  # anchor 3: rows 0-2
    assert mask[1].tolist() == [[1, 1, 0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 1, 1, 0, 0],
                                [0, 0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1]]  # padding: its own block only
    assert block_positions(anchors, 2).tolist() == [[1, 2, 3, 4], [2, 3, -1, 0]]


def test_blocks_read_the_anchor_token_and_the_targets_next_tokens() -> None:
    """One 6-row sequence at flat row 10: tokens 100.., the target's choices 200.. (argmax[r] is its token at
    r + 1); anchors 1 and 4 with blocks of 3, mask id 7: labels stop at the sequence's last row."""
    arrays = BlockArrays(torch.arange(100, 120), torch.arange(200, 220), torch.zeros(20, 1, 2))
    b = make_blocks([(10, 6)], [torch.tensor([1, 4])], arrays, 3, 7)
    assert b.ids.tolist() == [[111, 7, 7, 114, 7, 7]]
    assert b.labels.tolist() == [[-100, 211, 212, -100, 214, -100]]  # anchor 4: row 5 is the last, row 6 is out
    assert b.positions.tolist() == [[1, 2, 3, 4, 5, 6]] and b.layer_states.shape == (1, 6, 1, 2)
    assert draw_anchors(6, 2, torch.Generator().manual_seed(1)).tolist() in ([1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4])


# -- the network ------------------------------------------------------------------------------------------------


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _rope(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2).float() / d)
    ang = pos.float()[:, None] * inv
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    return x * cos + torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1) * sin


def test_one_layer_equals_the_references_math() -> None:
    """Keys and values of ``[fused context, block]`` (context not layer-normed), q/k norms before RoPE, every block
    row over every key, residuals: written out head by head."""
    target, draft = _draft(layers=1, block=3)
    states, ids = torch.randn(4, 1, 32), torch.tensor([5, 63, 63])
    ctx_pos, blk_pos = torch.arange(4), torch.arange(4, 7)
    out = draft(ids, blk_pos, draft.context_kv(draft.context(states), ctx_pos))
    s, lay, at = draft.shape, draft.layers[0], draft.layers[0].self_attn
    c = _rms(states.flatten(1) @ draft.fc.weight.T, draft.hidden_norm.weight, s.eps)  # [4, 32]
    x = target.get_input_embeddings()(ids)
    h = _rms(x, lay.input_layernorm.weight, s.eps)
    both = torch.cat([c, h])  # [7, 32]
    q = (h @ at.q_proj.weight.T).view(3, s.heads, s.head_dim)
    k = (both @ at.k_proj.weight.T).view(7, s.kv_heads, s.head_dim)
    v = (both @ at.v_proj.weight.T).view(7, s.kv_heads, s.head_dim)
    heads = []
    for i in range(s.heads):
        g = i // (s.heads // s.kv_heads)
        qi = _rope(_rms(q[:, i], at.q_norm.weight, s.eps), blk_pos, s.rope_theta)
        ki = _rope(_rms(k[:, g], at.k_norm.weight, s.eps), torch.cat([ctx_pos, blk_pos]), s.rope_theta)
        heads.append(torch.softmax(qi @ ki.T / math.sqrt(s.head_dim), -1) @ v[:, g])
    x = x + torch.cat(heads, -1) @ at.o_proj.weight.T
    x = x + lay.mlp(_rms(x, lay.post_attention_layernorm.weight, s.eps))
    torch.testing.assert_close(out, _rms(x, draft.norm.weight, s.eps), atol=1e-5, rtol=1e-4)


def test_attention_is_bidirectional_within_the_block_and_blind_past_the_anchor() -> None:
    target, draft = _draft()
    states = torch.randn(1, 8, 2, 32)
    anchors = torch.tensor([[2, 5]])
    arrays = BlockArrays(torch.arange(8) + 3, torch.zeros(8, dtype=torch.long), states[0])
    b = make_blocks([(0, 8)], [anchors[0]], arrays, 4, 63)
    kv = draft.context_kv(draft.context(b.layer_states), torch.arange(8))
    out = draft(b.ids, b.positions, kv, b.mask)[0]  # [8, h]
    later = b.ids.clone()
    later[0, 3] = 9  # the last row of anchor 2's block
    changed = draft(later, b.positions, kv, b.mask)[0]
    assert not torch.allclose(out[0], changed[0])  # an earlier row sees a later one: not causal
    torch.testing.assert_close(out[4:], changed[4:])  # the other block does not see it
    moved = states.clone()
    moved[0, 2:] += 1.0  # context rows from anchor 2 on
    kv2 = draft.context_kv(draft.context(moved), torch.arange(8))
    torch.testing.assert_close(draft(b.ids, b.positions, kv2, b.mask)[0, :4], out[:4])  # anchor 2 sees rows 0-1 only


def test_training_blocks_equal_drafting_at_each_anchor() -> None:
    """A block of the batched training forward (many anchors, one mask) is exactly the drafter's block at a root in
    that position, its context fed through the caches in two steps."""
    target, draft = _draft(block=4)
    states, tokens = torch.randn(9, 2, 32), torch.randint(0, 62, (9,))
    arrays = BlockArrays(tokens, torch.zeros(9, dtype=torch.long), states)
    b = make_blocks([(0, 9)], [torch.tensor([3, 6])], arrays, 4, draft.mask_token_id)
    out = draft(b.ids, b.positions, draft.context_kv(draft.context(b.layer_states), torch.arange(9)), b.mask)[0]
    chain = draft.logits(out[5:8]).argmax(-1).tolist()  # anchor 6's rows 1..3
    drafter = DFlashDrafter(draft)
    drafter.begin(tokens[:2].tolist())
    first = DraftContext(tokens[:3].tolist(), 2, torch.zeros(32), 8, torch.zeros(2, 32), layer_states=states[:2])
    drafter.propose(first)
    ctx = DraftContext(tokens[:7].tolist(), 2, torch.zeros(32), 8, torch.zeros(4, 32), layer_states=states[2:6])
    tree = drafter.propose(ctx)
    assert tree is not None and list(tree.tokens) == chain and tree.parents == (-1, 0, 1)
    assert drafter.caches[0].length == 6  # context rows only: the block's keys are never kept


def test_drafter_honours_max_depth_and_block_size() -> None:
    target, draft = _draft(block=6)
    drafter = DFlashDrafter(draft)
    drafter.begin([1, 2, 3])

    def ctx(tokens: list[int], k: int, depth: int) -> DraftContext:
        return DraftContext(tokens, 3, torch.zeros(32), depth, torch.zeros(k, 32), layer_states=torch.randn(k, 2, 32))

    assert len(drafter.propose(ctx([1, 2, 3, 4], 3, 10))) == 5  # B - 1 tokens
    assert len(drafter.propose(ctx([1, 2, 3, 4, 5], 1, 2))) == 2
    assert drafter.propose(ctx([1, 2, 3, 4, 5, 6], 1, 0)) is None and drafter.caches[1].length == 5
    assert len(DFlashDrafter(draft, block_size=3).propose(ctx([1, 2, 3, 4], 3, 10))) == 2


# -- losslessness -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_with_a_random_draft_on_every_family(family: str) -> None:
    target, draft = _draft(family, seed=4)
    prompt = [5, 9, 2, 7, 7, 1]
    for backend in ("reference", "fast"):
        gen = Engine(target, stop_ids=set(), backend=backend).generate(prompt, DFlashDrafter(draft), 30)
        assert gen.output_ids == greedy_reference(target, prompt, 30)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_slots_draft_as_alone(family: str) -> None:
    """Batch width 2 with refill over three prompts: each slot's drafter keeps its own context caches; outputs equal
    AR's and the drafts are the ones it makes decoding alone (same acceptance lengths)."""
    target, draft = _draft(family, seed=5)
    prompts = [[5, 9, 2, 7, 7, 1], [3, 3, 8], [11, 4, 6, 1, 2, 9, 9, 30, 2]]
    engine = Engine(target, stop_ids=set())
    alone = [engine.generate(p, DFlashDrafter(draft), 24) for p in prompts]
    assert [g.output_ids for g in alone] == [greedy_reference(target, p, 24) for p in prompts]
    gens = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], [DFlashDrafter(draft) for _ in range(2)], 2,
                                             refill=True)
    assert [g.output_ids for g in gens] == [g.output_ids for g in alone]
    assert [g.accept_lengths for g in gens] == [g.accept_lengths for g in alone]


# -- checkpoints ------------------------------------------------------------------------------------------------


def test_our_checkpoint_round_trips_in_the_reference_layout_and_is_verified(tmp_path) -> None:
    target, draft = _draft(block=5)
    save_draft(draft, tmp_path, 2, {"metrics": {"heldout_top1": 0.5}})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["block_size"] == 5 and cfg["num_hidden_layers"] == 2 and cfg["num_target_layers"] == 2
    assert cfg["dflash_config"] == {"mask_token_id": 63, "target_layer_ids": [0, 0]}  # the reference's ids
    loaded, meta = load_draft(tmp_path, target)
    assert loaded.feature_layers == (1, 1) and loaded.block_size == 5 and meta["metrics"]["heldout_top1"] == 0.5
    kv = loaded.context_kv(loaded.context(torch.randn(3, 2, 32)), torch.arange(3))
    ids, pos = torch.tensor([4, 63, 63]), torch.arange(3, 6)
    torch.testing.assert_close(loaded.eval()(ids, pos, kv), draft(ids, pos, kv))
    data = bytearray((tmp_path / "model.safetensors").read_bytes())
    data[-5] ^= 1
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="corrupt"):
        load_draft(tmp_path, target)


def test_bad_options_are_refused() -> None:
    from specbench_methods.dflash.train import DFlashTrainConfig

    with pytest.raises(ConfigError, match="block_size"):
        DFlashConfig(block_size=1).validate()
    with pytest.raises(ConfigError, match="dtype"):
        DFlashConfig(dtype="int3").validate()
    with pytest.raises(ConfigError, match="gamma"):
        DFlashTrainConfig(gamma=0).validate()
    with pytest.raises(ConfigError, match="block_size >= 2"):
        DFlashTrainConfig(block_size=1).validate()
