"""The up-front estimate of a run's duration (``specbench/run/estimate.py``, ``estimate_run.py``), the progress
bar it seeds (``progress_bar.py``) and the runner printing it before its first generation (a tiny model; its
forwards are never timed: ``measure_forward_curve`` is replaced by a fixed curve)."""
from __future__ import annotations

import doctest
import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import specbench.run.estimate as estimate_mod
import specbench.run.progress_bar as progress_mod
from tiny_model_dir import save_tiny_model
from specbench.config.run_config import RunConfig
from specbench.run.estimate import (PendingBuild, RunEstimate, Work, estimate_work, format_estimate, generation_s,
                                    priced, unique_builds)
from specbench.run.estimate_run import first_use_builds, plan_work
from specbench.run.plan import make_plan, run_dir_for


def flat(seconds: float):
    """A cost function of ``seconds`` per forward whatever its rows and context."""
    return lambda n, context=None: seconds * np.ones_like(np.asarray(n, dtype=float))


def test_docstring_examples() -> None:
    for module in (estimate_mod, progress_mod):
        assert doctest.testmod(module).failed == 0


def test_a_generation_is_its_prefill_plus_a_forward_per_token_after_a_growing_context() -> None:
    seen = {}

    def cost(n, context=None):
        if context is None:  # the prefill: 1 ms a prompt token
            return 0.001 * np.asarray(n, dtype=float)
        seen["n"], seen["context"] = np.asarray(n), np.asarray(context)
        return 0.01 + 0.0001 * np.asarray(context, dtype=float)  # 10 ms + 0.1 ms per cached token

    assert generation_s(cost, 100, 4) == pytest.approx(0.1 + 3 * 0.01 + 0.0001 * (100 + 101 + 102))
    assert list(seen["context"]) == [100, 101, 102] and set(seen["n"]) == {1}
    generation_s(cost, 100, 4, rows=3)  # a batched job: forwards of 3 rows, the prefill of 3 prompts
    assert set(seen["n"]) == {3}
    assert generation_s(cost, 50, 1) == pytest.approx(0.05)  # one token: the prefill alone


def test_ar_is_priced_as_is_and_a_drafting_method_over_the_prior_speedups() -> None:
    ar, method = Work(True, 10, 100), Work(False, 10, 100)
    assert estimate_work([ar, ar], flat(0.05)) == pytest.approx((10.0, 10.0, 10.0))  # 2 x 100 forwards of 50 ms
    low, about, high = estimate_work([method], flat(0.05), prior=(0.5, 1.0, 2.0))
    assert (low, about, high) == pytest.approx((2.5, 5.0, 10.0))
    warm = Work(True, 10, 100, records=0)  # a warm-up costs like any generation (it only writes no record)
    assert estimate_work([warm], flat(0.05))[1] == pytest.approx(5.0)


def test_a_batched_drafting_job_is_priced_over_the_wider_batched_prior() -> None:
    """Drafting at B > 1 ran as slow as 0.2x AR (recycling at B=4): its high figure must reach that far,
    while a drafting job alone keeps the narrower prior."""
    alone, batched = Work(False, 10, 100), Work(False, 10, 100, rows=4)
    assert estimate_work([alone], flat(0.05), batched_prior=(0.2, 1.0, 1.5))[2] == pytest.approx(5.0 / 0.55)
    assert estimate_work([batched], flat(0.05), batched_prior=(0.2, 1.0, 1.5)) == pytest.approx((5.0 / 1.5, 5.0, 25.0))
    assert estimate_work([batched], flat(0.05))[2] == pytest.approx(25.0)  # the default batched prior: 0.2x


