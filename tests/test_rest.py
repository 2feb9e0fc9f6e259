"""REST: trie selection equals brute force, deterministic ties, lossless decoding, datastore build/cache."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from specbench_methods.rest import RESTConfig, RESTDrafter, rest_tree
from specbench.datastore.build import cached_rest_datastore, parse_corpora
from specbench.datastore.suffix_array import TokenDatastore
from specbench.datastore.trie import top_nodes, top_nodes_dict, top_nodes_vectorised
from specbench.engine.loop import Engine
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from tests.conftest import make_tiny_model


def brute_top(conts: list[list[int]], c: int) -> list[tuple[int, ...]]:
    """Reference Algorithm 2: insert rows in order into a dict trie; rank by count, then creation order."""
    count: dict[tuple[int, ...], int] = {}
    created: dict[tuple[int, ...], int] = {}
    for row in conts:
        prefix: tuple[int, ...] = ()
        for tok in row:
            if tok < 0:
                break
            prefix += (tok,)
            if prefix not in count:
                count[prefix] = 0
                created[prefix] = len(created)
            count[prefix] += 1
    ranked = sorted(count, key=lambda p: (-count[p], created[p]))
    return ranked[:c]


def tree_paths(tree) -> list[tuple[int, ...]]:
    return [tuple(tree.path_to(i)) for i in range(len(tree))]


@pytest.mark.parametrize("seed", range(20))
def test_top_nodes_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 60)), int(rng.integers(1, 6))
    conts = rng.integers(0, 3, size=(n, m))
    for i in range(n):  # some rows clipped at a chunk end
        cut = int(rng.integers(0, m + 1)) if rng.random() < 0.3 else m
        conts[i, cut:] = -1
    if rng.random() < 0.5:  # suffix-array order (sorted), as single-chunk retrieval delivers
        conts = conts[np.lexsort(conts.T[::-1])]
    c = int(rng.integers(1, 12))
    expect = brute_top(conts.tolist(), c)
    for tree in (top_nodes_vectorised(conts, c), top_nodes_dict(conts.tolist(), c)):
        if not expect:
            assert tree is None
            continue
        assert tree_paths(tree) == expect  # same nodes, in rank order, prefix-closed
        assert all(p < i for i, p in enumerate(tree.parents))


def test_ties_broken_by_first_occurrence() -> None:
    conts = np.array([[1, 2], [1, 3], [1, 2], [4, -1]])
    tree = top_nodes(conts, 3)
    assert tree.tokens == (1, 2, 3) and tree.parents == (-1, 0, 0)
    # unsorted input: 4 occurs before 1>3 now, so it wins the tie
    tree = top_nodes(np.array([[4, -1], [1, 2], [1, 3], [1, 2]]), 3)
    assert tree_paths(tree) == [(1,), (1, 2), (4,)]
    assert top_nodes(np.full((3, 2), -1), 5) is None
    assert top_nodes(np.zeros((0, 4), dtype=np.int32), 5) is None


def test_rest_tree_uses_longest_suffix() -> None:
    ds = TokenDatastore.from_entries([[1, 2, 3, 4, 5], [9, 2, 3, 7, 7], [2, 3, 8]], vocab_size=16)
    cfg = RESTConfig(n_max=16, n_min=2, k=100, m=2, c=8)
    assert tree_paths(rest_tree(ds, [0, 1, 2, 3], cfg)) == [(4,), (4, 5)]  # s = 3 matches only [1, 2, 3]
    assert set(tree_paths(rest_tree(ds, [0, 0, 2, 3], cfg))) == {(4,), (4, 5), (7,), (7, 7), (8,)}
    assert rest_tree(ds, [6, 6], cfg) is None


def _ar(model, prompt, n):
    return Engine(model, set()).generate(prompt, None, n).output_ids


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_rest_lossless_on_tiny_model(family: str) -> None:
    model = make_tiny_model(family, seed=3)
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, 64, size=12).tolist() for _ in range(3)]
    refs = [_ar(model, p, 40) for p in prompts]
    # the datastore holds the AR continuations of two prompts (drafts get accepted) plus noise
    entries = [p + r for p, r in zip(prompts[:2], refs[:2])] + [rng.integers(0, 64, size=50).tolist() for _ in range(20)]
    ds = TokenDatastore.from_entries(entries, vocab_size=64, chunk_tokens=64)
    drafter = RESTDrafter(ds, RESTConfig(k=50, m=6, c=16))
    accepted = 0
    for p, ref in zip(prompts, refs):
        gen = Engine(model, set()).generate(p, drafter, 40)
        assert gen.output_ids == ref
        accepted += sum(gen.accept_lengths) - gen.forward_passes
    assert accepted > 20  # retrieval actually drafted correct tokens
    assert len(drafter.latencies_s) > 0


class CharTokenizer:
    """A stand-in tokenizer: one token per character (mod 64)."""

    def __len__(self) -> int:
        return 64

    def get_vocab(self) -> dict[str, int]:
        return {chr(32 + i): i for i in range(64)}

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[ord(ch) % 64 for ch in t] for t in texts]}


def test_factory_builds_caches_and_records_artifacts(tmp_path: Path) -> None:
    data_dir = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (data_dir / "gsm8k" / "train.jsonl").is_file():
        pytest.skip("shared data dir not available")
    env = MethodEnv(make_tiny_model(), CharTokenizer(), "char", torch.device("cpu"), data_dir, tmp_path, task="gsm8k")
    assert parse_corpora(None, "gsm8k") == ("gsm8k_train", "sharegpt")
    assert parse_corpora(None, "mt_bench") == ("sharegpt",)
    drafter, cfg = build_drafter("rest", {"corpus": "gsm8k_train", "max_tokens": "20000"}, env)
    assert cfg["max_tokens"] == 20000 and isinstance(drafter, RESTDrafter)
    assert env.artifacts["datastore_tokens"] == 20000 and env.artifacts["datastore_bytes"] > 20000 * 8
    assert env.artifacts["overhead"] == {"storage_bytes": env.artifacts["datastore_bytes"], "parameters": None}
    path = Path(env.artifacts["datastore"])
    assert path.is_relative_to(tmp_path)
    # second use opens the cache instead of rebuilding; an explicit datastore= path works too
    mtime = (path / "header.json").stat().st_mtime
    again = cached_rest_datastore(tmp_path, ("gsm8k_train",), CharTokenizer(), "char", data_dir, 20000)
    assert (path / "header.json").stat().st_mtime == mtime and again.n_tokens == 20000
    drafter2, _ = build_drafter("rest", {"datastore": str(path)}, env)
    assert drafter2.ds.n_tokens == 20000


@pytest.mark.embedded
def test_rest_lossless_on_embedded_model(embedded) -> None:
    from specbench.datastore.corpora import code_alpaca
    from specbench.paths import default_data_dir
    from specbench.models.loading import stop_token_ids
    from specbench.prompts.task import encode_prompt

    import itertools

    tok = embedded.tokenizer
    texts = list(itertools.islice(code_alpaca(default_data_dir()), 2000))
    ds = TokenDatastore.from_entries(tok(texts, add_special_tokens=False)["input_ids"], vocab_size=len(tok))
    engine = Engine(embedded.model, stop_token_ids(tok, embedded.model))
    drafter = RESTDrafter(ds, RESTConfig())
    prompt = encode_prompt(tok, [{"role": "user", "content": "Write a Python function that returns the sum of a list."}])
    ref = engine.generate(prompt, None, 40).output_ids
    gen = engine.generate(prompt, drafter, 40)
    assert gen.output_ids == ref
    assert gen.forward_passes < len(ref)  # some drafts were accepted


def test_build_drops_entries_containing_a_test_prompt(tmp_path: Path) -> None:
    from specbench.datastore.contamination import ContaminationFilter, prompt_probes, test_prompts
    from specbench.datastore.token_files import write_datastore

    tok = CharTokenizer()
    secret = "Compose an engaging travel blog post about a recent trip to Hawaii"
    texts = ["some unrelated text about cooking pasta", "intro: " + secret + " please!", "more text"]
    filt = ContaminationFilter(prompt_probes([secret, "too short"], tok))
    assert len(filt.probes) == 1  # the short prompt is skipped
    entries = tok(texts)["input_ids"]
    header = write_datastore(entries, tmp_path / "ds", vocab_size=64, meta={}, chunk_hook=filt)
    assert filt.summary() == {"probes": 1, "prompts_found": 1, "entries_dropped": 1}
    assert header["n_entries"] == 2 and header["n_tokens"] == len(entries[0]) + len(entries[2])
    ds = TokenDatastore.load(tmp_path / "ds")
    assert ds.count(tok([secret[5:30]])["input_ids"][0]) == 0 and ds.count(entries[2]) == 1
    data_dir = Path(__file__).resolve().parents[2] / "shared" / "data"
    if data_dir.is_dir():
        prompts = test_prompts(data_dir)
        assert secret + ", highlighting cultural experiences and must-see attractions." in prompts
        assert sum("def " in p for p in prompts) >= 164  # HumanEval prompts are checked too


def test_offline_replay_equals_engine_accept_lengths() -> None:
    from replay_accept import accepted_length, replay

    model = make_tiny_model("llama", seed=4)
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, 64, size=12).tolist()
    ref = _ar(model, prompt, 48)
    entries = [prompt + ref[:20], ref[15:40], rng.integers(0, 64, size=60).tolist()]
    drafter = RESTDrafter(TokenDatastore.from_entries(entries, vocab_size=64), RESTConfig(k=20, m=5, c=8))
    gen = Engine(model, set()).generate(prompt, drafter, 48)
    assert replay(drafter, prompt, gen.output_ids, 48) == gen.accept_lengths
    assert max(gen.accept_lengths) > 1
    from specbench.engine.tree import DraftTree

    assert accepted_length(DraftTree.from_chains([[1, 2, 3], [1, 4]]), [1, 4, 9]) == 2


@pytest.mark.parametrize("seed", range(5))
def test_top_nodes_equals_brute_force_large(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    conts = rng.integers(0, 3, size=(400, 8)) * rng.integers(0, 2, size=(400, 8))  # skewed: many shared prefixes
    conts[rng.random(400) < 0.1, 5:] = -1
    for c in (1, 7, 64):
        assert tree_paths(top_nodes(conts, c)) == brute_top(conts.tolist(), c)
        assert top_nodes_vectorised(conts, c) == top_nodes_dict(conts.tolist(), c)
