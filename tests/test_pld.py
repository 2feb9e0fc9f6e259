"""PLD's lookup logic, and PLD/AR equal greedy generate (tiny model and embedded model)."""
import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.pld import PLDConfig, PLDDrafter, lookup
from specbench.errors import ConfigError
from specbench.config.coerce import from_dict
from specbench.engine.loop import Engine
from specbench.models.loading import stop_token_ids
from specbench.prompts.task import encode_prompt


def test_lookup_worked_example():
    assert lookup(np.array([1, 2, 3, 4, 2, 3]), 3, 1, 10) == [4, 2, 3]


def test_lookup_prefers_longest_ngram_then_first_occurrence():
    toks = np.array([7, 8, 1, 9, 9, 8, 1, 5, 6, 0, 8, 1])
    # 3-gram [0, 8, 1] never occurs before; 2-gram [8, 1] first occurs at index 1 -> continuation from 3
    assert lookup(toks, 3, 1, 4) == [9, 9, 8, 1]
    assert lookup(toks, 3, 3, 4) == []
    assert lookup(np.array([1, 2, 3]), 3, 1, 10) == []
    assert lookup(np.array([5]), 3, 1, 10) == []


def test_lookup_clips_at_context_end():
    assert lookup(np.array([4, 5, 6, 4]), 2, 1, 10) == [5, 6, 4]


def test_config_validation():
    with pytest.raises(ConfigError):
        from_dict(PLDConfig, {"min_ngram": 4})
    with pytest.raises(ConfigError):
        from_dict(PLDConfig, {"nope": 1})
    assert from_dict(PLDConfig, {"num_draft": "5"}).num_draft == 5


def test_pld_lossless_on_tiny_model():
    model = make_tiny_model("qwen2", seed=5)
    engine = Engine(model, set())
    prompt = [3, 4, 5, 6, 3, 4, 5, 6, 3, 4, 5, 6, 3, 4]  # repetitive: PLD drafts every step
    ref = model.generate(torch.tensor([prompt]), max_new_tokens=40, min_new_tokens=40, do_sample=False, pad_token_id=0)
    gen = engine.generate(prompt, PLDDrafter(PLDConfig()), 40)
    assert gen.output_ids == ref[0, len(prompt):].tolist()
    assert sum(gen.draft_sizes) > 0


PROMPTS = [
    "Repeat this sentence exactly twice: the quick brown fox jumps over the lazy dog.",
    "Write a Python function that returns the sum of a list of numbers.",
]


@pytest.mark.embedded
def test_ar_and_pld_equal_transformers_generate(embedded):
    model, tok = embedded.model, embedded.tokenizer
    stops = stop_token_ids(tok, model)
    engine = Engine(model, stops)
    for text in PROMPTS:
        prompt = encode_prompt(tok, [{"role": "user", "content": text}])
        inp = torch.tensor([prompt])
        kw = dict(max_new_tokens=48, do_sample=False, eos_token_id=sorted(stops), pad_token_id=tok.pad_token_id)
        ref = model.generate(inp, **kw)[0, len(prompt):].tolist()
        pl = model.generate(inp, prompt_lookup_num_tokens=10, **kw)[0, len(prompt):].tolist()
        ar = engine.generate(prompt, None, 48)
        pld = engine.generate(prompt, PLDDrafter(PLDConfig()), 48)
        assert ar.output_ids == ref
        assert pld.output_ids == ref == pl
        assert sum(ar.accept_lengths) == len(ar.output_ids) == ar.forward_passes
