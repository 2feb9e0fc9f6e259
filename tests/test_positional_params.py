"""No function in the decode loop (``specbench/engine/``), the draft budget's room (``specbench/budget/``) or the
runner (``specbench/run/``) takes more than ``MAX_POSITIONAL`` positional parameters, ``self`` and ``cls`` not
counted (issue 88): a longer list is a small frozen dataclass or keyword-only parameters (``*,``), so a call
names what it passes and two neighbours of one type cannot swap unseen."""
from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "specbench"
FOLDERS = ("engine", "budget", "run")
MAX_POSITIONAL = 6


def positional(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters a call may pass by position (positional-only ones included), ``self``/``cls`` aside."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return len(names) - (1 if names and names[0] in ("self", "cls") else 0)


def too_long(source: str) -> list[str]:
    """``name (n)`` of every function (methods, nested ones and lambdas aside) of ``source`` over the limit."""
    return [f"{node.name} ({positional(node)})" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and positional(node) > MAX_POSITIONAL]


def test_the_checker_counts_positional_parameters_only() -> None:
    src = ("def a(p, q, r, s, t, u, v): ...\n"
           "def b(p, q, r, s, t, u, *, v, w): ...\n"
           "class C:\n    def m(self, p, q, r, s, t, u): ...\n    def n(self, p, q, r, s, t, u, v, /): ...\n")
    assert too_long(src) == ["a (7)", "n (7)"]


def test_no_function_takes_more_than_six_positional_parameters() -> None:
    found = [f"{path.relative_to(CORE)}: {hit}" for folder in FOLDERS for path in sorted((CORE / folder).rglob("*.py"))
             for hit in too_long(path.read_text())]
    assert not found, "more than 6 positional parameters (use a frozen dataclass or `*,`):\n" + "\n".join(found)
