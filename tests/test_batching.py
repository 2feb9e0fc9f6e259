"""Batched decoding (``--batch-size``): exactness on tiny random models of the four families, the batched
cache on a hand-worked example, the joint draft budget, and the runner end to end on a tiny model."""
from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from json_schema_subset import validate
from test_aux_rows import AuxProbe
from test_engine_exact import OracleDrafter, RandomDrafter
from tiny_model_dir import save_tiny_model
from specbench.config.run_config import RunConfig
from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.drafter import BaseDrafter
from specbench.engine.loop import Engine
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError
from specbench.reports.report import write_report
from specbench.reports.summary import SCHEMA_PATH
from specbench.results.check import check_run
from specbench.results.loaded_run import load_run
from specbench.results.run_folder import RecordWriter, read_records
from specbench.results.validation import expected_keys
from specbench.run.batch_jobs import batch_jobs
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]
STOP = 3  # a stop token for the tests that do not need one to occur


class PerPrompt(BaseDrafter):
    """One slot's drafter: delegates to the drafter made for the prompt ``begin`` receives."""

    def __init__(self, table: dict) -> None:
        self.table, self.cur = table, None

    def begin(self, prompt_ids):
        self.cur = self.table[tuple(prompt_ids)]
        self.cur.begin(prompt_ids)

    def propose(self, ctx):
        return self.cur.propose(ctx)

    def observe(self, result):
        self.cur.observe(result)


class Silent(BaseDrafter):
    """Drafts nothing: the sequence decodes as AR inside the batch."""

    def propose(self, ctx):
        return None


def _stop_token(model: torch.nn.Module, prompts: list[list[int]]) -> int:
    """A token some of the prompts' AR outputs emit and others do not, so those finish early."""
    outs = [Engine(model, stop_ids=set()).generate(p, None, 20).output_ids for p in prompts]
    for tok in dict.fromkeys(t for out in outs for t in out[2:]):
        if 0 < sum(tok in out for out in outs) < len(outs):
            return tok
    raise AssertionError("no token separates the outputs")


def _prompts(seed: int, n: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, 64) for _ in range(rng.randint(2, 24))] for _ in range(n)]


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_output_equals_ar_alone(family: str) -> None:
    """B = 1, 2, 3 (static and refilled): random, oracle and auxiliary-row drafters, prompts of different
    lengths, sequences finishing early at a stop token; every output equals AR decoded alone."""
    model = make_tiny_model(family, seed=1)
    prompts = _prompts(0, 6)
    engine = Engine(model, stop_ids={_stop_token(model, prompts)})
    ref = [engine.generate(p, None, 20).output_ids for p in prompts]
    assert len({len(r) for r in ref}) > 1  # some finish early
    for width, refill in [(1, False), (2, False), (2, True), (3, False), (3, True)]:
        kinds = itertools.cycle(["oracle", "random", "aux", None])
        table = {}
        for i, (p, r) in enumerate(zip(prompts, ref)):
            kind = next(kinds)
            table[tuple(p)] = (OracleDrafter(r[1:], len(p) + 1) if kind == "oracle" else RandomDrafter(i, 64)
                               if kind == "random" else AuxProbe(model, i, 64) if kind == "aux" else Silent())
        gens = BatchDecoder(engine, 20).generate([Request(p) for p in prompts], [PerPrompt(table) for _ in range(width)],
                                                 width, refill)
        assert [g.output_ids for g in gens] == ref, (width, refill)
        assert all(g.finished_s >= g.admitted_s >= 0 for g in gens)
        if refill and width < len(prompts):  # a waiting sequence entered when another had finished
            assert any(g.admitted_s >= min(h.finished_s for h in gens) for g in gens)
        oracle = [g for g, kind in zip(gens, itertools.cycle(["oracle", "random", "aux", None])) if kind == "oracle"]
        assert max(max(g.accept_lengths) for g in oracle) > 1  # the oracle's drafts were accepted in the batch


def test_batched_sampling_equals_sampling_alone() -> None:
    """At T > 0 each sequence samples from its own seeded generator: a batch gives each sequence the draws it
    gets alone (the tiny model's batched logits equal its single ones closely enough not to move a draw)."""
    model = make_tiny_model("llama", seed=2)
    engine = Engine(model, stop_ids={STOP})
    sampling = SamplingConfig(temperature=1.0, top_k=0, top_p=1.0, seed=0)
    prompts = _prompts(1, 4)
    alone = [engine.generate(p, RandomDrafter(i, 64), 16, sampling=sampling, seed=i).output_ids
             for i, p in enumerate(prompts)]
    table = {tuple(p): RandomDrafter(i, 64) for i, p in enumerate(prompts)}
    gens = BatchDecoder(engine, 16, sampling=sampling).generate(
        [Request(p, seed=i) for i, p in enumerate(prompts)], [PerPrompt(table) for _ in range(2)], 2)
    assert [g.output_ids for g in gens] == alone


