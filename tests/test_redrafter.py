"""ReDrafter: prefix dedup/packing vs a brute-force trie, beam search vs enumeration, losslessness."""
from __future__ import annotations

import itertools

import pytest
import torch

from specbench_methods.redrafter import ReDrafterConfig, build_redrafter
from specbench_methods.redrafter.beam import beam_search, head_step_fn
from specbench_methods.redrafter.config import HeadConfig
from specbench_methods.redrafter.drafter import ReDrafter
from specbench_methods.redrafter.head import DraftHead
from specbench_methods.redrafter.prefix import get_prefix_match, pack_beams
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from specbench.plugins.registry import METHODS
from specbench.run.method_env import MethodEnv
from tests.conftest import make_tiny_model


def _brute_prefix_match(beams: list[list[int]]) -> list[list[int]]:
    return [[min(c for c in range(len(beams)) if beams[c][: l + 1] == beams[b][: l + 1]) for l in range(len(beams[b]))]
            for b in range(len(beams))]


def _check_packing(beams: torch.Tensor) -> None:
    rows = beams.tolist()
    assert get_prefix_match(beams).tolist() == _brute_prefix_match(rows)
    tree, node_of = pack_beams(beams)
    assert tree == DraftTree.from_chains([r[1:] for r in rows])
    # brute force: the tree's root-to-node paths are exactly the distinct beam prefixes, once each
    paths = [tuple(tree.path_to(i)) for i in range(len(tree))]
    prefixes = {tuple(r[1 : l + 1]) for r in rows for l in range(1, len(r))}
    assert len(paths) == len(set(paths)) and set(paths) == prefixes
    for b, r in enumerate(rows):
        for l in range(len(r) - 1):
            assert tree.path_to(int(node_of[b, l])) == r[1 : l + 2]


