"""``specbench profile`` refuses what it can before it measures (issue 85, defect 15), and records and judges the
machine it measured on (defect 2). No test here times a model: the measurement is replaced or never reached."""
from __future__ import annotations

import pytest

import specbench.engine.backends.registry as registry
from specbench.cli import main


def _no_measuring(monkeypatch) -> None:
    def load(*args, **kwargs):
        raise AssertionError("the model was loaded: the flags were checked too late")

    monkeypatch.setattr(registry, "load_model_for", load)


@pytest.mark.parametrize("flags,words", [(["--drafters", "TYPO"], "unknown drafter cost declaration 'TYPO'"),
                                         (["--method-opt", "sps"], "--method-opt expects METHOD.KEY=VALUE")])
def test_bad_drafter_flags_are_refused_before_measuring_and_leave_nothing(tmp_path, monkeypatch, capsys, flags,
                                                                          words):
    _no_measuring(monkeypatch)
    out = tmp_path / "prof"
    assert main(["profile", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err
    assert not out.exists() or not any(out.iterdir())


def _tiny_profile(tmp_path, monkeypatch, other: float, *flags: str) -> int:
    """``specbench profile`` of a tiny random model (no timing checked) with the machine's other processes keeping
    ``other`` cores busy (a constructed probe, no busy loop)."""
    import torch

    import specbench.profiling.measure as measure
    from conftest import make_tiny_model
    from specbench.models.loading import LoadedModel
    from test_machine_state import FakeProbe, use_probe

    use_probe(monkeypatch, FakeProbe(other=other, load=2.0 if other else 0.1))
    lm = LoadedModel(make_tiny_model("llama"), None, "tiny", "h", torch.device("cpu"), "float32", False)
    monkeypatch.setattr(registry, "load_model_for", lambda *args, **kwargs: lm)
    monkeypatch.setattr(measure, "measure_read_bandwidth", lambda device: 1e10)  # (not the 512 MB reads)
    return main(["profile", "--out", str(tmp_path / "prof"), "--backends", "fast", "--sizes", "1,2", "--repeats", "1",
                 "--context", "16", "--contexts", "16", "--drafters", "none", *flags])


def test_a_profile_on_a_busy_machine_warns_and_records_the_machine_state(tmp_path, monkeypatch, capsys):
    import json

    assert _tiny_profile(tmp_path, monkeypatch, 0.9) == 0
    err = capsys.readouterr().err
    assert "warning: the machine is busy" in err and "0.9 of 2 cores" in err
    device = json.loads((tmp_path / "prof" / "device-profile-fast.json").read_text(encoding="utf-8"))
    session = device["machine_state"]["sessions"][0]
    assert session["during"]["other_cpu_cores"] == pytest.approx(0.9, abs=0.05)
    cost = json.loads((tmp_path / "prof" / "profile.json").read_text(encoding="utf-8"))
    assert cost["machine_state"] == device["machine_state"]
    assert "Machine not idle" in (tmp_path / "prof" / "profile.md").read_text(encoding="utf-8")


def test_require_quiet_refuses_a_busy_machine_before_measuring(tmp_path, monkeypatch, capsys):
    from test_machine_state import FakeProbe, use_probe

    use_probe(monkeypatch, FakeProbe(other=0.9, load=2.0))
    _no_measuring(monkeypatch)
    assert main(["profile", "--out", str(tmp_path / "prof"), "--require-quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--require-quiet refuses to start" in err and "\n" not in err
