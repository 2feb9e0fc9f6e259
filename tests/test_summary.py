"""summary.json / summary.csv, ``report --format``, the metric tables and their statistics on fabricated runs."""
from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from json_schema_subset import validate
from specbench.results.acceptance import CHAIN, TREE, UNKNOWN, acceptance_profile
from specbench.cli import main
from specbench.results.latency import latency_stats
from specbench.results.record import Record
from specbench.results.run_folder import read_records, write_records
from specbench.reports.report import write_report
from specbench.catalog import OVERALL
from specbench.results.stats import category_stats, run_stats
from specbench.results.loaded_run import load_run
from specbench.reports.summary import SCHEMA_PATH, SUMMARY_SCHEMA_VERSION, build_summary, summary_csv
from test_stats import fake_record, write_fake_run

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _with_overhead(run: Path) -> Path:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["artifacts"] = {"rest": {"gsm8k": {"overhead": {"storage_bytes": 5 * 2**20, "parameters": None}},
                                      "mt_bench": {"datastore_bytes": 7 * 2**20}}}  # a pre-declaration manifest
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_summary_json_validates_and_matches_the_tables(tmp_path: Path) -> None:
    run = _with_overhead(write_fake_run(tmp_path / "run", {"pld": 1.5, "rest": 2.0}))
    write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    assert validate(SCHEMA, summary) == []
    assert summary["summary_schema_version"] == SUMMARY_SCHEMA_VERSION
    stats = run_stats(load_run(run))
    by = {m["method"]: m for m in summary["methods"]}
    assert list(by) == ["ar", "pld", "rest"]
    pld = by["pld"]["subtasks"][OVERALL]
    c = stats["pld"][OVERALL]
    assert (pld["speedup"], pld["ci_low"], pld["ci_high"]) == (c.speedup, c.ci_low, c.ci_high)
    assert pld["ci_low"] < pld["speedup"] < pld["ci_high"]
    assert by["ar"]["subtasks"][OVERALL]["speedup"] is None and by["ar"]["lossless_status"] == "baseline"
    # fabricated: prefill 10% of each record's time, decode steps share the rest
    assert pld["ttft_mean_s"] == pytest.approx(0.1 * c.wall_time_s / 24, rel=1e-6)  # 6 x 2 MT-Bench turns + 2 x 6
    assert pld["acceptance"]["shape"] == CHAIN and pld["acceptance"]["per_position"][:2] == pytest.approx([10 / 11, 1.0])
    assert set(by["pld"]["categories"]) == {"writing", "math"}
    assert by["rest"]["overhead"]["storage_bytes"] == 7 * 2**20 and by["pld"]["overhead"]["storage_bytes"] is None
    # a broken summary is caught: the schema check can fail
    bad = copy.deepcopy(summary)
    bad["methods"][1]["subtasks"][OVERALL]["tau"] = "fast"
    del bad["methods"][2]["subtasks"][OVERALL]["ci_low"]
    bad["methods"][0]["subtasks"][OVERALL]["acceptance"]["shape"] = "blob"
    errors = validate(SCHEMA, bad)
    assert len(errors) == 3 and any("ci_low" in e for e in errors) and any("'fast'" in e for e in errors)


def test_old_records_give_nulls_not_errors(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 1.5}, tasks=("gsm8k",))
    old = [Record(**{**r.__dict__, "prefill_time_s": None, "verify_times_s": None, "step_times_s": None,
                     "draft_depths": None, "peak_memory_bytes": None, "peak_memory_kind": None})
           for r in read_records(run)]
    lines = [json.dumps({k: v for k, v in r.to_json().items() if v is not None} | {"schema_version": 3}) for r in old]
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert read_records(run) == old
    text = write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    assert validate(SCHEMA, summary) == []
    pld = summary["methods"][1]["subtasks"][OVERALL]
    assert pld["ttft_mean_s"] is None and pld["token_latency_s"] == {"p50": None, "p90": None, "p99": None}
    assert pld["acceptance"]["shape"] == UNKNOWN and pld["acceptance"]["per_position"] is None
    assert sum(pld["acceptance"]["accepted_histogram"]) == pld["acceptance"]["drafted_steps"] > 0
    assert "| pld      | unknown " in text  # the per-position row says why it is empty


