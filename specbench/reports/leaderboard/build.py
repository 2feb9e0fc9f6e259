"""Rendering the leaderboard of several runs: ``leaderboard.md`` and a self-contained ``leaderboard.html``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.files.jsonfile import write_outputs
from specbench.reports.leaderboard import plots as P
from specbench.reports.leaderboard.html import leaderboard_html
from specbench.reports.leaderboard.markdown import leaderboard_md
from specbench.reports.leaderboard.tables import group_runs, prediction_table
from specbench.reports.projection_columns import ProjectionRequest, project_runs
from specbench.reports.projection_files import projection_texts
from specbench.reports.projection_plot import machine_speedup_plot
from specbench.reports.table import Table
from specbench.results.loaded_run import load_run
from specbench.results.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED


def build_leaderboard(
    run_dirs: list[str | Path],
    out_dir: str | Path,
    profile: dict[str, Any] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    plots: bool = True,
    published: list[Table] | None = None,
    *,
    projection: ProjectionRequest | None = None,
) -> dict[str, Path]:
    """Render ``leaderboard.md`` and ``leaderboard.html`` for the runs into ``out_dir``; returns their paths, the
    markdown (``text``) and the files that could not be written (``failed``). A ``projection`` (``--onto``) adds
    each run's projected table to both, its figure to the page, and ``projection.json`` / ``projection.csv``."""
    published = published or []
    runs = [load_run(d) for d in run_dirs]
    empty = [str(r.path) for r in runs if not r.records]
    if empty:
        raise FileNotFoundError(f"run folder has no records: {', '.join(empty)}")
    projs = project_runs(runs, projection) if projection is not None else []
    groups = group_runs(runs, n_boot, seed)
    pred = [prediction_table(g, profile) for g in groups] if profile is not None else []
    figs = [[("speedup per subtask", P.speedup_bars(g)), ("tau vs speedup", P.tau_scatter(g)),
             ("draft/verify time breakdown", P.time_breakdown(g)),
             ("accepted-length histogram", P.accepted_histograms(g)),
             ("per-position acceptance", P.per_position_acceptance(g))] if plots else [] for g in groups]
    prof_plot = P.profile_curve(profile) if profile is not None and plots else None
    out = Path(out_dir)
    text = leaderboard_md(groups, pred, profile, published, projected=projs)
    proj_plot = P.to_data_uri(machine_speedup_plot(projs)) if projs and plots else None
    files = {"leaderboard.md": text,
             "leaderboard.html": leaderboard_html(groups, figs, pred, profile, prof_plot, published,
                                                  projected=(projs, proj_plot))}
    if projs:
        files["projection.json"], files["projection.csv"] = projection_texts(projs)
    failed = write_outputs(out, files)  # a read-only --out: the markdown is still printed
    return {"markdown": out / "leaderboard.md", "html": out / "leaderboard.html", "text": text, "failed": failed}
