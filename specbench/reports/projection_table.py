"""``specbench project``'s table: per method and subtask (and Overall), the measured speedup and one projected
speedup per device profile, each projected cell carrying its label, its basis and the profile it used.

Built from the run's single-sequence records of its own methods (an engine under test is not priced: its steps
are not the engine's). A fixed budget's cell is its recorded steps priced on the profile; a ``budget=auto``
cell is the best fixed budget in hindsight (``projection_auto.py``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE
from specbench.errors import ConfigError
from specbench.profiling.profile_spread import SPREAD_WIDE, WIDE_MARK, cell_spread, drafting_spreads
from specbench.reports.projection import ar_price, decode_steps, method_price, pooled
from specbench.reports.projection_auto import AUTO_NOTE, auto_labels, best_fixed_budget, cut_price, hindsight_label
from specbench.reports.projection_checks import (HereCosts, check_greedy, check_per_step, check_profile_fits,
                                                 check_single_sequence, drafting_for)
from specbench.reports.projection_costs import MachineCosts, machine_costs
from specbench.reports.projection_plausibility import VerdictInput, projected_bounds, projected_verdict
from specbench.results.cell_flags import FORCED_MERGE, IMPLAUSIBLE, PARTIAL, SAMPLED, Flag, sampled_flag
from specbench.results.loaded_run import OWN, Run, subject_view
from specbench.results.record import Record

OVERALL = "Overall"
PROJECTED = "projected"
RECORDED = "recorded steps priced on the profile"
PROFILE_BUSY = "profile measured under load"
PROFILE_NOISY = "profile noisier than a measurement"  # (``profile_sense.noise_problem``: T(n) falling with n)
RECORD_KINDS = (PARTIAL, FORCED_MERGE, SAMPLED)


@dataclass(frozen=True)
class OntoProfile:
    """A device profile a run is projected onto: where it came from, its contents, prices and label."""

    where: str
    profile: dict[str, Any]
    costs: MachineCosts
    label: str
    busy: str | None = None  # how busy its machine was while it was measured (None: quiet, or not recorded)
    noisy: str | None = None  # what says its figures are noise (``profile_sense.noise_problem``; None: nothing)

    def describe(self) -> dict[str, Any]:
        """What every output states of the profile a projected cell used."""
        p = self.profile
        return {"label": self.label, "file": self.where, "machine": p.get("machine"), "backend": p.get("backend"),
                "dtype": p.get("dtype"), "created": p.get("created")}


@dataclass(frozen=True)
class ProjectedCell:
    speedup: float | None
    basis: str
    kind: str = PROJECTED  # (never anything else: the label each output writes beside the figure)
    # why the figure is not to be trusted as it reads (``PROFILE_BUSY``, ``IMPLAUSIBLE``, ``WIDE_MARK``), in the cell
    flags: tuple[str, ...] = ()

    def flag_text(self) -> str:
        """`` (profile measured under load)``: what every output writes after the figure ('' without flags)."""
        return f" ({'; '.join(self.flags)})" if self.flags else ""


@dataclass(frozen=True)
class ProjectionRow:
    method: str
    subtask: str
    measured: float | None
    projected: tuple[ProjectedCell, ...]  # one per profile, in --onto order
    flags: tuple[Flag, ...] = ()  # the measured cell's (``results.cell_flags``), ``sampled`` included

    def projected_flags(self) -> tuple[Flag, ...]:
        """The flags its projected cells carry too: those of the records priced (partial, forced merge, sampled)."""
        return tuple(f for f in self.flags if f.kind in RECORD_KINDS)


@dataclass(frozen=True)
class Projection:
    run: str
    profiles: tuple[OntoProfile, ...]
    rows: tuple[ProjectionRow, ...]
    notes: tuple[str, ...]


def onto_profile(where: str, profile: dict[str, Any]) -> OntoProfile:
    from specbench.profiling.device_profile import profile_label
    from specbench.profiling.machine_state import session_busy_text, sessions
    from specbench.profiling.profile_sense import noise_problem

    busy = [text for s in sessions(profile) if (text := session_busy_text(s))]
    return OntoProfile(where, profile, machine_costs(profile), profile_label(profile), busy[-1] if busy else None,
                       noise_problem(profile))


def distinct_labels(onto: list[OntoProfile]) -> list[OntoProfile]:
    """``onto`` with each label that two profiles share (one machine, one date) followed by its file's name, or
    by its file's path where the names are shared too: two columns must never read alike."""
    import dataclasses

    def relabel(profiles: list[OntoProfile], tail) -> list[OntoProfile]:
        counts = Counter(p.label for p in profiles)
        return [dataclasses.replace(p, label=f"{p.label} ({tail(p)})") if counts[p.label] > 1 else p
                for p in profiles]

    return relabel(relabel(onto, lambda p: Path(p.where).name), lambda p: p.where)


