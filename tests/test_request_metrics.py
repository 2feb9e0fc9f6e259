"""Acceptance per request under vLLM's definition and ours, per-position rates and TPOT / ITL / E2E percentiles
(issue 73): on constructed records where the pooled and per-request figures differ, every figure computed by hand;
in summary.json / summary.csv / report.md; and, on an engine run (the stand-in llama-server), our mean acceptance
length under vLLM's definition equal to the one the engine's own /metrics counters give."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from json_schema_subset import validate
from specbench.catalog import OVERALL
from specbench.reports.report import write_report
from specbench.reports.summary import SCHEMA_PATH
from specbench.results.latency_percentiles import latency_percentiles
from specbench.results.record import Record
from specbench.results.request_acceptance import request_acceptance
from specbench.results.run_folder import read_records
from test_engine_faults import fake, run  # noqa: F401  (the stand-in server's fixture and its run)
from test_stats import fake_record, write_fake_run

TOKENS = 12
# (question, accept_lengths, draft_sizes, seconds): every answer 12 tokens; steps with draft size 0 are plain
PASSES = {
    "gsm8k-0": ([1, 6, 5], [0, 5, 5], 0.11),  # 2 drafts accepting 5 + 4: 1 + 9/2 = 5.5, tau 12/3 = 4
    "gsm8k-1": ([1, 2, 1, 1, 2, 1, 1, 2, 1], [0] + [3] * 8, 0.22),  # 8 drafts accepting 3: 1 + 3/8, tau 12/9
    "humaneval-0": ([1, 3, 1, 3, 1, 3], [0, 4, 0, 4, 0, 4], 0.33),  # 3 drafts (and 2 plain steps): 3.0, tau 2
    "humaneval-1": ([1, 5, 5, 1], [0, 4, 4, 0], 0.44),  # 2 drafts accepting 4 + 4: 5.0, tau 3
}


def constructed_run(tmp_path: Path) -> Path:
    """AR + ``pld`` on 2 GSM8K and 2 HumanEval questions, pld's passes as ``PASSES`` says."""
    path = write_fake_run(tmp_path / "run", {"pld": 2.0}, tasks=("gsm8k", "humaneval"), n_questions=2, tokens=TOKENS)
    recs = [r for r in read_records(path) if r.method == "ar"]
    for r in list(recs):
        accept, sizes, seconds = PASSES[r.question_id]
        assert sum(accept) == TOKENS
        recs.append(fake_record("pld", r.task, r.question_id, 1, 0, r.output_ids, seconds, accept, sizes, "exact"))
    (path / "records.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in recs))
    return path


def pld_records(path: Path, task: str | None = None) -> list[Record]:
    return [r for r in read_records(path) if r.method == "pld" and task in (None, r.task)]


def test_pooled_and_per_request_acceptance_differ_by_hand(tmp_path: Path) -> None:
    path = constructed_run(tmp_path)
    gsm = request_acceptance(pld_records(path, "gsm8k"))
    assert gsm.requests == gsm.drafting_requests == 2 and (gsm.drafts, gsm.accepted) == (10, 12)
    assert gsm.pooled_mean_acceptance_length == pytest.approx(1 + 12 / 10)  # 2.2: the 8-draft answer dominates
    assert gsm.mean_acceptance_length.mean == pytest.approx((5.5 + 1.375) / 2)  # 3.4375: each answer weighs alike
    assert gsm.tau.mean == pytest.approx((4 + 12 / 9) / 2)  # tau per request; pooled tau is 24 / 12 = 2
    every = request_acceptance(pld_records(path))
    per_request = sorted([5.5, 1.375, 3.0, 5.0])
    assert every.pooled_mean_acceptance_length == pytest.approx(1 + 26 / 15)  # 2.733
    mal = every.mean_acceptance_length
    assert (mal.n, mal.mean, mal.median) == (4, pytest.approx(sum(per_request) / 4), pytest.approx(4.0))
    assert mal.percentiles["p10"] == pytest.approx(1.375 + 0.3 * (3.0 - 1.375))  # numpy's linear interpolation
    assert mal.percentiles["p90"] == pytest.approx(5.0 + 0.7 * 0.5)
    assert every.tau.median == pytest.approx((2.0 + 3.0) / 2)
    # drafting steps accepted [5, 4 | 1, 0, 0, 1, 0, 0, 1, 0 | 2, 2, 2 | 4, 4]: position i kept by a >= i of 15
    assert every.position_rates == pytest.approx([10 / 15, 7 / 15, 4 / 15, 4 / 15, 1 / 15])
    assert sum(every.position_rates) == pytest.approx(every.pooled_mean_acceptance_length - 1)
    ar = request_acceptance([r for r in read_records(path) if r.method == "ar"])
    assert ar.drafts == 0 and ar.pooled_mean_acceptance_length is None and ar.tau.median == 1.0


def test_latency_percentiles_by_hand(tmp_path: Path) -> None:
    # fake_record: the prefill takes 10% of the time and the decode steps share the rest equally
    p = latency_percentiles(pld_records(constructed_run(tmp_path)))
    tpot = [0.9 * s / (TOKENS - 1) for s in (0.11, 0.22, 0.33, 0.44)]  # 9, 18, 27, 36 ms
    assert p.requests == 4
    assert p.tpot_s["p50"] == pytest.approx((tpot[1] + tpot[2]) / 2)
    assert p.tpot_s["p99"] == pytest.approx(tpot[2] + 0.97 * (tpot[3] - tpot[2]))  # index 0.99 x 3 = 2.97
    assert p.e2e_s["p50"] == pytest.approx(0.275) and p.e2e_s["p95"] == pytest.approx(0.33 + 0.85 * 0.11)
    # ITL: one gap per decode step, however many tokens it emitted: 8 x 24.75 ms, 2 x 49.5, 5 x 59.4, 3 x 132
    assert p.itl_s["p50"] == pytest.approx(0.0495) and p.itl_s["p95"] == pytest.approx(0.132)
    old = Record(**{**pld_records(constructed_run(tmp_path / "b"))[0].__dict__, "prefill_time_s": None,
                    "step_times_s": None})
    assert latency_percentiles([old]).requests == 0 and latency_percentiles([old]).tpot_s["p50"] is None


def test_batched_requests_time_from_their_admission() -> None:
    # in a batch wall_time_s is an equal share of the batch: a request's E2E runs from its admission to its last token
    from types import SimpleNamespace as R

    late = R(unit=R(batch=2), wall_time_s=0.5, admitted_s=0.4, finished_s=1.0, prefill_time_s=0.1, new_tokens=4,
             step_times_s=[0.1, 0.2, 0.3])
    p = latency_percentiles([late])
    assert p.e2e_s["p50"] == pytest.approx(0.6) and p.tpot_s["p50"] == pytest.approx((0.6 - 0.1) / 3)
    assert latency_percentiles([R(**{**late.__dict__, "admitted_s": None})]).e2e_s["p50"] is None


def test_summary_csv_and_report_carry_them(tmp_path: Path) -> None:
    path = constructed_run(tmp_path)
    text = write_report(path)
    summary = json.loads((path / "summary.json").read_text())
    assert validate(json.loads(SCHEMA_PATH.read_text()), summary) == []
    pld = next(m for m in summary["methods"] if m["method"] == "pld")["subtasks"]
    assert pld["GSM8K"]["per_request"]["pooled_mean_acceptance_length"] == pytest.approx(2.2)
    assert pld["GSM8K"]["per_request"]["mean_acceptance_length"]["median"] == pytest.approx(3.4375)
    assert pld[OVERALL]["per_request"]["position_rates"][0] == pytest.approx(10 / 15)
    assert pld[OVERALL]["latency_percentiles"]["itl_s"]["p50"] == pytest.approx(0.0495)
    assert pld[OVERALL]["tau"] == pytest.approx(48 / 22)  # (the old pooled tau beside them, unchanged)
    rows = list(csv.DictReader(io.StringIO((path / "summary.csv").read_text())))
    row = next(r for r in rows if r["method"] == "pld" and r["name"] == "HumanEval")
    assert float(row["mean_acceptance_length_pooled"]) == pytest.approx(1 + 14 / 5)
    assert float(row["mean_acceptance_length_request_mean"]) == pytest.approx(4.0)
    assert float(row["tpot_p50_s"]) == pytest.approx(0.9 * (0.33 + 0.44) / 2 / (TOKENS - 1))
    ar = next(r for r in rows if r["method"] == "ar" and r["name"] == OVERALL)
    assert ar["mean_acceptance_length_pooled"] == "" and float(ar["tau_request_median"]) == 1.0
    assert "### Acceptance per request and latency percentiles" in text
    line = next(x for x in text.splitlines() if x.startswith("| pld") and "0.67 / 0.47 / 0.27 / 0.27" in x)
    assert "| 2.73 " in line and "4.00 [1.86, 5.35]" in line  # pooled vLLM figure, per-request median [p10, p90]


def test_engine_rows_mean_acceptance_length_equals_the_engines_counters(fake, capsys) -> None:  # noqa: F811
    code, err, run_dir = run(fake, capsys)
    assert code == 0, err
    summary = json.loads((run_dir / "summary.json").read_text())
    counters = summary["engine"]["counters"]["engine:ngram"]
    row = next(m for m in summary["engine"]["methods"] if m["method"] == "engine:ngram")["subtasks"][OVERALL]
    req = row["per_request"]
    # /metrics counts, over every request of the row: vLLM's 1 + accepted / drafts (steps that drafted only)
    assert req["drafts"] == counters["drafts"] > 0 and req["accepted"] == counters["accepted"]
    theirs = 1 + counters["accepted"] / counters["drafts"]
    assert req["pooled_mean_acceptance_length"] == pytest.approx(theirs)
    # the stand-in keeps 2 of every draft: each request's figure is 3 too, while tau counts the plain steps
    assert req["mean_acceptance_length"]["p10"] == req["mean_acceptance_length"]["p90"] == pytest.approx(theirs) == 3.0
    assert row["tau"] < 3.0 and req["tau"]["p90"] < 3.0
    per_position = [p / counters["drafts"] for p in counters["accepted_per_position"]]
    assert req["position_rates"][:2] == pytest.approx(per_position)
    report = (run_dir / "report.md").read_text()
    assert "ours: tokens / drafted pass (vLLM's mean acceptance length)" in report
    assert "### Acceptance per request and latency percentiles" in report[report.find("## Engine under test"):]


def test_doctests_of_the_metric_modules() -> None:
    import doctest

    import specbench.reports.request_metrics as table
    import specbench.results.latency_percentiles as latency
    import specbench.results.request_acceptance as acceptance

    for module in (acceptance, latency, table):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
