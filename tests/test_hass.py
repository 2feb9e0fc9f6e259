"""HASS (``eagle.recipe=hass``): the aligned forwards equal the draft's own chain at decode time, the top-k term,
the two-stage training on a tiny target (learns, stays lossless), the recipe and its refusals."""
from __future__ import annotations

import doctest

import pytest
import torch

from specbench_methods.eagle import hass
from specbench_methods.eagle.layer import DraftCache, EagleLayer, LayerShape
from specbench_methods.eagle.method import DraftHead, EagleConfig, EagleDrafter
from specbench_methods.eagle.checkpoint import load_layer
from specbench_methods.eagle.train import RECIPES, EagleTrainConfig, train_eagle
from specbench.errors import ConfigError
from specbench.engine.loop import Engine
from test_eagle import CORPUS, _echo_corpus
from test_engine_exact import greedy_reference
from test_golden import char_tokenizer
from test_sps_distill import tied_tiny_target

SHAPE = LayerShape(hidden=16, heads=4, kv_heads=2, head_dim=4, intermediate=32)


def _layer() -> EagleLayer:
    torch.manual_seed(0)
    return EagleLayer(SHAPE, torch.nn.Embedding(20, 16)).eval()


def test_doctests() -> None:
    from specbench_methods.eagle import train

    assert doctest.testmod(hass).failed == 0 and doctest.testmod(hass).attempted >= 5
    assert doctest.testmod(train).failed == 0 and doctest.testmod(train).attempted >= 1


def test_one_stream_is_the_plain_forward() -> None:
    layer, n = _layer(), 7
    feats, toks, pos = torch.randn(n, 16), torch.randint(0, 20, (n,)), torch.arange(n)
    mask = hass.align_mask(torch.zeros(n, dtype=torch.long), pos, 1)
    torch.testing.assert_close(hass.harmonized_forward(layer, [feats], toks, pos, mask), layer(feats, toks, pos, mask))


def _chain(layer: EagleLayer, feats: torch.Tensor, toks: torch.Tensor, last_target: int, depth: int) -> torch.Tensor:
    """Decode time: the draft reads the target's features of rows 0..last_target into its cache, then feeds its
    own predicted feature back ``depth - 1`` times (tokens: the ground truth's); the last prediction."""
    cache, a = DraftCache(), last_target + 1
    mask = torch.ones(a, a, dtype=torch.bool).tril()
    out = layer(feats[:a], toks[:a], torch.arange(a), mask, cache)[-1]
    for d in range(1, depth):
        row = last_target + d
        out = layer(out[None], toks[row : row + 1], torch.tensor([row]), torch.ones(1, row + 1, dtype=torch.bool), cache)[0]
    return out


@pytest.mark.parametrize("steps", [2, 3])
def test_aligned_forward_is_the_drafts_own_chain(steps: int) -> None:
    """Forward j at row t == drafting j tokens deep from the target's features up to row t - (j - 1), in every
    window of a packed batch (windows of 5 and 4 rows: nothing crosses between them)."""
    layer = _layer()
    sizes = (5, 4)
    n = sum(sizes)
    feats, toks = torch.randn(n, 16), torch.randint(0, 20, (n,))
    pos = torch.cat([torch.arange(k) for k in sizes])
    block = torch.cat([torch.full((k,), i) for i, k in enumerate(sizes)])
    streams = [feats]
    with torch.no_grad():
        for j in range(1, steps + 1):
            pred = hass.harmonized_forward(layer, streams, toks, pos, hass.align_mask(block, pos, j))
            streams.append(hass.next_stream(streams[-1], pred, pos))
    checked = 0
    for w, first in ((0, 0), (1, sizes[0])):
        for t in range(steps - 1, sizes[w]):
            want = _chain(layer, feats[first : first + sizes[w]], toks[first : first + sizes[w]], t - (steps - 1), steps)
            torch.testing.assert_close(pred[first + t], want, rtol=1e-5, atol=1e-5)
            checked += 1
    assert checked == sum(k - (steps - 1) for k in sizes)