def _by_subtask(recs: list[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {OVERALL: list(recs)}
    for r in recs:
        out.setdefault(r.subtask, []).append(r)
    return out


def build_projection(run: Run, onto: list[OntoProfile], here: MachineCosts | None = None) -> Projection:
    """The projection of ``run`` onto each profile (one-line ``ConfigError`` for each refusal)."""
    onto = distinct_labels(onto)
    own = subject_view(run, OWN)
    records = [r for r in own.records if r.unit.batch == 1]
    check_greedy(run.name, run.manifest)
    check_single_sequence(run.name, records, [r for r in own.records if r.unit.batch > 1])
    check_per_step(run.name, records)
    for o in onto:
        check_profile_fits(run.name, run.manifest, o.profile, o.where)
    here_costs = HereCosts.of_run(run.manifest, here)
    configs = run.manifest.get("method_configs") or {}
    methods = [m for m in own.methods() if m != BASELINE]
    autos = set(auto_labels(methods, configs))
    manifest = {**run.manifest, "run_name": run.name}
    pricing = {(m, i): drafting_for(m, manifest, o.costs, o.profile, here_costs, o.where)
               for m in methods for i, o in enumerate(onto)}
    by_method: dict[str, list[Record]] = {}
    for r in records:
        by_method.setdefault(r.method, []).append(r)
    ar = _by_subtask(by_method.get(BASELINE, []))
    flagged = _flagged(Run(run.path, own.manifest, records))
    subtasks = [OVERALL] + [s for s in own.subtasks() if s in ar]
    rows, judged, widest = [], [], {}
    for m in methods:
        mine = _by_subtask(by_method.get(m, []))
        cuts = {i: best_fixed_budget(mine[OVERALL], ar[OVERALL], o.costs, pricing[m, i], ar_price(o.costs))
                for i, o in enumerate(onto)} if m in autos else {}
        for sub in subtasks:
            if sub not in mine:
                continue
            cells, measured = [], None
            for i, o in enumerate(onto):
                if m in autos:
                    best = cuts[i]
                    price = cut_price(o.costs, pricing[m, i], best[0]) if best else None
                    basis = hindsight_label(best[0]) if best else "no paired drafts to cut"
                else:
                    price, basis = method_price(o.costs, pricing[m, i]), RECORDED
                pm = pooled(mine[sub], ar[sub], price, ar_price(o.costs)) if price else None
                if pm is not None:
                    measured = pm[1]
                spread = _spread(o, mine[sub] + ar[sub], pricing[m, i])
                bad = _judged(VerdictInput(m, sub, o.label, pm[0], spread), mine[sub], ar[sub], o, pricing[m, i]) \
                    if pm is not None and m not in autos else None
                judged += [bad] if bad else []
                wide = spread is not None and spread > SPREAD_WIDE
                if wide:
                    widest[i] = max(widest.get(i, 0.0), spread)
                flags = ((IMPLAUSIBLE,) if bad else ()) + ((PROFILE_BUSY,) if o.busy else ()) + (
                    (PROFILE_NOISY,) if o.noisy else ()) + ((WIDE_MARK,) if wide else ())
                cells.append(ProjectedCell(pm[0] if pm else None, basis, flags=flags))
            if measured is None:
                measured = _measured(mine[sub], ar[sub])
            rows.append(ProjectionRow(m, sub, measured, tuple(cells), flagged.get((m, sub), ())))
    if not rows:
        raise ConfigError(f"run {run.name}: no drafting method with paired AR records to project")
    notes = tuple(AUTO_NOTE.format(label=m) for m in methods if m in autos) + tuple(judged) + tuple(
        f"{PROFILE_BUSY}: profile {o.label} was measured while {o.busy}; its projected cells may be off by up to 10x "
        "(measure it again on a quiet machine, `specbench profile --require-quiet`)" for o in onto if o.busy) + tuple(
        f"{PROFILE_NOISY}: profile {o.label}: {o.noisy}; its projected cells may be far off (measure it again on a "
        "quiet machine, `specbench profile --require-quiet`)" for o in onto if o.noisy) + tuple(
        f"{WIDE_MARK}: on profile {onto[i].label}, figures that price its marked cells varied by up to {w:.0%} "
        f"between repeats (interquartile range over the median), more than the {SPREAD_WIDE:.0%} a projected cell "
        "can carry (`profile_spread`): measure it again on a quiet machine, with more --repeats"
        for i, w in sorted(widest.items()))
    # (each flag's note once, under the table: the measured cells' implausible ones first, as ``compare`` lists them)
    flagged_notes = sorted(dict.fromkeys(f.note for r in rows for f in r.flags),
                           key=lambda n: n.split(":")[0] != IMPLAUSIBLE)
    return Projection(run.name, tuple(onto), tuple(rows), notes + tuple(flagged_notes))


def _spread(o: OntoProfile, recs: list[Record], drafting: Any) -> float | None:
    """The widest recorded spread of ``o``'s figures that price ``recs`` (``profile_spread.cell_spread``)."""
    rows = max((int(decode_steps(r).rows.max(initial=1)) for r in recs), default=1)
    prompt = max((r.prompt_tokens for r in recs), default=0)
    return cell_spread(o.profile, rows, prompt, drafting_spreads(o.profile, drafting.kind, drafting.steps))


def _judged(cell: VerdictInput, mine: list[Record], ar: list[Record], o: OntoProfile, drafting: Any) -> str | None:
    """The projected cell's plausibility note (``projection_plausibility``), None when plausible."""
    bounds = projected_bounds(mine, ar, o.costs, drafting)
    return projected_verdict(cell, bounds) if bounds else None


def _flagged(run: Run) -> dict[tuple[str, str], tuple[Flag, ...]]:
    """(method, subtask) -> its measured cell's flags (``run_stats``: the shared rule), and ``sampled`` when the run
    sampled (a projection prices its drafts as greedy ones)."""
    from specbench.results.stats import run_stats

    sampled = sampled_flag(run.manifest)
    stats = run_stats(run, n_boot=0)
    return {(m, sub): c.flags + ((sampled,) if sampled else ())
            for m, cells in stats.items() for sub, c in cells.items()}


def _measured(method_recs: list[Record], ar_recs: list[Record]) -> float | None:
    pm = pooled(method_recs, ar_recs, lambda r: r.wall_time_s, lambda r: r.wall_time_s)
    return None if pm is None else pm[1]
