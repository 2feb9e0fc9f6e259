"""Every method's README states its options' defaults as the code has them.

A README that disagrees with the dataclass misleads exactly the reader who checks (EAGLE's table once
gave 8 / 5 / 24 where the code had 6 / 4 / 16). The test reads each registered method's config
dataclass and the option tables of its README: tables with an ``option``/``key`` and a ``default``
column (a ``method`` column, where present, says which methods a row is for), and PLD's one-line list
``\\`key\\` (default)``.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from specbench.plugins.registry import METHODS

ROOT = Path(__file__).resolve().parents[1]
READMES = {"pld": "methods/pld.md", "rest": "methods/rest_crest.md", "crest": "methods/rest_crest.md",
           "ngram-simple": "methods/ngram/README.md", "ngram-map-k": "methods/ngram/README.md",
           "ngram-map-k4v": "methods/ngram/README.md", "ngram-mod": "methods/ngram/README.md",
           "ngram-cache": "methods/ngram/README.md", "ddtree": "methods/dflash/README.md"}
# cells that describe a default computed at run time instead of naming a value
DESCRIBED = {"per task", "task default", "recipe's"}
NOTHING = {"none", "unset", "off"}


def readme(method: str) -> Path:
    return ROOT / READMES.get(method, f"methods/{method}/README.md")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def documented_defaults(text: str, method: str) -> dict[str, str]:
    """key -> default cell, from every option table (and PLD's list) in ``text`` that applies to ``method``.

    >>> documented_defaults("| option | default |\\n|---|---|\\n| `a`, `b` | 1, 2 |", "x")
    {'a': '1', 'b': '2'}
    """
    out: dict[str, str] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.lower() for c in _cells(line)]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        key_col = next((i for i, h in enumerate(header) if h.startswith("option") or h == "key"), None)
        if key_col is None or "default" not in header:
            continue
        row = _cells(line)
        if "method" in header and method not in [m.strip() for m in row[header.index("method")].split(",")]:
            continue
        keys = re.findall(r"`(\w+)`", row[key_col])
        default = row[header.index("default")]
        # "16, 2" or "none / none"; a comma inside backticks belongs to one value
        values = [default] if len(keys) == 1 else [v.strip() for v in re.split(r"(?:,\s*|\s+/\s+)(?=(?:[^`]*`[^`]*`)*[^`]*$)", default)]
        if len(values) != len(keys):
            values = [default] * len(keys)
        out.update(zip(keys, values))
    for key, value in re.findall(r"`(\w+)` \(([^)]*)\)", text if method == "pld" else ""):
        out[key] = value
    return out


def agrees(cell: str, value: object) -> bool:
    """Whether a README cell names the dataclass default ``value``."""
    cell = cell.strip("`").strip()
    first = cell.split()[0].strip("`,;") if cell else ""
    if cell.lower() in DESCRIBED:
        return True
    if value is None or value == "":
        return cell.lower() in NOTHING
    if isinstance(value, bool):
        return first.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(first.replace(",", "")) == float(value)
        except ValueError:
            return False
    return first == str(value) or cell == str(value)


@pytest.mark.parametrize("method", [m for m in METHODS.names() if m != "ar"])
def test_readme_option_defaults_match_the_config(method: str) -> None:
    cls = METHODS.get(method).config_cls
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    documented = documented_defaults(readme(method).read_text(encoding="utf-8"), method)
    checked = {k: v for k, v in documented.items() if k in defaults}
    assert checked or not defaults, f"{readme(method)} documents none of {method}'s options"  # (none: ngram-cache)
    wrong = {k: (v, defaults[k]) for k, v in checked.items() if not agrees(v, defaults[k])}
    assert not wrong, f"{readme(method)}: README default vs code default: {wrong}"


def test_a_wrong_default_is_caught() -> None:
    """The comparison is not vacuous: EAGLE's old table (top_k 8) against the code's 6 fails."""
    documented = documented_defaults("| option | default | meaning |\n|---|---|---|\n| `top_k` | 8 | x |", "eagle")
    assert documented == {"top_k": "8"} and not agrees(documented["top_k"], 6)
    assert agrees("false", False) and not agrees("true", False) and agrees("`dynamic`", "dynamic")