def test_aligned_forward_differs_from_teacher_forcing() -> None:
    """The check above is not vacuous: the draft's own features change the prediction."""
    layer, n = _layer(), 6
    feats, toks, pos = torch.randn(n, 16), torch.randint(0, 20, (n,)), torch.arange(n)
    block = torch.zeros(n, dtype=torch.long)
    plain = layer(feats, toks, pos, hass.align_mask(block, pos, 1))
    second = hass.next_stream(feats, plain, pos)
    aligned = hass.harmonized_forward(layer, [feats, second], toks, pos, hass.align_mask(block, pos, 2))
    assert not torch.allclose(aligned[1:], plain[1:], atol=1e-3)
    torch.testing.assert_close(aligned[0], plain[0])  # row 0 has no earlier row: its stream 1 is the target's


def test_topk_loss_equals_cross_entropy_when_k_covers_the_vocabulary() -> None:
    p = torch.softmax(torch.randn(3, 5), -1)
    logq = torch.log_softmax(torch.randn(3, 5), -1)
    torch.testing.assert_close(hass.topk_loss(p, logq, 5), -(p * logq).sum(-1).mean())
    assert hass.topk_loss(p, logq, 1) < hass.topk_loss(p, logq, 5)


def test_hass_training_learns_deeper_tokens_and_stays_lossless(tmp_path) -> None:
    """Two stages (3 + 2 epochs, the top-k term in the second); held-out top-1 at depths 1..3 reported; the layer
    drafts losslessly."""
    target, tok = tied_tiny_target(), char_tokenizer()
    _echo_corpus(target, tok)
    base = dict(tokens=1500, epochs=5, draft_vocab=12, window=32, batch_size=128, lr=1e-2, max_seq_len=64, heldout_every=4)
    cfg = EagleTrainConfig(**base, align_steps=3, tune_epochs=2, tune_lr=3e-3)
    metrics = train_eagle(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    untrained = train_eagle(target, tok, [CORPUS], None, tmp_path / "zero",
                            EagleTrainConfig(**base | {"epochs": 1, "lr": 1e-12}), "tiny", progress=False)
    aligned = metrics["heldout_top1_aligned"]
    assert len(aligned) == 3 and aligned[0] == metrics["heldout_top1"]
    assert min(aligned) > max(untrained["heldout_top1_aligned"]) + 0.2
    layer, vocab, meta = load_layer(tmp_path, target)
    assert meta["train"]["align_steps"] == 3 and meta["train"]["tune_epochs"] == 2
    prompt = tok("abc def gh", add_special_tokens=False)["input_ids"]
    drafter = EagleDrafter(layer, DraftHead(target.get_output_embeddings(), vocab), EagleConfig())
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 30)
    assert gen.output_ids == greedy_reference(target, prompt, 30)
    assert gen.forward_passes < 20


def test_the_hass_recipe_and_bad_settings() -> None:
    hass_recipe, full = RECIPES["hass"], RECIPES["full"]
    assert (hass_recipe.tokens, hass_recipe.epochs) == (full.tokens, full.epochs)  # same data: comparable to full
    assert (hass_recipe.align_steps, hass_recipe.topk, hass_recipe.topk_weight, hass_recipe.tune_topk_weight) == (3, 10, 0.0, 1.0)
    assert 0 < hass_recipe.tune_epochs < hass_recipe.epochs and hass_recipe.cost_factor() > 1
    EagleConfig(recipe="hass").validate()
    with pytest.raises(ConfigError, match="recipe must be one of quick, full, hass"):
        EagleConfig(recipe="haas").validate()
    with pytest.raises(ConfigError, match="tune_epochs"):
        EagleTrainConfig(epochs=4, tune_epochs=4).validate()
    with pytest.raises(ConfigError, match="align_steps"):
        EagleTrainConfig(align_steps=0).validate()
