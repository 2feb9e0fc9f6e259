"""The llama.cpp backend around the engine: the embedded model's F32 GGUF holds exactly the weights the
transformers backends run, prompt ids are the same on every backend, a run on the embedded model records
and labels the backend, and what cannot run says so in one line (no extra installed, q8_0 on a torch
backend, --batch-size above 1)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from llamacpp_fixtures import needs_llamacpp
from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError
from test_cli_errors import run_main


def test_missing_library_is_a_one_line_error_naming_the_extra(monkeypatch) -> None:
    import specbench.engine.backends.llamacpp.library as lib

    monkeypatch.setattr(lib, "available", lambda: False)
    lib.llama.cache_clear()
    try:
        with pytest.raises(lib.LlamaCppMissing, match=r"--backend llamacpp needs llama.cpp: pip install 'specbench\[llamacpp\]'"):
            lib.llama()
    finally:
        lib.llama.cache_clear()


def test_missing_library_from_the_cli(monkeypatch, capsys, tmp_path) -> None:
    import specbench.engine.backends.llamacpp.library as lib

    monkeypatch.setattr(lib, "available", lambda: False)
    lib.llama.cache_clear()
    try:
        code, err = run_main(["run", "--backend", "llamacpp", "--methods", "pld", "--tasks", "gsm8k", "--limit", "1",
                              "--out-dir", str(tmp_path), "--no-progress"], capsys)
    finally:
        lib.llama.cache_clear()
    lines = err.splitlines()  # the plan's own line, then the error
    assert code == 2 and "specbench[llamacpp]" in lines[-1] and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("kwargs, needle", [
    ({"dtype": "q8_0"}, "q8_0 and q4_1 run on --backend llamacpp"),
    ({"backend": "llamacpp", "dtype": "q5_k"}, "on --backend llamacpp"),
    ({"backend": "llamacpp", "batch_size": (1, 2)}, "--batch-size above 1 does not run on --backend llamacpp"),
    ({"backend": "llamacpp", "threads": 0}, "--threads must be a positive integer"),
])
def test_configs_that_cannot_run_are_refused(kwargs, needle) -> None:
    with pytest.raises(ConfigError, match=needle):
        RunConfig(**kwargs).validate()
    RunConfig(backend="llamacpp", dtype="q4_1", threads=2).validate()


@pytest.mark.embedded
@needs_llamacpp
def test_f32_gguf_holds_the_weights_transformers_runs(embedded) -> None:
    from gguf import GGUFReader

    from specbench.engine.backends.llamacpp.gguf_files import gguf_model

    g = gguf_model("embedded", "float32")
    reader = GGUFReader(g.path)
    tensors = {t.name: np.asarray(t.data).reshape(tuple(reversed(t.shape.tolist()))) for t in reader.tensors}
    sd = {k: v.numpy() for k, v in embedded.model.state_dict().items()}
    heads, kv = embedded.model.config.num_attention_heads, embedded.model.config.num_key_value_heads

    def interleaved(w: np.ndarray, n: int) -> np.ndarray:  # llama.cpp's rope layout of q and k rows
        return w.reshape(n, 2, w.shape[0] // n // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    assert np.array_equal(tensors["token_embd.weight"], sd["model.embed_tokens.weight"])
    assert np.array_equal(tensors["output_norm.weight"], sd["model.norm.weight"])
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    layers = embedded.model.config.num_hidden_layers
    for i in range(layers):
        p = f"model.layers.{i}."
        assert np.array_equal(tensors[f"blk.{i}.attn_q.weight"], interleaved(sd[p + "self_attn.q_proj.weight"], heads))
        assert np.array_equal(tensors[f"blk.{i}.attn_k.weight"], interleaved(sd[p + "self_attn.k_proj.weight"], kv))
        for ours, theirs in names.items():
            assert np.array_equal(tensors[f"blk.{i}.{ours}.weight"], sd[p + theirs + ".weight"]), (i, ours)
    assert len(tensors) == 2 + 9 * layers  # every tensor compared (the head is tied to the embedding)
    assert all(t.tensor_type.name == "F32" for t in reader.tensors)
    assert g.verification["pinned"] is True


@pytest.mark.embedded
@needs_llamacpp
def test_prompt_ids_identical_across_backends(embedded) -> None:
    from specbench.engine.backends.registry import load_model_for
    from specbench.prompts.task import encode_prompt

    llama = load_model_for("llamacpp", "embedded", "q8_0", "cpu")
    assert llama.dtype == "q8_0" and llama.gguf.path.name == "q8_0.gguf" and llama.model_hash == llama.gguf.sha256[:16]
    for text in ("List three prime numbers.", "def add(a, b):\n    return", "Ünïcödé, emoji 🙂 and\ttabs"):
        messages = [{"role": "user", "content": text}]
        assert encode_prompt(llama.tokenizer, messages) == encode_prompt(embedded.tokenizer, messages)


@pytest.mark.embedded
@needs_llamacpp
def test_run_on_the_embedded_model_records_and_labels_the_backend(tmp_path, capsys) -> None:
    # (one thread: llama.cpp's threads wait spinning, so two on a busy 2-core machine stall for seconds)
    code, _ = run_main(["run", "--backend", "llamacpp", "--threads", "1", "--methods", "pld,lookahead", "--tasks",
                        "gsm8k", "--limit", "1", "--max-new-tokens", "16", "--warmup", "0", "--out-dir", str(tmp_path),
                        "--run-name", "llama", "--no-progress"], capsys)
    assert code == 0
    manifest = json.loads((tmp_path / "llama" / "manifest.json").read_text())
    backend = manifest["backend"]
    assert backend["name"] == "llamacpp" and backend["threads"] == 1 and backend["gguf"]["dtype"] == "float32"
    assert backend["library"]["llama_cpp_python"] and "CPU" in backend["library"]["system_info"]
    assert manifest["model"]["hash"] == backend["gguf"]["sha256"][:16]
    records = [json.loads(line) for line in (tmp_path / "llama" / "records.jsonl").read_text().splitlines()]
    assert {r["method"] for r in records} == {"ar", "pld", "lookahead"}
    assert all(r.get("lossless_class") != "MISMATCH" for r in records)
    report = (tmp_path / "llama" / "report.md").read_text()
    assert "backend llamacpp (1 thread, GGUF float32)" in report
    assert "### Lossless check vs AR (GGUF fp32 token ids)" in report  # the precision the ids were compared at


@needs_llamacpp
def test_profile_puts_llamacpp_beside_fast(tmp_path, monkeypatch, capsys) -> None:
    """``specbench profile --backends fast,llamacpp`` on a tiny ``.gguf`` (transformers dequantises it for ``fast``)."""
    from conftest import make_tiny_model
    from llamacpp_fixtures import write_tiny_gguf

    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    gguf = write_tiny_gguf(make_tiny_model("llama", seed=1), tmp_path / "tiny.gguf")
    code, err = run_main(["profile", "--model", str(gguf), "--backends", "fast,llamacpp", "--threads", "1", "--sizes",
                          "1,2,4", "--repeats", "1", "--context", "16", "--out", str(tmp_path / "prof")], capsys)
    assert code == 0, err
    prof = json.loads((tmp_path / "prof" / "profile.json").read_text())
    assert list(prof["backends"]) == ["fast", "llamacpp"]
    assert (tmp_path / "cache" / "models" / "gguf").is_dir()  # the F32 rewrite went to the run's cache
