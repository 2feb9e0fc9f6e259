"""FR-Spec's frequency-ranked draft vocabulary (``specbench/drafting/frequency_vocab.py``) and ``eagle``'s
``vocab`` option: the counts, their cache, the choice, and drafts restricted to it staying lossless."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from methods.eagle.layer import EagleLayer, LayerShape
from methods.eagle.method import DraftHead, EagleConfig, EagleDrafter
from specbench.drafting import frequency_vocab as fv
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.plugins.registry import CORPORA
from test_engine_exact import greedy_reference
from test_golden import char_tokenizer
from test_sps_distill import tied_tiny_target

CORPUS = "tiny_fr_counts"
TEXTS = ["aaab", "ab c", "cab"]  # a: 5, b: 3, c: 2, space: 1
if CORPUS not in CORPORA:
    CORPORA.add(CORPUS, lambda data_dir: iter(TEXTS))


def test_vocab_option_spellings() -> None:
    assert [fv.parse_vocab(s) for s in ("trained", "full", "fr:2", "fr:32768")] == ["trained", "full", 2, 32768]
    for bad in ("fr:1", "fr:", "fr:x", "fr8", "half", ""):
        with pytest.raises(ConfigError, match="vocab must be one of trained, full, fr:N"):
            fv.parse_vocab(bad)
    with pytest.raises(ConfigError, match="vocab must be"):
        EagleConfig(vocab="fr:0").validate()


def test_kept_ids_come_first_then_counts_then_smaller_ids() -> None:
    counts = np.array([0, 4, 4, 9, 1, 0])
    assert fv.frequency_vocab(counts, 3).tolist() == [1, 2, 3]  # 3 (9), then 1 and 2 tie (4): both in
    assert fv.frequency_vocab(counts, 3, keep={5}).tolist() == [1, 3, 5]  # stop token 5 kept though never seen
    assert fv.frequency_vocab(counts, 99).tolist() == list(range(6))  # capped at the vocabulary


def test_counts_are_the_corpus_tokens_counted_once_and_cached(tmp_path, monkeypatch) -> None:
    tok = char_tokenizer()
    counts = fv.corpus_counts(tmp_path, tok, None, (CORPUS,), max_tokens=1000)
    ids = {c: tok.convert_tokens_to_ids(c) for c in "abc "}
    assert len(counts) == len(tok) and counts.sum() == 11
    assert [counts[ids[c]] for c in "abc "] == [5, 3, 2, 1]
    monkeypatch.setattr(fv, "tokenize_entries", lambda *a, **k: pytest.fail("counted again"))
    assert fv.corpus_counts(tmp_path, tok, None, (CORPUS,), max_tokens=1000).tolist() == counts.tolist()
    capped = fv.counts_dir(tmp_path, tok, (CORPUS,), 4)
    assert not capped.exists()  # another cap is another count
    monkeypatch.undo()
    assert fv.corpus_counts(tmp_path, tok, None, (CORPUS,), max_tokens=4)[ids["a"]] == 3  # "aaab" only


def test_counts_of_another_vocabulary_are_refused(tmp_path) -> None:
    tok = char_tokenizer()
    folder = fv.counts_dir(tmp_path, tok, (CORPUS,), 1000)
    folder.mkdir(parents=True)
    np.save(folder / fv.COUNTS_FILE, np.zeros(7, dtype=np.int64))
    (folder / fv.META_FILE).write_text("{}")
    with pytest.raises(ConfigError, match="one count per token"):
        fv.corpus_counts(tmp_path, tok, None, (CORPUS,), max_tokens=1000)


def test_the_choice_per_option_and_its_record(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(fv, "FR_CORPORA", (CORPUS,))
    tok, target = char_tokenizer(), tied_tiny_target()
    env = SimpleNamespace(cache_dir=tmp_path, tokenizer=tok, data_dir=None, model=target, artifacts={})
    trained = np.array([1, 2, 3])
    assert fv.choose_draft_vocab("trained", trained, env) is trained
    assert fv.choose_draft_vocab("full", trained, env) is None and env.artifacts == {}
    vocab = fv.choose_draft_vocab("fr:3", trained, env)
    stop = tok.convert_tokens_to_ids("#")  # the tokenizer's eos: kept though the corpus never has it
    assert vocab.tolist() == sorted([stop, tok.convert_tokens_to_ids("a"), tok.convert_tokens_to_ids("b")])
    assert env.artifacts["fr_vocab"] == {"size": 3, "corpora": [CORPUS], "max_tokens": fv.FR_MAX_TOKENS,
                                         "corpus_share": round(8 / 11, 4)}


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2", "neox"])
def test_drafts_from_the_frequent_tokens_alone_stay_lossless(family: str) -> None:
    target = make_tiny_model(family).eval()
    torch.manual_seed(1)
    layer = EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings())
    vocab = np.arange(0, 64, 3)  # every third id: a sub-vocabulary unrelated to what the target prefers
    drafter = EagleDrafter(layer, DraftHead(target.get_output_embeddings(), vocab), EagleConfig(top_k=3, depth=2))
    drafted: list[int] = []
    propose = drafter.propose
    drafter.propose = lambda ctx: _kept(propose(ctx), drafted)  # type: ignore[method-assign]
    prompt = [5, 9, 12, 5, 9, 12, 5]
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 24)
    assert gen.output_ids == greedy_reference(target, prompt, 24)
    assert drafted and set(drafted) <= set(vocab.tolist())


def _kept(tree, sink: list[int]):
    if tree is not None:
        sink.extend(tree.tokens)
    return tree
