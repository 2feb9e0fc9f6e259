"""Record consistency on every read (issue 74, item 3): a record whose counts and times disagree is refused by
every reader in one line naming the file, line and field (exit 2), never turned into a figure; an imported
Spec-Bench answer with an impossible time is refused by the import, naming the input file.

The cases are the issue's: ``new_tokens`` 1600 over 16 output ids (read 559x at tau 100), ``accept_lengths`` that
do not sum to the tokens, a wall time of 1e9 s beside steps summing to a fraction of a second, every time of a
method's record scaled by 1e-6 (read 23,455,954x), and a Spec-Bench answer file with a wall time of 1e-9 s
(read 10,000,000,000x).
"""
from __future__ import annotations

import json

import pytest

from fault_helpers import cli, fake_run, record
from test_fault_injection_records import READERS, manifest, reader_argv
from test_specbench_interop import MODEL, write_spec_bench_folder

IDS = list(range(10, 26))  # 16 output ids


def timed(method: str, cls: str | None = None, wall: float = 0.16, **kw) -> dict:
    """A record of 16 tokens, one per pass, with per-pass step times summing to ``wall`` (schema 9: readable
    before schema 10 too, so the test shows the defect there)."""
    n = len(IDS)
    return record(method, IDS, cls, schema_version=9, wall_time_s=wall, verify_time_s=0.9 * wall,
                  step_times_s=[wall / n] * n, verify_times_s=[0.9 * wall / n] * n, prefill_time_s=wall / n) | kw


def scaled(rec: dict, factor: float) -> dict:
    """``rec`` with every time in it multiplied by ``factor``."""
    out = dict(rec)
    for key, value in rec.items():
        if key.endswith("_s") and isinstance(value, (int, float)):
            out[key] = value * factor
        elif key.endswith("_s") and isinstance(value, list):
            out[key] = [v * factor for v in value]
    return out


CASES = {
    "new_tokens above the output ids": (timed("pld", "exact", new_tokens=1600),
                                        "field 'new_tokens' (1600) differs from the number of output ids (16)"),
    "accept_lengths not summing": (timed("pld", "exact", accept_lengths=[1] * 15 + [3]),
                                   "field 'accept_lengths' sums to 18 tokens, but the record emitted 16"),
    "wall time far above its steps": (timed("pld", "exact") | {"wall_time_s": 1e9},
                                      "field 'wall_time_s' (1e+09 s) is far above the sum of its steps"),
    "times scaled by 1e-6": (scaled(timed("pld", "exact"), 1e-6),
                             "field 'wall_time_s' (1.6e-07 s) is below 1 us per forward pass (16 passes): times "
                             "scaled or forged"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", READERS)
def test_readers_refuse_inconsistent_records(tmp_path, capsys, command, case):
    bad, needle = CASES[case]
    run = fake_run(tmp_path / "run", [timed("ar"), bad], manifest())
    code, err = cli(reader_argv(command, run, tmp_path), capsys)
    assert code == 2 and f"records.jsonl:2: {needle}" in err, err
    assert not any((tmp_path / d).exists() for d in ("lb", "merged", "exported")) and not (run / "report.md").exists()


def test_consistent_records_still_read(tmp_path, capsys):
    """The same records, untouched, are read and check passes: the relations hold for honest records."""
    run = fake_run(tmp_path / "run", [timed("ar"), timed("pld", "exact")], manifest())
    assert cli(["check", str(run), "--ids"], capsys)[0] == 0
    assert cli(["report", str(run)], capsys)[0] == 0


def test_import_refuses_an_impossible_wall_time_naming_the_input(tmp_path, capsys):
    """Spec-Bench's answer file with a wall time of 1e-9 s: refused by the import (no run folder left), not read
    as 10,000,000,000x."""
    src = write_spec_bench_folder(tmp_path / "answers")
    eagle = src / f"{MODEL}-eagle-float16.jsonl"
    rows = [json.loads(line) for line in eagle.read_text().splitlines()]
    rows[0]["choices"][0]["wall_time"][0] = 1e-9
    eagle.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = cli(["import-specbench", str(src), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and f"{eagle}:1: field 'wall_time_s' (1e-09 s) is below 1 us" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", READERS)
def test_readers_refuse_an_imported_record_with_an_impossible_time(tmp_path, capsys, command):
    """An imported run written before the import checked its records (or edited after): every reader refuses it."""
    src = write_spec_bench_folder(tmp_path / "answers")
    out = tmp_path / "imported"
    assert cli(["import-specbench", str(src), "--out", str(out)], capsys)[0] == 0
    lines = (out / "records.jsonl").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["method"] == "eagle")
    rec = json.loads(lines[at]) | {"wall_time_s": 1e-9}
    lines[at] = json.dumps(rec)
    (out / "records.jsonl").write_text("".join(line + "\n" for line in lines))
    code, err = cli(reader_argv(command, out, tmp_path), capsys)
    assert code == 2 and f"records.jsonl:{at + 1}: field 'wall_time_s' (1e-09 s) is below 1 us per forward pass" in err, err
