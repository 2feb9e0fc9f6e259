"""argparse value types that reject bad numbers with a one-line message (argparse exits 2).

>>> int_at_least(1)("3"), positive_float("0.5"), out_folder("/tmp"), out_file("/tmp/new/cmp.md")
(3, 0.5, '/tmp', '/tmp/new/cmp.md')
>>> out_file("/tmp")
Traceback (most recent call last):
argparse.ArgumentTypeError: /tmp is a folder; name a file
>>> int_at_least(0)("-1")
Traceback (most recent call last):
argparse.ArgumentTypeError: expected an integer >= 0, got -1
"""
from __future__ import annotations

import argparse
import math
import os
from typing import Callable


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type accepting integers >= ``minimum``."""
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


def positive_float(text: str) -> float:
    """An argparse type accepting finite floats > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _parent_file(text: str) -> str | None:
    """The nearest existing parent of ``text`` when it is not a folder (nothing can be created under it)."""
    parent = os.path.dirname(os.path.abspath(text))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    return None if os.path.isdir(parent) else parent


def out_folder(text: str) -> str:
    """An output folder path that is not an existing file, nor under one."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    if (parent := _parent_file(text)) is not None:
        raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
    return text


def out_file(text: str) -> str:
    """An output file path that is not an existing folder, nor under a file."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file")
    if (parent := _parent_file(text)) is not None:
        raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
    return text


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
