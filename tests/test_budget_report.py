"""The cost model's prediction and the default-vs-auto table on constructed records; one end-to-end run of
``--budget both`` on the embedded model (its cost profile injected, never timed: a real profile takes
minutes on a loaded machine; cached in a temporary cache, then reused)."""
import numpy as np
import pytest

import specbench.run.budgets as runner_mod
from specbench.reports.budget_report import auto_ratios, auto_vs_default_table
from specbench.config.run_config import RunConfig
from specbench.run.plan import make_plan, run_dir_for
from specbench.reports.prediction import prediction, predicted_seconds
from specbench.results.record import Record
from specbench.results.run_folder import read_manifest, read_records
from specbench.reports.report import write_report
from specbench.run.runner import Runner
from specbench.results.loaded_run import Run
from specbench.results.stats import run_stats


def rec(method, qid, tokens, wall, accept, sizes, draft_s, prefill=0.1, sub="GSM8K"):
    return Record(method=method, task="gsm8k", subtask=sub, task_version="1", question_id=qid, category="", turn=1,
                  repeat=0, prompt_tokens=20, new_tokens=tokens, wall_time_s=wall, forward_passes=len(accept),
                  draft_time_s=sum(draft_s), verify_time_s=0.0, accept_lengths=accept, draft_sizes=sizes,
                  draft_times_s=draft_s, output_ids=list(range(tokens)), prefill_time_s=prefill)


def cost(n, context=None):  # T(1) = 0.04 s, T(4) = 0.05 s, whatever the context
    return np.where(np.asarray(n) == 1, 0.04, 0.05)


def test_prediction_matches_the_module_example():
    ar = rec("ar", "1", 4, 0.22, [1, 1, 1, 1], [0, 0, 0, 0], [0.0] * 4)
    m = rec("pld", "1", 4, 0.202, [1, 2, 1], [0, 3, 3], [0.0, 0.001, 0.001])
    assert predicted_seconds(ar, cost) == pytest.approx(0.22)
    assert predicted_seconds(m, cost) == pytest.approx(0.202)
    pred, meas = prediction([m], [ar], cost)
    assert pred == pytest.approx(0.22 / 0.202) and meas == pytest.approx(0.22 / 0.202)
    slow = rec("pld", "1", 4, 0.404, [1, 2, 1], [0, 3, 3], [0.0, 0.001, 0.001])  # measured twice the model's time
    assert prediction([slow], [ar], cost)[1] == pytest.approx(pred / 2)
    assert prediction([m], [], cost) is None


def test_auto_vs_default_table_pairs_labels_and_ratios():
    recs = []
    for q in range(4):
        recs += [rec("ar", str(q), 10, 1.0, [1] * 10, [0] * 10, [0.0] * 10),
                 rec("rest", str(q), 10, 0.8 + 0.01 * q, [1] * 10, [0] * 10, [0.0] * 10),
                 rec("rest@auto", str(q), 10, 0.5, [1] * 10, [0] * 10, [0.0] * 10)]
    run = Run(path=None, manifest={"config": {"methods": ["ar", "rest", "rest@auto"]}}, records=recs)
    ratios = auto_ratios(run, "rest", "rest@auto")
    point, lo, hi = ratios["Overall"]
    assert point == pytest.approx(sum(0.8 + 0.01 * q for q in range(4)) / 2.0) and 1 < lo <= point <= hi
    table = auto_vs_default_table(run, run_stats(run, n_boot=200))
    assert [r[0] for r in table.rows] == ["rest"] and table.rows[0][1].startswith("1.")
    assert "->" in table.rows[0][1] and "[" in table.rows[0][1]


def fake_curve(model, context_len, sizes, repeats, backend="auto"):
    """Stands in for timing the embedded model: a steep CPU-like curve, a little slower at the longer context."""
    return {n: (0.02 + 0.002 * n) * (1 + context_len / 4096) for n in sizes}


