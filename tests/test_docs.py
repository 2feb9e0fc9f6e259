"""The README stays a user guide, and the documentation's links lead somewhere.

The README says what to run and what it means; the measured tables, each with the command that reproduces
it, live in ``docs/measurements.md`` (and the longer explanations in the other ``docs/*.md``). These checks
guard that split: the README stays short (under 400 lines) and links the measurements; every relative
markdown link in the README and ``docs/*.md`` names a file that exists (a section moved to another file
leaves no dangling link behind); and no document names a path of the machine it was written on
(``/work/``, ``/root/``, ``/tmp/``), which means nothing to a reader elsewhere. Text only: no model, fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MEASUREMENTS = "docs/measurements.md"
MAX_README_LINES = 400
MACHINE_PATHS = ("/work/", "/root/", "/tmp/")
# [text](target) or [text](target "title"); the target stops at whitespace or the closing parenthesis
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def documents(root: Path = ROOT) -> list[Path]:
    """The README and every markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def relative_links(text: str) -> list[str]:
    """Link targets that name a file: no http(s)/mailto links, no pure ``#anchor``s."""
    targets = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue
        targets.append(target)
    return targets


def broken_links(doc: Path) -> list[str]:
    """The relative links of ``doc`` whose file (anchor stripped) does not exist."""
    broken = []
    for target in relative_links(doc.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            broken.append(target)
    return broken


def machine_paths(doc: Path) -> list[str]:
    """``line N: text`` for each line of ``doc`` that names a path of this machine."""
    return [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        if any(path in line for path in MACHINE_PATHS)
    ]


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_README_LINES, (
        f"README.md has {len(lines)} lines (limit {MAX_README_LINES}): measured tables belong in {MEASUREMENTS}"
    )


def test_readme_links_measurements() -> None:
    targets = [t.split("#", 1)[0] for t in relative_links(README.read_text(encoding="utf-8"))]
    assert MEASUREMENTS in targets, f"README.md does not link {MEASUREMENTS}"
    assert (ROOT / MEASUREMENTS).is_file()


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    assert not broken_links(doc), f"{doc.relative_to(ROOT)}: links to missing files: {broken_links(doc)}"


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_machine_paths(doc: Path) -> None:
    found = machine_paths(doc)
    assert not found, f"{doc.relative_to(ROOT)} names machine paths: {found}"


def test_link_pattern() -> None:
    text = (
        "[a](docs/x.md) [b](docs/y.md#sec) [c](#local) [d](https://example.org/z.md) "
        '[e](../README.md "title") ![img](rest_c_sweep.png) [f](mailto:x@y.z)'
    )
    assert relative_links(text) == ["docs/x.md", "docs/y.md#sec", "../README.md", "rest_c_sweep.png"]
