"""Conversation templates: how a question's turns become the prompt text the target reads.

Spec-Bench builds every prompt with FastChat's ``vicuna_v1.1`` conversation (``get_conversation_template
("vicuna")`` in its ``evaluation/eval.py``), tokenized with the tokenizer's default special tokens (a BOS
for Llama tokenizers); Vicuna's tokenizer has no chat template of its own, so without this a Vicuna run
would read other prompts than Spec-Bench's and every figure would differ.

``--chat-template``:
- ``auto`` (default): the tokenizer's own template; else a known family's by model id or config
  (Vicuna -> ``vicuna``, Llama-2 chat -> ``llama-2``); else ``raw``, with a one-line warning.
- ``model``: the tokenizer's own template (an error if it has none).
- ``vicuna``: FastChat's ``vicuna_v1.1``: ``SYSTEM USER: q1 ASSISTANT: a1</s>USER: q2 ASSISTANT:``.
- ``llama-2``: FastChat's ``llama-2`` (no system message): ``[INST] q1 [/INST] a1 </s><s>[INST] q2 [/INST]``.
- ``raw``: the user turns joined by blank lines (base models).
- a path: a Jinja chat template file, rendered by the tokenizer as its own would be.

Example::

    >>> VICUNA.render([{"role": "user", "content": "Hi"}])[-30:]
    'questions. USER: Hi ASSISTANT:'
"""
from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from specbench.errors import ConfigError
from specbench.prompts.template_check import check_template_file, template_error, time_limit

NAMED = ("auto", "model", "vicuna", "llama-2", "raw")

# a fixed two-turn conversation: its prompt text identifies what a template does, whatever the questions
PROBE = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there."},
         {"role": "user", "content": "Bye"}]

VICUNA_SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. "
                 "The assistant gives helpful, detailed, and polite answers to the user's questions.")


def _vicuna(messages: list[dict[str, Any]]) -> str:
    """FastChat ``vicuna_v1.1`` (``SeparatorStyle.ADD_COLON_TWO``, seps ``" "`` and ``"</s>"``)."""
    text = VICUNA_SYSTEM + " "
    for m in messages:
        if m["role"] == "user":
            text += "USER: " + m["content"] + " "
        else:
            text += "ASSISTANT: " + m["content"] + "</s>"
    return text + "ASSISTANT:"


def _llama2(messages: list[dict[str, Any]]) -> str:
    """FastChat ``llama-2`` with its default empty system message (``SeparatorStyle.LLAMA2``)."""
    text = "[INST] "
    for i, m in enumerate(messages):
        if i == 0:
            text += m["content"] + " "
        elif m["role"] == "user":
            text += "[INST] " + m["content"] + " "
        else:
            text += "[/INST] " + m["content"] + " </s><s>"
    return text + "[/INST]"


def _raw(messages: list[dict[str, Any]]) -> str:
    """Base models: the user turns joined by blank lines (specbench's fallback before templates existed)."""
    return "\n\n".join(m["content"] for m in messages if m["role"] == "user") + "\n"


