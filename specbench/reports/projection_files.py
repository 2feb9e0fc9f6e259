"""What ``compare --onto`` and ``leaderboard --onto`` write of their projections beside their markdown (whose
block is ``leaderboard.markdown.projected_md``): the JSON and CSV files (``specbench project``'s formats, every
run in one file) and the figure.

A compare written to ``cmp.md`` gets ``cmp.projection.json`` and ``cmp.projection.csv`` beside it, and a
``--plot cmp.png`` gets ``cmp-projected.png``:

>>> from pathlib import Path
>>> projection_paths(Path("out/cmp.md"))
(PosixPath('out/cmp.projection.json'), PosixPath('out/cmp.projection.csv'))
>>> projected_plot_path(Path("out/cmp.png"))
PosixPath('out/cmp-projected.png')
"""
from __future__ import annotations

import json
from pathlib import Path

from specbench.reports.projection_columns import projections_csv, projections_json
from specbench.reports.projection_table import Projection

PROJECTED_SECTION = "Projected onto other machines' device profiles (not measured)"
PLOT_ALT = "speedup per method per machine (hatched bars: projected)"


def projection_paths(markdown: Path) -> tuple[Path, Path]:
    """The JSON and CSV files written beside a compare's ``--out`` markdown."""
    return markdown.with_suffix(".projection.json"), markdown.with_suffix(".projection.csv")


def projection_texts(projs: list[Projection]) -> tuple[str, str]:
    """The JSON and CSV text of ``projs``."""
    return json.dumps(projections_json(projs), indent=1) + "\n", projections_csv(projs)


def write_projection_files(markdown: Path, projs: list[Projection]) -> tuple[Path, Path]:
    """Write ``projection_paths(markdown)``; returns them."""
    from specbench.files.jsonfile import write_json_atomic, write_text_atomic

    json_path, csv_path = projection_paths(markdown)
    write_json_atomic(json_path, projections_json(projs), indent=1)
    write_text_atomic(csv_path, projections_csv(projs))  # (not projection_texts: its JSON would be built twice)
    return json_path, csv_path


def projected_plot_path(plot: Path) -> Path:
    return plot.with_name(f"{plot.stem}-projected{plot.suffix or '.png'}")


def write_projection_plot(plot: Path, projs: list[Projection]) -> Path:
    """The per-machine figure (``projection_plot.py``) beside the compare's ``--plot`` file; returns its path."""
    from specbench.reports.projection_plot import machine_speedup_plot

    path = projected_plot_path(plot)
    path.parent.mkdir(parents=True, exist_ok=True)
    machine_speedup_plot(projs).savefig(path, dpi=100, bbox_inches="tight")
    return path
