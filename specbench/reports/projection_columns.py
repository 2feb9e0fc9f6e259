"""Projected columns for ``specbench compare`` and ``specbench leaderboard`` (``--onto PROFILE``, repeatable):
one table per run, its measured speedup first and one projected column per profile after it, the shape of
Spec-Bench's 3090-vs-A100 tables for "one run, N machines".

The figures come from ``build_projection`` (the same pricing and the same refusals as ``specbench project``);
this module only lays them out. Every projected cell names what it is and the profile it used, in the cell
itself, so a cell copied out of its table keeps its label:

>>> from specbench.reports.projection_table import Projection, ProjectionRow, ProjectedCell
>>> class P:  # (a stand-in for ``OntoProfile``)
...     label = "Example GPU, fast, float16, 2026-01-01"
...     where = "b.json"
...     def describe(self): return {"label": self.label}
>>> row = ProjectionRow("pld", "Overall", 1.5, (ProjectedCell(1.2, RECORDED),))
>>> proj = Projection("demo", (P(),), (row,), ())
>>> t = projection_table(proj)
>>> t.headers
['Method', 'Subtask', "measured (this run's machine)", 'projected on Example GPU, fast, float16, 2026-01-01']
>>> t.rows[0][3]
'1.20x projected on Example GPU, fast, float16, 2026-01-01'
>>> projections_csv([proj]).splitlines()[2]
'demo,pld,Overall,projected,"Example GPU, fast, float16, 2026-01-01",1.2000,recorded steps priced on the profile,'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specbench.errors import ConfigError
from specbench.reports.projection_output import HINDSIGHT_MARK, projection_csv, projection_json
from specbench.reports.projection_table import (PROJECTED, RECORDED, OntoProfile, ProjectedCell, Projection,
                                               build_projection)
from specbench.reports.projection_costs import MachineCosts
from specbench.reports.table import Table
from specbench.results.loaded_run import Run
from specbench.results.cell_flags import marks

MEASURED_HEAD = "measured (this run's machine)"
KIND = "specbench projections"


@dataclass(frozen=True)
class ProjectionRequest:
    """What ``--onto`` (and ``--here``) asked for: the profiles to project onto, in order, and the runs' own costs."""

    onto: tuple[OntoProfile, ...] = field(default_factory=tuple)
    here: MachineCosts | None = None


def load_request(onto: list[str] | None, here: str | None) -> ProjectionRequest:
    """The request of ``--onto PROFILE ...`` / ``--here PROFILE`` (each file checked: one-line errors)."""
    from specbench.profiling.device_profile import load_device_profile
    from specbench.reports.projection_costs import machine_costs
    from specbench.reports.projection_table import onto_profile

    if here and not onto:
        raise ConfigError("--here PROFILE prices a projection: give --onto PROFILE too")
    profiles = tuple(onto_profile(p, load_device_profile(p)) for p in onto or [])
    return ProjectionRequest(profiles, machine_costs(load_device_profile(here)) if here else None)


def project_runs(runs: list[Run], request: ProjectionRequest) -> list[Projection]:
    """Each run's projection onto every profile of ``request`` (none when it names no profile).

    The run is read again with every batch size: a projection prices single-sequence records, which a run
    decoded at several batch sizes keeps beside the size its tables show."""
    from specbench.results.loaded_run import load_run

    if not request.onto:
        return []
    return [build_projection(load_run(r.path, every_batch=True), list(request.onto), request.here) for r in runs]


def _cell(c: ProjectedCell, label: str) -> str:
    mark = "" if c.basis == RECORDED or c.speedup is None else HINDSIGHT_MARK
    figure = "-" if c.speedup is None else f"{c.speedup:.2f}x"
    return f"{figure} {PROJECTED}{mark} on {label}{c.flag_text()}"


def projection_table(proj: Projection) -> Table:
    """Method | Subtask | measured | one ``projected on <profile>`` column per profile; cells name their profile."""
    labels = [p.label for p in proj.profiles]
    headers = ["Method", "Subtask", MEASURED_HEAD, *(f"{PROJECTED} on {lab}" for lab in labels)]
    rows, keys = [], []
    for r in proj.rows:
        measured = ("-" if r.measured is None else f"{r.measured:.2f}x") + marks(r.flags)
        projected = marks(r.projected_flags())
        rows.append([r.method, r.subtask, measured, *(_cell(c, lab) + projected for c, lab in zip(r.projected, labels))])
        keys.append([r.method, r.subtask, r.measured, *(c.speedup for c in r.projected)])
    return Table(f"Measured and projected speedup vs ar: run {proj.run}", headers, rows, keys)


def projection_notes(proj: Projection) -> list[str]:
    """The lines under a projected table: what a projection is, the hindsight mark, each profile's file."""
    lines = ["Projected figures are not measurements: the run's own per-step records priced with each profile's "
             "measured costs (docs/projection.md)."]
    if any(c.basis != RECORDED and c.speedup is not None for r in proj.rows for c in r.projected):
        lines.append(f"{PROJECTED}{HINDSIGHT_MARK}: the best fixed budget in hindsight from the recorded drafts, "
                     "not the row's budget=auto.")
    lines += list(proj.notes)
    lines += [f"profile {p.label}: {p.where}" for p in proj.profiles]
    return lines


def projections_json(projs: list[Projection]) -> dict[str, Any]:
    """``{"kind": "specbench projections", "runs": [<specbench project's JSON of each run>]}``."""
    return {"kind": KIND, "runs": [projection_json(p) for p in projs]}


def projections_csv(projs: list[Projection]) -> str:
    """``specbench project``'s long-form CSV of every run under one header (its ``run`` column tells them apart)."""
    parts = [projection_csv(p).split("\n", 1) for p in projs]
    return (parts[0][0] + "\n" if parts else "") + "".join(body for _, body in parts)
