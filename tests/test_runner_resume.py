"""Runner end to end on the embedded model with small limits: records, interruption and resume."""
import json

import pytest

from specbench.config.run_config import RunConfig
from specbench.results.record import SCHEMA_VERSION, Unit
from specbench.results.run_folder import RecordWriter, read_manifest, read_records
from specbench.reports.report import write_report
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner


def small_plan(tmp_path):
    cfg = RunConfig(methods=("pld",), tasks=("mt_bench", "gsm8k"), limit=1, max_new_tokens=8, warmup=0,
                    out_dir=str(tmp_path))
    return make_plan(cfg)


@pytest.mark.embedded
def test_interrupted_run_resumes_without_duplicates(embedded, tmp_path, monkeypatch):
    plan = small_plan(tmp_path)
    run_dir = run_dir_for(plan)
    assert plan.methods == ["ar", "pld"]
    original = RecordWriter.write
    calls = {"n": 0}

    def flaky_write(self, rec):
        if calls["n"] == 3:
            raise KeyboardInterrupt
        calls["n"] += 1
        original(self, rec)

    monkeypatch.setattr(RecordWriter, "write", flaky_write)
    with pytest.raises(KeyboardInterrupt):
        Runner(plan, run_dir, loaded=embedded, progress=False).execute()
    assert len(read_records(run_dir)) == 3
    # a torn half-written line (killed mid-write) must not break the resume either
    with (run_dir / "records.jsonl").open("a") as fh:
        fh.write('{"schema_version": 1, "method": "pl')
    monkeypatch.setattr(RecordWriter, "write", original)
    mismatches = Runner(plan, run_dir, loaded=embedded, progress=False).execute()
    recs = read_records(run_dir)
    keys = [r.key for r in recs]
    # mt_bench: 2 turns x 2 methods, gsm8k: 1 turn x 2 methods
    assert len(keys) == len(set(keys)) == 6
    assert mismatches == 0
    for r in recs:
        assert r.to_json()["schema_version"] == SCHEMA_VERSION == 10
        assert sum(r.accept_lengths) == r.new_tokens == len(r.output_ids) <= 8
        assert len(r.draft_sizes) == r.forward_passes == len(r.accept_lengths)
        # schema 4: per-pass verify / step times and draft depths; the prefill's step is the time to first token
        assert len(r.verify_times_s) == len(r.step_times_s) == len(r.draft_depths) == r.forward_passes
        assert r.prefill_time_s == r.step_times_s[0] > 0 and sum(r.step_times_s) <= r.wall_time_s
        assert all(v <= s for v, s in zip(r.verify_times_s, r.step_times_s))
        assert all(0 <= d <= n for d, n in zip(r.draft_depths, r.draft_sizes))
        if r.method == "pld":
            assert r.lossless is True and r.lossless_class == "exact"
    for r in recs:  # peak memory per generation; AR keeps the margin of every token it chose
        assert r.peak_memory_kind == "cpu_rss_peak" and r.peak_memory_bytes > 0
        assert (r.token_margins is not None) == (r.method == "ar")
        if r.method == "ar":
            assert len(r.token_margins) == len(r.output_ids) and min(r.token_margins) >= 0
    manifest = read_manifest(run_dir)
    assert manifest["hardware"]["device"] == "cpu" and manifest["hardware"]["gpu"] is None
    assert manifest["hardware"]["precision"]["fp16_reduced_precision_reduction"] is False
    assert manifest["model"]["dtype"] == "float32" and manifest["model"]["tf32"] is False
    assert manifest["questions"] == {"mt_bench": ["81"], "gsm8k": ["401"]}
    assert "resumed" in manifest and manifest["hardware"]["cores"]
    report = write_report(run_dir)
    assert "| pld " in report and "MT-Bench" in report and "GSM8K" in report
    assert "TTFT ms mean" in report and "MT-Bench speedup per category" in report
    # the summary of this real run validates against its schema
    from json_schema_subset import validate
    from specbench.reports.summary import SCHEMA_PATH

    summary = json.loads((run_dir / "summary.json").read_text())
    assert validate(json.loads(SCHEMA_PATH.read_text()), summary) == []
    overall = {m["method"]: m["subtasks"]["Overall"] for m in summary["methods"]}
    assert overall["ar"]["ttft_mean_s"] > 0 and overall["pld"]["token_latency_s"]["p50"] > 0
    # running again is a no-op
    Runner(plan, run_dir, loaded=embedded, progress=False).execute()
    assert len(read_records(run_dir)) == 6


