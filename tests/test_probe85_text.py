"""Findings of issue 85's hostile probe on text that reaches a report, a table or a terminal (items 7, 8).

- 7: a device profile's ``machine.cpu`` holding ``|``, a newline, ``# head`` and ``<script>`` was written raw into
  ``projection.md`` (and printed so), breaking its table and adding a heading; ``compare`` and ``leaderboard``
  escaped the same field.
- 8: bidi controls (U+202E reverses what follows it) and zero-width characters (U+200B) in task ids and
  categories were written raw into ``report.md`` and the leaderboard's markdown and HTML, where they reorder or
  hide what a reader sees; they are shown escaped (``\\u202e``).
"""
from __future__ import annotations

import json
import unicodedata

from specbench.cli import main
from specbench.reports.projection_output import projection_text
from specbench.reports.projection_table import build_projection, onto_profile
from test_probe_defects_paths import _rewrite, assert_tables_intact
from test_projection import A, B, profile_of, run_on, write_run
from test_specbench_interop import write_spec_bench_folder

HOSTILE_CPU = "evil|cpu\n# head\n<script>alert(1)</script>"
INVISIBLE = "GSM\u202e8k\u200b"  # (a bidi override and a zero-width space)
SHOWN = "GSM\\u202e8k\\u200b"


def _hostile_profile() -> dict:
    profile = profile_of(B)
    profile["machine"]["cpu"] = HOSTILE_CPU
    return profile


# -- 7: projection.md escapes what a profile holds --------------------------------------------------------
def test_projection_text_escapes_the_profile_label():
    proj = build_projection(run_on(A), [onto_profile("b.json", _hostile_profile())])
    text = projection_text(proj)
    assert_tables_intact(text)
    assert not any(line.startswith("# head") for line in text.splitlines())
    assert "evil\\|cpu # head &lt;script&gt;" in text  # shown, escaped, in the column header


def test_project_command_writes_an_escaped_projection_md(tmp_path, capsys):
    write_run(tmp_path / "run", run_on(A))
    (tmp_path / "b.json").write_text(json.dumps(_hostile_profile()), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "b.json"),
                 "--out", str(tmp_path / "proj")]) == 0
    printed = capsys.readouterr().out
    for text in (printed, (tmp_path / "proj" / "projection.md").read_text()):
        assert_tables_intact(text)
        assert not any(line.startswith("# head") for line in text.splitlines())


# -- 8: invisible characters shown escaped -----------------------------------------------------------------
def test_every_escaping_function_shows_invisible_characters():
    from specbench.reports.table import escaped_tabulate, html_escape, html_text, md_text, visible

    assert visible(INVISIBLE) == SHOWN and visible("plain ünïcode 中文") == "plain ünïcode 中文"
    assert md_text(INVISIBLE) == SHOWN and html_text(INVISIBLE) == SHOWN and html_escape(INVISIBLE) == SHOWN
    assert visible("\U000e0001\u2066x\u2069\x07\ufeff") == "\\U000e0001\\u2066x\\u2069\\u0007\\ufeff"
    for fmt in ("github", "plain"):
        assert SHOWN in escaped_tabulate([[INVISIBLE, 1.5]], headers=["category", "speedup"], tablefmt=fmt)
    every = "".join(map(chr, range(0x110000)))
    assert all(unicodedata.category(c) not in ("Cf", "Cc") for c in visible(every))  # (none gets through)


def _invisible_import(root, out) -> None:
    src = write_spec_bench_folder(root)
    for path in src.glob("*.jsonl"):
        _rewrite(path, lambda row: row.update(category=INVISIBLE) if row["question_id"] == 93 else None)
    assert main(["import-specbench", str(src), "--out", str(out)]) == 0


def _no_invisible(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cf", "Cc") and c not in "\n\t"})
    assert not bad, bad


def test_report_leaderboard_and_compare_show_invisible_characters_escaped(tmp_path, capsys):
    run, other = tmp_path / "run", tmp_path / "other"
    _invisible_import(tmp_path / "answers", run)
    _invisible_import(tmp_path / "answers2", other)
    report = (run / "report.md").read_text()
    assert SHOWN in report
    _no_invisible(report)
    assert main(["leaderboard", str(run), str(other), "--out", str(tmp_path / "lb"), "--no-plots"]) == 0
    for name in ("leaderboard.md", "leaderboard.html"):
        _no_invisible((tmp_path / "lb" / name).read_text())
    assert SHOWN in (tmp_path / "lb" / "leaderboard.html").read_text()
    assert main(["compare", str(run), str(other), "--out", str(tmp_path / "compare.md")]) == 0
    _no_invisible((tmp_path / "compare.md").read_text())
    assert main(["report", str(run)]) == 0
    _no_invisible(capsys.readouterr().out)  # (the terminal's copy too)


def test_check_shows_invisible_characters_of_question_ids_escaped(tmp_path, capsys):
    from fault_helpers import DEFAULT_MANIFEST, fake_run, record

    manifest = {**DEFAULT_MANIFEST, "questions": {"gsm8k": [INVISIBLE]}}
    run = fake_run(tmp_path / "run", [record("ar", [5, 6], question_id=INVISIBLE)], manifest)
    assert main(["check", str(run), "--ids"]) == 1  # (pld's record is missing: named by its question id)
    out = capsys.readouterr().out
    assert SHOWN in out
    _no_invisible(out)
