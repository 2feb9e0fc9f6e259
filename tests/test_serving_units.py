"""Engines under test, without a server: passes rebuilt from counters, the streams' parsers, Prometheus counters,
settings and flags, the run configuration, the plan, the lossless references, the views of a run."""
from __future__ import annotations

import doctest
import importlib

import pytest

from specbench.catalog import ENGINE_BASELINE, reference_method
from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError, UnknownNameError
from specbench.results.lossless import EXACT, MISMATCH, TIE
from specbench.results.record import Record, Unit
from specbench.run.plan import config_digest, make_plan
from specbench.run.references import References
from specbench.serving.llama_stream import read_stream
from specbench.serving.openai_api import OpenAIEngine
from specbench.serving.passes import passes_of
from specbench.serving.process import EngineError
from specbench.serving.prometheus import parse_counters
from specbench.serving.reply import EngineReply, TokenEvent
from specbench.serving.settings import draft_model, setting_flags

MODULES = ("specbench.serving.passes", "specbench.serving.reply", "specbench.serving.llama_stream",
           "specbench.serving.openai_api", "specbench.serving.prometheus", "specbench.serving.settings",
           "specbench.serving.http_client", "specbench.serving.process", "specbench.serving.own_server", "specbench.config.engine_choice",
           "specbench.results.loaded_run", "specbench.reports.serving_report", "specbench.catalog")


def test_doctests() -> None:
    for name in MODULES:
        mod = importlib.import_module(name)
        result = doctest.testmod(mod)
        assert result.failed == 0 and result.attempted >= 1, name


def ev(ids, drafted=None, accepted=None, index=None, at=0.0):
    return TokenEvent(ids, at, index, drafted, accepted)


def test_passes_from_counters_split_steps_and_truncation() -> None:
    # prefill, plain, a step verifying 5 drafted and keeping 3 (4 tokens), a step that drafted 2 and kept none,
    # and a last step that kept 4 of 4 but the output ended after 2 of its 5 tokens
    events = [ev([1], 0, 0), ev([2], 0, 0)] + [ev([t], 5, 3) for t in (3, 4, 5, 6)] + [ev([7], 7, 3)] \
        + [ev([8], 11, 7), ev([9], 11, 7)]
    got = [(p.tokens, p.drafted) for p in passes_of(events)]
    assert got == [(1, 0), (1, 0), (4, 5), (1, 2), (2, 4)]
    assert sum(t for t, _ in got) == 9


def test_passes_without_counters_one_per_event_and_counters_backwards_plain() -> None:
    assert [(p.tokens, p.drafted) for p in passes_of([ev([1]), ev([2, 3]), ev([]), ev([4])])] == [(1, 0), (2, 0), (1, 0)]
    # counters that go backwards (garbage) are read as plain steps, never as negative drafts
    assert [(p.tokens, p.drafted) for p in passes_of([ev([1], 4, 2), ev([2], 1, 0)])] == [(1, 4), (1, 0)]


def test_a_gap_in_the_stream_is_filled_and_refetched() -> None:
    events = [ev([1], 0, 0, 0), ev([2], 0, 0, 1), ev([4], 3, 2, 3), ev([5], 3, 2, 4)]
    reply = EngineReply(events, 0.5, {"predicted_n": 5})
    assert reply.gaps(5) and not EngineReply(events[:2], 0.1).gaps(2)
    reply.refetched_ids = [1, 2, 3, 4, 5]
    gen = reply.as_generation()
    assert gen.output_ids == [1, 2, 3, 4, 5] and sum(gen.accept_lengths) == 5 and gen.accept_lengths == [1, 1, 3]


def test_read_stream_refuses_garbage_and_a_cut_stream() -> None:
    clock = iter(range(100)).__next__
    with pytest.raises(EngineError, match="without a list of token ids"):
        read_stream(iter([{"tokens": "abc"}]), clock, 100)
    with pytest.raises(EngineError, match="outside the vocabulary"):
        read_stream(iter([{"tokens": [100]}]), clock, 100)
    with pytest.raises(EngineError, match="before the final event"):
        read_stream(iter([{"tokens": [1], "tokens_predicted": 1}]), clock, 100)


