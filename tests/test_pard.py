"""PARD (``methods/pard``): the parallel runner (one forward, K tokens), exact output through the engine on the four
tiny families (greedy, batched, sampled), a published-layout checkpoint, and the adaptation trainer on a tiny target."""
from __future__ import annotations

import copy
import json
import random

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.pard.adapt import META_FILE, AdaptConfig, add_mask_token, adapt_draft
from specbench_methods.pard.method import PardConfig, PardDrafter, build_pard
from specbench_methods.pard.runner import ParallelRunner
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.run.method_env import MethodEnv
from specbench.training.draft_distill import DistillConfig, distill_draft, load_distilled
from test_sps_distill import CORPUS, tied_tiny_target
from test_golden import char_tokenizer

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]


def _self_draft(model: torch.nn.Module) -> tuple[torch.nn.Module, int]:
    """The target itself with a mask token added: its first parallel row is the target's own next token."""
    draft = copy.deepcopy(model)
    return draft.eval(), add_mask_token(draft)


def test_runner_feeds_unseen_tokens_and_masks_in_one_forward() -> None:
    model = make_tiny_model("llama", seed=1)
    draft, mask = _self_draft(model)
    runner = ParallelRunner(draft, mask)
    tokens = [5, 9, 13, 2]
    out = runner.draft(tokens, 4)
    assert len(out) == 4 and runner.forwards == 1 and runner.fed == 4
    assert int(runner.cache.get_seq_length()) == 4  # the mask rows were cut at once
    with torch.inference_mode():
        plain = draft(input_ids=torch.tensor([tokens + [mask] * 3])).logits[0, -4:]
        plain[:, mask] = float("-inf")
    assert out == plain.argmax(-1).tolist()  # the chain is the last k rows' argmax
    assert out[0] == int(model(input_ids=torch.tensor([tokens])).logits[0, -1].argmax())
    runner.draft(tokens + [out[0], 7], 3)
    assert runner.fed == 6 and runner.forwards == 2  # only the two new tokens were fed


@pytest.mark.parametrize("family", FAMILIES)
def test_pard_equals_ar_greedy_batched_and_sampled(family: str) -> None:
    model = make_tiny_model(family, seed=2, layers=3)
    draft, mask = _self_draft(model)
    rng = random.Random(0)
    prompts = [[rng.randrange(64) for _ in range(rng.randint(3, 10))] for _ in range(3)]
    engine = Engine(model, set())
    ar = [engine.generate(p, None, 30).output_ids for p in prompts]
    drafter = PardDrafter(PardConfig(k=4), ParallelRunner(draft, mask))
    gens = [engine.generate(p, drafter, 30) for p in prompts]
    assert [g.output_ids for g in gens] == ar
    assert all(max(g.accept_lengths) >= 2 for g in gens)  # the first parallel token is the target's: accepted
    batched = BatchDecoder(engine, 30).generate([Request(p) for p in prompts],
                                                [PardDrafter(PardConfig(k=4), ParallelRunner(draft, mask))
                                                 for _ in range(2)], 2, True)
    assert [g.output_ids for g in batched] == ar
    from specbench.engine.sampling_config import SamplingConfig

    sampling = SamplingConfig(temperature=0.7)
    for seed in range(3):  # sampled: a greedy chain, accepted by rejection sampling (one-hot q): a valid sample
        gen = engine.generate(prompts[0], drafter, 12, sampling=sampling, seed=seed)
        assert len(gen.output_ids) == 12 and len(gen.token_logprobs) == 12


def test_published_layout_checkpoint_and_one_line_errors(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    draft, mask = _self_draft(target)
    draft.save_pretrained(tmp_path / "pard")
    tok.save_pretrained(tmp_path / "pard")
    env = MethodEnv(target, tok, "tiny", torch.device("cpu"), None, tmp_path / "cache", "synthetic")
    drafter = build_pard(PardConfig(draft_model=str(tmp_path / "pard"), k=3), env)
    assert drafter.runner.mask_id == mask == 64
    prompt = tok("abc def", add_special_tokens=False)["input_ids"]
    engine = Engine(target, set())
    assert engine.generate(prompt, drafter, 20).output_ids == engine.generate(prompt, None, 20).output_ids
    target.save_pretrained(tmp_path / "plain")
    tok.save_pretrained(tmp_path / "plain")
    with pytest.raises(ConfigError, match="not a PARD draft"):
        build_pard(PardConfig(draft_model=str(tmp_path / "plain")), env)
    with pytest.raises(ConfigError, match="k must be >= 1"):
        PardConfig(k=0).validate()


def test_adaptation_trains_every_copy_and_round_trips(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    base = tmp_path / "base"
    distill_draft(target, tok, [CORPUS], None, base, DistillConfig(layers=1, vocab=12, tokens=600, seq_len=64,
                                                                     batch_size=4, heldout_every=4), "tiny", progress=False)
    cfg = AdaptConfig(copies=3, tokens=600, seq_len=64, batch_size=4, heldout_every=4)
    metrics = adapt_draft(base, target, tok, [CORPUS], None, tmp_path / "pard", cfg, "tiny", progress=False)
    per_copy = metrics["heldout_top1_per_copy"]
    assert len(per_copy) == 3 and all(0 <= a <= 1 for a in per_copy)
    meta = json.loads((tmp_path / "pard" / META_FILE).read_text())
    draft, vocab = load_distilled(tmp_path / "pard", torch.device("cpu"), torch.float32)
    assert meta["mask_id"] == len(vocab) == draft.config.pard_token  # one new token after the reduced vocabulary
    runner = ParallelRunner(draft, meta["mask_id"], vocab, 64)
    prompt = tok("abc def", add_special_tokens=False)["input_ids"]
    assert set(runner.draft(prompt, 3)) <= set(vocab[1:].tolist())  # never the mask, never "any other token"
    engine = Engine(target, set())
    drafter = PardDrafter(PardConfig(k=3), ParallelRunner(draft, meta["mask_id"], vocab, 64))
    assert engine.generate(prompt, drafter, 24).output_ids == engine.generate(prompt, None, 24).output_ids
