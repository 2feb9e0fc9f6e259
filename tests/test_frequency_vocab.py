"""FR-Spec's frequency-ranked draft vocabulary (``specbench/drafting/frequency_vocab.py``) and ``eagle``'s
``vocab`` option: the counts, their cache, the choice, and drafts restricted to it staying lossless."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.eagle.layer import EagleLayer, LayerShape
from specbench_methods.eagle.method import DraftHead, EagleConfig, EagleDrafter
from specbench.drafting import frequency_vocab as fv
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.models.loading import load_model
from specbench.plugins.registry import CORPORA
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
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
    drafted = _decode_exactly(target, drafter)
    assert drafted and drafted <= set(vocab.tolist())


def _decode_exactly(target, drafter) -> set[int]:
    """Decode a fixed prompt with ``drafter``, check the output is AR's, and return every token it drafted."""
    drafted: list[int] = []
    propose = drafter.propose

    def recording(ctx):
        tree = propose(ctx)
        if tree is not None:
            drafted.extend(tree.tokens)
        return tree

    drafter.propose = recording  # type: ignore[method-assign]
    prompt = [5, 9, 12, 5, 9, 12, 5]
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 24)
    assert gen.output_ids == greedy_reference(target, prompt, 24)
    return set(drafted)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2", "neox"])
@pytest.mark.parametrize("method", ["eagle", "eagle3", "medusa", "hydra", "sps"])
def test_every_head_restricted_by_fr_drafts_the_kept_tokens_alone(method: str, family: str, tmp_path,
                                                                  monkeypatch) -> None:
    monkeypatch.setattr(fv, "FR_CORPORA", (CORPUS,))
    target, tok = make_tiny_model(family).eval(), char_tokenizer()
    if method == "sps":  # the draft: the target itself, saved with its tokenizer (SpS checks they match)
        target.save_pretrained(tmp_path / "draft")
        tok.save_pretrained(tmp_path / "draft")
        tok = load_model(str(tmp_path / "draft")).tokenizer  # (as the family's loader reads it back)
    env = MethodEnv(model=target, tokenizer=tok, model_id="tiny", device=torch.device("cpu"), data_dir=None,
                    cache_dir=tmp_path)
    options = {"draft_model": str(tmp_path / "draft")} if method == "sps" else {"checkpoint": "random"}
    drafter, _ = build_drafter(method, {**options, "vocab": "fr:12"}, env)
    keep = fv.choose_draft_vocab("fr:12", None, SimpleNamespace(cache_dir=tmp_path, tokenizer=tok, data_dir=None,
                                                                model=target, artifacts={}))
    assert env.artifacts["fr_vocab"]["size"] == 12
    assert 0 < env.artifacts["fr_vocab"]["head_rows"] <= 12  # (sps's own ids: those of the 12 its head holds)
    drafted = _decode_exactly(target, drafter)
    assert drafted and drafted <= set(keep.tolist())


def test_sampled_drafts_from_the_kept_tokens_are_spread_onto_the_targets_vocabulary(tmp_path, monkeypatch) -> None:
    """SpS at T > 0: the draft's distribution over the kept tokens, placed at their target ids (what the engine's
    acceptance rule reads), sums to one and is zero elsewhere."""
    from specbench_methods.sps.draft_runner import DraftRunner

    target = make_tiny_model("llama").eval()
    keep = np.array([3, 7, 20, 41])
    runner = DraftRunner(target, vocab=None, target_vocab=64, keep=keep)
    sampler = SimpleNamespace(probs=lambda logits: torch.softmax(logits.float(), -1),
                              sample=lambda q: int(torch.argmax(q)))
    draft, rows = runner.draft_sampled([5, 9, 12], 3, sampler)
    assert rows.shape == (len(draft), 64) and set(draft) <= set(keep.tolist())
    assert torch.allclose(rows.sum(-1), torch.ones(len(draft)))
    assert (rows[:, [i for i in range(64) if i not in keep]] == 0).all()
    full = target(torch.tensor([[5, 9, 12]])).logits[0, -1]
    assert draft[0] == int(keep[full[keep].argmax()])  # the best of the kept tokens, not of all


