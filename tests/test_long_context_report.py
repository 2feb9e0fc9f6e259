"""Reports against input length on constructed records, and the cost profile over long contexts: curves
measured after 128, 512 and doubling contexts up to a run's longest, interpolated piecewise, a cached file
extended only by what it lacks (every curve injected: nothing is timed here)."""
from __future__ import annotations

import types

import numpy as np
import pytest

from specbench.profiling import cost_profile
from specbench.profiling.cost_profile import cached_cost_profile, contexts_for, cost_function
from specbench.reports.long_context import decode_speedup, length_prediction_table, length_tables
from specbench.reports.long_context_plot import length_figure
from specbench.reports.report import render
from specbench.results.context_lengths import length_groups
from specbench.results.record import Record
from specbench.results.loaded_run import Run
from specbench.results.stats import run_stats


def rec(method, qid, length, prompt, wall, prefill, accept, sizes=None, task="long_low", label="Long-low"):
    """A record of ``len(accept)`` passes emitting ``sum(accept)`` tokens; the prefill's step time first."""
    lab = f"{length // 1024}k"
    steps = [prefill] + [(wall - prefill) / (len(accept) - 1)] * (len(accept) - 1)
    return Record(method=method, task=f"{task}@{lab}", subtask=f"{label} {lab}", task_version="1", question_id=qid,
                  category="sort", turn=1, repeat=0, prompt_tokens=prompt, new_tokens=sum(accept), wall_time_s=wall,
                  forward_passes=len(accept), draft_time_s=0.0, verify_time_s=wall, accept_lengths=accept,
                  draft_sizes=sizes or [0] * len(accept), draft_times_s=[0.0] * len(accept),
                  output_ids=list(range(sum(accept))), prefill_time_s=prefill, step_times_s=steps,
                  context_length=length)


def records() -> list[Record]:
    out = []
    for q in ("0", "1"):
        # 1k: AR 8 tokens in 8 passes (prefill 1 s + 7 x 0.1 s); pld 8 tokens in 4 passes (prefill 1 s + 3 x 0.1 s)
        out += [rec("ar", q, 1024, 1024, 1.7, 1.0, [1] * 8),
                rec("pld", q, 1024, 1024, 1.3, 1.0, [1, 3, 2, 2], [0, 4, 4, 4])]
        # 8k cut to 7936 tokens: the prefill is 8 s, decode steps 0.2 s
        out += [rec("ar", q, 8192, 7936, 9.4, 8.0, [1] * 8),
                rec("pld", q, 8192, 7936, 8.6, 8.0, [1, 3, 2, 2], [0, 4, 4, 4])]
    return out


def test_groups_and_tables_by_input_length():
    recs = records()
    run = Run(path=None, manifest={"config": {"methods": ["ar", "pld"]}}, records=recs)
    stats = run_stats(run, n_boot=100)
    groups = length_groups(recs)
    assert [(g.tier, g.length, g.prompt_tokens) for g in groups] == [("Long-low", 1024, 1024),
                                                                     ("Long-low", 8192, 7936)]
    assert groups[0].ar_prefill_share == pytest.approx(1.0 / 1.7)
    speed, decode, tau, ttft = length_tables(groups, ["ar", "pld"], stats)
    assert speed.headers == ["tier", "length", "prompt tokens", "AR prefill share", "pld"]
    assert speed.rows[1][:4] == ["Long-low", "8k", "7936", "85%"] and speed.rows[0][4].startswith("1.31x")
    assert decode_speedup(stats, "pld", groups[0]) == pytest.approx((7 / 0.3) / (7 / 0.7))
    assert decode.rows[1][2] == "2.33x" and tau.rows[0][2:] == ["1.00", "2.00"] and ttft.rows[1][2:] == ["8000", "8000"]
    cost = lambda n, context=None: 0.1 * np.ones_like(n, dtype=float) * (1 + np.asarray(context) / 8192)  # noqa: E731
    pred = length_prediction_table(groups, ["ar", "pld"], cost)
    assert pred.headers == ["tier", "length", "pld"] and all("/" in r[2] and "%)" in r[2] for r in pred.rows)
    assert length_figure(groups, ["ar", "pld"], stats)[:4] == b"\x89PNG"


def test_runs_without_lengths_read_and_render_as_before(tmp_path):
    old = {k: v for k, v in records()[0].to_json().items() if k != "context_length"} | {"schema_version": 6}
    assert Record.from_json(old).context_length is None
    plain = [Record.from_json(old | {"task": "gsm8k", "subtask": "GSM8K", "method": m}) for m in ("ar", "pld")]
    assert length_groups(plain) == []
    assert "by input length" not in render(Run(path=tmp_path, manifest={}, records=plain))


