"""Cross-generation drafter state in the runner (tiny model, a toy drafter that learns from finished outputs).

- warm-up isolation: the timed drafters never run a warm-up generation, the warm-up runs on instances of
  its own (one per task), and the manifest records each artifact once;
- learning: after each timed generation its drafter ``learn``s that output, in plan order;
- resume equivalence: a run interrupted and resumed gives the same records (outputs, drafts, acceptance)
  as an uninterrupted one, because the resumed run replays the finished records; without the replay it
  does not (the negative control: the test can fail).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import specbench.run.runner as runner_module
from specbench.api import BaseDrafter, DraftContext, DraftTree, MethodEnv
from specbench.config.run_config import RunConfig
from specbench.plugins.registry import METHODS, MethodSpec
from specbench.results.run_folder import RecordWriter, read_manifest, read_records
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner
from tiny_model_dir import save_tiny_model

TOY = "toy_learner"


@dataclass(frozen=True)
class ToyConfig:
    depth: int = 4

    def validate(self) -> None:
        return None


class ToyLearner(BaseDrafter):
    """Drafts the last learned output, as many tokens as outputs learned (capped): its drafts show its state."""

    def __init__(self, task: str, depth: int) -> None:
        self.task, self.depth = task, depth
        self.learned: list[tuple[list[int], list[int]]] = []
        self.begins: list[int] = []  # len(learned) at each begin

    def begin(self, prompt_ids: list[int]) -> None:
        self.begins.append(len(self.learned))

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        if not self.learned:
            return None
        n = min(len(self.learned), self.depth, ctx.max_depth)
        out = self.learned[-1][1]
        return DraftTree.chain((out * n)[:n])

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        self.learned.append((prompt_ids, output_ids))


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> list[ToyLearner]:
    """Registers ``toy_learner`` for this test only; returns every instance its factory builds, in order."""
    built: list[ToyLearner] = []

    def factory(config: ToyConfig, env: MethodEnv) -> ToyLearner:
        env.artifacts["toy"] = {"task": env.task}
        built.append(ToyLearner(env.task, config.depth))
        return built[-1]

    METHODS.names()  # discovery first, so the entry added below is not overwritten
    monkeypatch.setitem(METHODS._entries, TOY, MethodSpec(TOY, ToyConfig, factory, "toy"))
    return built


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("model"), seed=2)


def plan_for(tmp_path: Path, model_dir: Path, warmup: int = 1, runs: str = "runs"):
    """Two tasks (JSONL files in ``tmp_path``): alpha with a two-turn question, beta; results under ``runs``."""
    a = tmp_path / "alpha.jsonl"
    b = tmp_path / "beta.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "a1", "turns": ["Say one two three.", "Again, louder."]},
        {"id": "a2", "turns": ["Count to five."]},
        {"id": "a3", "turns": ["Name a colour."]},
    ]))
    b.write_text("".join(json.dumps(r) + "\n" for r in [{"id": "b1", "turns": ["Hello."]}, {"id": "b2", "turns": ["Bye."]}]))
    cfg = RunConfig(methods=(TOY,), tasks=(f"jsonl:{a}", f"jsonl:{b}"), max_new_tokens=10, warmup=warmup,
                    model=str(model_dir), device="cpu", out_dir=str(tmp_path / runs))
    return make_plan(cfg)


def comparable(run_dir: Path) -> dict:
    """Everything a record says about the generation, timing and memory aside."""
    return {(r.method, r.unit): (r.output_ids, r.draft_sizes, r.accept_lengths, r.draft_depths)
            for r in read_records(run_dir)}


def test_warm_up_runs_on_its_own_drafters_and_timed_ones_learn_in_plan_order(tmp_path, model_dir, toy, monkeypatch):
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    plan = plan_for(tmp_path, model_dir, warmup=2)
    run_dir = run_dir_for(plan)
    assert Runner(plan, run_dir, progress=False).execute() == 0
    tasks = list(plan.tasks)
    timed, warm = toy[:2], toy[2:]
    assert [d.task for d in timed] == tasks and sorted(d.task for d in warm) == sorted(tasks)
    records = [r for r in read_records(run_dir) if r.method == TOY]
    for d in timed:
        mine = [r for r in records if r.task == d.task]
        # every begin of a timed drafter is a timed generation, the first with nothing learned
        assert d.begins == list(range(len(mine)))
        assert [out for _, out in d.learned] == [r.output_ids for r in mine]
        assert all(len(p) == r.prompt_tokens for (p, _), r in zip(d.learned, mine))
    for d in warm:  # warmed twice on the first question, learned nothing, never timed
        assert d.begins == [0, 0] and not d.learned
    assert any(sum(r.draft_sizes) > 0 for r in records)  # the learned state really drafts
    manifest = read_manifest(run_dir)
    assert manifest["artifacts"][TOY] == {t: {"toy": {"task": t}} for t in tasks}


def test_resumed_run_gives_the_records_of_an_uninterrupted_one(tmp_path, model_dir, toy, monkeypatch):
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    whole = plan_for(tmp_path, model_dir, runs="whole")
    Runner(whole, run_dir_for(whole), progress=False).execute()
    expected = comparable(run_dir_for(whole))

    def interrupted_then_resumed(runs: str, replay: bool) -> dict:
        plan = plan_for(tmp_path, model_dir, runs=runs)
        run_dir = run_dir_for(plan)
        original = RecordWriter.write
        calls = {"n": 0}

        def flaky(self, rec):  # dies after the 5th record: a1 (2 turns, ar + toy) and a2's ar answer
            if calls["n"] == 5:
                raise KeyboardInterrupt
            calls["n"] += 1
            original(self, rec)

        with monkeypatch.context() as m:
            m.setattr(RecordWriter, "write", flaky)
            with pytest.raises(KeyboardInterrupt):
                Runner(plan, run_dir, progress=False).execute()
        assert len(read_records(run_dir)) == 5
        with monkeypatch.context() as m:
            if not replay:
                m.setattr(runner_module, "replay", lambda *a, **k: None)
            Runner(plan, run_dir, progress=False).execute()
        return comparable(run_dir)

    assert interrupted_then_resumed("resumed", replay=True) == expected
    # the control: a resumed run whose drafters start empty drafts differently (this test can fail)
    assert interrupted_then_resumed("no_replay", replay=False) != expected