def test_the_lines_name_the_builds_and_the_smaller_run_only_when_there_are_some() -> None:
    builds = (PendingBuild("build rest's datastore", 360, "a", detail="of sharegpt"),
              PendingBuild("train redrafter's quick recipe", 240))
    lines = format_estimate(RunEstimate(2028, 24, (6.8 * 3600, 9.67 * 3600, 15 * 3600), builds, (3, 180), "x"), "")
    assert lines[0].startswith("estimate: 2028 generations (+24 warm-up), about 9 h 40 min here (6 h 50 min to 15 h")
    assert lines[1] == "  first: ~6 min to build rest's datastore of sharegpt, ~4 min to train redrafter's quick recipe"
    assert lines[2] == "  --limit 3 would take about 3 min (+ the same first-use builds)"
    three = [PendingBuild("build rest's datastore", 120, str(k), detail=f"of c{k}") for k in range(3)]
    lines = format_estimate(RunEstimate(1, 0, (1, 1, 1), tuple(three)), "")
    assert lines[1] == "  first: ~6 min to build rest's datastore x3"  # several of a kind: summed
    bare = format_estimate(RunEstimate(8, 0, (50, 60, 80)), "")
    assert bare == ["estimate: 8 generations, about 60 s here (50 s to 80 s)"]
    est = RunEstimate(10, 2, (10.0, 20.0, 40.0), builds, warmup_s=5.0)
    assert est.total_s == 620 and est.per_record_s == 1.5  # the warm-up's 5 s are not a timed generation's
    assert est.as_dict() | {"source": None} == {"seconds": 620.0, "low_s": 610.0, "high_s": 640.0, "builds_s": 600.0,
                                                "generations": 10, "warmups": 2, "source": None}


def test_builds_shared_by_tasks_count_once_and_a_target_pass_is_priced_with_the_profile() -> None:
    a, b = PendingBuild("a", 1, "k1"), PendingBuild("b", 2, "k2")
    assert unique_builds([a, None, b, a]) == (a, b)
    build = PendingBuild("embed", 10, "k", target_tokens=20_000)
    assert priced(build, lambda n, context=None: 0.002 * n).seconds == pytest.approx(10 + 40)
    assert priced(a, flat(1.0)) is a


def test_plan_work_counts_what_is_left_warm_ups_and_batched_jobs() -> None:
    plan = make_plan(RunConfig(methods=("pld",), tasks=("mt_bench", "gsm8k"), limit=2, max_new_tokens=16, warmup=1,
                               split="all"))
    prompts = {"mt_bench": 100, "gsm8k": 200}
    work, warm = plan_work(plan, set(), prompts)
    assert len(work) == 2 * (2 * 2 + 2)  # 2 methods x (2 MT-Bench questions of 2 turns + 2 GSM8K questions)
    assert sorted({w.prompt_tokens for w in work if w.prompt_tokens != 200}) == [100, 116]  # turn 2: + turn 1's answer
    assert [(w.baseline, w.records) for w in warm] == [(True, 0), (False, 0)] * 2  # each method once per task
    ar_first = next(u for u, _, m in plan.jobs() if m == "ar")
    left, _ = plan_work(plan, {("ar", ar_first)}, prompts)
    assert len(left) == len(work) - 1  # a resumed run counts only what it has left
    batched = make_plan(RunConfig(methods=("pld",), tasks=("gsm8k",), limit=3, max_new_tokens=16, warmup=0,
                                  batch_size=(1, 2), split="all"))
    work, warm = plan_work(batched, set(), {"gsm8k": 50})
    jobs = [w for w in work if w.rows > 1 or w.records > 1]
    assert sum(w.records for w in work) == 2 * 3 + 2 * 3  # size 1, then groups [2, 1] of size 2, per method
    assert sorted(w.rows for w in jobs) == [2, 2] and [w.new_tokens for w in warm] == [16, 16]  # short batch warm-ups


