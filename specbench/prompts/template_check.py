"""Checking a ``--chat-template`` file before the model loads, and bounding how long any template renders.

``check_template_file`` compiles the file and renders a probe conversation with it, so a template that
cannot work ends in one line at plan time instead of a traceback after the model loaded, or a run that
never ends. It renders as transformers' ``apply_chat_template`` does (a Jinja ``ImmutableSandboxedEnvironment``
with ``trim_blocks`` / ``lstrip_blocks``, loop controls, ``raise_exception``, ``strftime_now``, ``tojson``
and the ``{% generation %}`` tag), within bounds:

- time: ``time_limit`` stops a render after ``LIMIT_S`` seconds. A trace function on the template's own
  frames reads the clock at every line, so nested loops are caught whatever they iterate over; unlike
  ``signal.alarm`` it works in any thread. The run renders its prompts under it too;
- size: the text is read piece by piece (``generate``) and stops at ``MAX_CHARS`` characters, and ``*`` /
  ``**`` refuse results past that before computing them (``'x' * 10**10`` and ``10 ** (10**10)`` are each
  one C call that no clock interrupts).

>>> check_template_text("{% for m in messages %}[{{ m['content'] }}]{% endfor %}", [{"role": "user", "content": "Hi"}])
'[Hi]'
>>> check_template_text("{% for i in range(9) %}{% for j in range(10**5) %}{% endfor %}{% endfor %}", [], 0.01)
Traceback (most recent call last):
...
specbench.prompts.template_check.TemplateLimit: rendering stopped at the time limit (0.01 s)
"""
from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from specbench.errors import ConfigError

LIMIT_S = 2.0  # a chat template renders a conversation in milliseconds
MAX_CHARS = 1_000_000  # of the probe's text, and of any string or number a template computes
TEMPLATE_CODE = "<template>"  # the file name Jinja compiles a template from a string under
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


class TemplateLimit(Exception):
    """A render went past ``LIMIT_S`` or ``MAX_CHARS``."""


@contextlib.contextmanager
def time_limit(seconds: float = LIMIT_S) -> Iterator[None]:
    """Raise ``TemplateLimit`` inside any Jinja template that runs longer than ``seconds`` in this block."""
    end = time.monotonic() + seconds

    def on_line(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > end:
            raise TemplateLimit(f"rendering stopped at the time limit ({seconds:g} s)")
        return on_line

    def on_call(frame: Any, event: str, arg: Any) -> Any:  # trace only the template's frames: others run at full speed
        return on_line if frame.f_code.co_filename == TEMPLATE_CODE else None

    previous = sys.gettrace()  # (a debugger's or coverage's, put back after)
    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(previous)


def _too_big(operator: str, left: Any, right: Any) -> bool:
    """Whether ``left operator right`` would exceed ``MAX_CHARS`` (characters, items or decimal digits)."""
    if operator == "*" and isinstance(right, int) and hasattr(left, "__len__"):
        return len(left) * right > MAX_CHARS
    if operator == "*" and isinstance(left, int) and hasattr(right, "__len__"):
        return len(right) * left > MAX_CHARS
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
        return right * math.log10(abs(left)) > MAX_CHARS
    return False


def _generation_extension() -> type:
    """The ``{% generation %}...{% endgeneration %}`` tag of transformers' templates (it marks assistant text)."""
    from jinja2 import nodes
    from jinja2.ext import Extension

    class Generation(Extension):
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body).set_lineno(lineno)  # the text as it is: the check needs no positions

    return Generation


def _environment() -> Any:
    """A sandbox as transformers renders chat templates in, with ``*`` and ``**`` bounded."""
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if _too_big(operator, left, right):
                raise TemplateLimit(f"refused {type(left).__name__} {operator} {right!r}: past the size limit "
                                    f"({MAX_CHARS} characters)")
            return super().call_binop(context, operator, left, right)

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=[_generation_extension(), "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=lambda fmt: datetime.now().strftime(fmt))
    return env


def check_template_text(text: str, messages: list[dict[str, Any]], seconds: float = LIMIT_S) -> str:
    """The text ``text`` renders ``messages`` to, with a generation prompt; Jinja's errors as raised,
    ``TemplateLimit`` past ``seconds`` or ``MAX_CHARS``."""
    pieces: list[str] = []
    size = 0
    with time_limit(seconds):
        template = _environment().from_string(text)
        for piece in template.generate(messages=messages, add_generation_prompt=True, tools=None, documents=None,
                                       **SPECIAL_TOKENS):
            size += len(piece)
            if size > MAX_CHARS:
                raise TemplateLimit(f"rendering stopped at the size limit ({MAX_CHARS} characters)")
            pieces.append(piece)
    return "".join(pieces)


def template_error(e: BaseException) -> str:
    """What went wrong in a template, in one line: ``"TemplateSyntaxError: unexpected '}' (line 3)"``."""
    lines = str(e).strip().splitlines()
    if isinstance(e, TemplateLimit):
        return lines[0]
    where = f" (line {e.lineno})" if isinstance(getattr(e, "lineno", None), int) else ""
    return f"{type(e).__name__}: {lines[0] if lines else 'failed'}{where}"


def check_template_file(path: str, messages: list[dict[str, Any]]) -> None:
    """One-line ``ConfigError`` naming the file when it is unreadable or empty, does not compile, fails on
    ``messages`` (the sandbox, ``raise_exception``, a range too big) or runs past the bounds."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--chat-template {path}: cannot read it ({e})") from None
    if not text.strip():
        raise ConfigError(f"--chat-template {path}: the file is empty")
    try:
        rendered = check_template_text(text, messages)
    except Exception as e:  # Jinja's errors, and whatever the template's own expressions raise
        raise ConfigError(f"--chat-template {path}: {template_error(e)} (checked on a {len(messages)}-message "
                          "probe conversation)") from None
    if not rendered.strip():
        raise ConfigError(f"--chat-template {path}: renders a {len(messages)}-message conversation as empty text")