def test_batched_cache_by_hand() -> None:
    """Slots of lengths 3 and 5 write their rows at their own columns; keeping a tree branch gathers."""
    cache = BatchedCache(slots=2, capacity=4)
    cache.lengths = [3, 5]
    layer_k = torch.arange(2 * 1 * 8 * 1, dtype=torch.float32).reshape(2, 1, 8, 1)
    plan = cache.plan_step(0, 2, 3, torch.device("cpu"))
    assert plan.cols.tolist() == [[3, 4, 5], [5, 6, 7]] and plan.span == 8
    cache.update(layer_k[:, :, :3] + 100, layer_k[:, :, :3] + 100, 0)
    layer = cache.layers[0]
    assert layer._k.shape[2] >= plan.needed  # grew (doubling) from 4
    assert layer._k[0, 0, 3:6, 0].tolist() == [100.0, 101.0, 102.0]
    assert layer._k[1, 0, 5:8, 0].tolist() == [108.0, 109.0, 110.0]
    cache.keep(0, [[0, 2], [0, 1, 2]])  # slot 0 keeps its root and row 2 (a branch), slot 1 its whole chain
    assert cache.lengths == [5, 8]
    assert layer._k[0, 0, 3:5, 0].tolist() == [100.0, 102.0]
    assert layer._k[1, 0, 5:8, 0].tolist() == [108.0, 109.0, 110.0]
    # freed when dropped, without the cyclic GC: its layers reach it through a weak proxy, not a cycle
    import gc
    import weakref

    ref = weakref.ref(layer)
    gc.disable()
    try:
        del cache, layer
        assert ref() is None
    finally:
        gc.enable()


def test_select_batch_is_the_best_padded_cut() -> None:
    """The joint choice maximises the batch's expected tokens per second over every common row cap."""
    rng = np.random.default_rng(0)
    for trial in range(30):
        budget = AutoBudget(lambda n, c=None: 0.04 + 0.002 * np.asarray(n, dtype=float), seed=trial, calibrate=False)
        trees = [DraftTree.chain([1] * int(rng.integers(0, 9))) if rng.random() > 0.2 else None for _ in range(3)]
        trees = [t if t is not None and len(t) else None for t in trees]
        if all(t is None for t in trees):
            continue
        aux = [int(rng.integers(0, 3)) for _ in trees]
        cost = lambda m, ctx: 0.04 + 0.002 * 3 * np.asarray(m, dtype=float)  # noqa: E731
        budget._rates = None
        budget.depth_hint()
        keeps = budget.select_batch(trees, aux, cost)
        probs = [budget.path_probs(t) if t is not None else np.zeros(0) for t in trees]
        best = 0.0
        for m in range(1 + max(aux), 1 + max(a + len(p) for a, p in zip(aux, probs)) + 1):
            gain = sum(1 + np.sort(p)[::-1][: max(0, m - 1 - a)].sum() for p, a in zip(probs, aux))
            best = max(best, gain / cost(m, None))
        rows = max(1 + a + len(k) for a, k in zip(aux, keeps))
        got = sum(1 + p[k].sum() for p, k in zip(probs, keeps)) / cost(rows, None)
        assert got >= best - 1e-9


def _tiny_run(tmp_path, **kw):
    model_dir = save_tiny_model(tmp_path / "model")
    cfg = RunConfig(methods=kw.pop("methods", ("pld",)), tasks=("mt_bench", "gsm8k"), limit=3, max_new_tokens=10, warmup=0,
                    model=str(model_dir), out_dir=str(tmp_path / "res"), split="all", **kw)
    return make_plan(cfg)


