"""``report`` and ``check`` agree on every record's lossless class (issue 44, item 5.4): both derive it again from
the output ids, so a hand-changed token id that ``check`` fails is a MISMATCH in the report and its summary too,
never "0 MISMATCH" from the stored label."""
from __future__ import annotations

import json

from fault_helpers import cli, cli_out, fake_run, record

AR_IDS = [5, 6, 7, 8]


def test_a_hand_changed_token_is_a_mismatch_in_report_as_in_check(tmp_path, capsys):
    run = fake_run(tmp_path / "r", [record("ar", AR_IDS), record("pld", [5, 6, 9, 8], "exact")])
    code, out, _ = cli_out(["check", str(run)], capsys)
    assert code == 1 and "RELABELLED pld" in out and "pld: 0 exact, 0 tie, 1 mismatch" in out
    code, out, _ = cli_out(["report", str(run)], capsys)
    assert code == 0
    lossless = out.split("### Lossless check")[1].split("###")[0]
    assert "| pld      |       0 |               0 |          1 | MISMATCH |" in lossless, lossless
    summary = json.loads((run / "summary.json").read_text())
    pld = next(m for m in summary["methods"] if m["method"] == "pld")
    assert pld["subtasks"]["Overall"]["lossless"] == {"exact": 0, "tie": 0, "mismatch": 1}
    assert pld["lossless_status"] != "exact"


def test_a_stored_mismatch_with_equal_ids_is_exact_in_both(tmp_path, capsys):
    run = fake_run(tmp_path / "r", [record("ar", AR_IDS), record("pld", AR_IDS, "mismatch", first_divergence=2)])
    code, out, _ = cli_out(["check", str(run)], capsys)
    assert code == 0 and "pld: 1 exact, 0 tie, 0 mismatch" in out
    code, out = cli(["report", str(run)], capsys)[0], (run / "report.md").read_text()
    assert code == 0 and "| pld      |       1 |               0 |          0 | OK       |" in out, out


def test_docstring_examples():
    import doctest

    import specbench.results.relabel

    assert doctest.testmod(specbench.results.relabel).failed == 0