def test_a_reduced_draft_vocabulary_is_cut_to_the_kept_tokens_it_holds() -> None:
    """A draft whose ids are not the target's (the distilled SpS draft: draft id i -> target id ``vocab[i]``, slot
    0 "any other token"): the kept target ids it holds stay, mapped back to target ids; slot 0 never does."""
    from specbench_methods.sps.draft_runner import DraftRunner

    target = make_tiny_model("llama").eval()
    vocab = np.concatenate([[0], np.arange(63, 0, -1)])  # draft id i -> target id 64 - i
    runner = DraftRunner(target, vocab=vocab, target_vocab=64, keep=np.array([0, 3, 7, 20]))
    assert runner.out_ids.tolist() == [20, 7, 3]  # draft ids 44, 57, 61; target id 0 is not in the draft's ids
    assert set(runner.draft([5, 9, 12], 4)) <= {3, 7, 20}


def test_a_head_over_a_trained_draft_vocabulary_keeps_what_both_hold() -> None:
    """Hydra's shared head over its trained draft vocabulary (ids 10..19) cut by FR's kept ids: the rows and biases
    of the ids both hold stay, in order, and the logits of those ids do not change; EAGLE-3's head likewise."""
    from specbench_methods.eagle3.layer import Eagle3Layer
    from specbench_methods.eagle3.vocab import DraftVocab
    from specbench_methods.hydra.heads import HydraHeads, SubHead

    target = make_tiny_model("llama").eval()
    heads = HydraHeads(32, 2, 1, head=SubHead(target.get_output_embeddings(), np.arange(10, 20)))
    torch.nn.init.normal_(heads.bias)
    x = torch.randn(3, 3 * 32)
    before = heads.logits(1, x)  # [3, 10]
    heads.restrict(np.array([3, 12, 15, 40]))
    assert heads.to_target(torch.arange(2)).tolist() == [12, 15]
    assert torch.allclose(heads.logits(1, x), before[:, [2, 5]])

    layer = Eagle3Layer(LayerShape.from_config(target.config), 32, 64, 10, target.get_input_embeddings())
    vocab = DraftVocab.from_ids(list(range(10, 20)), 64)
    layer.d2t.copy_(vocab.d2t())
    layer.t2d.copy_(vocab.mask())
    feats = torch.randn(2, 32)
    before = layer.logits(feats)
    layer.restrict(np.array([3, 12, 15, 40]))
    assert layer.to_target(torch.arange(2)).tolist() == [12, 15]
    assert layer.t2d.nonzero().flatten().tolist() == [12, 15]
    assert torch.allclose(layer.logits(feats), before[:, [2, 5]])


@pytest.mark.parametrize("shared", [True, False])
def test_medusa_heads_cut_to_kept_ids_score_them_as_before(shared: bool) -> None:
    """Column j of the restricted heads is target id ``ids[j]``: its score is the whole head's score of that id."""
    from specbench_methods.medusa.heads import MedusaHeads

    target = make_tiny_model("llama").eval()
    torch.manual_seed(2)
    heads = MedusaHeads(32, 64, 3, 1, target.get_output_embeddings() if shared else None).eval()
    for block in heads.blocks:
        torch.nn.init.normal_(block[0].linear.weight, std=0.1)
    h = torch.randn(2, 32)
    before = heads(h)  # [2, 3, 64]
    ids = torch.tensor([4, 9, 33, 60])
    heads.restrict(ids)
    assert torch.allclose(heads(h), before[:, :, ids], atol=1e-5)
    assert heads.ids.tolist() == ids.tolist() and heads.ids.device == next(heads.parameters()).device


def test_hydra_own_heads_cut_to_kept_ids_map_back() -> None:
    from specbench_methods.hydra.heads import HydraHeads

    heads = HydraHeads(32, 2, 1, own_vocab=64)
    x = torch.randn(3, 2 * 32)
    before = heads.logits(0, x)
    heads.restrict(np.array([7, 2, 50]))
    assert heads.to_target(torch.arange(3)).tolist() == [7, 2, 50]  # (in the order given)
    assert torch.allclose(heads.logits(0, x), before[:, [7, 2, 50]])


def test_a_cut_that_keeps_nothing_and_ids_beyond_the_head_are_handled(tmp_path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="keeps none of the tokens"):
        fv.kept_columns(np.array([1, 2, 3]), np.array([7, 8]))
    monkeypatch.setattr(fv, "FR_CORPORA", (CORPUS,))
    tok = char_tokenizer()  # 64 ids; a target whose head has 40 rows never outputs ids 40..63
    target = make_tiny_model("llama", vocab=40)
    env = SimpleNamespace(cache_dir=tmp_path, tokenizer=tok, data_dir=None, model=target, artifacts={})
    assert fv.choose_draft_vocab("fr:64", None, env).tolist() == list(range(40))