def test_batch_jobs_and_expected_records(tmp_path) -> None:
    plan = _tiny_run(tmp_path, batch_size=(2, 3))
    jobs = list(batch_jobs(plan))
    sizes = {(j.size, len(j.units)) for j in jobs}
    assert sizes == {(2, 2), (2, 1), (3, 3)}  # 3 questions: groups of 2 + 1 at size 2, one group at size 3
    assert [m for _, _, m in plan.jobs()] == ["ar"] * len(list(plan.jobs()))  # 1 not listed: AR alone only
    manifest = {"config": {"methods": ["ar", "pld"], "batch_size": [2, 3]}, "questions": plan.questions and
                {t: [q.question_id for q in qs] for t, qs in plan.questions.items()},
                "turns": {t: [len(q.turns) for q in qs] for t, qs in plan.questions.items()}}
    keys = expected_keys(manifest, [])
    assert {(m, u.batch) for m, u in keys} == {("ar", 1), ("ar", 2), ("pld", 2), ("ar", 3), ("pld", 3)}
    for bad, needle in (((2, 2), "twice"), ((0,), "positive"), ((), "positive")):
        with pytest.raises(ConfigError, match=needle):
            RunConfig(batch_size=bad).validate()
    with pytest.raises(ConfigError, match="--refill needs"):
        RunConfig(refill=True).validate()


def test_batched_run_end_to_end_and_resume(tmp_path, monkeypatch) -> None:
    """``--batch-size 1,2``: records per size, each checked against AR alone, the report's batch tables and
    plot, summary.json keyed by size (schema-valid), ``check`` passing; an interrupted run resumes whole jobs."""
    plan = _tiny_run(tmp_path, batch_size=(1, 2), methods=("pld", "suffix", "recycling"))
    run_dir = run_dir_for(plan)
    original, calls = RecordWriter.write, {"n": 0}

    def flaky(self, rec):
        if rec.batch_size == 2 and calls["n"] >= 3:
            raise KeyboardInterrupt
        calls["n"] += rec.batch_size == 2
        original(self, rec)

    monkeypatch.setattr(RecordWriter, "write", flaky)
    with pytest.raises(KeyboardInterrupt):
        Runner(plan, run_dir, progress=False).execute()
    monkeypatch.setattr(RecordWriter, "write", original)
    assert Runner(plan, run_dir, progress=False).execute() == 0
    recs = read_records(run_dir)
    keys = [r.key for r in recs]
    assert len(keys) == len(set(keys)) == 4 * 2 * (3 * 2 + 3)  # 4 methods x 2 sizes x (MT-Bench 2 turns + GSM8K)
    batched = [r for r in recs if r.batch_size == 2]
    assert all(r.lossless_class == "exact" for r in batched)  # AR's batched outputs included
    assert all(r.batch_wall_time_s >= r.wall_time_s > 0 for r in batched)
    text = write_report(run_dir)
    assert "## Batch sizes 1, 2" in text and "B=2" in text and (run_dir / "batch_speedup.png").is_file()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert validate(json.loads(SCHEMA_PATH.read_text()), summary) == []
    assert set(summary["by_batch_size"]) == {"1", "2"} and summary["run"]["batch_size"] == 1
    assert load_run(run_dir).batch_sizes() == [1, 2] and {r.unit.batch for r in load_run(run_dir).records} == {1}
    code, lines = check_run(run_dir, decode=False)
    assert code == 0 and any("pld at batch 2: " in line for line in lines), lines


def test_batched_learning_resumes_as_if_uninterrupted(tmp_path, monkeypatch) -> None:
    """SuffixDecoding learns earlier answers: an interrupted batched run, resumed, drafts its later batches
    from the same state (the pool replays the records), so its records equal an uninterrupted run's."""
    whole = _tiny_run(tmp_path / "a", batch_size=(2,), methods=("suffix",))
    Runner(whole, run_dir_for(whole), progress=False).execute()
    cut = _tiny_run(tmp_path / "b", batch_size=(2,), methods=("suffix",))
    original, calls = RecordWriter.write, {"n": 0}

    def flaky(self, rec):
        if rec.method == "suffix" and rec.batch_size == 2 and calls["n"] >= 2:
            raise KeyboardInterrupt
        calls["n"] += rec.method == "suffix" and rec.batch_size == 2
        original(self, rec)

    monkeypatch.setattr(RecordWriter, "write", flaky)
    with pytest.raises(KeyboardInterrupt):
        Runner(cut, run_dir_for(cut), progress=False).execute()
    monkeypatch.setattr(RecordWriter, "write", original)
    Runner(cut, run_dir_for(cut), progress=False).execute()
    steps = lambda plan: {r.key: r.accept_lengths for r in read_records(run_dir_for(plan)) if r.method == "suffix"}  # noqa: E731
    assert steps(whole) == steps(cut) and len(steps(whole)) == 9