@pytest.mark.embedded
def test_turn_two_prompt_uses_ar_answer(embedded, tmp_path):
    plan = small_plan(tmp_path)
    run_dir = run_dir_for(plan)
    runner = Runner(plan, run_dir, loaded=embedded, progress=False)
    runner.execute()
    q = plan.questions["mt_bench"][0]
    ar1 = [r for r in read_records(run_dir) if r.method == "ar" and r.unit == Unit("mt_bench", q.question_id, 1)][0]
    answer = embedded.tokenizer.decode(ar1.output_ids, skip_special_tokens=True)
    prompt = embedded.tokenizer.decode(runner.prompt_for(Unit("mt_bench", q.question_id, 2), q))
    assert answer in prompt and q.turns[1] in prompt


def test_changed_config_refuses_same_folder(tmp_path):
    plan = small_plan(tmp_path)
    run_dir = tmp_path / "fixed"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps({"config_digest": "other", "config": {"methods": ["ar"]}}))
    from specbench.errors import ConfigError

    with pytest.raises(ConfigError, match="different configuration"):
        Runner(plan, run_dir, loaded=object(), progress=False).execute()


def test_shard_split_is_a_partition(tmp_path):
    from specbench.run.plan import parse_shard

    cfg = RunConfig(tasks=("gsm8k", "wmt"), limit=5, out_dir=str(tmp_path))
    full = make_plan(cfg)
    parts = [make_plan(cfg, parse_shard(f"{k}/3")) for k in (1, 2, 3)]
    all_ids = sorted((t, q.question_id) for p in parts for t, qs in p.questions.items() for q in qs)
    assert all_ids == sorted((t, q.question_id) for t, qs in full.questions.items() for q in qs)
    assert len({run_dir_for(p) for p in parts}) == 3


def test_tie_threshold_defaults_by_dtype(tmp_path):
    base = dict(tasks=("gsm8k",), limit=1, out_dir=str(tmp_path))
    assert make_plan(RunConfig(**base)).config.tie_threshold == 1e-4
    assert make_plan(RunConfig(dtype="bfloat16", **base)).config.tie_threshold == 2e-2
    assert make_plan(RunConfig(dtype="bfloat16", tie_threshold=1e-3, **base)).config.tie_threshold == 1e-3


@pytest.mark.embedded
def test_warm_up_covers_every_tasks_drafters_before_any_timing(embedded, tmp_path, monkeypatch):
    from specbench.engine.loop import Engine

    cfg = RunConfig(methods=("pld",), tasks=("gsm8k", "humaneval"), limit=1, max_new_tokens=3, warmup=1,
                    out_dir=str(tmp_path))
    plan = make_plan(cfg)
    events = []
    real_generate, real_timed = Engine.generate, Runner._timed
    monkeypatch.setattr(Engine, "generate", lambda self, p, d, n, **k: events.append(("gen", d)) or real_generate(self, p, d, n, **k))
    monkeypatch.setattr(Runner, "_timed", lambda self, p, d, **k: events.append(("timed", d)) or real_timed(self, p, d, **k))
    runner = Runner(plan, run_dir_for(plan), loaded=embedded, progress=False)
    real_build = runner._build_drafters
    built = {}
    monkeypatch.setattr(runner, "_build_drafters", lambda: built.setdefault("d", real_build()))
    runner.execute()
    drafters = built["d"][0]
    first_timed = next(i for i, e in enumerate(events) if e[0] == "timed")
    warmed = [d for kind, d in events[:first_timed] if kind == "gen" and d is not None]
    # one pld warmed per task before any timing, on instances of its own: the timed ones run timed work only
    assert len(warmed) == 2 and all(type(w) is type(drafters[("pld", "gsm8k")]) for w in warmed)
    assert not any(w is d for w in warmed for d in drafters.values())
