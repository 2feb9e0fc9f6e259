"""ReDrafter's reference-architecture options: config round-trip, head shape, top-k warp, cache key, exactness."""
from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import torch

from specbench_methods.redrafter import ReDrafterConfig, build_redrafter, default_checkpoint_dir, default_train_config
from specbench.training.distill_data import DistillData
from specbench_methods.redrafter.diagnose import root_repeat_rates
from specbench_methods.redrafter.drafter import ReDrafter
from specbench_methods.redrafter.beam import beam_search, head_step_fn, warped_log_probs
from specbench_methods.redrafter.config import RECIPES
from specbench_methods.redrafter.head import build_head, head_config_for
from specbench_methods.redrafter.train import TrainConfig
from specbench.config.run_flags import parse_method_opts
from specbench.errors import ConfigError
from specbench.config.run_config import RunConfig
from specbench.config.coerce import from_dict, load_yaml
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.results.lossless import EXACT, classify
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import method_config
from tests.conftest import make_tiny_model

REFERENCE = {"proj": False, "num_blocks": 2, "n_predict": 5, "top_k": 50, "recipe": "paper"}


def _env(model: torch.nn.Module, tmp_path) -> MethodEnv:
    return MethodEnv(model=model, tokenizer=None, model_id="tiny", device=torch.device("cpu"), data_dir=None, cache_dir=tmp_path)


def test_options_round_trip_from_yaml_and_method_opt(tmp_path) -> None:
    (tmp_path / "run.yaml").write_text(
        "methods: [redrafter]\nmethod_options:\n  redrafter:\n"
        "    proj: false\n    num_blocks: 2\n    n_predict: 5\n    top_k: 50\n    recipe: paper\n")
    from_yaml = method_config("redrafter", from_dict(RunConfig, load_yaml(tmp_path / "run.yaml")).method_options["redrafter"])
    flags = parse_method_opts([f"redrafter.{k}={str(v).lower()}" for k, v in REFERENCE.items()])
    from_flags = method_config("redrafter", flags["redrafter"])
    assert from_yaml == from_flags == ReDrafterConfig(**REFERENCE)
    assert method_config("redrafter", dataclasses.asdict(from_yaml)) == from_yaml
    assert from_yaml.train_budget() == (100000, 2) and ReDrafterConfig().train_budget() == (20000, 1)
    assert ReDrafterConfig(recipe="paper", default_tokens=500).train_budget() == (500, 2)
    tcfg = default_train_config(from_yaml)
    assert (tcfg.proj, tcfg.num_blocks, tcfg.n_predict, tcfg.tokens, tcfg.epochs) == (False, 2, 5, 100000, 2)
    for bad in ({"recipe": "long"}, {"top_k": "-1"}, {"n_predict": "0"}, {"proj": "maybe"}):
        with pytest.raises(ConfigError):
            method_config("redrafter", bad)


def test_reference_head_shapes_and_parameter_count() -> None:
    model = make_tiny_model("llama", seed=3)
    h, e, vocab = 32, 32, 64
    cfg = head_config_for(model, proj=False, num_blocks=2)
    assert (cfg.proj_dim, cfg.num_blocks, cfg.feature_dim) == (0, 2, 2 * h)
    head = build_head(cfg, model)
    assert head.proj is None and len(head.blocks) == 2
    assert tuple(head.lm_head.weight.shape) == (vocab, 2 * h)
    assert all(tuple(b.linear.weight.shape) == (2 * h, 2 * h) for b in head.blocks)
    # rnn_w (e -> h, bias) + rnn_u (h -> h) + 2 blocks (2h -> 2h, bias) + own LM head (2h -> V); no 2h -> h projection
    expected = (e * h + h) + h * h + 2 * (4 * h * h + 2 * h) + 2 * h * vocab
    assert sum(p.numel() for p in head.parameters()) == expected
    default = build_head(head_config_for(model), model)
    assert sum(p.numel() for p in default.parameters()) == (e * h + h) + h * h + (2 * h * h + h) + (h * h + h) + h * vocab
    ctx, tokens = torch.randn(3, h), torch.randint(0, vocab, (3, 5))
    assert tuple(head(ctx, tokens).shape) == (3, 5, vocab)
    state, logits = head.step(ctx, None, tokens[:, 0])
    assert tuple(state.shape) == (3, h) and tuple(logits.shape) == (3, vocab)
    # the own LM head starts as the target's on the context half, zero on the state half
    assert torch.equal(head.lm_head.weight[:, :h], model.get_output_embeddings().weight)
    assert not head.lm_head.weight[:, h:].any()


