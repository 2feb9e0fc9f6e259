"""SpS: a draft model with its own cache; output equals AR and transformers' assisted generation, the
draft's proposals equal plain greedy decoding of the draft (so its cache bookkeeping is right), and
the heuristic schedule moves the draft length."""
from __future__ import annotations

import pytest
import torch

from conftest import make_tiny_model
from methods.sps.method import SpSConfig, SpSDrafter, build_sps
from specbench.config import ConfigError
from specbench.engine.loop import Engine
from specbench.method_env import MethodEnv
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
