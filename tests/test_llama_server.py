"""llama.cpp's real server as an engine under test, on the embedded model with small limits (skipped where
``scripts/setup.sh`` did not build it): its rows lossless against engine:off at concurrency 1 and 2, our passes
agreeing with its own counters, a draft model written by ``draft_gguf.py``, and the OpenAI-compatible adapter."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.results.run_folder import read_records
from specbench.serving.llama_server import find_binary
from specbench.serving.process import EngineError

try:
    BINARY = find_binary()
except EngineError:
    BINARY = None

pytestmark = [pytest.mark.embedded, pytest.mark.skipif(BINARY is None, reason="llama-server not built")]
NGRAM = ["--method-opt", "engine:ngram.spec-ngram-simple-size-n=2", "--method-opt", "engine:ngram.spec-ngram-simple-size-m=8"]


def run(tmp_path, name, *extra) -> tuple[int, Path]:
    out = tmp_path / "res"
    code = main(["run", "--tasks", "gsm8k", "--limit", "2", "--max-new-tokens", "40", "--warmup", "0", "--no-progress",
                 "--out-dir", str(out), "--run-name", name, *extra])
    return code, out / name


def test_llama_server_rows_are_lossless_and_our_passes_match_its_counters(embedded, tmp_path) -> None:
    code, run_dir = run(tmp_path, "native", "--engine", "llama-server", "--methods", "engine:ngram", *NGRAM,
                        "--concurrency", "1,2")
    assert code == 0
    recs = read_records(run_dir)
    spec = [r for r in recs if r.method == "engine:ngram" and r.unit.batch == 1]
    assert len(spec) == 2 and all(r.lossless_class in ("exact", "tie") for r in recs if r.lossless_class)
    assert {r.unit.batch for r in recs if r.method.startswith("engine:")} == {1, 2}
    for r in spec:  # every draft token the engine made is in our passes; accepted ones past the output's end are not
        state = r.drafter_state
        assert r.drafted == state["draft_n"] and r.accepted <= state["draft_n_accepted"]
        assert sum(r.accept_lengths) == r.new_tokens == state["predicted_n"]
    assert sum(r.drafted for r in spec) > 0, "size-n 2 n-gram lookup drafted nothing on two GSM8K answers"
    counters = json.loads((run_dir / "engine" / "counters.json").read_text())[0]["counters"]["engine:ngram"]
    every = [r for r in recs if r.method == "engine:ngram"]
    assert counters["draft_tokens"] == sum(r.drafted for r in every)
    off = {r.unit: r.output_ids for r in recs if r.method == "engine:off" and r.unit.batch == 1}
    ar = {r.unit: r.output_ids for r in recs if r.method == "ar"}
    assert set(off) == set(ar)  # (compared in the report; llama.cpp's F32 and torch's round differently)
    report = (run_dir / "report.md").read_text()
    assert "engine:off vs specbench's ar" in report and "## Concurrency levels 1, 2" in report
    assert (run_dir / "engine" / "engine_ngram.log").stat().st_size > 0


def test_llama_server_drafts_with_a_draft_gguf(embedded, tmp_path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from specbench.engine.backends.llamacpp.gguf_files import gguf_model
    from specbench.serving.draft_gguf import write_draft_gguf

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=embedded.model.config.vocab_size, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
    draft = write_draft_gguf(LlamaForCausalLM(cfg).eval(), None, gguf_model("embedded", "float32").path,
                             tmp_path / "draft.gguf")
    code, run_dir = run(tmp_path, "draft", "--engine", "llama-server", "--methods", "engine:draft", "--method-opt",
                        f"engine:draft.model={draft}", "--method-opt", "engine:draft.spec-draft-p-min=0")
    assert code == 0
    spec = [r for r in read_records(run_dir) if r.method == "engine:draft"]
    assert all(r.lossless_class in ("exact", "tie") for r in spec) and sum(r.drafted for r in spec) > 10
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert str(draft) in manifest["engine"]["settings"]["engine:draft"]["argv"]


def test_openai_adapter_on_llama_servers_openai_endpoint(embedded, tmp_path) -> None:
    from specbench.engine.backends.llamacpp.gguf_files import gguf_model
    from specbench.serving.llama_server import LlamaServer

    gguf = gguf_model("embedded", "float32").path
    servers = [LlamaServer(label, BINARY, gguf, ["--spec-type", kind, *flags], tmp_path / "logs", threads=2, ctx=1024,
                           parallel=1, vocab=embedded.model.config.vocab_size)
               for label, kind, flags in (("off", "none", []), ("ngram", "ngram-simple",
                                                                 ["--spec-ngram-simple-size-n", "2"]))]
    try:
        for s in servers:
            s.start()
        code, run_dir = run(tmp_path, "oa", "--engine", f"openai:{servers[0].url}", "--methods", "engine:ngram",
                            "--method-opt", f"engine:ngram.url={servers[1].url}")
        assert code == 0
        recs = read_records(run_dir)
        spec = [r for r in recs if r.method == "engine:ngram"]
        assert all(r.lossless_class in ("exact", "tie") for r in spec)
        assert all(r.drafted == r.drafter_state.get("draft_n", 0) for r in spec)
        # the same greedy ids as the native endpoint gives
        native = servers[0].complete(read_prompt(embedded, recs), 40).output_ids
        assert native == next(r.output_ids for r in recs if r.method == "engine:off")
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["engine"]["settings"]["engine:off"]["dialect"] == "llama.cpp"
    finally:
        for s in servers:
            s.stop()


def read_prompt(lm, recs) -> list[int]:
    """The first engine:off record's prompt ids, rebuilt as the runner built them."""
    from specbench.paths import resolve_data_dir
    from specbench.plugins.registry import make_task
    from specbench.prompts.templates import resolve_template

    first = next(r for r in recs if r.method == "engine:off")
    task = make_task("gsm8k")
    q = next(q for q in task.load(resolve_data_dir(None)) if q.question_id == first.question_id)
    template = resolve_template("auto", lm.tokenizer, lm.model_id, lm.model.config)
    return template.encode(lm.tokenizer, task.messages(q, 0, []))