def test_openai_chunks_vllm_style_and_llamacpp_style() -> None:
    engine = OpenAIEngine("engine:x", "http://127.0.0.1:1/v1", vocab=50)
    assert engine.base == "http://127.0.0.1:1" and engine.root == "http://127.0.0.1:1"
    vllm = [{"choices": [{"text": "a", "token_ids": [3, 4], "finish_reason": None}]},
            {"choices": [{"text": "b", "token_ids": [5], "finish_reason": "length"}]},
            {"choices": [], "usage": {"completion_tokens": 3}}]
    reply = engine._read(iter(vllm), 0.0)
    assert reply.output_ids == [3, 4, 5] and reply.as_generation().accept_lengths == [2, 1]
    assert reply.engine_stats == {"completion_tokens": 3, "finish_reason": "length"}
    text_only = [{"choices": [{"text": "a", "finish_reason": None}]}]
    with pytest.raises(EngineError, match="text without token ids"):
        engine._read(iter(text_only), 0.0)
    with pytest.raises(EngineError, match="before a finish_reason"):
        engine._read(iter(vllm[:1]), 0.0)


def test_own_server_asks_what_the_last_flag_says_and_reads_whose_socket_listens() -> None:
    import os
    import socket
    import subprocess
    import sys

    from specbench.serving.own_server import Asked, asked_of, listens

    argv = ["srv", "-m", "a.gguf", "-c", "4096", "-np", "2", "--spec-type", "ngram-simple", "--ctx-size", "8192",
            "--model", "b.gguf"]  # (flags a user adds come last and win, as in llama.cpp)
    assert asked_of(argv) == Asked("b.gguf", 4096, 2, True)
    assert asked_of(["srv", "-c", "0", "-np", "-1"]) == Asked(None, None, None, None)  # (the server's own choice)
    assert asked_of(["srv", "--spec-type", "none", "-md", "d.gguf"]).speculative is None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert listens(os.getpid(), port) is True
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert listens(other.pid, port) is False
        finally:
            other.kill()
            other.wait()
        assert listens(other.pid, port) is False  # (a process that is gone listens on nothing)


def test_prometheus_pages_of_three_engines() -> None:
    vllm = ('# HELP vllm:spec_decode_num_drafts_total x\n# TYPE vllm:spec_decode_num_drafts_total counter\n'
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 4.0\n'
            'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 12.0\n'
            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 6.0\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1",engine="0",model_name="m"} 2.0\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0",engine="0",model_name="m"} 4.0\n'
            'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n')
    c = parse_counters(vllm)
    assert (c.drafts, c.draft_tokens, c.accepted, c.per_position) == (4.0, 12.0, 6.0, (4.0, 2.0))
    assert c.acceptance_rate() == 0.5 and c.mean_accepted_length() == 2.5
    sglang = 'sglang:spec_accept_length{model_name="m"} 2.9\nsglang:spec_accept_rate{model_name="m"} 0.27\n'
    g = parse_counters(sglang)
    assert g.mean_accepted_length() == 2.9 and g.acceptance_rate() == 0.27 and g.minus(g).accept_length == 2.9
    assert parse_counters("<html>not a metrics page</html>") is None and parse_counters("") is None


def test_settings_flags_and_refusals() -> None:
    assert setting_flags("llama-server", "engine:draft", {"model": "d.gguf", "spec-draft-n-max": "8",
                                                          "flags": "--spec-draft-p-min 0.5"}) == \
        ["--spec-type", "draft-simple", "--spec-draft-n-max", "8", "--spec-draft-p-min", "0.5"]
    assert setting_flags("llama-server", "engine:ngram-mod", {"no-kv-offload": ""}) == \
        ["--spec-type", "ngram-mod", "--no-kv-offload"]
    assert draft_model("engine:draft", {}) == "sps" and draft_model("engine:ngram", {}) is None
    with pytest.raises(UnknownNameError, match="unknown llama-server setting 'nope'"):
        setting_flags("llama-server", "engine:nope", {})
    with pytest.raises(ConfigError, match="a flag name"):
        setting_flags("llama-server", "engine:ngram", {"Bad Key": "1"})
    with pytest.raises(ConfigError, match="needs a draft model"):
        setting_flags("llama-server", "engine:eagle3", {})


def test_run_config_refuses_engine_misuse() -> None:
    def bad(match, **kw):
        with pytest.raises(ConfigError, match=match):
            RunConfig(**kw).validate()

    bad("need --engine", methods=("engine:ngram",))
    bad("name its speculation settings", methods=("pld",), engine="llama-server")
    bad("--engine must be", methods=("engine:ngram",), engine="vllm")
    bad("--concurrency above 1", methods=("pld",), concurrency=(1, 4))
    bad("lists a level twice", methods=("engine:ngram",), engine="llama-server", concurrency=(4, 4))
    bad("greedy", methods=("engine:ngram",), engine="llama-server", temperature=0.7)
    with pytest.raises(ConfigError, match="decides its own draft lengths"):
        make_plan(RunConfig(methods=("engine:ngram@auto",), engine="llama-server", tasks=("gsm8k",), limit=1))
    with pytest.raises(ConfigError, match="url=http"):
        make_plan(RunConfig(methods=("engine:eagle3",), engine="openai:http://127.0.0.1:9", tasks=("gsm8k",), limit=1))