@pytest.mark.embedded
def test_the_auto_table_sets_a_cell_s_plain_forward_against_ar_s():
    """lookahead@auto at B=8 read 0.93x with 0% drafted: its plain forward ran 21% slower than AR's on the same
    batch. The column shows such a cell for what it is; a generation with too few plain steps is left out."""
    from specbench.reports.auto_report import PLAIN_SEEN, auto_table

    def timed(method, qid, forward, plain, drafted):
        r = rec(method, qid, plain + drafted, 1.0, [1] * (1 + plain + drafted), [0] * (1 + plain) + [3] * drafted,
                [0.0] * (1 + plain + drafted))
        r.verify_times_s = [0.3] + [forward] * plain + [0.2] * drafted
        r.drafted_steps, r.skipped_steps = (drafted, plain) if method != "ar" else (None, None)
        return r

    records = [timed("ar", "1", 0.040, 20, 0), timed("ar", "2", 0.050, 20, 0),
               timed("x@auto", "1", 0.048, 20, 3), timed("x@auto", "2", 0.055, 20, 0),
               timed("y@auto", "1", 0.060, PLAIN_SEEN - 1, 11)]
    rows = {row[0]: row for row in auto_table(records, None).keys}
    assert rows["x@auto"][8] == pytest.approx(np.sqrt(1.2 * 1.1))  # (geometric mean of 1.2 and 1.1)
    assert rows["y@auto"][8] is None


def test_budget_both_run_end_to_end(embedded, tmp_path, monkeypatch):
    import specbench.profiling.cost_profile as cost_profile

    measured, curves = [], []
    original = runner_mod.cached_cost_profile

    def in_tmp(lm, backend, _root, quiet=False, longest=None):
        measured.append(backend)
        return original(lm, backend, tmp_path / "cache", quiet=True, longest=longest)

    def no_timing(model, context_len, sizes, repeats, backend="auto"):  # never time the embedded model in a test
        curves.append(context_len)
        return fake_curve(model, context_len, sizes, repeats, backend)

    monkeypatch.setattr(runner_mod, "cached_cost_profile", in_tmp)
    monkeypatch.setattr(cost_profile, "measure_forward_curve", no_timing)
    cfg = RunConfig(methods=("pld",), tasks=("gsm8k",), limit=1, max_new_tokens=24, warmup=0, budget="both",
                    out_dir=str(tmp_path))
    plan = make_plan(cfg)
    run_dir = run_dir_for(plan)
    assert Runner(plan, run_dir, loaded=embedded, progress=False).execute() == 0
    assert curves == list(cost_profile.CONTEXTS)  # the profile was "measured" once per context, into the cache
    recs = {r.method: r for r in read_records(run_dir)}
    assert set(recs) == {"ar", "pld", "pld@auto"}
    assert recs["pld@auto"].output_ids == recs["ar"].output_ids
    manifest = read_manifest(run_dir)
    assert manifest["method_configs"]["pld@auto"]["budget"] == "auto" and "budget" not in manifest["method_configs"]["pld"]
    assert manifest["cost_profile"]["file"] == "profile.json" and (run_dir / "profile.json").is_file()
    profiles = list((tmp_path / "cache" / "profiles").glob("*.json"))
    assert len(profiles) == 1
    stamp = profiles[0].stat().st_mtime_ns
    report = write_report(run_dir)
    assert "Paper default -> budget=auto" in report and "| pld  " in report
    assert "Predicted speedup" in report and "| pld@auto " in report
    # resuming reads the run's own profile.json (no measuring even with the cache gone)
    Runner(plan, run_dir, loaded=embedded, progress=False).execute()
    assert len(measured) == 1
    # another run on the same model and backend reuses the cached profile
    plan2 = make_plan(RunConfig(methods=("pld@auto",), tasks=("gsm8k",), limit=1, max_new_tokens=8, warmup=0,
                                out_dir=str(tmp_path)))
    Runner(plan2, run_dir_for(plan2), loaded=embedded, progress=False).execute()
    assert profiles[0].stat().st_mtime_ns == stamp and len(measured) == 2
    assert curves == list(cost_profile.CONTEXTS)
