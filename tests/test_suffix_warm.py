"""``suffix.warm=N``: the global index starts with the target's answers to dev-split questions, as the
reference simulator's cache starts with earlier responses; never with a question the run times."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.suffix.warm import greedy_answer, warm_questions
from specbench.api import ConfigError, DraftContext, MethodEnv, Question, build_drafter, make_task
from specbench.plugins.discovery import load_plugins


class CharTokenizer:
    """A tokenizer without a chat template: one id per character (mod the tiny vocabulary), no stop token."""

    chat_template = None
    eos_token_id = None

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) % 60 + 2 for c in text]}

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(ord("a") + i % 26) for i in ids)

    def get_vocab(self) -> dict[str, int]:
        return {}


def _task_file(tmp_path: Path, n: int, turns: int = 1) -> str:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "turns": [f"question {i} turn {t}" for t in range(turns)]}) + "\n"
                            for i in range(n)))
    return f"jsonl:{path}"


def _env(tmp_path: Path, task: str, split: str = "eval") -> MethodEnv:
    return MethodEnv(make_tiny_model("llama"), CharTokenizer(), "tiny", torch.device("cpu"), None, tmp_path, task,
                     split=split)


def _ctx(tokens: list[int]) -> DraftContext:
    return DraftContext(tokens=tokens, prompt_len=2, hidden=torch.zeros(2), max_depth=8)


def test_warm_questions_are_the_dev_split_and_never_timed() -> None:
    load_plugins()
    qs = [Question(str(i), "t", ("q",)) for i in range(12)]  # dev split: the last 2
    task = make_task("gsm8k")
    assert [q.question_id for q in warm_questions(qs, task, "eval", 1)] == ["10"]
    assert [q.question_id for q in warm_questions(qs, task, "eval", 5)] == ["10", "11"]  # all the dev split has
    for timed in ("all", "dev"):  # the dev split is timed too: refused
        with pytest.raises(ConfigError, match=f"--split {timed} times"):
            warm_questions(qs, task, timed, 1)
    with pytest.raises(ConfigError, match="suffix.warm: .*no dev split"):
        warm_questions(qs[:5], task, "eval", 1)


def test_warm_prefills_the_global_index_with_dev_answers(tmp_path: Path) -> None:
    load_plugins()
    task = _task_file(tmp_path, 12, turns=2)
    env = _env(tmp_path, task)
    drafter, cfg = build_drafter("suffix", {"warm": "1", "warm_tokens": "6"}, env)
    assert (cfg["warm"], cfg["warm_tokens"]) == (1, 6)
    assert env.artifacts["warm"] == {"questions": ["q10"], "answers": 2, "tokens": 12}  # both turns of q10
    # the first warm answer, greedy from q10's first prompt, is in the global index before any generation
    t = make_task(task)
    q10 = t.split(t.load(None), "dev")[0]
    prompt = CharTokenizer()(f"{q10.turns[0]}\n")["input_ids"]
    answer = greedy_answer(env.model, prompt, 6, set())
    drafter.begin([1, 1])
    tree = drafter.propose(_ctx([1, 1, *answer[:3]]))
    assert tree is not None and tree.tokens[0] == answer[3] and answer[4] in tree.tokens[1:]
    cold, _ = build_drafter("suffix", {}, _env(tmp_path, task))
    cold.begin([1, 1])
    assert cold.propose(_ctx([1, 1, *answer[:3]])) is None


def test_warm_refuses_a_run_that_times_the_dev_split_and_bad_values(tmp_path: Path) -> None:
    load_plugins()
    task = _task_file(tmp_path, 12)
    with pytest.raises(ConfigError, match="--split all times"):
        build_drafter("suffix", {"warm": "1"}, _env(tmp_path, task, split="all"))
    with pytest.raises(ConfigError, match="use_global"):
        build_drafter("suffix", {"warm": "1", "use_global": "false"}, _env(tmp_path, task))
    with pytest.raises(ConfigError, match="warm"):
        build_drafter("suffix", {"warm": "-1"}, _env(tmp_path, task))


def test_the_runner_hands_its_split_to_warm(tmp_path: Path, monkeypatch) -> None:
    """An eval run warms from dev questions (named in the manifest) and times none of them; an ``all`` run,
    which times the dev split too, is refused before anything is timed."""
    from specbench.config.run_config import RunConfig
    from specbench.results.run_folder import read_manifest, read_records
    from specbench.run.plan import make_plan, run_dir_for
    from specbench.run.runner import Runner
    from tiny_model_dir import save_tiny_model

    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model, task = save_tiny_model(tmp_path / "model", seed=2), _task_file(tmp_path, 12)

    def plan(split: str, runs: str):
        return make_plan(RunConfig(methods=("suffix",), tasks=(task,), split=split, limit=1, max_new_tokens=6,
                                   warmup=0, model=str(model), device="cpu", out_dir=str(tmp_path / runs),
                                   method_options={"suffix": {"warm": 1, "warm_tokens": 6}}))

    ok = plan("eval", "eval")
    assert Runner(ok, run_dir_for(ok), progress=False).execute() == 0
    assert read_manifest(run_dir_for(ok))["artifacts"]["suffix"][task]["warm"]["questions"] == ["q10"]
    assert {r.question_id for r in read_records(run_dir_for(ok))} == {"q0"}
    every = plan("all", "all")
    with pytest.raises(ConfigError, match="--split all times"):
        Runner(every, run_dir_for(every), progress=False).execute()
