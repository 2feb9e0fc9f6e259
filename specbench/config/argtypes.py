"""argparse value types that reject bad numbers with a one-line message (argparse exits 2).

>>> int_at_least(1)("3"), positive_float("0.5"), out_folder("/tmp")
(3, 0.5, '/tmp')
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


def out_folder(text: str) -> str:
    """An output folder path that is not an existing file."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    return text


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
