"""A device profile records how widely its repeats varied, per figure, and its readers use it (issue 85, defect 2):
the read check's "T(n) falling with n" rule allows a fall within the figures' own spread (30% where unknown), and a
projected cell priced by a figure spread too widely says so in the cell.

Profiles are ``test_projection``'s constructed ones with a ``spread`` added; the measured one is a tiny random
model's (its timings are not judged: a unit test does not time the machine, only what the profile records).
"""
from __future__ import annotations

import re

import json

import pytest

from specbench.cli import main
from specbench.errors import ConfigError
from specbench.profiling.device_profile import check_device_profile
from specbench.reports.projection_table import build_projection, onto_profile
from test_projection import A, B, CONTEXTS, LENGTHS, SIZES, profile_of, run_on, write_run

WIDE = "profile spread too wide"


def spread_of(target: float, host: float = 0.02, prefill: float = 0.02) -> dict:
    return {"target": {str(c): {str(n): target for n in SIZES} for c in CONTEXTS},
            "prefill": {str(n): prefill for n in LENGTHS}, "host": host}


def _with(spread: dict | None, dip: float = 0.0) -> dict:
    """B's profile with ``spread`` recorded and T(2) ``dip`` below T(1) at the first context."""
    prof = profile_of(B)
    if spread is not None:
        prof["spread"] = spread
    curve = prof["target"]["latency_by_context_s"][str(CONTEXTS[0])]
    curve["2"] = curve["1"] * (1 - dip)
    return prof


def test_a_measured_device_profile_records_each_figures_spread(tmp_path):
    import torch

    from conftest import make_tiny_model
    from specbench.engine.backends.torch_backends import resolve_backend
    from specbench.models.loading import LoadedModel
    from specbench.run.device_measure import DeviceRequest, measure_device_profiles

    lm = LoadedModel(make_tiny_model("llama"), None, "tiny", "h", torch.device("cpu"), "float32", False)
    req = DeviceRequest((16, 32), (1, 2), 3, 32, ("sps",), {}, depths=(1, 2))
    prof = measure_device_profiles(lm, {"fast": resolve_backend("fast", lm.device, torch.float32)}, req, tmp_path)[
        "fast"]
    spread = prof["spread"]
    assert sorted(spread["target"]) == ["16", "32"] and all(sorted(c) == ["1", "2"] for c in spread["target"].values())
    assert spread["prefill"] and spread["host"] >= 0
    assert all("spread" in step for entry in prof["drafters"].values() for step in entry["steps"].values())
    assert "spread" in prof["fields"]


def test_a_profile_without_spread_reads_as_before():
    prof = _with(None, dip=0.25)  # (within the fixed 30%)
    assert check_device_profile(prof, "p.json") is prof
    proj = build_projection(run_on(A), [onto_profile("b.json", profile_of(B))])
    assert all(WIDE not in c.flags for r in proj.rows for c in r.projected)


def test_the_falling_rule_allows_a_fall_within_the_figures_own_spread_only():
    from specbench.profiling.profile_sense import noise_problem

    assert re.search("falls with n.*15% its repeats' spread allows",  # (tight repeats: a 20% fall is no noise)
                     noise_problem(_with(spread_of(0.01), dip=0.2)))
    wide = _with(spread_of(0.2), dip=0.35)  # (repeats this spread: a 35% fall is within them)
    assert check_device_profile(wide, "p.json") is wide and noise_problem(wide) is None
    assert "falls with n" in noise_problem(_with(None, dip=0.35))  # (unknown: the fixed 30%)


def test_a_malformed_spread_is_refused_in_one_line():
    prof = profile_of(B)
    prof["spread"] = {"target": {"128": {"1": "wide"}}}
    with pytest.raises(ConfigError, match="spread.target must map"):
        check_device_profile(prof, "p.json")


def _flags(prof: dict) -> tuple[dict, tuple]:
    proj = build_projection(run_on(A), [onto_profile("b.json", prof)])
    return {(r.method, r.subtask): r.projected[0].flags for r in proj.rows}, proj.notes


def test_a_cell_priced_by_a_widely_spread_figure_says_so():
    flags, notes = _flags(_with(spread_of(0.6)))
    assert flags and all(WIDE in f for f in flags.values())
    assert any(n.startswith(f"{WIDE}: on profile") and "60%" in n for n in notes), notes
    quiet, notes = _flags(_with(spread_of(0.05)))
    assert all(WIDE not in f for f in quiet.values()) and not any(n.startswith(WIDE) for n in notes)


def test_only_the_cells_a_wide_figure_prices_are_marked():
    flags, _ = _flags(_with(spread_of(0.05, host=0.6)))  # (the host figure prices pld's drafting alone)
    assert all((WIDE in f) == (method == "pld") for (method, _), f in flags.items()), flags


def test_the_mark_reaches_projection_json(tmp_path):
    write_run(tmp_path / "run", run_on(A))
    (tmp_path / "p.json").write_text(json.dumps(_with(spread_of(0.6))), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "p.json"), "--out",
                 str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "projection.json").read_text(encoding="utf-8"))
    assert all(WIDE in c["flags"] for r in data["rows"] for c in r["projected"])