def test_contexts_reach_the_longest_a_run_uses():
    assert contexts_for() == contexts_for(400) == (128, 512)
    assert contexts_for(1025) == (128, 512, 1024, 2048)
    assert contexts_for(8064, limit=8192) == (128, 512, 1024, 2048, 4096, 8064)
    assert contexts_for(99999, limit=8192)[-1] == 8192 - max(cost_profile.SIZES)


def test_cost_is_piecewise_linear_in_the_context():
    two = {"latency_s": {"1": 0.04, "16": 0.05},
           "latency_by_context_s": {"128": {"1": 0.04, "16": 0.05}, "512": {"1": 0.04, "16": 0.06}}}
    three = {**two, "latency_by_context_s": {**two["latency_by_context_s"], "2048": {"1": 0.08, "16": 0.12}}}
    c2, c3 = cost_function(two), cost_function(three)
    assert c2(16, 320) == pytest.approx(0.055) == c3(16, 320) and c2(16) == 0.05
    assert c3(16, 1280) == pytest.approx(0.09)
    assert c3(1, 4096) == pytest.approx(0.08 + 0.04 * 2048 / 1536)  # past the last context: its segment's slope
    assert c2(16, 1280) == pytest.approx(0.05 + 0.01 * (1280 - 128) / 384)  # two curves: as before (one segment)
    assert c3(np.array([1, 16]), 2048).tolist() == pytest.approx([0.08, 0.12])
    assert c3(np.array([1, 16, 16]), np.array([128, 512, 2048])).tolist() == pytest.approx([0.04, 0.06, 0.12])
    assert c3(16, 0) == pytest.approx(0.05 - 0.01 / 3)


def test_one_row_count_is_priced_as_the_array_path_prices_it():
    """The scalar path (plain Python, for the budget's per-step prices) and numpy's agree everywhere: between
    measured sizes and contexts, below the first of each, past the last, and without a context."""
    profile = {"latency_s": {"1": 0.04, "4": 0.045, "16": 0.05},
               "latency_by_context_s": {"128": {"1": 0.04, "4": 0.045, "16": 0.05},
                                        "512": {"1": 0.041, "4": 0.05, "16": 0.06},
                                        "2048": {"1": 0.08, "4": 0.09, "16": 0.12}}}
    cost = cost_function(profile)
    for n in (0, 1, 3, 4, 9, 16, 40):
        for context in (None, 0, 100, 128, 300, 512, 1500, 2048, 9000):
            array = cost(np.array([n]), None if context is None else np.array([context]))[0]
            assert isinstance(cost(n, context), float) and cost(n, context) == pytest.approx(array, rel=1e-12)


def test_cached_profile_grows_with_the_longest_context(tmp_path, monkeypatch):
    from conftest import make_tiny_model

    measured: list[int] = []

    def fake(model, context, sizes, repeats, backend="auto"):
        measured.append(context)
        return {n: 0.01 * (1 + context / 1000) + 0.001 * n for n in sizes}

    monkeypatch.setattr(cost_profile, "measure_forward_curve", fake)
    lm = types.SimpleNamespace(model=make_tiny_model("llama"), model_id="tiny", model_hash="abc", dtype="float32",
                               device="cpu")  # its context: 1024 tokens, so the last context is 1024 - 128
    prof, path = cached_cost_profile(lm, "fast", tmp_path, quiet=True)
    assert measured == [128, 512] and prof["context_len"] == 128
    prof, path2 = cached_cost_profile(lm, "fast", tmp_path, quiet=True, longest=3000)
    assert path2 == path and measured == [128, 512, 896]
    assert list(prof["latency_by_context_s"]) == ["128", "512", "896"]
    again, _ = cached_cost_profile(lm, "fast", tmp_path, quiet=True, longest=700)
    assert measured == [128, 512, 896] and again == prof
    assert cost_function(again)(1, 896) == pytest.approx(0.01 * 1.896 + 0.001)


def test_eleven_methods_get_eleven_distinct_colours():
    from specbench.reports.leaderboard.plots import pyplot
    from specbench.reports.long_context_plot import method_colours

    plt = pyplot()
    assert len(set(method_colours(plt, 11))) == 11  # the default cycle has 10: the 11th repeated the first
    assert method_colours(plt, 3) == list(plt.rcParams["axes.prop_cycle"].by_key()["color"])
