"""Layering, read from the real import graph (every import statement at any depth, function-level ones
included, relative ones resolved, literal ``importlib.import_module("...")`` calls):

- the core (``specbench/`` without its CLI layer and the ``api`` seam) never imports ``specbench_methods``,
  ``specbench_tasks`` (the folders ``methods/``, ``tasks/``), ``specbench.commands``, the CLI or ``specbench.api``; plugins are found by
  ``specbench.plugins.discovery`` by package name only;
- ``methods/`` and ``tasks/`` import specbench only through ``specbench.api``;
- no import cycle among specbench's modules, nor among its subpackages (rooms);
- the top level of ``specbench/`` holds at most 8 modules, every core file is under 300 lines and
  ``Engine.generate`` under 60;
- no method imports another (what two share lives in the core, behind the api);
- the batched loop takes nothing from another module's private side (both loops share ``engine/step.py``);
- a backend with a package of its own (llama.cpp) is named only there: everything else asks its registered spec.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "specbench"
IMPORT_NAMES = {"methods": "specbench_methods", "tasks": "specbench_tasks"}  # folder -> installed import name
UPPER = ("specbench_methods", "specbench_tasks", "specbench.commands", "specbench.cli", "specbench.__main__", "specbench.api")
CLI_LAYER = {CORE / "cli.py", CORE / "__main__.py", CORE / "api.py"}  # above the core: the entry point and the seam
SEAM = "specbench.api"
MAX_TOP_MODULES, MAX_LINES, MAX_GENERATE_LINES = 8, 300, 60


def imported_names(source: str, module: str = "", is_package: bool = False) -> list[str]:
    """Dotted names ``source`` imports: ``import a.b`` gives ``a.b``; ``from a import b`` gives ``a`` and
    ``a.b`` (b may be a module); relative imports resolved against ``module``; literal ``import_module``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join(parts + ([base] if base else []))
            found += [base] + [f"{base}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(node.args[0].value)
    return found


def upward_imports(source: str, module: str = "") -> list[str]:
    """The names of ``imported_names`` that are upper-layer modules."""
    return [n for n in imported_names(source, module) if any(n == u or n.startswith(u + ".") for u in UPPER)]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = (IMPORT_NAMES.get(parts[0], parts[0]), *parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """specbench's modules -> the specbench modules each imports (a name resolves to its longest module prefix)."""
    paths = {module_name(p): p for p in CORE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        edges = set()
        for name in imported_names(path.read_text(), mod, path.name == "__init__.py"):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            if name and name != mod:
                edges.add(name)
        graph[mod] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_checker_catches_every_form() -> None:
    assert upward_imports("import specbench_methods.rest") == ["specbench_methods.rest"]
    assert upward_imports("def f():\n    from specbench_tasks.humaneval import humaneval_file\n")
    assert upward_imports("from specbench import commands") == ["specbench.commands"]
    assert upward_imports("from ..commands import run", "specbench.results.x")
    assert upward_imports("importlib.import_module('specbench_methods.pld')") == ["specbench_methods.pld"]
    assert upward_imports("from specbench.api import DraftTree")[0] == "specbench.api"
    assert upward_imports("import specbench.results.stats\nfrom specbench.engine import loop") == []
    assert imported_names("from . import tree", "specbench.engine", is_package=True) == ["specbench.engine",
                                                                                       "specbench.engine.tree"]


def test_cycle_finder() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_core_imports_only_downward() -> None:
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        if path in CLI_LAYER or CORE / "commands" in path.parents:
            continue
        bad += [f"{path.relative_to(ROOT)}: {name}" for name in upward_imports(path.read_text(), module_name(path))]
    assert not bad, "core modules import upward:\n" + "\n".join(bad)


def test_plugins_import_specbench_only_through_the_api() -> None:
    bad = []
    for folder in ("methods", "tasks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            names = imported_names(path.read_text(), module_name(path), path.name == "__init__.py")
            core = [n for n in names if (n == "specbench" or n.startswith("specbench."))
                    and n != SEAM and not n.startswith(SEAM + ".")]
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in core]
    assert not bad, "plugins import the core around specbench.api:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    assert not cycles(import_graph()), "import cycles among specbench's modules"


def test_rooms_form_layers() -> None:
    """The subpackages ("rooms") of specbench import each other without a cycle either."""
    room = {m: m.split(".")[1] if "." in m else m for m in import_graph()}
    rooms: dict[str, set[str]] = {}
    for mod, edges in import_graph().items():
        rooms.setdefault(room[mod], set()).update(room[e] for e in edges if room[e] != room[mod])
    assert not cycles(rooms), f"rooms import each other in a circle: {cycles(rooms)}"


def test_top_level_and_file_sizes() -> None:
    top = sorted(p.name for p in CORE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of specbench/: {top}"
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sorted(CORE.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) >= MAX_LINES]
    assert not long, f"core files of {MAX_LINES} lines or more:\n" + "\n".join(long)


def test_generate_reads_as_its_steps() -> None:
    tree = ast.parse((CORE / "engine" / "loop.py").read_text())
    generate = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "generate")
    assert generate.end_lineno - generate.lineno + 1 < MAX_GENERATE_LINES


def method_of(path: Path) -> str:
    """The plugin a file under ``methods/`` belongs to: its package, or the module itself (``methods/rest.py``)."""
    return path.relative_to(ROOT / "methods").parts[0].removesuffix(".py")


def cross_method_imports() -> set[str]:
    """``file: methods.<other>`` for every import, at any depth, of one method's code by another method."""
    found = set()
    for path in sorted((ROOT / "methods").rglob("*.py")):
        own = method_of(path)
        for name in imported_names(path.read_text(), module_name(path), path.name == "__init__.py"):
            parts = name.split(".")
            if parts[0] == "specbench_methods" and len(parts) > 1 and parts[1] != own:
                found.add(f"{path.relative_to(ROOT)}: specbench_methods.{parts[1]}")
    return found


# shared draft layers, trees and datastores belong in the core, reached through the api seam
CROSS_METHOD_ALLOWED: set[str] = set()


def test_methods_do_not_import_each_other() -> None:
    assert cross_method_imports() == CROSS_METHOD_ALLOWED


def test_cross_method_checker() -> None:
    assert method_of(ROOT / "methods" / "rest.py") == "rest" and method_of(ROOT / "methods" / "eagle" / "x.py") == "eagle"


def loop_privates() -> set[str]:
    """What ``engine/batch_loop.py`` takes from another module's private side: ``_names`` it imports, and
    ``_attributes`` it reads on anything but ``self``."""
    path = CORE / "engine" / "batch_loop.py"
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found |= {f"import {a.name}" for a in node.names if a.name.startswith("_")}
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
              and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
            found.add(f"attribute {node.attr}")
    return found


def test_the_loops_share_only_public_steps() -> None:
    """The batched loop reuses the single loop's steps through the public step module, not its privates."""
    assert loop_privates() == set()


# backends with a package of their own, by name: only that package may name them; everything else asks the spec
OWN_PACKAGE_BACKENDS = ("llamacpp",)
BACKEND_NAME_HOMES = (CORE / "engine" / "backends" / "llamacpp",)


def string_constants(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``source`` but docstrings (f-strings' literal parts included)."""
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def backend_names_in_code() -> set[str]:
    """``file: text`` of every string constant outside a backend's homes that names a backend with a package."""
    import re

    names = re.compile(r"\b(" + "|".join(OWN_PACKAGE_BACKENDS) + r")\b")
    found = set()
    for path in sorted(CORE.rglob("*.py")):
        if any(home in path.parents for home in BACKEND_NAME_HOMES):
            continue
        found |= {f"{path.relative_to(ROOT)}: {text}" for _, text in string_constants(path.read_text())
                  if names.search(text)}
    return found


def test_backends_are_asked_not_named() -> None:
    assert backend_names_in_code() == set()


def test_string_constants_skip_docstrings() -> None:
    found = string_constants('"""Doc llamacpp."""\ndef f():\n    """Doc."""\n    return f"on {x} llamacpp" + "y"\n')
    assert sorted(t for _, t in found) == [" llamacpp", "on ", "y"]


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def documented_layers(text: str) -> dict[str, int]:
    """Room -> its layer's index (0 = entry, the top) from the layer table of docs/architecture.md: rows
    ``| layer | rooms |`` whose rooms are code spans, ``commands/`` naming a subpackage and ``cli.py`` a module.

    >>> documented_layers("| layer | rooms |\\n| --- | --- |\\n| entry | `cli.py`, `commands/` (not `x/`) |\\n| ground | `files/` |")
    {'cli': 0, 'commands': 0, 'files': 1}
    """
    import re

    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    return {span.removesuffix("/").removesuffix(".py"): i
            for i, row in enumerate(rows)  # (a parenthesised note may name other folders: not rooms)
            for span in re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", row.split("|")[2]))}


def layer_violations(layers: dict[str, int], room_edges: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every room edge from a lower layer to a higher one (a larger index is lower).

    >>> layer_violations({"run": 2, "engine": 4}, {"engine": {"run"}, "run": {"engine"}})
    ['engine (layer 4) imports run (layer 2)']
    """
    return [f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})"
            for a in sorted(room_edges) for b in sorted(room_edges[a]) if layers[b] < layers[a]]


def room_graph() -> dict[str, set[str]]:
    """Room -> the rooms its modules import (``specbench.run.plan`` is in room ``run``, ``specbench.cli`` in ``cli``)."""
    graph = import_graph()
    room = {m: m.split(".")[1] if "." in m else m for m in graph}
    rooms: dict[str, set[str]] = {}
    for mod, edges in graph.items():
        rooms.setdefault(room[mod], set()).update(room[e] for e in edges if room[e] != room[mod])
    return rooms


def test_the_documented_layers_are_the_code_layers() -> None:
    """Every room is in docs/architecture.md's layer table once, and no room imports one of a higher layer."""
    layers = documented_layers(ARCHITECTURE.read_text())
    rooms = room_graph()
    missing = sorted(set(rooms) - set(layers) - {"specbench"})  # (the package's own __init__)
    assert not missing, f"rooms missing from docs/architecture.md's layer table: {missing}"
    stale = sorted(set(layers) - set(rooms))
    assert not stale, f"docs/architecture.md's layer table names rooms that do not exist: {stale}"
    bad = layer_violations(layers, {r: e & set(layers) for r, e in rooms.items() if r in layers})
    assert not bad, "imports against docs/architecture.md's layer order:\n" + "\n".join(bad)


def test_the_budget_room_stands_below_the_engine() -> None:
    """The draft budget's room (issue 88) is documented on its own floor below the engine, above the ground
    floor's ``tree/``; the engine imports it and it imports neither the engine nor anything above."""
    layers, rooms = documented_layers(ARCHITECTURE.read_text()), room_graph()
    assert layers["engine"] < layers["budget"] < layers["tree"] == layers["files"]
    assert "budget" in rooms["engine"] and "engine" not in rooms["budget"]
    assert rooms["budget"] <= {"tree"}, rooms["budget"]