def test_top50_warp_keeps_the_best_50_renormalised() -> None:
    logits = torch.linspace(3.0, -3.0, 200).unsqueeze(0)  # [1, 200], strictly decreasing
    warped = warped_log_probs(logits, 50)
    assert int(torch.isfinite(warped).sum()) == 50 and bool(torch.isfinite(warped[0, :50]).all())
    assert torch.allclose(warped[0, :50], torch.log_softmax(logits[0, :50], -1))
    assert torch.equal(warped_log_probs(logits, 0), torch.log_softmax(logits, -1))
    tied = torch.tensor([[1.0, 0.5, 0.5, 0.0]])  # ties with the k-th are kept
    assert int(torch.isfinite(warped_log_probs(tied, 2)).sum()) == 3


def _constructed_step(top_k: int):
    """Root -> tokens 1 and 2 equally likely. After 1 the head is flat over 200 tokens (token 5 a little
    ahead); after 2 it is peaked on token 7 over 199 tied tokens. Unwarped, 7 wins (p 0.036 vs 0.014);
    under top-50 the flat row is judged against its own 50 best only and token 5 wins (p 0.054)."""
    vocab = 200

    def step(state, tokens):
        depth = 0 if state is None else int(state[0])
        rows = []
        for t in tokens.tolist():
            row = torch.full((vocab,), -100.0)
            if depth == 0:
                row[1] = row[2] = 0.0
            elif t == 1:
                row = -0.001 * torch.arange(vocab, dtype=torch.float32)
                row[5] = 1.0
            else:
                row = torch.zeros(vocab)
                row[7] = 2.0
            rows.append(row)
        return torch.full((len(tokens),), depth + 1), warped_log_probs(torch.stack(rows), top_k)

    return step


def test_top50_warp_changes_the_beam_ranking() -> None:
    plain, plain_scores = beam_search(_constructed_step(0), root=9, width=2, length=3)
    warped, warped_scores = beam_search(_constructed_step(50), root=9, width=2, length=3)
    assert plain.tolist() == [[9, 2, 7], [9, 1, 5]]
    assert warped.tolist() == [[9, 1, 5], [9, 2, 7]]
    assert float(warped_scores[0]) > float(plain_scores[0])


def test_drafter_scores_with_the_warp() -> None:
    model = make_tiny_model("qwen2", seed=4)
    head = build_head(head_config_for(model, proj=False, num_blocks=2), model).eval()
    for p in head.parameters():
        torch.nn.init.normal_(p, std=0.5)
    ctx = DraftContext(tokens=[1, 2, 3], prompt_len=2, hidden=torch.randn(32), max_depth=8)
    for top_k, finite in ((5, 5), (0, 64)):
        _, logp = ReDrafter(head, ReDrafterConfig(top_k=top_k)).step_fn(ctx)(None, torch.tensor([3, 4]))
        assert (torch.isfinite(logp).sum(-1) == finite).all()
    # the beams drawn through the warped scorer stay inside each row's top 5
    beams, _ = beam_search(head_step_fn(head, ctx.hidden, top_k=5), 3, width=5, length=3)
    assert len({tuple(b) for b in beams.tolist()}) == 5


def _legacy_key(model: torch.nn.Module, config: ReDrafterConfig) -> str:
    """The key as computed before options and dtype entered it (float32 heads cached then must keep it)."""
    recipe = {"model": "tiny", "shape": list(model.get_input_embeddings().weight.shape), "corpus": config.default_corpus,
              "tokens": 20000, "train": TrainConfig().__dict__}
    return "default-" + hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def test_cache_key_follows_options_and_dtype(tmp_path) -> None:
    model = make_tiny_model("llama", seed=5)
    key = lambda m, **kw: default_checkpoint_dir(_env(m, tmp_path), ReDrafterConfig(**kw)).name  # noqa: E731
    base = key(model)
    assert base == _legacy_key(model, ReDrafterConfig())
    changed = [key(model, **{k: v}) for k, v in REFERENCE.items() if k != "top_k"]
    changed += [key(model, default_tokens=5000), key(model, default_corpus="sharegpt")]
    assert len({base, *changed}) == len(changed) + 1
    assert key(model, top_k=50, beam_width=5, beam_length=6) == base  # inference-only options share the head
    assert key(model.to(torch.bfloat16)) not in (base, *changed)
    assert key(model.to(torch.float16)) != key(model.to(torch.bfloat16))


