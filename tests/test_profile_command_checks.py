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