def test_plan_puts_the_engine_rows_after_specbench_s_and_keeps_old_digests() -> None:
    cfg = RunConfig(methods=("pld", "engine:ngram", "engine:ngram@n3"), engine="llama-server", tasks=("gsm8k",),
                    limit=2, concurrency=(1, 4), method_options={"engine:ngram@n3": {"spec-ngram-simple-size-n": "3"}})
    cfg.validate()
    plan = make_plan(cfg)
    assert plan.methods == ["ar", "pld"] and plan.engine_methods == [ENGINE_BASELINE, "engine:ngram", "engine:ngram@n3"]
    assert [m for u, _, m in plan.jobs() if u.question_id == plan.questions["gsm8k"][0].question_id] == plan.all_methods
    assert plan.options_of("engine:ngram@n3") == {"spec-ngram-simple-size-n": "3"}
    from specbench.run.serving_rows import concurrency_jobs
    jobs = list(concurrency_jobs(plan))
    assert [(j.method, j.level, len(j.units)) for j in jobs] == [(m, 4, 2) for m in plan.engine_methods]
    assert all(u.batch == 4 for j in jobs for u in j.units)
    # a run without an engine keeps the digest it had before engines existed
    plain = make_plan(RunConfig(methods=("pld",), tasks=("gsm8k",), limit=2))
    assert config_digest(plain) == "4e33af9f"  # (its digest at the commit before engines, pinned)
    assert config_digest(plan) != config_digest(make_plan(RunConfig(**{**cfg.__dict__, "concurrency": (1,)})))


def rec(method, ids, batch=1, **kw):
    return Record(method, "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, len(ids), 0.1, len(ids), 0.0, 0.1,
                  output_ids=ids, batch_size=batch if batch != 1 else None, **kw)


def test_references_check_engine_rows_against_engine_off_with_its_margin() -> None:
    asked = []

    def margin_at(label, prompt, ref, pos):
        asked.append((label, pos))
        return 1e-6 if pos == 2 else 0.5

    refs = References(greedy=True, threshold=1e-4, margin_at=margin_at)
    unit = Unit("gsm8k", "1", 1)
    assert refs.checked(rec("ar", [1, 2, 3, 4]), unit, [9]).lossless_class is None
    assert refs.checked(rec(ENGINE_BASELINE, [1, 2, 5, 6]), unit, [9]).lossless_class is None  # its reference
    assert refs.checked(rec("engine:ngram", [1, 2, 5, 6]), unit, [9]).lossless_class == EXACT and not asked
    assert refs.checked(rec("engine:ngram@b", [1, 2, 7, 6]), unit, [9]).lossless_class == TIE
    assert refs.checked(rec("engine:ngram@c", [1, 2, 5, 8]), unit, [9]).lossless_class == MISMATCH
    assert asked == [(ENGINE_BASELINE, 2), (ENGINE_BASELINE, 3)] and refs.mismatches == 1
    at4 = Unit("gsm8k", "1", 1, batch=4)
    assert refs.checked(rec(ENGINE_BASELINE, [1, 2, 5, 6], batch=4), at4, [9]).lossless_class == EXACT
    assert reference_method("engine:ngram@c") == ENGINE_BASELINE


def test_relabel_and_views_pair_engine_rows_with_engine_off() -> None:
    from pathlib import Path

    from specbench.results.loaded_run import Run, subject_view
    from specbench.results.relabel import rederived
    from specbench.results.validation import expected_keys

    records = [rec("ar", [1, 2, 3]), rec(ENGINE_BASELINE, [1, 2, 4]), rec("engine:ngram", [1, 2, 4], lossless=False,
                                                                             lossless_class=MISMATCH)]
    manifest = {"config": {"methods": ["ar", ENGINE_BASELINE, "engine:ngram"], "dtype": "float32",
                           "concurrency": [1, 2]}, "questions": {"gsm8k": ["1"]}}
    derived = rederived(records, manifest)
    assert [r.lossless_class for r in derived] == [None, None, EXACT]  # (against engine:off, not ar)
    view = subject_view(Run(Path("r"), manifest, derived), "engine")
    assert [r.method for r in view.records] == ["ar", "engine:ngram"] and view.manifest["view"] == "engine"
    keys = [(m, u.batch) for m, u in expected_keys(manifest, records)]
    assert keys == [("ar", 1), (ENGINE_BASELINE, 1), ("engine:ngram", 1), (ENGINE_BASELINE, 2), ("engine:ngram", 2)]