@dataclass(frozen=True)
class ChatTemplate:
    """A resolved template: its ``name`` and how messages become token ids.

    ``render`` is None for templates the tokenizer applies (``model`` and files): their text comes from
    ``tokenizer.apply_chat_template``. ``strip_answers``: earlier answers are stripped of surrounding
    whitespace before they enter the conversation, as Spec-Bench does with FastChat's.
    """

    name: str
    render: Callable[[list[dict[str, Any]]], str] | None = None
    jinja: str | None = None
    strip_answers: bool = False

    def text(self, tokenizer: Any, messages: list[dict[str, Any]]) -> str:
        """The prompt text of ``messages`` (the reply follows it)."""
        if self.strip_answers:
            messages = [m | {"content": m["content"].strip()} if m["role"] == "assistant" else m for m in messages]
        if self.render is not None:
            return self.render(messages)
        return self._apply(tokenizer, messages, tokenize=False)

    def encode(self, tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
        """Token ids of the prompt. FastChat templates are tokenized as Spec-Bench does (``tokenizer([prompt])``,
        default special tokens); the tokenizer's own templates carry their special tokens in the text."""
        if self.render is None:  # exactly the tokenizer's own path (golden prompts of the embedded model)
            if self.strip_answers:
                messages = [m | {"content": m["content"].strip()} if m["role"] == "assistant" else m for m in messages]
            ids = self._apply(tokenizer, messages, tokenize=True)
            return [int(i) for i in (ids["input_ids"] if hasattr(ids, "keys") else ids)]
        return [int(i) for i in tokenizer(self.text(tokenizer, messages))["input_ids"]]

    def _apply(self, tokenizer: Any, messages: list[dict[str, Any]], tokenize: bool) -> Any:
        """The tokenizer's ``apply_chat_template``; a template file fails in one line naming it (a question
        may take it where the plan-time probe did not), and stops at ``template_check``'s time limit."""
        if self.jinja is None:
            return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=tokenize)
        try:
            with time_limit():
                return tokenizer.apply_chat_template(messages, chat_template=self.jinja, add_generation_prompt=True,
                                                     tokenize=tokenize)
        except Exception as e:  # whatever the user's template raises
            raise ConfigError(f"--chat-template {self.name.removeprefix('file:')}: {template_error(e)} (on a "
                              f"{len(messages)}-message conversation)") from None

    def digest(self, tokenizer: Any, messages: list[dict[str, Any]]) -> str:
        """sha256 (first 16 hex digits) of the prompt text ``messages`` give, for the manifest and resume check."""
        return hashlib.sha256(self.text(tokenizer, messages).encode("utf-8")).hexdigest()[:16]


VICUNA = ChatTemplate("vicuna", _vicuna, strip_answers=True)
LLAMA2 = ChatTemplate("llama-2", _llama2, strip_answers=True)
RAW = ChatTemplate("raw", _raw)
BUILT_IN = {"vicuna": VICUNA, "llama-2": LLAMA2, "raw": RAW}


def family_template(model_id: str, config: Any = None) -> ChatTemplate | None:
    """A known family's FastChat template from the model id (or the config's ``_name_or_path``).

    >>> family_template("lmsys/vicuna-7b-v1.3").name
    'vicuna'
    >>> family_template("meta-llama/Llama-2-7b-chat-hf").name
    'llama-2'
    >>> family_template("gpt2") is None
    True
    """
    names = [model_id.lower(), str(getattr(config, "_name_or_path", "") or "").lower()]
    if any("vicuna" in n for n in names):
        return VICUNA
    if any("llama-2" in n and "chat" in n for n in names):
        return LLAMA2
    return None


def check_template_name(name: str) -> None:
    """One-line error for a name that is neither built in nor a template file that renders a probe
    conversation within bounds (``template_check``); called before any model loads."""
    if name in NAMED:
        return
    if not Path(name).is_file():
        raise ConfigError(f"--chat-template must be one of {', '.join(NAMED)} or a template file, got {name!r}")
    check_template_file(name, PROBE)


def template_file_digest(name: str) -> str | None:
    """sha256 of a template file's bytes (part of the run digest), None for a named template."""
    if name in NAMED:
        return None
    return hashlib.sha256(Path(name).read_bytes()).hexdigest()[:16]


def resolve_template(name: str, tokenizer: Any, model_id: str, config: Any = None) -> ChatTemplate:
    """The template ``--chat-template name`` selects for this tokenizer and model."""
    check_template_name(name)
    own = getattr(tokenizer, "chat_template", None)
    if name == "model":
        if not own:
            raise ConfigError(f"--chat-template model: {model_id}'s tokenizer has no chat template; "
                              f"use auto, vicuna, llama-2, raw or a template file")
        return ChatTemplate("model")
    if name in BUILT_IN:
        return BUILT_IN[name]
    if name == "auto":
        if own:
            return ChatTemplate("model")
        family = family_template(model_id, config)
        if family is not None:
            return family
        print(f"[specbench] warning: {model_id}'s tokenizer has no chat template and its family is not known; "
              f"prompts are the raw user text (--chat-template raw). Pass --chat-template to choose.", file=sys.stderr)
        return RAW
    jinja = Path(name).read_text(encoding="utf-8")  # (check_template_name read and rendered it)
    return ChatTemplate(f"file:{Path(name).name}", jinja=jinja)
