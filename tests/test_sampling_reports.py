"""Sampling runs in reports: the log-probability check, ``check``, ``compare`` and the leaderboard."""
from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from specbench.results.check import check_run
from specbench.reports.compare import compare_runs
from specbench.reports.leaderboard.tables import group_runs
from specbench.results.logprob_check import logprob_stats
from specbench.results.record import Record
from specbench.reports.report import render
from specbench.results.lossless import lossless_status
from specbench.results.stats import run_stats
from specbench.results.loaded_run import load_run
from test_stats import write_fake_run


def make_sampled(path: Path, bias: dict[str, float], temperature: float = 1.0) -> Path:
    """``write_fake_run`` turned into a sampling run: every record gets a mean target log-prob near
    -2 (per-question noise shared by AR and the methods, plus ``bias[method]``) and no token check."""
    write_fake_run(path, {m: 1.5 for m in bias}, n_questions=8)
    rng = random.Random(1)
    question_level: dict[tuple[str, str, int], float] = {}
    lines = []
    for line in (path / "records.jsonl").read_text().splitlines():
        r = Record.from_json(json.loads(line))
        base = question_level.setdefault((r.task, r.question_id, r.turn), -2 + rng.gauss(0, 0.3))
        lp = base + rng.gauss(0, 0.02) + bias.get(r.method, 0.0)
        r = dataclasses.replace(r, lossless=None, lossless_class=None, first_divergence=None, ar_margin=None,
                                target_logprob=lp, sampling={"temperature": temperature, "top_p": 1.0, "top_k": 0, "seed": 0})
        lines.append(json.dumps(r.to_json()))
    (path / "records.jsonl").write_text("\n".join(lines) + "\n")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["sampling"] = {"temperature": temperature, "top_p": 1.0, "top_k": 0, "seed": 0}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_logprob_check_flags_only_a_biased_method(tmp_path: Path) -> None:
    run = load_run(make_sampled(tmp_path / "s", {"fair": 0.0, "greedyish": 0.4}))
    cells = logprob_stats(run, n_boot=500)
    assert set(cells) == {"ar", "fair", "greedyish"}
    assert cells["ar"].ci_low < cells["ar"].mean < cells["ar"].ci_high
    assert not cells["fair"].flagged and cells["fair"].status() == "consistent with AR"
    assert cells["greedyish"].flagged and cells["greedyish"].ratio < 1  # likelier tokens: lower NLL
    text = render(run)
    assert "Distributional check vs AR" in text and "Lossless check vs AR" not in text
    assert "CHECK: interval excludes AR" in text and "sampling T=1, seed 0" in text
    assert lossless_status(run_stats(run, n_boot=50)["fair"], "fair") == "sampled"
    code, lines = check_run(run.path, decode=False)
    assert code == 0 and lines[-1].startswith("FLAG: greedyish outside AR's interval")  # a signal, not a gate
    code, lines = check_run(run.path, strict=True, decode=False)
    assert code == 1 and lines[-1].startswith("FAIL: greedyish outside AR's interval")
    assert check_run(make_sampled(tmp_path / "ok", {"fair": 0.0}), decode=False)[0] == 0


def test_greedy_runs_have_no_logprob_check(tmp_path: Path) -> None:
    run = load_run(write_fake_run(tmp_path / "g", {"pld": 1.5}))
    assert logprob_stats(run) == {}
    text = render(run)
    assert "Lossless check vs AR" in text and "sampling greedy (T=0)" in text


def test_compare_and_leaderboard_keep_temperatures_apart(tmp_path: Path) -> None:
    greedy = load_run(write_fake_run(tmp_path / "t0", {"fair": 1.5}, n_questions=8))
    sampled = load_run(make_sampled(tmp_path / "t1", {"fair": 0.0}))
    tables, _ = compare_runs([greedy, sampled], n_boot=50)
    titles = [t.title for t in tables]
    assert "Speedup per method by sampling (Overall, 95% CI)" in titles
    axis = tables[titles.index("Speedup per method by sampling (Overall, 95% CI)")]
    assert axis.headers[1:3] == ["T=0 speedup", "T=1 speedup"]
    assert ["sampling", "T=0", "T=1"] in tables[0].rows
    groups = group_runs([greedy, sampled], n_boot=50, seed=0)
    assert [g.title.rsplit(" · ", 1)[1] for g in groups] == ["T=0", "T=1"]
    assert [len(g.runs) for g in groups] == [1, 1]
    only_greedy = group_runs([greedy], n_boot=50, seed=0)
    assert not only_greedy[0].title.endswith("T=0")  # a greedy-only leaderboard keeps its titles


def test_sampling_changes_digest_and_folder_name_greedy_keeps_them(tmp_path: Path) -> None:
    from specbench.config.run_config import RunConfig
    from specbench.run.plan import config_digest, make_plan, run_dir_for

    base = dict(methods=("pld",), tasks=("gsm8k",), limit=1, out_dir=str(tmp_path))
    greedy, sampled = make_plan(RunConfig(**base)), make_plan(RunConfig(**base, temperature=1.0))
    assert config_digest(greedy) != config_digest(sampled)
    assert "_T1_" in run_dir_for(sampled).name and "_T" not in run_dir_for(greedy).name
    # greedy settings leave the digest of runs made before sampling existed unchanged
    assert config_digest(make_plan(RunConfig(**base, top_p=0.5))) == config_digest(greedy)


@pytest.mark.embedded
def test_sampled_run_end_to_end(embedded, tmp_path: Path) -> None:
    from specbench.config.run_config import RunConfig
    from specbench.run.plan import make_plan, run_dir_for
    from specbench.results.run_folder import read_manifest, read_records
    from specbench.run.runner import Runner

    cfg = RunConfig(methods=("pld",), tasks=("gsm8k",), limit=1, max_new_tokens=8, warmup=0, out_dir=str(tmp_path),
                    temperature=1.0, top_k=50, seed=3)
    plan = make_plan(cfg)
    run_dir = run_dir_for(plan)
    assert Runner(plan, run_dir, loaded=embedded, progress=False).execute() == 0
    recs = read_records(run_dir)
    assert len(recs) == 2
    for r in recs:
        assert r.sampling == {"temperature": 1.0, "top_p": 1.0, "top_k": 50, "seed": 3}
        assert r.target_logprob is not None and r.target_logprob <= 0 and r.lossless_class is None
    assert read_manifest(run_dir)["sampling"]["top_k"] == 50
    again = tmp_path / "again"
    Runner(make_plan(cfg), again, loaded=embedded, progress=False).execute()
    assert [r.output_ids for r in read_records(again)] == [r.output_ids for r in recs]  # reproducible
    assert "Distributional check vs AR" in render(load_run(run_dir))
