"""ReDrafter's drafting copy: reduced draft vocabulary (``draft_vocab``) and weight dtype (``dtype``)."""
from __future__ import annotations

import pytest
import torch

from specbench_methods.redrafter import ReDrafterConfig, build_redrafter
from specbench_methods.redrafter.beam import beam_search, head_step_fn
from specbench_methods.redrafter.checkpoint import save_checkpoint
from specbench_methods.redrafter.head import build_head, drafting_head, head_config_for
from specbench_methods.redrafter.vocab import DATA, choose_draft_vocab, token_counts
from specbench.config.coerce import from_dict
from specbench.engine.loop import Engine
from specbench.engine.backends.packed_linear import draft_dtype
from specbench.errors import ConfigError
from specbench.run.method_env import MethodEnv
from tests.conftest import make_tiny_model


def _env(model: torch.nn.Module, tmp_path) -> MethodEnv:
    return MethodEnv(model=model, tokenizer=None, model_id="tiny", device=torch.device("cpu"), data_dir=None, cache_dir=tmp_path)


def test_choose_draft_vocab_ranks_keep_then_count_then_id() -> None:
    counts = torch.tensor([0, 4, 1, 0, 9, 1, 0, 0])
    assert choose_draft_vocab(counts, 3, set(), 8).tolist() == [1, 2, 4]  # 4, 1, then 2 before 5 (lower id)
    assert choose_draft_vocab(counts, 3, {7}, 8).tolist() == [1, 4, 7]
    assert choose_draft_vocab(None, 3, {6}, 8).tolist() == [0, 1, 6]  # no data: id order
    assert choose_draft_vocab(counts, 100, set(), 8).tolist() == list(range(8))


def test_token_counts_read_labels_and_tokens(tmp_path) -> None:
    from safetensors.torch import save_file

    assert token_counts(tmp_path, 6) is None
    save_file({"argmax": torch.tensor([1, 1, 3]), "tokens": torch.tensor([3, 5, 1])}, str(tmp_path / DATA))
    assert token_counts(tmp_path, 6).tolist() == [0, 3, 0, 2, 0, 1]


def test_config_validation() -> None:
    assert from_dict(ReDrafterConfig, {"draft_vocab": "0", "dtype": "float32"}).draft_vocab == 0
    for bad in ({"draft_vocab": "-1"}, {"draft_vocab": "2", "beam_width": "3"}, {"dtype": "int8"}):
        with pytest.raises(ConfigError):
            from_dict(ReDrafterConfig, bad)


def _noisy_head(model: torch.nn.Module, seed: int = 0):
    torch.manual_seed(seed)
    head = build_head(head_config_for(model), model).eval()
    for p in head.parameters():  # varied drafts, some of them accepted
        torch.nn.init.normal_(p, std=0.3)
    return head


def test_drafting_head_scores_the_kept_rows() -> None:
    model = make_tiny_model("llama", seed=1)
    head = _noisy_head(model)
    ids = torch.tensor([0, 3, 5, 17, 40, 63])
    small = drafting_head(head, ids, torch.float32)
    assert small.lm_head.weight.shape == (6, head.config.feature_dim)
    assert small.embed_weight.data_ptr() == head.embed_weight.data_ptr()
    ctx, tokens = torch.randn(3, 32), torch.tensor([2, 9, 63])
    with torch.no_grad():
        s_full, full = head.step(ctx, None, tokens)
        s_small, part = small.step(ctx, None, tokens)
    assert torch.equal(s_full, s_small) and torch.allclose(part, full[:, ids], atol=1e-5)
    assert {p.dtype for p in drafting_head(head, ids, torch.bfloat16).parameters()} == {torch.bfloat16}