def test_seeded_bar_starts_from_the_estimate_and_leaves_the_warm_up_out(monkeypatch) -> None:
    import tqdm.std

    clock = {"t": 1000.0}
    monkeypatch.setattr(tqdm.std, "time", lambda: clock["t"])
    bar = progress_mod.SeededBar(10.0, 4, total=100, file=io.StringIO())
    assert 100 / bar.format_dict["rate"] == pytest.approx(1000)  # before any generation: 100 x the estimate's 10 s
    clock["t"] += 500  # the warm-up
    bar.unpause()
    clock["t"] += 20  # the first timed generation
    bar.update(1)
    d = bar.format_dict
    assert d["elapsed"] == pytest.approx(20)  # the warm-up's 500 s are out
    assert 99 / d["rate"] == pytest.approx(99 * 60 / 5)  # (1 timed + 4 prior) generations in (20 + 40) s
    plain = progress_mod.SeededBar(None, 4, total=100, file=io.StringIO())
    assert plain.format_dict["rate"] is None  # no estimate: tqdm's own mean rate


def _tiny_plan(tmp_path, limit: int, **kw):
    model_dir = save_tiny_model(tmp_path / "model")
    settings = dict(methods=("pld",), tasks=("gsm8k",), max_new_tokens=4, warmup=1, split="all") | kw
    cfg = RunConfig(limit=limit, model=str(model_dir), out_dir=str(tmp_path / "res"), **settings)
    return make_plan(cfg)


@pytest.fixture
def fixed_forwards(monkeypatch, tmp_path):
    """T(1) = 10 ms, T(64) = 40 ms, whatever the model: the forwards a run times for its estimate, never run."""
    import specbench.profiling.measure as measure

    calls = []

    def fixed(model, context_len, sizes, *args, **kwargs):
        calls.append((context_len, tuple(sizes)))
        return {n: 0.01 + (n - 1) * 0.03 / 63 for n in sizes}

    monkeypatch.setattr(measure, "measure_forward_curve", fixed)
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    return calls


def test_runner_prints_the_estimate_before_its_first_generation(tmp_path, capsys, monkeypatch, fixed_forwards) -> None:
    from specbench.engine.loop import Engine
    from specbench.results.run_folder import read_manifest
    from specbench.run.runner import Runner

    plan = _tiny_plan(tmp_path, limit=4)
    original, before = Engine.generate, []

    def first_sees_stderr(self, *args, **kwargs):
        if not before:
            before.append(capsys.readouterr().err)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "generate", first_sees_stderr)
    Runner(plan, run_dir_for(plan), progress=True).execute()
    lines = [line for line in before[0].splitlines() if line.startswith("[specbench] ")]
    # 4 questions x (AR + pld), each warmed up once first; forwards of 10 ms: seconds, not minutes
    assert lines[0].startswith("[specbench] estimate: 8 generations (+2 warm-up), about ") and " s here (" in lines[0]
    assert "T(n) from 8 timed forwards" in lines[0] and len(fixed_forwards) == 1
    assert lines[1].startswith("[specbench]   --limit 3 would take about ")  # the run has more than 3 questions
    bar = before[0].split("\r")[-1]
    assert bar.startswith("bench:") and "warm-up" in bar and "<?" not in bar  # an ETA from the estimate at once
    manifest = read_manifest(run_dir_for(plan))
    assert manifest["estimate"]["generations"] == 8 and manifest["estimate"]["seconds"] > 0


def test_quiet_runs_and_small_runs_say_less(tmp_path, capsys, fixed_forwards) -> None:
    from specbench.results.run_folder import read_manifest
    from specbench.run.runner import Runner

    plan = _tiny_plan(tmp_path, limit=3)
    Runner(plan, run_dir_for(plan), progress=False).execute()
    assert "estimate" not in capsys.readouterr().err and not fixed_forwards  # library use: nothing printed or timed
    assert read_manifest(run_dir_for(plan))["estimate"] is None
    small = _tiny_plan(tmp_path, limit=3, max_new_tokens=5)
    Runner(small, run_dir_for(small), progress=True).execute()
    err = capsys.readouterr().err
    assert "estimate: 6 generations (+2 warm-up)" in err and "--limit 3" not in err  # no more than 3 questions


