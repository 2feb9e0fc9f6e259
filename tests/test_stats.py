"""Statistics on fabricated run folders (``write_fake_run`` is reused by the other leaderboard tests)."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specbench.catalog import OVERALL, task_label
from specbench.results.record import Record
from specbench.results.loaded_run import load_run
from specbench.results.lossless import lossless_status
from specbench.results.stats import Cell, paired_speedup, run_stats
from specbench.run.manifest import MANIFEST_SCHEMA_VERSION

CPU_HW = {"cpu": "Fake CPU 9000", "cores": 2, "ram_gb": 24, "gpu": None, "gpu_memory_gb": None, "cuda": None, "driver": None}


def fake_record(method: str, task: str, qid: str, turn: int, repeat: int, output: list[int], time_s: float,
                accept: list[int], draft_sizes: list[int], cls: str | None, first_div: int | None = None,
                category: str = "", peak_mib: int | None = None) -> Record:
    """A schema-4 record: prefill takes 10% of ``time_s``, the decode steps share the rest equally."""
    n = len(accept)
    steps = [0.1 * time_s] + [0.9 * time_s / max(n - 1, 1)] * (n - 1)
    return Record(
        method=method, task=task, subtask=task_label(task), task_version="1", question_id=qid, category=category,
        turn=turn, repeat=repeat, prompt_tokens=20, new_tokens=len(output), output_ids=output,
        wall_time_s=time_s, draft_time_s=0.1 * time_s, verify_time_s=0.8 * time_s,
        accept_lengths=accept, draft_sizes=draft_sizes, draft_times_s=[0.1 * time_s / n] * n,
        forward_passes=n, lossless=None if cls is None else cls != "mismatch",
        lossless_class=cls, first_divergence=first_div, ar_margin=None if first_div is None else 0.0012,
        prefill_time_s=steps[0], verify_times_s=[0.8 * t for t in steps], step_times_s=steps,
        draft_depths=list(draft_sizes), peak_memory_bytes=None if peak_mib is None else peak_mib * 2**20,
        peak_memory_kind=None if peak_mib is None else "cpu_rss_peak",
    )


def write_fake_run(
    path: Path,
    methods: dict[str, float] | None = None,
    tasks: tuple[str, ...] = ("mt_bench", "humaneval", "gsm8k"),
    n_questions: int = 6,
    repeats: int = 1,
    tokens: int = 32,
    hardware: dict[str, Any] | None = None,
    dtype: str = "float32",
    mismatch: tuple[str, str, str] | None = None,
    max_new_tokens: int = 32,
    seed: int = 0,
    ar_seconds_per_token: float = 0.01,
    model: str = "tiny-fake",
) -> Path:
    """A run folder with AR + methods (name -> true speedup); per-question times jitter by +-10%.

    A method with speedup s gets tau = 2s-ish forward passes and time = AR time / s; ``mismatch`` =
    (method, task, question_id) makes that record diverge from AR at position 5. MT-Bench questions
    alternate between the categories writing and math.
    """
    methods = {"pld": 1.5} if methods is None else methods
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    recs, questions = [], {}
    for task in tasks:
        qids = [f"{task}-{i}" for i in range(n_questions)]
        questions[task] = qids
        for qid in qids:
            turns = 2 if task == "mt_bench" else 1
            cat = ("writing", "math")[int(qid.rsplit("-", 1)[1]) % 2] if task == "mt_bench" else ""
            for turn in range(1, turns + 1):
                for rep in range(repeats):
                    out = [rng.randrange(100, 200) for _ in range(tokens)]
                    ar_time = tokens * ar_seconds_per_token * rng.uniform(0.9, 1.1)
                    recs.append(fake_record("ar", task, qid, turn, rep, out, ar_time, [1] * tokens, [0] * tokens, None,
                                            category=cat, peak_mib=300))
                    for m, speed in methods.items():
                        k = max(1, round(2 * speed))  # tokens per decode step
                        accept = [1] + [k] * ((tokens - 1) // k) + ([(tokens - 1) % k] if (tokens - 1) % k else [])
                        sizes = [0] + [k + 2] * (len(accept) - 1)
                        mo, cls, div = list(out), "exact", None
                        if mismatch == (m, task, qid):
                            mo[5] += 1
                            cls, div = "mismatch", 5
                        t = ar_time / speed * rng.uniform(0.95, 1.05)
                        recs.append(fake_record(m, task, qid, turn, rep, mo, t, accept, sizes, cls, div, category=cat,
                                                peak_mib=300 + k))
    with (path / "records.jsonl").open("w") as fh:
        for r in recs:
            fh.write(json.dumps(r.to_json()) + "\n")
    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "hardware": hardware or CPU_HW,
        "versions": {"python": "3.11.2", "torch": "2.13.0", "transformers": "5.23.0", "specbench": "0.1.0"},
        "model": {"id": model, "hash": "abc123", "dtype": dtype, "tf32": False},
        "config": {"methods": ["ar", *methods], "tasks": list(tasks), "limit": n_questions,
                   "max_new_tokens": max_new_tokens, "repeats": repeats, "dtype": dtype},
        "method_configs": {"ar": {}, **{m: {"num_draft": 10} for m in methods}},
        "artifacts": {}, "git_commit": "deadbeef", "timestamp": "2026-11-22T00:00:00Z",
        "command": "python run_bench.py --methods ar,pld --limit 6",
        "questions": questions, "task_versions": {t: "1" for t in tasks},
    }
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_speedup_is_pooled_ratio_and_ci_brackets(tmp_path: Path) -> None:
    run = load_run(write_fake_run(tmp_path / "r", {"pld": 1.5, "slow": 0.5}, n_questions=8))
    st = run_stats(run, n_boot=500)
    assert set(st) == {"ar", "pld", "slow"}
    assert list(st["pld"]) == ["MT-Bench", "HumanEval", "GSM8K", OVERALL]
    for method, target in (("pld", 1.5), ("slow", 0.5)):
        c = st[method][OVERALL]
        assert c.speedup == pytest.approx(target, rel=0.06)
        assert c.ci_low < c.speedup < c.ci_high
        assert c.ci_high - c.ci_low < 0.2 * target
    # the baseline: tau exactly 1, no speedup number, no drafting
    ar = st["ar"][OVERALL]
    assert ar.speedup is None and ar.tau == 1.0 and ar.acceptance_rate is None and ar.mean_draft_size == 0
    assert st["ar"]["MT-Bench"].speedup_text() == "1.00x"


def test_pooled_ratio_by_hand() -> None:
    # q1: method 10 tok in 1 s, AR 10 tok in 2 s; q2: method 30 tok in 1 s, AR 30 tok in 4 s
    rows = np.array([[10, 1.0, 10, 2.0], [30, 1.0, 30, 4.0]])
    point, lo, hi = paired_speedup([rows], n_boot=200, seed=1)
    assert point == pytest.approx((40 / 2) / (40 / 6))  # 3.0, not the mean of per-question ratios (2.5)
    assert 2.0 <= lo <= point <= hi <= 4.0
    assert paired_speedup([rows], n_boot=200, seed=1) == (point, lo, hi)  # deterministic
    assert paired_speedup([rows[:1]])[1:] == (None, None)  # one question: no CI


def test_tau_acceptance_draft_and_time_shares(tmp_path: Path) -> None:
    run = load_run(write_fake_run(tmp_path / "r", {"pld": 2.0}, tasks=("gsm8k",), tokens=33))
    c: Cell = run_stats(run, n_boot=0)["pld"]["GSM8K"]
    # 33 tokens: prefill 1 + 8 steps of 4 tokens -> 9 passes; each step drafts 6 and accepts 3
    assert c.tau == pytest.approx(33 / 9)
    assert c.acceptance_rate == pytest.approx(3 / 6)
    assert c.mean_draft_size == pytest.approx(6.0)
    assert c.draft_share == pytest.approx(0.1) and c.verify_share == pytest.approx(0.8)
    assert c.speedup is not None and c.ci_low is None  # n_boot=0 -> no CI


def test_lossless_status_and_unpaired_questions(tmp_path: Path) -> None:
    d = write_fake_run(tmp_path / "r", {"pld": 1.5}, mismatch=("pld", "gsm8k", "gsm8k-2"))
    st = run_stats(load_run(d), n_boot=0)
    assert lossless_status(st["pld"], "pld") == "MISMATCH (1)"
    assert st["pld"][OVERALL].lossless == {"exact": 23, "tie": 0, "mismatch": 1}
    assert lossless_status(st["ar"], "ar") == "baseline"
    # drop AR of one subtask: the method's speedup there has no pair, the others still do
    recs = [json.loads(x) for x in (d / "records.jsonl").read_text().splitlines()]
    keep = [r for r in recs if not (r["method"] == "ar" and r["task"] == "gsm8k")]
    (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    st = run_stats(load_run(d), n_boot=0)
    assert st["pld"]["GSM8K"].speedup is None and st["pld"]["GSM8K"].speedup_text() == "-"
    assert st["pld"]["HumanEval"].speedup is not None


def test_load_run_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        load_run(tmp_path / "empty")


def test_no_zero_width_ci_from_single_question_strata():
    import numpy as np

    from specbench.results.stats import paired_speedup

    one = [np.array([[10.0, 1.0, 10.0, 2.0]]), np.array([[8.0, 1.0, 8.0, 1.0]])]
    point, lo, hi = paired_speedup(one)
    assert point is not None and lo is None and hi is None
    two = [np.array([[10.0, 1.0, 10.0, 2.0], [10.0, 2.0, 10.0, 2.0]])]
    assert paired_speedup(two)[1] is not None


def test_questions_of_one_batch_are_resampled_together(tmp_path: Path) -> None:
    """At B > 1 a batch's questions share its time: one batch per task gives no interval (not ±0.00),
    two batches per task give an interval, and the point estimate stays the pooled ratio."""
    import dataclasses

    from specbench.results.loaded_run import Run

    run = load_run(write_fake_run(tmp_path / "run", tasks=("gsm8k", "humaneval"), n_questions=4))

    def batched(size: int) -> Run:
        recs = []
        for r in run.records:
            idx = int(r.question_id.rsplit("-", 1)[1]) // size  # static groups of `size` questions in order
            wall = sum(s.wall_time_s for s in run.records if s.method == r.method and s.task == r.task
                       and int(s.question_id.rsplit("-", 1)[1]) // size == idx)
            recs.append(dataclasses.replace(r, batch_size=size, batch_wall_time_s=wall, wall_time_s=wall / size))
        return Run(run.path, run.manifest, recs)

    one_batch = run_stats(batched(4))["pld"]
    assert all(c.ci_low is None and c.speedup is not None for c in one_batch.values())
    assert "±" not in one_batch[OVERALL].speedup_text()
    two_batches = run_stats(batched(2))["pld"][OVERALL]
    assert two_batches.ci_low is not None and two_batches.ci_low < two_batches.speedup < two_batches.ci_high
    per_question = run_stats(run)["pld"][OVERALL]  # unbatched: every question its own unit, as before
    assert per_question.ci_low is not None
