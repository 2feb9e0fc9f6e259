"""Findings of the hostile-user probe of issue 74 on names that reach paths, strings that reach markdown, and
half-written imports (items 5, 8, 9). Each reproduces the defect as the issue describes it.

- 5: an answer file's ``model_id`` ``vicuna-7b-v1.3-x/../../../../escaped-float16`` became method
  ``x/../../../../escaped`` and ``export-specbench`` wrote ``escaped-float16.jsonl`` outside ``--out``.
- 9: an import that fails (a negative wall time) left a half-written run folder every later command refused,
  and the error named the output's line, not the answer file's.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError
from specbench.files.safe_names import check_label, inside, is_safe_label, is_safe_name
from specbench.launch.shards import ShardSet
from specbench.run.plan import make_plan, run_dir_for
from test_custom_tasks import one_line_error
from test_specbench_interop import MODEL, write_spec_bench_folder

ESCAPING_ID = f"{MODEL}-x/../../../../escaped-float16"


def _rewrite(path: Path, change) -> None:
    """Apply ``change(row)`` to every answer line of ``path``."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        change(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _escaping_folder(root: Path) -> Path:
    src = write_spec_bench_folder(root)
    _rewrite(src / f"{MODEL}-pld-float16.jsonl", lambda row: row.update(model_id=ESCAPING_ID))
    return src


# -- 5: one whitelist for every name that becomes a path --------------------------------------------------
def test_import_refuses_a_model_id_that_climbs_out(tmp_path, capsys):
    work = tmp_path / "a" / "b" / "c" / "d"
    src = _escaping_folder(work / "model_answer")
    out = work / "imported"
    err = one_line_error(["import-specbench", str(src), "--out", str(out)], capsys)
    assert "model_id" in err and "escaped" in err and "not a safe name" in err
    assert not out.exists()
    from specbench.cli import main
    main(["export-specbench", str(out), "--out", str(work / "exported")])  # (nothing to export: refused too)
    assert not list(tmp_path.rglob("escaped*")), "a file was written outside --out"


