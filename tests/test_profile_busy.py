"""A cost profile measured while other processes use the machine is used by its run but never cached: it would
steer every later ``budget=auto`` run (one measured beside a test suite had T(1) at 2.7x T(2) after 512 tokens)."""
from __future__ import annotations

import types

import specbench.profiling.cost_profile as cost_profile
from specbench.profiling import machine_probe, machine_state
from specbench.profiling.machine_probe import CpuReading
from specbench.profiling.cost_profile import BUSY_SUFFIX, cached_cost_profile


class FakeProbe:
    """Each reading 1 s after the last, with ``other`` cores of other processes' work in between."""

    def __init__(self, other: float) -> None:
        self.other, self.t = other, 0.0

    def reading(self) -> CpuReading:
        self.t += 1.0
        return CpuReading(self.t, self.t * self.other, 0.0)

    def cpus(self) -> int:
        return 2


def _profile(tmp_path, monkeypatch, other: float, capsys):
    from conftest import make_tiny_model

    measured = []
    monkeypatch.setattr(cost_profile, "measure_forward_curve",
                        lambda model, context, sizes, repeats, backend="auto": measured.append(context) or
                        {n: 0.01 + 0.001 * n for n in sizes})
    monkeypatch.setattr(cost_profile, "is_busy", machine_state.is_busy)  # (the suite's conftest turns it off)
    monkeypatch.setattr(machine_probe, "default_probe", lambda: FakeProbe(other))
    lm = types.SimpleNamespace(model=make_tiny_model("llama"), model_id="tiny", model_hash="abc", dtype="float32",
                               device="cpu")
    prof, path = cached_cost_profile(lm, "fast", tmp_path, quiet=True)
    return prof, path, measured, capsys.readouterr().err


def test_busy_profile_is_used_but_not_cached(tmp_path, monkeypatch, capsys) -> None:
    prof, path, measured, err = _profile(tmp_path, monkeypatch, 0.9, capsys)
    assert path.name.endswith(BUSY_SUFFIX) and path.is_file() and prof["latency_by_context_s"]
    assert "not cached" in err and "0.9 of 2 cores" in err
    # the next run measures again, and on a quiet machine caches it
    prof, path, measured, err = _profile(tmp_path, monkeypatch, 0.0, capsys)
    assert measured == [128, 512] and not path.name.endswith(BUSY_SUFFIX) and path.is_file() and not err
    _, again, measured, _ = _profile(tmp_path, monkeypatch, 0.9, capsys)
    assert again == path and measured == []  # read from the cache: nothing measured, busy or not
