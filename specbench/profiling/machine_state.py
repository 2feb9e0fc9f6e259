"""Was the machine quiet? The verdict on a run's machine-state figures, and the words that say so.

Why it matters: torch's CPU kernels run on OpenMP threads that, by default, spin while they wait for each
other, and a parallel region ends only when its slowest thread does. One other busy process on a 2-core
machine descheduled one of them at every operator: `make bench` took 35-80 s per generation instead of 4 s.
Nothing in the records shows it, so each run records the machine's state (``specbench.run.machine_session``)
and these functions judge it.

Thresholds (pyperf, the reference for careful CPU benchmarks, records ``load_avg_1min`` with every run and
has ``pyperf system tune`` set the ``performance`` governor, but sets no load threshold; these follow from
what contends with the run):

- A run's compute threads (``threads``: torch's, or llama.cpp's) occupy that many cores; other processes
  contend only for what is left beyond ``cpus - threads`` spare cores. ``contention`` = the cores they
  kept busy on average minus the spare ones.
- ``OTHER_CORES_LIMIT`` = 0.3 core of contention makes a run "not quiet": an idle machine's background
  (daemons, a shell, monitoring) stays below 0.1 core, a concurrent job holds about 1; 0.3 keeps clear of
  both and of ``/proc/stat``'s clock-tick rounding.
- The 1-minute load average is no verdict on its own: it trails by a minute (a job that ended 40 s ago
  still reads 0.5) and the run's own threads raise it. Before a run it only decides whether to measure:
  a load above ``LOAD_LIMIT`` (0.5) beyond the spare cores of the whole machine starts a ``CONFIRM_S``
  measurement of other processes' share, and that share decides.

>>> contention(0.9, cpus=2, threads=2), is_busy(0.9, cpus=2, threads=2), is_busy(0.9, cpus=2, threads=1)
(0.9, True, False)
>>> print(session_busy_text({"cpus": 2, "threads": 2, "during": {"other_cpu_cores": 0.94, "load_avg_mean": 3.1}}))
other processes used 0.9 of 2 cores on average (load 3.1)
"""
from __future__ import annotations

from typing import Any

OTHER_CORES_LIMIT = 0.3  # cores of contention (other processes beyond the spare cores) that make a run not quiet
LOAD_LIMIT = 0.5  # load beyond the machine's spare cores that makes a run measure others' share before it starts
CONFIRM_S = 0.5  # that measurement's length (only paid when the load says busy)
QUIET_CHECK_S = 1.5  # --require-quiet's measurement before the model loads
SAMPLE_INTERVAL_S = 5.0  # the sampler's period during a run (two small file reads each)
MACHINE_STATE = "machine_state"  # the manifest's key
INFLATION = "timings may be inflated (up to 10x seen on 2 cores)"


def _number(value: Any) -> float | None:
    """``value`` as a float if it is a JSON number (manifests are user files: anything else is unknown)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def contention(other: float | None, cpus: int | None, threads: int | None) -> float | None:
    """Cores other processes kept busy beyond those the run left spare (None when unknown)."""
    if other is None or not cpus:
        return None
    return other - max(0, cpus - (threads or cpus))


def is_busy(other: float | None, cpus: int | None, threads: int | None) -> bool:
    c = contention(other, cpus, threads)
    return c is not None and c > OTHER_CORES_LIMIT


def load_says_busy(load: float | None, online_cpus: int | None, threads: int | None) -> bool:
    """Whether the 1-minute load before a run is worth measuring (see the module's docstring).

    >>> load_says_busy(1.0, 2, 2), load_says_busy(0.2, 2, 2), load_says_busy(1.0, 8, 2)
    (True, False, False)
    """
    if load is None or not online_cpus:
        return False
    return load - max(0, online_cpus - (threads or online_cpus)) > LOAD_LIMIT


def _load_text(load: float | None) -> str:
    return f" (load {load:.1f})" if load is not None else ""


def _part(session: dict[str, Any], key: str) -> dict[str, Any]:
    return session[key] if isinstance(session.get(key), dict) else {}


def session_busy_text(session: dict[str, Any]) -> str | None:
    """How busy the machine was in one session of a run (None if quiet or unknown): over its whole span once
    it ended, else as it started (a session killed before its end has only that)."""
    cpus, threads = _number(session.get("cpus")), _number(session.get("threads"))
    during, before = _part(session, "during"), _part(session, "before")
    if _number(during.get("other_cpu_cores")) is not None:
        other, load, when = during.get("other_cpu_cores"), during.get("load_avg_mean"), "on average"
    else:
        other, load, when = before.get("other_cpu_cores"), before.get("load_avg_1min"), "at the start"
    other = _number(other)
    if other is None or not cpus or not is_busy(other, int(cpus), int(threads) if threads else None):
        return None
    return f"other processes used {other:.1f} of {int(cpus)} cores {when}{_load_text(_number(load))}"


def machine_note(manifest: dict[str, Any]) -> str | None:
    """The report header's line when a manifest says its run was not alone on the machine (None if it was,
    or if the manifest predates machine-state records).

    >>> busy = {"cpus": 2, "threads": 2, "during": {"other_cpu_cores": 1.2}}
    >>> print(machine_note({"machine_state": {"sessions": [{"cpus": 2, "during": {"other_cpu_cores": 0.0}}, busy]}}))
    **Machine not idle:** other processes used 1.2 of 2 cores on average, in session 2 of 2 of this run; timings may be inflated (up to 10x seen on 2 cores).
    """
    found = sessions(manifest)
    busy = [(i, text) for i, s in enumerate(found, 1) if (text := session_busy_text(s))]
    if not busy:
        return None
    where = "" if len(found) == 1 else f", in session{'s' if len(busy) > 1 else ''} " \
        f"{', '.join(str(i) for i, _ in busy)} of {len(found)} of this run"
    return f"**Machine not idle:** {busy[-1][1]}{where}; {INFLATION}."


def sessions(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The sessions of a manifest's ``machine_state`` (none in a manifest from before they were recorded).

    >>> sessions({"machine_state": {"sessions": [{"started": "t0"}, "junk"]}}), sessions({})
    ([{'started': 't0'}], [])
    """
    state = manifest.get(MACHINE_STATE)
    found = state.get("sessions") if isinstance(state, dict) else None
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def pooled_machine_state(manifests: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One ``machine_state`` holding every manifest's sessions in order (merged shards); None if none has any."""
    pooled = [s for m in manifests for s in sessions(m)]
    return {"sessions": pooled} if pooled else None