@pytest.mark.parametrize("seed", range(30))
def test_prefix_packing_equals_bruteforce_trie(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    width, length = int(torch.randint(1, 7, (1,), generator=g)), int(torch.randint(2, 6, (1,), generator=g))
    beams = torch.randint(0, 3, (width, length), generator=g)  # vocab 3: lots of shared prefixes
    beams[:, 0] = 9  # column 0 is the root g0
    _check_packing(beams)


def test_prefix_packing_identical_and_distinct_beams() -> None:
    same = torch.tensor([[5, 1, 2, 3]] * 4)
    _check_packing(same)
    assert pack_beams(same)[0] == DraftTree.chain([1, 2, 3])
    distinct = torch.tensor([[5, 1, 2], [5, 2, 2], [5, 3, 2]])
    _check_packing(distinct)
    assert len(pack_beams(distinct)[0]) == 6


def _random_head(vocab: int = 5, h: int = 8, seed: int = 0) -> DraftHead:
    torch.manual_seed(seed)
    head = DraftHead(HeadConfig(hidden_size=h, embed_dim=6, vocab_size=vocab, proj_dim=h, num_blocks=1))
    for p in head.parameters():
        torch.nn.init.normal_(p, std=0.8)
    return head.attach(torch.randn(vocab, 6)).eval()


def _score(head: DraftHead, ctx: torch.Tensor, seq: tuple[int, ...]) -> float:
    """Summed log-prob of ``seq`` after the root, one unbatched step at a time."""
    state, total = None, 0.0
    for prev, tok in zip(seq[:-1], seq[1:]):
        state, logits = head.step(ctx[None], state, torch.tensor([prev]))
        total += float(torch.log_softmax(logits[0], -1)[tok])
    return total


@pytest.mark.parametrize("width,length", [(1, 4), (2, 3), (3, 4), (4, 3), (30, 3)])
def test_beam_search_equals_enumeration(width: int, length: int) -> None:
    vocab, root = 5, 2
    head = _random_head(vocab)
    ctx = torch.randn(8)
    with torch.no_grad():
        beams, scores = beam_search(head_step_fn(head, ctx), root, width, length)
        score = {s: _score(head, ctx, (root,) + s) for d in range(1, length) for s in itertools.product(range(vocab), repeat=d)}
    kept: list[tuple[int, ...]] = [()]
    for d in range(1, length):  # beam semantics from the enumeration: top W extensions of the kept prefixes
        cands = [k + (t,) for k in kept for t in range(vocab)]
        kept = sorted(cands, key=lambda s: -score[s])[:width]
    assert [tuple(b[1:]) for b in beams.tolist()] == kept
    assert torch.allclose(scores, torch.tensor([score[k] for k in kept]), atol=1e-4)
    if width >= vocab ** (length - 1):  # wide enough: exactly the global top sequences
        assert set(kept) == {s for s in score if len(s) == length - 1}


def _env(model: torch.nn.Module, tmp_path) -> MethodEnv:
    return MethodEnv(model=model, tokenizer=None, model_id="tiny", device=torch.device("cpu"), data_dir=None, cache_dir=tmp_path)


def test_registered_and_config_validation() -> None:
    assert "redrafter" in METHODS
    from specbench.config.coerce import from_dict
    from specbench.errors import ConfigError

    with pytest.raises(ConfigError):
        from_dict(ReDrafterConfig, {"beam_length": "1"})
    assert from_dict(ReDrafterConfig, {"beam_width": "2"}).beam_width == 2


@pytest.mark.parametrize("family,width,length", [("llama", 3, 4), ("llama", 1, 2), ("qwen2", 4, 3), ("gpt2", 2, 5)])
def test_random_head_is_lossless_on_tiny_model(family: str, width: int, length: int, tmp_path) -> None:
    model = make_tiny_model(family, seed=1)
    env = _env(model, tmp_path)
    drafter = build_redrafter(ReDrafterConfig(checkpoint="random", beam_width=width, beam_length=length), env)
    assert env.artifacts["checkpoint"] == "random"
    # the head's own parameters (the borrowed target embedding is not counted)
    assert env.artifacts["overhead"]["parameters"] == sum(p.numel() for p in drafter.head.parameters()) > 0
    engine = Engine(model, stop_ids=set())
    for prompt in ([1, 2, 3, 4], [7, 7, 7, 7, 7, 9, 11], [5]):
        ar = engine.generate(prompt, None, 40)
        rd = engine.generate(prompt, drafter, 40)
        assert rd.output_ids == ar.output_ids
        assert max(rd.draft_sizes) > 0 and max(rd.draft_sizes) <= width * (length - 1)


class OracleReDrafter(ReDrafter):
    """Scores put all mass on the AR continuation: every beam's first choice is the right token."""

    def __init__(self, config: ReDrafterConfig, full: list[int]) -> None:
        super().__init__(None, config)
        self.full = full

    def step_fn(self, ctx):
        base = len(ctx.tokens)  # full[base] is the first token after the root

        def step(state, tokens):
            depth = torch.zeros(len(tokens), dtype=torch.long) if state is None else state
            logp = torch.full((len(tokens), 64), -30.0)
            for b, d in enumerate(depth.tolist()):
                if base + d < len(self.full):
                    logp[b, self.full[base + d]] = 0.0
            return depth + 1, logp

        return step


def test_oracle_head_accepts_everything() -> None:
    model = make_tiny_model("llama", seed=2)
    engine = Engine(model, stop_ids=set())
    prompt, n_new, length = [3, 1, 4, 1, 5], 41, 4
    ar = engine.generate(prompt, None, n_new)
    drafter = OracleReDrafter(ReDrafterConfig(checkpoint="random", beam_width=3, beam_length=length), prompt + ar.output_ids)
    rd = engine.generate(prompt, drafter, n_new)
    assert rd.output_ids == ar.output_ids
    # prefill emits 1, then every pass accepts all L-1 drafts + the bonus: L tokens per pass
    assert rd.accept_lengths[1:] == [length] * ((n_new - 1) // length)
    assert all(d == length - 1 for d in drafter.accepted_depths)


@pytest.mark.embedded
def test_random_head_is_lossless_on_embedded_model(embedded, tmp_path) -> None:
    from specbench.models.loading import stop_token_ids
    from specbench.prompts.task import encode_prompt

    env = MethodEnv(embedded.model, embedded.tokenizer, embedded.model_id, embedded.device, None, tmp_path)
    drafter = build_redrafter(ReDrafterConfig(checkpoint="random", beam_width=3, beam_length=4), env)
    engine = Engine(embedded.model, stop_token_ids(embedded.tokenizer, embedded.model))
    for text in ("Write a Python function that reverses a string.", "What is 12 times 7? Answer briefly."):
        ids = encode_prompt(embedded.tokenizer, [{"role": "user", "content": text}])
        ar = engine.generate(ids, None, 16)
        rd = engine.generate(ids, drafter, 16)
        assert rd.output_ids == ar.output_ids
