"""``measure_forward_curve``'s ``lead_in``: untimed forwards of the same size right before each timed one.
The order of forwards is checked on a recording stand-in backend; no forward is timed for its value."""
from types import SimpleNamespace

import torch

from specbench.profiling import measure


class Recorder:
    """A backend whose target records the row count of every forward."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.device = torch.device("cpu")

    def prepare(self, model):  # (nothing to prepare)
        return None

    def target(self, model):
        return self

    def new_cache(self, model, capacity):
        return object()

    def run(self, ids, cache, start, **kw):
        self.rows.append(int(ids.shape[1]))


def _model():
    m = torch.nn.Linear(1, 1)
    m.config = SimpleNamespace(vocab_size=50)
    return m


def test_lead_in_runs_the_same_size_right_before_each_timed_forward(monkeypatch):
    monkeypatch.setattr(measure, "trim_cache", lambda *a, **k: None)
    rec = Recorder()
    out = measure.measure_forward_curve(_model(), 8, (1, 4), repeats=1, warmup=0, backend=rec, lead_in=1)
    assert rec.rows == [8, 1, 1, 4, 4]  # the context, then each size twice in a row
    assert set(out) == {1, 4}


def test_without_lead_in_the_sizes_interleave(monkeypatch):
    monkeypatch.setattr(measure, "trim_cache", lambda *a, **k: None)
    rec = Recorder()
    measure.measure_forward_curve(_model(), 8, (1, 4), repeats=2, warmup=0, backend=rec)
    assert rec.rows == [8, 1, 4, 1, 4]

