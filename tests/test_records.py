"""The typed record: JSON round trip, the one ``Unit`` key, and reading schema-1 files (migration)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.results.record import SCHEMA_VERSION, Record, Unit
from specbench.results.run_folder import RecordWriter, read_records
from specbench.reports.report import render
from specbench.results.loaded_run import load_run
from test_stats import fake_record, write_fake_run


def _v1(rec: Record) -> dict:
    """A record as the schema-1 runner wrote it (an untyped dict; same fields, version 1)."""
    return {**rec.to_json(), "schema_version": 1}


def test_round_trip_and_unit_key(tmp_path: Path) -> None:
    rec = fake_record("pld", "mt_bench", "81", 2, 1, [5, 6, 7], 0.3, [1, 2], [0, 3], "exact")
    assert Record.from_json(rec.to_json()) == rec
    assert rec.unit == Unit("mt_bench", "81", 2, 1) and rec.key == ("pld", rec.unit)
    assert rec.unit.reference() == Unit("mt_bench", "81", 2, 0)
    assert (rec.accepted, rec.drafted, rec.decode_passes) == (1, 3, 1)
    with RecordWriter(tmp_path) as w:
        w.write(rec)
    assert read_records(tmp_path) == [rec]
    assert json.loads((tmp_path / "records.jsonl").read_text())["schema_version"] == SCHEMA_VERSION == 10


def test_schema1_records_migrate_to_schema2(tmp_path: Path) -> None:
    new = write_fake_run(tmp_path / "new", {"pld": 1.5}, mismatch=("pld", "gsm8k", "gsm8k-1"))
    old = tmp_path / "old"
    old.mkdir()
    (old / "manifest.json").write_text((new / "manifest.json").read_text())
    lines = []
    for i, r in enumerate(read_records(new)):
        d = _v1(r)
        if i % 3 == 0:  # schema 1 left these optional; its readers filled the same defaults
            for key in ("subtask", "forward_passes") + (("repeat",) if d["repeat"] == 0 else ()):
                d.pop(key)
        lines.append(json.dumps(d))
    (old / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert read_records(old) == read_records(new)
    a, b = load_run(old), load_run(new)
    assert render(a) == render(b)
    # an integer question id (schema 1 allowed it) becomes the string every key uses
    v1 = _v1(fake_record("ar", "gsm8k", "7", 1, 0, [1], 0.1, [1], [0], None)) | {"question_id": 7}
    assert Record.from_json(v1).unit == Unit("gsm8k", "7", 1, 0)


def test_unknown_schema_and_fields_are_refused() -> None:
    good = fake_record("ar", "gsm8k", "7", 1, 0, [1], 0.1, [1], [0], None).to_json()
    with pytest.raises(ValueError, match="schema_version 11"):
        Record.from_json(good | {"schema_version": 11})
    with pytest.raises(ValueError, match="unknown field"):
        Record.from_json(good | {"colour": "red"})


def test_schema2_records_read_without_margins_or_memory() -> None:
    rec = fake_record("ar", "gsm8k", "7", 1, 0, [1, 2], 0.1, [1, 1], [0, 0], None)
    v2 = {k: v for k, v in rec.to_json().items() if k not in ("token_margins", "peak_memory_bytes", "peak_memory_kind")}
    old = Record.from_json(v2 | {"schema_version": 2})
    assert old == rec and old.token_margins is None and old.peak_memory_bytes is None
    new = rec.__class__(**{**rec.__dict__, "token_margins": [0.5, 1e-5], "peak_memory_bytes": 10, "peak_memory_kind": "cpu_rss_peak"})
    assert Record.from_json(new.to_json()) == new and new.to_json()["schema_version"] == 10


def test_optional_fields_may_be_null_but_not_ill_typed() -> None:
    from specbench.results.run_folder import parse_record_line

    data = fake_record("pld", "gsm8k", "1", 1, 0, [5, 6], 0.5, [1, 1], [0, 0], "exact").to_json()
    data.update(token_margins=None, peak_memory_bytes=None, ar_margin=None)
    assert parse_record_line(json.dumps(data)).token_margins is None
    for field, bad in (("token_margins", "0.1"), ("peak_memory_bytes", "12"), ("wall_time_s", None),
                       ("step_times_s", [0.1, "0.2"]), ("draft_depths", [0]), ("prefill_time_s", "0.1")):
        with pytest.raises(ValueError, match=field):
            parse_record_line(json.dumps({**data, field: bad}))
