"""A device profile is checked on read: its structure (issue 85, defect 9) and its physical sense (defect 2).

A profile is a user file carried between machines: a field of the wrong type must be one line naming the field
(exit 2) from every command that reads one (``project``, ``compare --onto``, ``leaderboard --onto``), never a
traceback; impossible seconds (1e30, T(n) falling with n) must be refused, not priced into "1.79x projected".
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.cli import main
from test_projection import A, B, profile_of, run_on, write_run


def _commands(tmp: Path, profile: Path) -> list[list[str]]:
    return [["project", str(tmp / "run"), "--onto", str(profile), "--out", str(tmp / "out")],
            ["compare", str(tmp / "run"), "--onto", str(profile), "--bootstrap", "10"],
            ["leaderboard", str(tmp / "run"), "--onto", str(profile), "--out", str(tmp / "lb"), "--bootstrap", "10",
             "--no-plots"]]


def _refused(tmp: Path, profile: dict, capsys) -> list[str]:
    """The one-line refusal of each command reading ``profile`` (each must exit 2)."""
    if not (tmp / "run").exists():
        write_run(tmp / "run", run_on(A))
    path = tmp / "p.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    errors = []
    for argv in _commands(tmp, path):
        capsys.readouterr()
        assert main(argv) == 2, argv[0]
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "Traceback" not in err, err
        errors.append(err)
    return errors


def _first_drafter(profile: dict) -> str:
    return next(iter(profile["drafters"]))


@pytest.mark.parametrize("field,value", [("machine", "a string"), ("machine", ["a", "list"]),
                                         ("backend", "fast"), ("backend", ["fast"])])
def test_machine_or_backend_of_the_wrong_type_is_one_line_naming_it(tmp_path, capsys, field, value):
    prof = profile_of(B)
    prof[field] = value
    assert all(field in err for err in _refused(tmp_path, prof, capsys))


@pytest.mark.parametrize("value", [["steps"], "steps"])
def test_drafter_entry_of_the_wrong_type_is_one_line_naming_it(tmp_path, capsys, value):
    prof = profile_of(B)
    key = _first_drafter(prof)
    prof["drafters"][key] = value
    assert all(f"drafters.{key}" in err for err in _refused(tmp_path, prof, capsys))


def _curve(profile: dict, context: str = "128") -> dict:
    return profile["target"]["latency_by_context_s"][context]


def _impossible(edit) -> dict:
    prof = profile_of(B)
    edit(prof)
    return prof


@pytest.mark.parametrize("edit,words", [
    (lambda p: _curve(p).update({"1": 1e30}), "target.latency_by_context_s"),
    (lambda p: _curve(p).update({"16": 1e30}), "target.latency_by_context_s"),
    (lambda p: p.update({"host_s": 1e30}), "host_s"),
    (lambda p: p["target"]["prefill_s"].update({"64": 1e30}), "target.prefill_s"),
    (lambda p: next(iter(p["drafters"].values()))["steps"]["2"].update({"s": 1e30}), "drafters."),
])
def test_a_profile_of_impossible_seconds_is_refused_not_priced(tmp_path, capsys, edit, words):
    errors = _refused(tmp_path, _impossible(edit), capsys)
    assert all(words in err and "not a physically possible device profile" in err for err in errors), errors


def test_a_profile_whose_t_n_falls_with_n_is_read_but_every_projected_cell_says_so(tmp_path, capsys):
    """T(2) 79% below T(1) (a busy machine's curve): priced without a word it read "1.51x projected"; it is what a
    loaded machine measures, so it is read, and each projected cell and the notes call it noise."""
    write_run(tmp_path / "run", run_on(A))
    noisy = profile_of(B)
    _curve(noisy).update({"1": 1.4, "2": 0.3})
    (tmp_path / "noisy.json").write_text(json.dumps(noisy), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "noisy.json"), "--out",
                 str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "projection.json").read_text(encoding="utf-8"))
    assert data["rows"] and all("profile noisier than a measurement" in c["flags"] for r in data["rows"]
                                for c in r["projected"])
    assert "T(n) falls with n: T(2) = 300 ms" in " ".join(data["notes"])


def test_a_quiet_profile_passes_the_checks_with_the_noise_of_a_real_one():
    from specbench.profiling.device_profile import check_device_profile

    prof = profile_of(B)
    curve = _curve(prof)
    curve["2"] = curve["1"] * 0.9  # (a dip within a real machine's noise: T(2) timed 10% under T(1))
    assert check_device_profile(prof, "p.json") is prof


def test_a_projection_onto_a_profile_measured_under_load_says_so_in_every_cell(tmp_path, capsys):
    from test_machine_state import BUSY, QUIET

    write_run(tmp_path / "run", run_on(A))
    busy, quiet = profile_of(B), profile_of(A)
    busy["machine_state"], quiet["machine_state"] = {"sessions": [BUSY]}, {"sessions": [QUIET]}
    (tmp_path / "busy.json").write_text(json.dumps(busy), encoding="utf-8")
    (tmp_path / "quiet.json").write_text(json.dumps(quiet), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "quiet.json"), "--onto",
                 str(tmp_path / "busy.json"), "--out", str(tmp_path / "out")]) == 0
    rows = [ln.strip("|").split(" | ") for ln in capsys.readouterr().out.splitlines() if ln.startswith("| pld")]
    assert rows and all("under load" in r[-1] and "under load" not in r[-2] for r in rows)
    data = json.loads((tmp_path / "out" / "projection.json").read_text(encoding="utf-8"))
    assert all(c["flags"] == [] for r in data["rows"] for c in r["projected"][:1])
    assert all(c["flags"] == ["profile measured under load"] for r in data["rows"] for c in r["projected"][1:])
    assert "other processes used 0.9 of 2 cores" in " ".join(data["notes"])
    assert main(["compare", str(tmp_path / "run"), "--onto", str(tmp_path / "busy.json"), "--bootstrap", "10"]) == 0
    assert "(profile measured under load)" in capsys.readouterr().out


def test_two_profiles_of_one_machine_and_date_get_distinct_columns(tmp_path, capsys):
    write_run(tmp_path / "run", run_on(A))
    for name in ("one.json", "two.json"):
        (tmp_path / name).write_text(json.dumps(profile_of(B)), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "one.json"), "--onto",
                 str(tmp_path / "two.json"), "--out", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "projection.json").read_text(encoding="utf-8"))
    labels = [p["label"] for p in data["profiles"]]
    assert len(set(labels)) == 2 and labels[0].endswith("(one.json)") and labels[1].endswith("(two.json)")
