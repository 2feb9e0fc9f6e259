"""``--repeats``: every repeat of a unit starts from the same drafter and budget state.

A drafter that learns across generations (SuffixDecoding's index of earlier answers, Token Recycling's
matrix, samd through such an auxiliary) and a ``budget=auto`` budget must not see a question's answer
before that question's last timed repeat: greedy decoding repeats the same output, so a leak shows as a
higher tau at repeat 1 than at repeat 0. Checked for every registered method on a tiny random Llama over a
character tokenizer (seconds): alone, under ``budget=auto``, batched (size 2), and interrupted after repeat 0
then resumed (the same records as an uninterrupted run).

Example of the leak this catches: ``suffix`` at repeat 1 of q1 finds repeat 0's answer in its global index
and drafts all of it: without the isolation its tau on q1 was 1.85 at repeat 0 and 4.0 at repeat 1 (recycling:
3.0 and 4.8). A new method is picked up automatically; if it needs options to build on the tiny model, add
them to ``OPTIONS`` in ``tests/every_method.py``.
"""
from __future__ import annotations

import copy
import json

import pytest

from every_method import QUESTIONS, every_method_options
from hub_fixtures import tiny_vicuna
from specbench.config.run_config import RunConfig
from specbench.budget.auto_budget import AutoBudget
from specbench.plugins.registry import METHODS
from specbench.results.record import Record, Unit
from specbench.results.run_folder import RecordWriter, read_records
from specbench.run.drafter_state import RepeatIsolation
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner


class Holder:
    """A stand-in drafter: ``stateful`` declares state across generations; ``state`` is that state."""

    def __init__(self, stateful: bool) -> None:
        self.keeps_state_across_generations = stateful
        self.state: list[int] = []


def test_repeat_isolation_by_hand() -> None:
    """Repeat 0 on the live parts, later repeats on copies of their state before it; a stateless part (a
    drafter holding a model) is never copied; a repeat without its repeat 0's state is an error."""
    iso = RepeatIsolation(3)
    learner, model_holder = Holder(True), Holder(False)
    learner.state.append(1)  # what earlier questions taught it
    units = [Unit("t", "q1", 1, r) for r in range(3)]
    assert iso.parts_for("slot", units[:1], [learner, model_holder, None]) == [learner, model_holder, None]
    learner.state.append(2)  # repeat 0 learns its answer
    first = iso.parts_for("slot", units[1:2], [learner, model_holder, None])
    assert first[0] is not learner and first[0].state == [1] and first[1:] == [model_holder, None]
    first[0].state.append(3)  # repeat 1's own answer goes nowhere
    last = iso.parts_for("slot", units[2:], [learner, model_holder, None])
    assert last[0].state == [1] and learner.state == [1, 2]
    assert [iso.learns(u) for u in units] == [True, False, False]
    with pytest.raises(RuntimeError, match="repeat 0"):  # the last repeat dropped the snapshot
        iso.parts_for("slot", units[1:2], [learner, model_holder, None])


def test_samd_copies_share_the_corpus_automaton() -> None:
    """samd keeps state only through a learning auxiliary; a copy shares its read-only corpus automaton."""
    from specbench_methods.recycling.method import RecyclingConfig, RecyclingDrafter
    from specbench_methods.samd.method import SamdConfig, SamdDrafter
    from specbench_methods.samd.static_sam import StaticSAM

    static = StaticSAM.from_tokens([1, 2, 3, 1, 2, 4], 8)
    assert not SamdDrafter(SamdConfig(), static, None).keeps_state_across_generations
    aux = RecyclingDrafter(RecyclingConfig(), 8)
    drafter = SamdDrafter(SamdConfig(auxiliary="recycling", static="true"), static, aux)
    assert drafter.keeps_state_across_generations
    clone = copy.deepcopy(drafter)
    assert clone.static is static and clone.aux is not drafter.aux and clone.aux.matrix is not drafter.aux.matrix


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    """(a run-config maker, the folder runs go under): tiny model, tasks file and a private cache."""
    root = tmp_path_factory.mktemp("repeats")
    model_dir = tiny_vicuna(root / "model", seed=5)
    tasks = root / "qs.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    options = every_method_options(str(model_dir))
    with pytest.MonkeyPatch.context() as m:
        m.setenv("SPECBENCH_CACHE", str(root / "cache"))

        def config(name: str, methods: tuple[str, ...], limit: int = 2, **kw) -> RunConfig:
            mine = {label: opts for label, opts in options.items() if label in methods}
            return RunConfig(methods=methods, tasks=(f"jsonl:{tasks}",), limit=limit, max_new_tokens=24, repeats=2,
                             warmup=0, model=str(model_dir), device="cpu", chat_template="raw",
                             out_dir=str(root / name), method_options=mine, **kw)

        yield config