def test_export_writes_nothing_outside_out_even_from_a_hostile_manifest(tmp_path, capsys):
    from specbench.cli import main

    src = write_spec_bench_folder(tmp_path / "w" / "x" / "model_answer")
    run = tmp_path / "w" / "x" / "imported"
    assert main(["import-specbench", str(src), "--out", str(run)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["imported"]["files"]["pld"]["model_id"] = "../../escaped-float16"  # (edited by hand, or older)
    (run / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    out = tmp_path / "w" / "x" / "exported"
    err = one_line_error(["export-specbench", str(run), "--out", str(out)], capsys)
    assert "escaped-float16" in err and "not a safe name" in err
    assert not list(tmp_path.rglob("escaped*")) and not (out.exists() and any(out.iterdir()))


def test_inside_refuses_a_link_planted_in_the_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "pld.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(ConfigError, match="resolves outside"):
        inside(out, "pld.jsonl")
    assert inside(out, "ar.jsonl") == out / "ar.jsonl"


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "/abs", "", "x" * 201, "a b", "a\nb", "a\\b"])
def test_unsafe_names_are_refused(name):
    assert not is_safe_name(name) and not is_safe_label(name)


def test_labels_follow_the_one_rule():
    for label in ("ar", "pld@k2", "rest@auto", "engine:ngram", "engine:draft@small", "lade-level-5"):
        assert check_label(label) == label
    for label in ("engine:../x", "pld@a.b", "pld@", "@x", "engine:", "x/../y", "pld@../../x"):
        with pytest.raises(ConfigError, match="not a method label"):
            check_label(label)


def test_an_engine_label_cannot_name_a_folder_outside_out_dir(tmp_path):
    """``--engine openai:`` takes any setting name; ``engine:a/../../../b`` once reached the run folder's name."""
    label = "engine:a/../../../../b"
    config = RunConfig(methods=("ar", label), tasks=("mt_bench",), out_dir=str(tmp_path / "results"),
                       engine="openai:http://127.0.0.1:9", method_options={label: {"url": "http://127.0.0.1:9"}})
    with pytest.raises(ConfigError, match="not a method label"):
        plan = make_plan(config)
        assert run_dir_for(plan).resolve().parent == (tmp_path / "results").resolve()


@pytest.mark.parametrize("name", ["../x", ".x", "a/b"])
def test_run_names_use_the_same_whitelist(name):
    with pytest.raises(ConfigError, match="--run-name must be a single folder name"):
        RunConfig(run_name=name).validate()


def test_shard_folders_stay_in_their_folder(tmp_path):
    shards = ShardSet(["--methods", "pld"], 3, tmp_path / "x_shards")
    assert shards.folder(2) == tmp_path / "x_shards" / "shard2of3"


# -- 9: a failed import leaves nothing behind and names the input's line ------------------------------------
def test_failed_import_leaves_no_half_written_folder_and_names_the_input_line(tmp_path, capsys):
    src = write_spec_bench_folder(tmp_path / "model_answer")
    bad = src / f"{MODEL}-eagle-float16.jsonl"

    def negative_third(row):
        if row["question_id"] == 91:
            row["choices"][0]["wall_time"] = [-0.5]
    _rewrite(bad, negative_third)
    out = tmp_path / "imported"
    err = one_line_error(["import-specbench", str(src), "--out", str(out)], capsys)
    assert f"{bad}:3:" in err and "wall_time_s" in err, err  # question 91 is the file's third line
    assert "records.jsonl" not in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["model_answer"]  # (no temporary left)
    _rewrite(bad, lambda row: row["choices"][0].update(wall_time=[abs(t) for t in row["choices"][0]["wall_time"]]))
    from specbench.cli import main
    assert main(["import-specbench", str(src), "--out", str(out)]) == 0  # the same --out works once it is fixed


def test_a_problem_found_on_reading_back_names_the_input_line(tmp_path, capsys, monkeypatch):
    """Checks a reader makes beyond one record's own (the run-level ones) still name the answer file's line."""
    import specbench.interop.spec_bench_import as imp
    from specbench.results.run_folder import RunFileError

    def refusing_reader(path):
        raise RunFileError(f"{Path(path) / 'records.jsonl'}:4: implausible wall time")
    monkeypatch.setattr(imp, "load_run", refusing_reader)
    src = write_spec_bench_folder(tmp_path / "model_answer")
    out = tmp_path / "imported"
    with pytest.raises(imp.SpecBenchFormatError) as e:
        imp.import_answers(src, out)
    where = str(e.value).split(": ")[0]
    # records 3-4 are question 82's two turns: the eagle file's (the first file) line 2
    assert where.endswith("eagle-float16.jsonl:2") and "model_answer" in where and ".tmp-" not in str(e.value), e.value
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["model_answer"]


# -- 8: text from records and answer files is escaped in every markdown output --------------------------------
HOSTILE_CATEGORY = "a|b\n<script>x</script>"


def _cells(line: str) -> int:
    """Cells of a pipe-table line: its ``|`` not escaped as ``\\|``."""
    return len(re.findall(r"(?<!\\)\|", line))


def assert_tables_intact(text: str) -> None:
    """No raw ``<script>``, and every row of each pipe table has as many cells as its header."""
    assert "<script" not in text
    block: list[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        assert len({_cells(row) for row in block}) <= 1, "\n".join(block)
        block = []


def _hostile_import(root: Path, out: Path) -> None:
    from specbench.cli import main

    src = write_spec_bench_folder(root)
    for path in src.glob("*.jsonl"):
        _rewrite(path, lambda row: row.update(category=HOSTILE_CATEGORY) if row["question_id"] == 93 else None)
    assert main(["import-specbench", str(src), "--out", str(out)]) == 0


def test_report_leaderboard_and_compare_escape_categories(tmp_path, capsys):
    from specbench.cli import main

    run, other = tmp_path / "run", tmp_path / "other"
    _hostile_import(tmp_path / "answers", run)
    _hostile_import(tmp_path / "answers2", other)
    report = (run / "report.md").read_text()
    assert "a\\|b &lt;script&gt;" in report  # the category is shown, escaped, as a column of every table
    assert_tables_intact(report)
    assert main(["leaderboard", str(run), str(other), "--out", str(tmp_path / "lb")]) == 0
    assert_tables_intact((tmp_path / "lb" / "leaderboard.md").read_text())
    assert "<script>x" not in (tmp_path / "lb" / "leaderboard.html").read_text()  # (it escaped already)
    assert main(["compare", str(run), str(other), "--out", str(tmp_path / "compare.md")]) == 0
    assert_tables_intact((tmp_path / "compare.md").read_text())


def test_sweep_table_escapes_subtasks():
    from types import SimpleNamespace

    from specbench.reports.sweep_report import sweep_table

    cell = SimpleNamespace(speedup_text=lambda: "1.10x")
    point = SimpleNamespace(point=SimpleNamespace(label="c=8"), overall=None, subtasks={HOSTILE_CATEGORY: cell})
    assert_tables_intact("\n".join(sweep_table("rest", [point])))


def test_md_text_and_tables():
    from specbench.reports.table import escaped_tabulate, html_text, md_text

    assert md_text("x`|<&>\r\ny") == "x\\`\\|&lt;&amp;&gt; y"
    assert html_text("run `a`<b>\nc") == "run `a`&lt;b&gt; c"
    text = escaped_tabulate([[HOSTILE_CATEGORY, 1.5]], headers=["category", "speedup"], tablefmt="github")
    assert_tables_intact(text) and len(text.splitlines()) == 3
    assert escaped_tabulate([["a|b"]], headers=["x"], tablefmt="plain").splitlines()[1] == "a|b"  # (not markdown)