def test_csv_rows_and_report_formats(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 1.5})
    assert main(["report", str(run), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows == list(csv.DictReader(io.StringIO((run / "summary.csv").read_text())))
    scopes = [(r["method"], r["scope"], r["name"]) for r in rows]
    assert ("pld", "overall", OVERALL) in scopes and ("pld", "category", "math") in scopes
    assert len(scopes) == 2 * (3 + 1 + 2)  # 2 methods x (3 subtasks + Overall + 2 categories)
    summary = json.loads((run / "summary.json").read_text())
    pld = next(r for r in rows if r["method"] == "pld" and r["scope"] == "overall")
    assert float(pld["speedup"]) == summary["methods"][1]["subtasks"][OVERALL]["speedup"]
    assert next(r for r in rows if r["method"] == "ar")["speedup"] == ""  # null -> empty cell
    assert main(["report", str(run), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == summary
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    for title in ("Latency and memory", "Per-position acceptance", "Accepted draft tokens per drafted step",
                  "MT-Bench speedup per category", "Decode-only tokens per second", "Accepted-length histogram"):
        assert title in out
    assert summary_csv(build_summary(load_run(run), n_boot=10)).splitlines()[0].startswith("method,scope,name")


def test_per_position_on_chains_and_trees() -> None:
    # chain of 3 accepting 3, 1, 0 tokens: depth 1 reached 3x accepted 2x; depth 2 reached 2x accepted 1x; ...
    chain = acceptance_profile([([1, 4, 2, 1], [0, 3, 3, 3], [0, 3, 3, 3])])
    assert chain.shape == CHAIN and chain.histogram == [1, 1, 0, 1]
    assert chain.per_position == pytest.approx([2 / 3, 1 / 2, 1.0]) and chain.reached == [3, 2, 1]
    # a tree of 5 nodes and depth 2: the distribution of the accepted depth; no draft -> not counted
    tree = acceptance_profile([([1, 3, 1, 2, 1], [0, 5, 0, 5, 5], [0, 2, 0, 2, 2])])
    assert tree.shape == TREE and tree.decode_steps == 4 and tree.drafted_steps == 3
    assert tree.histogram == [1, 1, 1] and tree.per_position == pytest.approx([2 / 3, 1 / 2])
    assert acceptance_profile([([1, 1], [0, 0], [0, 0])]).shape == "none"


def test_latency_percentiles_weigh_tokens() -> None:
    # steps: 1 token in 40 ms, then 4 tokens in 40 ms (10 ms each): 5 decode tokens, 4 of them at 10 ms
    r = fake_record("pld", "gsm8k", "1", 1, 0, list(range(6)), 0.2, [1, 1, 4], [0, 3, 3], "exact")
    r = Record(**{**r.__dict__, "prefill_time_s": 0.1, "step_times_s": [0.1, 0.04, 0.04]})
    s = latency_stats([r])
    assert s.ttft_mean_s == s.ttft_p50_s == 0.1
    assert s.decode_tokens_per_s == pytest.approx(5 / 0.1)
    assert s.token_latency_s["p50"] == pytest.approx(0.01) and s.token_latency_s["p99"] > 0.035


def test_mt_bench_categories_pair_with_ar_per_category(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 1.5}, tasks=("mt_bench", "gsm8k"))
    recs = read_records(run)
    # make pld twice as slow on math only: the writing speedup stays, math drops to ~0.75
    write_records(run / "records.jsonl", [
        Record(**{**r.__dict__, "wall_time_s": r.wall_time_s * 2}) if r.method == "pld" and r.category == "math" else r
        for r in recs])
    cats = category_stats(load_run(run), n_boot=100)
    assert list(cats["pld"]) == ["writing", "math"]
    assert cats["pld"]["writing"].speedup == pytest.approx(1.5, rel=0.06)
    assert cats["pld"]["math"].speedup == pytest.approx(0.75, rel=0.06)
    assert cats["pld"]["math"].n_questions == 3