def run(config: RunConfig) -> list[Record]:
    plan = make_plan(config)
    Runner(plan, run_dir_for(plan), progress=False).execute()
    return read_records(run_dir_for(plan))


def tau(rec: Record) -> float:
    """Tokens emitted per forward pass (the prefill included)."""
    return sum(rec.accept_lengths) / len(rec.accept_lengths)


def by_repeat(records: list[Record], method: str) -> dict[tuple, dict[int, Record]]:
    """(question, turn, batch size) -> repeat -> ``method``'s record."""
    out: dict[tuple, dict[int, Record]] = {}
    for r in records:
        if r.method == method:
            out.setdefault((r.unit.question_id, r.unit.turn, r.unit.batch), {})[r.unit.repeat] = r
    return out


def assert_repeats_alike(records: list[Record], method: str) -> None:
    units = by_repeat(records, method)
    assert units and all(len(reps) == 2 for reps in units.values()), f"{method}: records missing"
    for unit, reps in units.items():
        first, second = reps[0], reps[1]
        assert first.output_ids == second.output_ids  # greedy: the same answer twice
        assert (tau(first), first.accept_lengths) == (tau(second), second.accept_lengths), \
            f"{method} {unit}: tau {tau(first):.2f} at repeat 0, {tau(second):.2f} at repeat 1"


@pytest.fixture(scope="module")
def every_method(setup) -> list[Record]:
    return run(setup("all", tuple(METHODS.names()) + ("samd@rec",), limit=1))


@pytest.mark.parametrize("method", METHODS.names() + ["samd@rec"])
def test_every_repeat_of_every_method_drafts_alike(every_method, method: str) -> None:
    assert_repeats_alike(every_method, method)
    if method in ("suffix", "recycling", "samd@rec"):  # the learning methods really draft (a leak would show)
        assert any(sum(r.accept_lengths) > len(r.accept_lengths) for r in every_method if r.method == method)


def test_budget_auto_repeats_start_from_the_same_budget(setup, monkeypatch) -> None:
    """``budget=auto`` learns acceptance across generations: pld (no state of its own) too. The cost profile
    is a fixed curve, drafting time is priced as zero and nothing is calibrated from the steps' timings, so the
    budget's choices (draft or skip included) depend on its state alone."""
    import specbench.profiling.cost_profile as cost_profile
    from specbench.budget.step_costs import StepCosts

    for name in ("observe_forward", "observe_overhead", "observe_draft"):
        monkeypatch.setattr(StepCosts, name, lambda self, *a, **k: None)

    monkeypatch.setattr(cost_profile, "measure_forward_curve",
                        lambda model, context, sizes, repeats, backend="auto": {n: 0.01 * (1 + 0.3 * n) for n in sizes})
    select = AutoBudget.select
    monkeypatch.setattr(AutoBudget, "select", lambda self, tree, draft_s=0.0, aux_rows=0, context=None:
                        select(self, tree, 0.0, aux_rows, context))
    records = run(setup("budget", ("pld", "suffix", "recycling"), budget="auto"))
    for method in ("pld@auto", "suffix@auto", "recycling@auto"):
        assert_repeats_alike(records, method)


def test_batched_repeats_start_from_the_same_pool(setup) -> None:
    records = run(setup("batched", ("suffix", "recycling", "pld"), limit=3, batch_size=(2,)))
    assert {r.unit.batch for r in records if r.method == "suffix"} == {2}
    for method in ("suffix", "recycling", "pld"):
        assert_repeats_alike(records, method)


@pytest.mark.parametrize("batch", [1, 2])
def test_run_interrupted_after_repeat_0_resumes_as_uninterrupted(setup, monkeypatch, batch: int) -> None:
    """Interrupted after q3's repeat 0 (suffix's state: q1's and q2's answers learned; q3's, not yet at its
    repeat 1), the resumed run's records equal an uninterrupted run's."""
    whole = run(setup(f"whole{batch}", ("suffix",), limit=3, batch_size=(batch,)))
    cut = setup(f"cut{batch}", ("suffix",), limit=3, batch_size=(batch,))
    original = RecordWriter.write

    def dies_at_q3_repeat_1(self, rec: Record) -> None:
        if rec.method == "suffix" and rec.unit.question_id == "q3" and rec.unit.repeat == 1:
            raise KeyboardInterrupt
        original(self, rec)

    with monkeypatch.context() as m:
        m.setattr(RecordWriter, "write", dies_at_q3_repeat_1)
        with pytest.raises(KeyboardInterrupt):
            run(cut)
    resumed = run(cut)
    steps = lambda recs: {r.key: (r.output_ids, r.draft_sizes, r.accept_lengths) for r in recs}  # noqa: E731
    assert steps(resumed) == steps(whole)
    assert len([r for r in resumed if r.method == "suffix"]) == 4 * 2  # q1's two turns, q2, q3; two repeats each
    assert_repeats_alike(resumed, "suffix")
