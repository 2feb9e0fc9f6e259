"""Input lengths of long-input tasks (``--context-length 1k,2k,4k,8k``): parsing, labels, defaults.

A length counts tokens of the whole prompt the target reads (chat template included), and ``k`` means
1024 of them: model contexts are powers of two, so ``8k`` is exactly the embedded model's 8192-token
context (SPEED-Bench writes ``1k`` for 1000 o200k tokens; see ``tasks/long_context.py``). A plain number
is a length in tokens; ``long_low@2k`` names one task at one length.

>>> parse_lengths("1k,2k,1500")
(1024, 2048, 1500)
>>> parse_lengths(["4k", 512, "4K"])
(4096, 512)
>>> length_label(8192), length_label(1500)
('8k', '1500')
>>> parse_lengths("2x")
Traceback (most recent call last):
...
specbench.errors.ConfigError: --context-length: '2x' is not a length (e.g. 1k, 2k, 1500)
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from specbench.errors import ConfigError

K = 1024
DEFAULT_LENGTHS = (1 * K, 2 * K, 4 * K, 8 * K)  # the embedded model's 8192-token context, in doublings
MIN_LENGTH = 512  # the fixed text of a long task's prompt (its instruction, an exam) needs room besides its material


def parse_length(text: Any) -> int:
    """``"2k"`` -> 2048, ``"1500"`` or 1500 -> 1500; anything else is a one-line ``ConfigError``."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d+)\s*([kK]?)\s*", str(text))
        if m is None:
            raise ConfigError(f"--context-length: {str(text)!r} is not a length (e.g. 1k, 2k, 1500)")
        value = int(m.group(1)) * (K if m.group(2) else 1)
    if value < MIN_LENGTH:
        raise ConfigError(f"--context-length: {text} is below the shortest input length, {MIN_LENGTH} tokens")
    return value


def parse_lengths(value: str | Iterable[Any]) -> tuple[int, ...]:
    """A comma-separated string or a list (YAML) of lengths -> token counts, first occurrence order, no repeats."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [parse_length(v) for v in items if str(v).strip()]
    if not out:
        raise ConfigError("--context-length is empty")
    return tuple(dict.fromkeys(out))


def length_label(tokens: int) -> str:
    """``8192`` -> ``"8k"``; a length that is not a multiple of 1024 keeps its number."""
    return f"{tokens // K}k" if tokens % K == 0 else str(tokens)
