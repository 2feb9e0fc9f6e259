"""A transformers Llama written as a GGUF llama.cpp drafts with (``serving/draft_gguf.py``): the embedded target
written this way gives back the F32 rewrite's tensors value for value; a reduced vocabulary is widened as said."""
from __future__ import annotations

import doctest

import numpy as np
import pytest
import torch

from specbench.serving import draft_gguf
from specbench.serving.draft_gguf import write_draft_gguf


def test_doctests() -> None:
    assert doctest.testmod(draft_gguf).failed == 0 and doctest.testmod(draft_gguf).attempted >= 1


def _template(path, vocab: int) -> None:
    from gguf import GGUFWriter

    w = GGUFWriter(path, "llama")
    for key, value in (("llama.block_count", 9), ("llama.embedding_length", 99), ("llama.feed_forward_length", 9),
                       ("llama.attention.head_count", 9), ("llama.attention.head_count_kv", 9),
                       ("llama.vocab_size", vocab), ("llama.context_length", 128)):
        w.add_uint32(key, value)
    w.add_string("general.name", "template")
    w.add_token_list([f"t{i}" for i in range(vocab)])
    w.add_tensor("token_embd.weight", np.zeros((vocab, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_reduced_vocabulary_is_widened_to_the_target_s(tmp_path) -> None:
    from gguf import GGUFReader
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=3, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=1, tie_word_embeddings=True)
    draft = LlamaForCausalLM(cfg).eval()
    _template(tmp_path / "t.gguf", vocab=10)
    vocab_map = np.array([0, 3, 5])  # draft id -> target id; 0 = "any other token"
    out = write_draft_gguf(draft, vocab_map, tmp_path / "t.gguf", tmp_path / "d.gguf")
    r = GGUFReader(out)
    assert r.fields["llama.block_count"].contents() == 1 and r.fields["llama.embedding_length"].contents() == 8
    assert r.fields["llama.vocab_size"].contents() == 10 and r.fields["general.name"].contents() == "template draft (1 layers)"
    t = {x.name: np.asarray(x.data).reshape(tuple(reversed(x.shape.tolist()))) for x in r.tensors}
    emb = draft.model.embed_tokens.weight.detach().numpy()
    assert np.array_equal(t["token_embd.weight"][[3, 5]], emb[[1, 2]])
    assert all(np.array_equal(t["token_embd.weight"][i], emb[0]) for i in (0, 1, 2, 4, 6, 9))  # as "other" is fed
    assert np.array_equal(t["output.weight"][[3, 5]], emb[[1, 2]]) and not t["output.weight"][[0, 1, 9]].any()
    q = draft.model.layers[0].self_attn.q_proj.weight.detach().numpy()
    assert np.array_equal(t["blk.0.attn_q.weight"], draft_gguf.rotary_rows(q, 2)) and not np.array_equal(q, t["blk.0.attn_q.weight"])


@pytest.mark.embedded
def test_the_embedded_target_written_back_equals_its_f32_gguf(embedded, tmp_path) -> None:
    from gguf import GGUFReader

    from specbench.engine.backends.llamacpp.gguf_files import gguf_model

    f32 = gguf_model("embedded", "float32").path
    out = write_draft_gguf(embedded.model, None, f32, tmp_path / "target.gguf")
    ours = {t.name: t for t in GGUFReader(out).tensors}
    ref = {t.name: t for t in GGUFReader(f32).tensors}
    assert set(ours) - set(ref) == {"output.weight"}  # (the target ties it to token_embd; a draft writes it)
    for name, t in ref.items():
        assert np.array_equal(np.asarray(ours[name].data), np.asarray(t.data)), name
    assert np.array_equal(np.asarray(ours["output.weight"].data), np.asarray(ref["token_embd.weight"].data))


@pytest.mark.embedded
def test_a_reduced_vocabulary_draft_scores_as_the_draft_does(embedded, tmp_path) -> None:
    """Read back by transformers' own GGUF loader, the widened draft gives the draft's logits on the kept tokens
    (its inputs mapped as sps maps them) and 0 on every other token."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    from specbench.engine.backends.llamacpp.gguf_files import gguf_model
    from specbench.training.draft_distill import draft_ids

    torch.manual_seed(0)
    vocab = embedded.model.config.vocab_size
    vocab_map = np.concatenate([[0], np.random.default_rng(0).choice(np.arange(1, vocab), 99, replace=False)])
    cfg = LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2, tie_word_embeddings=True, rope_theta=100000.0)
    draft = LlamaForCausalLM(cfg).eval()
    write_draft_gguf(draft, vocab_map, gguf_model("embedded", "float32").path, tmp_path / "draft.gguf")
    back = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file="draft.gguf", dtype=torch.float32).eval()
    context = [int(t) for t in vocab_map[[5, 17, 3, 42]]] + [7, 12345]  # kept tokens, then two that are not
    mapped = draft_ids(vocab_map, vocab)[context].tolist()
    with torch.no_grad():
        ours = back(torch.tensor([context])).logits[0]
        ref = draft(torch.tensor([mapped])).logits[0]
    assert torch.allclose(ours[:, vocab_map[1:]], ref[:, 1:], atol=1e-4)
    unkept = np.setdiff1d(np.arange(vocab), vocab_map[1:])
    assert not ours[:, unkept].any()
