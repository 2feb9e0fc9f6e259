"""What a run can know before any generation, it refuses before any generation (``run/context_fit.py``,
``run/method_requirements.py``): a later turn whose user turns alone overflow the context, a method whose draft
cannot be made from this target (``pard`` on GPT-2) before other methods' first-use builds ran; and a run that
stopped where it can never go on is not told to resume by ``check``."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from fault_helpers import DEFAULT_MANIFEST, cli, fake_run, record
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.plugins.registry import METHODS, MethodSpec
from specbench.results.check import check_run
from specbench.results.run_folder import UNRUNNABLE, read_manifest
from specbench.run.context_fit import checked_fit
from tiny_model_dir import save_tiny_gpt2, save_tiny_model


def run_argv(model: Path, tasks: str, out: Path, methods: str = "pld", tokens: int = 8) -> list[str]:
    return ["run", "--model", str(model), "--tasks", tasks, "--methods", methods, "--max-new-tokens", str(tokens),
            "--warmup", "1", "--out-dir", str(out), "--run-name", "r", "--no-progress", "--device", "cpu"]


@pytest.fixture
def generations(monkeypatch) -> list[int]:
    """Counts every generation the engine runs (warm-up included)."""
    calls: list[int] = []
    real = Engine.generate

    def counted(self, prompt_ids, *a, **kw):
        calls.append(len(prompt_ids))
        return real(self, prompt_ids, *a, **kw)

    monkeypatch.setattr(Engine, "generate", counted)
    return calls


def test_a_later_turn_past_the_context_from_its_user_turns_alone_is_refused_before_any_generation(
        tmp_path: Path, capsys, generations: list[int]) -> None:
    model = save_tiny_model(tmp_path / "model", context=512)
    turn = " ".join(["seven"] * 130)  # about 130 tokens: turns 1 and 2 fit 512 with their answers, turn 3 cannot
    tasks = tmp_path / "q.jsonl"
    tasks.write_text(json.dumps({"id": "short", "turns": ["Hi."]}) + "\n"
                     + json.dumps({"id": "long", "turns": [turn, turn, turn]}) + "\n")
    code, err = cli(run_argv(model, f"jsonl:{tasks}", tmp_path / "res"), capsys)
    assert code == 2, err
    line = err.splitlines()[-1]
    assert f"jsonl:{tasks}/long turn 3: its prompt without the earlier answers (" in line, line
    assert "exceeds the model's context of 512 tokens" in line
    assert generations == [] and not (tmp_path / "res" / "r" / "records.jsonl").exists()


def test_the_same_question_with_two_turns_runs(tmp_path: Path, capsys, generations: list[int]) -> None:
    """The control: turns 1 and 2 of the same question fit, so the check refuses nothing that can run."""
    model = save_tiny_model(tmp_path / "model", context=512)
    turn = " ".join(["seven"] * 130)
    tasks = tmp_path / "q.jsonl"
    tasks.write_text(json.dumps({"id": "long", "turns": [turn, turn]}) + "\n")
    code, err = cli(run_argv(model, f"jsonl:{tasks}", tmp_path / "res", methods="ar"), capsys)
    assert code == 0, err
    assert len(generations) == 3  # one warm-up, two turns


def test_a_unit_found_past_the_context_at_run_time_is_noted_and_check_suggests_no_resume(tmp_path: Path) -> None:
    run_dir = fake_run(tmp_path / "r", [record("ar", [5, 6])], manifest=DEFAULT_MANIFEST)
    limited = type("M", (), {"config": type("C", (), {"max_position_embeddings": 200})()})()
    checked_fit(run_dir, limited, 60, 8, "gsm8k/1 turn 1 repeat 0")  # fits: nothing noted
    assert UNRUNNABLE not in read_manifest(run_dir)
    code, lines = check_run(run_dir, decode=False)
    assert code == 1 and "re-run its command to resume it" in lines[-1]  # (an interrupted run: resuming helps)
    with pytest.raises(ConfigError, match="exceeds the model's context of 200 tokens"):
        checked_fit(run_dir, limited, 90, 8, "gsm8k/1 turn 1 repeat 0")
    assert read_manifest(run_dir)[UNRUNNABLE]["unit"] == "gsm8k/1 turn 1 repeat 0"
    code, lines = check_run(run_dir, decode=False)
    assert code == 1 and "resume" not in lines[-1] and "re-running its command stops there again" in lines[-1]
    assert "gsm8k/1 turn 1 repeat 0: prompt (90 tokens)" in lines[-1]


@dataclass(frozen=True)
class NoOptions:
    def validate(self) -> None:
        return None


def test_pard_on_gpt2_is_refused_before_any_method_is_built(tmp_path: Path, capsys, monkeypatch,
                                                            generations: list[int]) -> None:
    built: list[str] = []
    METHODS.names()  # discovery first, so the entry added below is not overwritten
    monkeypatch.setitem(METHODS._entries, "spy", MethodSpec("spy", NoOptions, lambda c, e: built.append(e.task), "spy"))
    model = save_tiny_gpt2(tmp_path / "gpt2")
    code, err = cli(run_argv(model, "gsm8k", tmp_path / "res", methods="spy,pard,sps").__add__(["--limit", "1"]),
                    capsys)
    assert code == 2, err
    line = err.splitlines()[-1]
    assert line.startswith("specbench run: error: method pard: GPT2LMHeadModel has no `layers`/`norm` to copy"), line
    assert "pard.draft_model=" in line and "; method sps: GPT2LMHeadModel" in line and "sps.draft_model=" in line
    assert built == [] and generations == []  # no method's build (nor any generation) ran before the refusal


def test_a_llama_style_target_or_a_given_draft_passes_the_requirement() -> None:
    from conftest import make_tiny_model
    from specbench.plugins.registry import MODEL_REQUIREMENTS
    from specbench.run.methods_factory import method_config

    pard, gpt2 = MODEL_REQUIREMENTS.get("pard"), make_tiny_model("gpt2")
    assert pard(method_config("pard"), make_tiny_model("llama")) is None
    assert pard(method_config("pard", {"draft_model": "some/pard-checkpoint"}), gpt2) is None
    assert "Llama-style models only" in pard(method_config("pard"), gpt2)