def test_a_resumed_run_estimates_what_it_has_left(tmp_path, capsys, fixed_forwards) -> None:
    from specbench.results.run_folder import read_manifest
    from specbench.run.runner import Runner

    plan = _tiny_plan(tmp_path, limit=2)
    run_dir = run_dir_for(plan)
    Runner(plan, run_dir, progress=False).execute()
    records = (run_dir / "records.jsonl").read_text().splitlines()
    (run_dir / "records.jsonl").write_text("\n".join(records[:3]) + "\n")  # 3 of 4 kept
    Runner(plan, run_dir, progress=True).execute()
    assert "estimate: 1 generations (+2 warm-up)" in capsys.readouterr().err
    resumed = read_manifest(run_dir)["resumed"]  # each resumption keeps its own estimate beside the first's
    assert [r["estimate"]["generations"] for r in resumed] == [1] and read_manifest(run_dir)["estimate"] is None


def test_first_use_builds_are_read_from_each_methods_cache(tmp_path, monkeypatch) -> None:
    """rest, dresd and redrafter say what they would build for each task, and nothing once it is cached."""
    from specbench.models.loading import load_model

    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    plan = make_plan(RunConfig(methods=("rest", "dresd", "redrafter", "pld"), tasks=("mt_bench", "cnndm", "gsm8k"),
                               limit=1))
    lm = load_model(str(save_tiny_model(tmp_path / "model")), "float32", "cpu")
    runner = SimpleNamespace(plan=plan, loaded=lm)
    builds = unique_builds(first_use_builds(runner))
    whats = [f"{b.what} {b.detail}".strip() for b in builds]
    # REST: sharegpt (MT-Bench and CNN/DM share it) and gsm8k_train+sharegpt; DReSD: sharegpt and gsm8k_train
    assert whats == ["build rest's datastore of sharegpt", "build rest's datastore of gsm8k_train+sharegpt",
                     "build dresd's datastore of sharegpt", "build dresd's datastore of gsm8k_train",
                     "train redrafter's quick recipe"], whats
    assert all(b.seconds > 0 or b.target_tokens > 0 for b in builds)
    assert [b.target_tokens for b in builds if "dresd" in b.what] == [20000, 20000]
    for b in builds:  # each artifact's folder holds its finishing file: nothing left to build
        done = "head.safetensors" if "redrafter" in b.what else "header.json"
        Path(b.key).mkdir(parents=True, exist_ok=True)
        (Path(b.key) / done).write_text(json.dumps({}))
    assert unique_builds(first_use_builds(runner)) == ()
    given = make_plan(RunConfig(methods=("rest",), tasks=("gsm8k",), limit=1, method_options={"rest": {"datastore": "x"}}))
    assert unique_builds(first_use_builds(SimpleNamespace(plan=given, loaded=lm))) == ()


def test_budget_auto_counts_its_profile_measurement_once_and_then_reads_the_cached_profile(tmp_path, capsys,
                                                                                         fixed_forwards) -> None:
    from specbench.run.runner import Runner

    first = _tiny_plan(tmp_path, limit=1, budget="auto")
    Runner(first, run_dir_for(first), progress=True).execute()  # measures the tiny model's profile into the cache
    err = capsys.readouterr().err
    assert "T(n) from 8 timed forwards" in err and "to measure the cost profile (budget=auto)" in err
    again = _tiny_plan(tmp_path, limit=1, budget="auto", max_new_tokens=5)  # another run on the same model
    Runner(again, run_dir_for(again), progress=True).execute()
    err = capsys.readouterr().err
    assert "T(n) from the cached cost profile" in err and "measure the cost profile" not in err
    assert len(fixed_forwards) == 1  # nothing timed for the second estimate
