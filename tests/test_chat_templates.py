"""Conversation templates: the exact prompt strings FastChat's ``vicuna_v1.1`` and ``llama-2`` give (written
out here by hand from FastChat's definitions), tokenized as Spec-Bench does, and ``auto``'s choices."""
from __future__ import annotations

import pytest

from hub_fixtures import vicuna_like_tokenizer
from specbench.prompts.templates import LLAMA2, RAW, VICUNA, family_template, resolve_template
from specbench.errors import ConfigError
from specbench.prompts.task import Question, Task, encode_prompt

SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
          "detailed, and polite answers to the user's questions.")


class TwoTurns(Task):
    name = "two_turns"


Q = Question("q1", "two_turns", ("Write a haiku.", "Now make it rhyme."))


def test_vicuna_one_and_two_turns_equal_fastchat() -> None:
    # FastChat vicuna_v1.1: system + sep " ", then "ROLE: message" + seps[i % 2] (" " after USER, "</s>" after
    # ASSISTANT), the open assistant turn as "ASSISTANT:"
    turn1 = TwoTurns().messages(Q, 0, [])
    assert VICUNA.render(turn1) == SYSTEM + " USER: Write a haiku. ASSISTANT:"
    # turn 2 carries AR's turn-1 answer, stripped as Spec-Bench strips its output before appending it
    turn2 = TwoTurns().messages(Q, 1, ["  Leaves fall.\n"])
    text = VICUNA.text(None, turn2)
    assert text == SYSTEM + " USER: Write a haiku. ASSISTANT: Leaves fall.</s>USER: Now make it rhyme. ASSISTANT:"


def test_llama2_one_and_two_turns_equal_fastchat() -> None:
    # FastChat llama-2 with its empty default system message: "[INST] " + first message + " ", then
    # "[/INST] answer </s><s>", "[INST] next ", and the open turn as "[/INST]"
    assert LLAMA2.render(TwoTurns().messages(Q, 0, [])) == "[INST] Write a haiku. [/INST]"
    text = LLAMA2.text(None, TwoTurns().messages(Q, 1, ["Leaves fall. "]))
    assert text == "[INST] Write a haiku. [/INST] Leaves fall. </s><s>[INST] Now make it rhyme. [/INST]"


def test_vicuna_is_tokenized_as_spec_bench_does() -> None:
    """``tokenizer([prompt])`` with the default special tokens: a Llama tokenizer prepends ``<s>``; the
    ``</s>`` between turns is one token."""
    tok = vicuna_like_tokenizer()
    ids = VICUNA.encode(tok, TwoTurns().messages(Q, 1, ["ok"]))
    assert ids[0] == tok.bos_token_id and ids.count(tok.eos_token_id) == 1
    assert ids == tok(VICUNA.text(tok, TwoTurns().messages(Q, 1, ["ok"])))["input_ids"]


def test_auto_picks_the_tokenizers_own_then_a_known_family_then_raw(capsys) -> None:
    tok = vicuna_like_tokenizer()
    assert resolve_template("auto", tok, "lmsys/vicuna-7b-v1.3") is VICUNA
    assert resolve_template("auto", tok, "meta-llama/Llama-2-7b-chat-hf") is LLAMA2
    assert resolve_template("auto", tok, "some/base-model") is RAW
    assert "no chat template" in capsys.readouterr().err
    tok.chat_template = "{% for m in messages %}<{{ m['content'] }}>{% endfor %}"
    own = resolve_template("auto", tok, "lmsys/vicuna-7b-v1.3")
    assert own.name == "model"  # the tokenizer's own template wins even for a Vicuna id
    assert own.text(tok, [{"role": "user", "content": "hi"}]) == "<hi>"
    assert resolve_template("vicuna", tok, "x").name == "vicuna"  # asked by name: used whatever the tokenizer has


def test_model_without_template_bad_names_and_files(tmp_path) -> None:
    tok = vicuna_like_tokenizer()
    with pytest.raises(ConfigError, match="has no chat template"):
        resolve_template("model", tok, "lmsys/vicuna-7b-v1.3")
    with pytest.raises(ConfigError, match="--chat-template must be one of"):
        resolve_template("vicunaa", tok, "x")
    path = tmp_path / "t.jinja"
    path.write_text("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}")
    t = resolve_template(str(path), tok, "x")
    assert t.name == "file:t.jinja" and t.text(tok, [{"role": "user", "content": "hi"}]) == "[user] hi "
    assert family_template("x", type("C", (), {"_name_or_path": "/models/vicuna-13b-v1.3"})()) is VICUNA


def test_the_embedded_model_keeps_its_own_template(embedded) -> None:
    """On the embedded model nothing changes by default: auto is the tokenizer's own template, and the
    ids are exactly what the tokenizer's apply_chat_template gives (the golden prompts)."""
    tok = embedded.tokenizer
    t = resolve_template("auto", tok, embedded.model_id)
    messages = [{"role": "user", "content": "What is 2+2?"}]
    assert t.name == "model"
    assert t.encode(tok, messages) == encode_prompt(tok, messages)  # the path every golden prompt took
