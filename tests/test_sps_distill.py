"""The distilled SpS draft: built from the target's own layers and rows (a full-size copy agrees with
the target everywhere), saved and loaded with its vocabulary map, and lossless through the engine."""
from __future__ import annotations

import random

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specbench.training.draft_distill import DistillConfig, choose_vocab, distill_draft, LabelledSequence, load_distilled
from specbench_methods.sps.method import SpSConfig, SpSDrafter
from specbench.datastore import corpora
from specbench.engine.loop import Engine
from test_engine_exact import greedy_reference
from test_golden import char_tokenizer

CORPUS = "tiny_sps_distill"
_rng = random.Random(0)
TEXTS = ["".join(_rng.choice("abcdefgh ") for _ in range(60)) for _ in range(40)]
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", t) for t in TEXTS))


def tied_tiny_target() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return LlamaForCausalLM(cfg).eval()


def test_vocab_keeps_stop_tokens_then_the_most_frequent() -> None:
    seqs = [LabelledSequence([5, 5, 5, 7, 7, 9], [-1, -1, 5, 7, 7, 3])]
    assert choose_vocab(seqs, 4, keep={60}).tolist() == [-1, 60, 5, 7]


def test_full_size_copy_agrees_with_the_target_and_round_trips(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    cfg = DistillConfig(layers=2, vocab=65, tokens=800, seq_len=64, batch_size=4, lr=1e-12, heldout_every=4)
    metrics = distill_draft(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    assert metrics["heldout_labels"] > 50
    assert metrics["top1_all"] > 0.99  # all layers and every token copied, no learning: the target itself
    draft, vocab = load_distilled(tmp_path, torch.device("cpu"), torch.float32)
    ids = vocab[1:].tolist()
    assert vocab[0] == -1 and len(set(ids)) == len(ids) and 0 <= min(ids) and max(ids) < 64  # tokens seen, each once
    assert sum(p.numel() for p in draft.parameters()) == sum(p.numel() for p in target.parameters()) - (64 - len(vocab)) * 32  # rows: the tokens kept + "any other"


def test_reduced_vocabulary_draft_stays_lossless_and_proposes_only_real_tokens(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    cfg = DistillConfig(layers=1, vocab=12, tokens=600, seq_len=64, batch_size=4, heldout_every=4)
    distill_draft(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    draft, vocab = load_distilled(tmp_path, torch.device("cpu"), torch.float32)
    drafter = SpSDrafter(SpSConfig(gamma=3, schedule="constant"), draft, vocab, 64)
    prompt = tok("abc def", add_special_tokens=False)["input_ids"]
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 24)
    assert gen.output_ids == greedy_reference(target, prompt, 24)
    drafter.runner.reset()
    proposed = drafter.runner.draft(prompt, 5)
    assert set(proposed) <= set(vocab[1:].tolist())  # never the "any other token" slot
    assert np.all(vocab[1:] >= 0)
