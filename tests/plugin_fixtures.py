"""Outside plugins for the tests: a bigram drafter as a file, a folder package and an installed distribution with
an entry point (a ``.dist-info`` folder on ``sys.path``, as pip lays one out), and registries restored after."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import specbench.plugins.outside as outside
from specbench.plugins import registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "bigram_drafter" / "bigram_drafter.py"  # the README's outside method


def bigram_source(name: str = "bigram") -> str:
    """The README's example method, registered as ``name``."""
    return EXAMPLE.read_text().replace('register_method("bigram"', f'register_method("{name}"')


def write_file_plugin(folder: Path, name: str = "bigram") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name.replace('-', '_')}.py"
    path.write_text(bigram_source(name))
    return path


def write_package_plugin(folder: Path, package: str, name: str) -> Path:
    """A package whose public module imports its sibling relatively (a plugin's own helpers)."""
    pkg = folder / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_options.py").write_text("NUM_DRAFT = 3\n")
    (pkg / "method.py").write_text(bigram_source(name).replace("num_draft: int = 4", "num_draft: int = NUM_DRAFT")
                                   .replace("from dataclasses import dataclass",
                                            "from dataclasses import dataclass\n\nfrom ._options import NUM_DRAFT"))
    return pkg


def write_distribution(site: Path, package: str, name: str, group: str = "specbench.methods") -> Path:
    """An installed distribution ``package`` in ``site`` with an entry point ``name = package`` in ``group``."""
    write_package_plugin(site, package, name)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {package}\n")
    return site


@contextlib.contextmanager
def fresh_registries() -> Iterator[None]:
    """Discovery done, then every registry and the plugin log as they were, after the block (a test's plugins
    must not become methods of the next test in the same process)."""
    registry.METHODS.names()
    saved = {reg: dict(reg._entries) for reg in vars(registry).values() if isinstance(reg, registry.Registry)}
    loaded = list(outside._LOADED)
    try:
        yield
    finally:
        for reg, entries in saved.items():
            reg._entries.clear()
            reg._entries.update(entries)
        outside._LOADED[:] = loaded
