"""SpS: a draft model with its own cache; output equals AR and transformers' assisted generation, the
draft's proposals equal plain greedy decoding of the draft (so its cache bookkeeping is right), and
the heuristic schedule moves the draft length."""
from __future__ import annotations

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.sps.method import SpSConfig, SpSDrafter, build_sps
from specbench.errors import ConfigError
from specbench.engine.loop import Engine
from specbench.run.method_env import MethodEnv
from test_engine_exact import FAMILIES, greedy_reference

PROMPT = [5, 9, 2, 7, 7, 1, 3]


def plain_greedy(model: torch.nn.Module, tokens: list[int], n: int) -> list[int]:
    out = model.generate(torch.tensor([tokens]), max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)
    return out[0, len(tokens):].tolist()


class Checked(SpSDrafter):
    """Checks every proposal against the draft model decoding the whole sequence from scratch."""

    checked = 0

    def propose(self, ctx):
        tree = super().propose(ctx)
        assert list(tree.tokens) == plain_greedy(self.runner.model, ctx.tokens, len(tree))
        self.checked += 1
        return tree


@pytest.mark.parametrize("family", FAMILIES)
def test_output_is_ar_and_proposals_are_the_drafts_own_greedy_tokens(family: str) -> None:
    target, draft = make_tiny_model(family, seed=1), make_tiny_model(family, seed=2)
    expected = greedy_reference(target, PROMPT, 30)
    drafter = Checked(SpSConfig(gamma=3, schedule="constant"), draft)
    gen = Engine(target, stop_ids=set()).generate(PROMPT, drafter, 30)
    assert gen.output_ids == expected
    assert drafter.checked > 5
    with torch.inference_mode():
        hf = target.generate(torch.tensor([PROMPT]), assistant_model=draft, max_new_tokens=30, min_new_tokens=30,
                             do_sample=False, pad_token_id=0)
    assert hf[0, len(PROMPT):].tolist() == gen.output_ids  # transformers' assisted generation agrees


def test_oracle_draft_is_always_accepted_and_heuristic_grows_gamma() -> None:
    target = make_tiny_model("llama", seed=1)
    drafter = SpSDrafter(SpSConfig(gamma=2, schedule="heuristic"), target)
    gen = Engine(target, stop_ids=set()).generate(PROMPT, drafter, 40)
    assert gen.output_ids == greedy_reference(target, PROMPT, 40)
    decode = list(zip(gen.accept_lengths[1:], gen.draft_sizes[1:]))
    assert all(a == d + 1 for a, d in decode[:-1])  # every draft token accepted (the last step is cut by the limit)
    assert [d for _, d in decode[:3]] == [2, 4, 6]  # +2 after each fully accepted step


def test_heuristic_shrinks_gamma_for_a_poor_draft() -> None:
    target, draft = make_tiny_model("llama", seed=1), make_tiny_model("llama", seed=5)
    drafter = SpSDrafter(SpSConfig(gamma=4, schedule="heuristic"), draft)
    gen = Engine(target, stop_ids=set()).generate(PROMPT, drafter, 30)
    assert gen.output_ids == greedy_reference(target, PROMPT, 30)
    assert min(gen.draft_sizes[1:]) < 4


def test_bad_config_and_missing_draft_are_one_line_errors() -> None:
    for bad in (SpSConfig(gamma=0), SpSConfig(schedule="wild"), SpSConfig(min_confidence=1.0)):
        with pytest.raises(ConfigError):
            bad.validate()
    env = MethodEnv(make_tiny_model("llama"), None, "tiny", torch.device("cpu"), None, None)
    with pytest.raises(ConfigError, match="needs a draft model"):
        build_sps(SpSConfig(draft_model=""), env)
    with pytest.raises(ConfigError, match="draft model"):
        build_sps(SpSConfig(draft_model="/nonexistent/draft"), env)


def test_a_draft_ends_at_a_stop_token_as_transformers_assistant() -> None:
    target = make_tiny_model("llama", seed=1)
    expected = greedy_reference(target, PROMPT, 30)
    stop = expected[4]  # a token the target emits: the oracle draft would run past it otherwise
    proposals: list[list[int]] = []

    class Recorded(SpSDrafter):
        def propose(self, ctx):
            tree = super().propose(ctx)
            proposals.append(list(tree.tokens))
            return tree

    drafter = Recorded(SpSConfig(gamma=6, schedule="constant"), target, stop_ids=frozenset({stop}))
    gen = Engine(target, stop_ids=set()).generate(PROMPT, drafter, 30)
    assert gen.output_ids == expected
    with_stop = [p for p in proposals if stop in p]
    assert with_stop and all(p[-1] == stop and p.count(stop) == 1 for p in with_stop)
    assert any(len(p) < 6 for p in with_stop)  # cut short by the stop token, not by gamma


def test_adaptive_threshold_refits_as_transformers_and_stays_lossless() -> None:
    pytest.importorskip("sklearn")
    from specbench_methods.sps.adaptive import START, AdaptiveThreshold

    t = AdaptiveThreshold()
    t.drafted([0.9, 0.8, 0.3])
    t.update(2)  # 0.9 and 0.8 accepted, 0.3 rejected
    assert t.threshold == START  # fewer than 6 judged tokens: not re-fitted yet
    t.drafted([0.95, 0.2, 0.7])
    t.update(1)  # 0.95 accepted, 0.2 rejected, 0.7 never judged (forgotten)
    assert t.matches == [1, 1, 0, 1, 0] and t.probs == [0.9, 0.8, 0.3, 0.95, 0.2]
    t.drafted([0.85, 0.25])
    t.update(1)
    assert 0.25 < t.threshold <= 0.8  # separates the accepted (>= 0.8) from the rejected (<= 0.3)

    target, draft = make_tiny_model("llama", seed=1), make_tiny_model("llama", seed=2)
    drafter = SpSDrafter(SpSConfig(gamma=4, min_confidence="adaptive"), draft)
    gen = Engine(target, stop_ids=set()).generate(PROMPT, drafter, 40)
    assert gen.output_ids == greedy_reference(target, PROMPT, 40)
    assert drafter.adaptive is not None and len(drafter.adaptive.matches) > 5


def test_adaptive_without_scikit_learn_names_the_extra(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sklearn.metrics", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"specbench\[adaptive\]"):
        SpSDrafter(SpSConfig(min_confidence="adaptive"), make_tiny_model("llama", seed=2))


def test_min_confidence_reads_a_number_or_adaptive() -> None:
    from specbench.config.coerce import from_dict

    assert from_dict(SpSConfig, {"min_confidence": "0.4"}).min_confidence == 0.4
    assert from_dict(SpSConfig, {"min_confidence": "adaptive"}).min_confidence == "adaptive"
    with pytest.raises(ConfigError, match="adaptive"):
        from_dict(SpSConfig, {"min_confidence": "wild"})