def test_reduced_beam_search_equals_full_when_the_rest_is_unlikely() -> None:
    """Logits outside the kept ids far below: the same beams and scores over the reduced set."""
    vocab, ids = 20, torch.tensor([1, 4, 6, 11, 19])
    g = torch.Generator().manual_seed(0)
    table = torch.full((vocab, vocab), -1e4)  # next-token logits after each token, a Markov "head"
    table[:, ids] = torch.randn(vocab, len(ids), generator=g) * 3

    def full(state, tokens):
        return (state if state is not None else torch.zeros(len(tokens))), torch.log_softmax(table[tokens], -1)

    def reduced(state, tokens):
        return (state if state is not None else torch.zeros(len(tokens))), torch.log_softmax(table[tokens][:, ids], -1)

    for width, length in ((1, 4), (3, 4), (5, 3), (25, 3)):
        b_full, s_full = beam_search(full, 7, width, length)
        b_red, s_red = beam_search(reduced, 7, width, length, token_ids=ids)
        assert torch.equal(b_full, b_red) and torch.allclose(s_full, s_red, atol=1e-4)
        assert set(b_red[:, 1:].reshape(-1).tolist()) <= set(ids.tolist())


def _checkpoint_with_data(model: torch.nn.Module, tmp_path):
    from safetensors.torch import save_file

    ckpt = tmp_path / "ckpt"
    save_checkpoint(_noisy_head(model, seed=3), ckpt)
    frequent = torch.arange(10, 30)  # the "training data" uses these 20 ids
    save_file({"argmax": frequent.repeat(3), "tokens": frequent}, str(ckpt / DATA))
    return ckpt


@pytest.mark.parametrize("family,dtype", [("llama", "bfloat16"), ("qwen2", "float32"), ("gpt2", "auto")])
def test_reduced_vocab_drafter_is_lossless_on_tiny_model(family: str, dtype: str, tmp_path) -> None:
    model = make_tiny_model(family, seed=4)
    env = _env(model, tmp_path)
    ckpt = _checkpoint_with_data(model, tmp_path)
    drafter = build_redrafter(ReDrafterConfig(checkpoint=str(ckpt), draft_vocab=16, dtype=dtype), env)
    assert drafter.token_ids.tolist() == list(range(10, 26))  # the 16 most frequent, ties by id
    assert env.artifacts["draft_vocab"] == 16 and env.artifacts["draft_vocab_source"] == "checkpoint data"
    assert drafter.head.lm_head.weight.dtype == draft_dtype(dtype, model)
    engine = Engine(model, stop_ids=set())
    drafted: set[int] = set()
    propose = drafter.propose

    def recording(ctx):
        tree = propose(ctx)
        drafted.update(tree.tokens if tree is not None else ())
        return tree

    drafter.propose = recording  # type: ignore[method-assign]
    for prompt in ([1, 2, 3, 4], [12, 13, 14, 12, 13], [20]):
        ar = engine.generate(prompt, None, 40)
        rd = engine.generate(prompt, drafter, 40)
        assert rd.output_ids == ar.output_ids
        assert 0 < max(rd.draft_sizes) <= 3 * 3
    assert drafted and drafted <= set(range(10, 26))


def test_full_vocab_in_the_target_dtype_drafts_with_the_loaded_head(tmp_path) -> None:
    """``draft_vocab=0`` in the target's dtype is the behaviour before the options: no copy, no id map."""
    model = make_tiny_model("llama", seed=4)
    ckpt = _checkpoint_with_data(model, tmp_path)
    old = build_redrafter(ReDrafterConfig(checkpoint=str(ckpt), draft_vocab=0, dtype="float32"), _env(model, tmp_path))
    new = build_redrafter(ReDrafterConfig(checkpoint=str(ckpt), draft_vocab=16, dtype="float32"), _env(model, tmp_path))
    assert old.token_ids is None and old.head.lm_head.weight.shape[0] == 64
    assert new.head is not old.head and new.head.embed_weight.data_ptr() == old.head.embed_weight.data_ptr()
    # a random checkpoint has no data: the draft vocabulary falls back to id order
    env = _env(model, tmp_path)
    rnd = build_redrafter(ReDrafterConfig(checkpoint="random", draft_vocab=8, dtype="float32"), env)
    assert rnd.token_ids.tolist() == list(range(8)) and env.artifacts["draft_vocab_source"] == "token id order"
    ctx = torch.randn(32)
    with torch.no_grad():  # the reduced copy scores the same state as the full head
        _, full = head_step_fn(old.head, ctx)(None, torch.tensor([5]))
        _, part = head_step_fn(new.head, ctx)(None, torch.tensor([5]))
    assert torch.allclose(full[0, new.token_ids].exp() / full[0, new.token_ids].exp().sum(), part[0].exp(), atol=1e-5)