@pytest.mark.parametrize("family,width,length,top_k", [("llama", 4, 6, 50), ("qwen2", 3, 5, 2), ("gpt2", 2, 6, 50)])
def test_reference_options_are_exact_on_tiny_model(family: str, width: int, length: int, top_k: int, tmp_path) -> None:
    model = make_tiny_model(family, seed=6)
    env = _env(model, tmp_path)
    config = ReDrafterConfig(**dict(REFERENCE, top_k=top_k, checkpoint="random", beam_width=width, beam_length=length))
    built = build_redrafter(config, env)
    assert built.head.config.feature_dim == 2 * 32 and len(built.head.blocks) == 2
    noisy = build_head(head_config_for(model, proj=False, num_blocks=2), model).eval()
    for p in noisy.parameters():  # a head that does not just repeat the root: varied drafts, some accepted
        torch.nn.init.normal_(p, std=0.3)
    engine = Engine(model, stop_ids=set())
    for drafter in (built, ReDrafter(noisy, config)):
        for prompt in ([1, 2, 3, 4], [7, 7, 7, 7, 7, 9, 11], [5]):
            ar = engine.generate(prompt, None, 40)
            rd = engine.generate(prompt, drafter, 40)
            assert classify(ar.output_ids, rd.output_ids, lambda i: None).lossless_class == EXACT
            assert 0 < max(rd.draft_sizes) <= min(width, top_k) * (length - 1)


def test_untrained_head_repeats_the_root() -> None:
    """The LM head copied from the target reads the context like the target: it predicts the root again."""
    model = make_tiny_model("llama", seed=7)
    tokens = torch.randint(0, 64, (60,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        hidden = model.base_model(input_ids=tokens.unsqueeze(0)).last_hidden_state[0]
        argmax = model.get_output_embeddings()(hidden).argmax(-1)
    data = DistillData(hidden.half(), tokens, argmax, torch.zeros(0, dtype=torch.long), torch.arange(50))
    starts = data.heldout_starts
    repeats = float((argmax[starts + 1] == argmax[starts]).float().mean())
    untrained = build_head(head_config_for(model, proj=False, num_blocks=2), model).eval().float()
    assert root_repeat_rates(untrained, data, starts) == (1.0, repeats)
    for p in untrained.parameters():
        torch.nn.init.normal_(p, std=0.3)
    assert root_repeat_rates(untrained, data, starts)[0] < 0.5


def test_train_cli_recipe_sets_budget_and_flags_override() -> None:
    import argparse

    from specbench_methods.redrafter.train_cli import _add_arguments, _recipes
    from specbench.training.trainer_args import add_common_arguments, corpora_and_recipe

    parser = argparse.ArgumentParser()
    _add_arguments(parser)
    add_common_arguments(parser, tuple(_recipes(argparse.Namespace())))

    def parse(*a: str) -> TrainConfig:
        args = parser.parse_args(["--corpus", "sharegpt", "--out", "x", *a])
        return corpora_and_recipe(args, _recipes(args), ("sharegpt",))[1]

    assert (parse().tokens, parse().epochs) == (20000, 1) and parse() == TrainConfig()
    paper = parse("--recipe", "paper", "--no-proj", "--num-blocks", "2", "--n-predict", "5")
    assert paper == default_train_config(ReDrafterConfig(**REFERENCE))  # CLI and default head agree
    assert parse("--recipe", "paper", "--epochs", "1").tokens == 100000 and parse("--recipe", "paper", "--epochs", "1").epochs == 1
    assert (parse("--recipe", "full").tokens, parse("--recipe", "full").epochs) == RECIPES["full"]