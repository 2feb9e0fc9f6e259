"""Fixed draft budgets (``budget=K``, issue 46) and the sweep's oracle: one-line errors for bad values, every
verified draft cut to depth K and still exact on tiny random models (alone and batched), the hindsight-best
fixed budget on hand-made sweep points, and one small end-to-end sweep with a budget axis."""
from __future__ import annotations

import doctest
import json
import random

import pytest

import specbench.config.method_labels
import specbench.results.budget_oracle
import specbench.run.methods_factory
from conftest import make_tiny_model
from test_batching import PerPrompt
from test_engine_exact import OracleDrafter, RandomDrafter, greedy_reference
from test_sweep import result, tiny_sweep_argv
from specbench.cli import main
from specbench.config.method_labels import budget_of
from specbench.budget.contract import FixedDepth
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import BaseDrafter
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.results.budget_oracle import budget_oracles, oracle_lines, oracle_summary
from specbench.results.run_folder import read_manifest, read_records


class DepthRecorder(BaseDrafter):
    """Proposes ``inner``'s drafts and keeps the ``max_depth`` the engine told it at every step."""

    def __init__(self, inner: BaseDrafter) -> None:
        self.inner, self.told = inner, []

    def propose(self, ctx):
        self.told.append(ctx.max_depth)
        return self.inner.propose(ctx)


@pytest.mark.parametrize("value", ["0", "-1", "x", "2.5", 0, "", True])
def test_bad_budgets_are_one_line_errors(value):
    with pytest.raises(ConfigError) as e:
        budget_of("pld", {"budget": value})
    assert str(e.value) == f"pld.budget must be one of default, auto or a draft depth K >= 1, got {str(value)!r}"


def test_fixed_budgets_parse():
    for module in (specbench.config.method_labels, specbench.run.methods_factory):  # (their examples: fixed budgets)
        assert doctest.testmod(module).failed == 0, module.__name__
    assert budget_of("pld", {"budget": "4"}) == 4 and budget_of("pld@b2", {"budget": 2}) == 2  # (YAML gives ints)
    assert budget_of("pld", {}) == "default" and budget_of("pld", {"budget": "auto"}) == "auto"
    with pytest.raises(ConfigError, match="ar: budget=2 needs a drafting method"):
        budget_of("ar", {"budget": "2"})


def test_bad_budget_in_a_sweep_fails_before_the_model_loads(tmp_path, capsys):
    missing_model = str(tmp_path / "no_model")  # loading it would fail with another message
    assert main(["sweep", "--method", "pld", "--tasks", "gsm8k", "--model", missing_model,
                 "--grid", "pld.budget=2,0,auto"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pld.budget must be one of default, auto or a draft depth K >= 1, got '0'" in err


@pytest.mark.parametrize("depth", [1, 2])
def test_a_fixed_budget_cuts_every_draft_and_stays_exact(depth):
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(5)
    prompt = [rng.randrange(64) for _ in range(6)]
    ref = greedy_reference(model, prompt, 30)
    for inner in (OracleDrafter(ref, len(prompt), depth=5), RandomDrafter(1, 64)):
        drafter = DepthRecorder(inner)
        gen = engine.generate(prompt, drafter, 30, budget=FixedDepth(depth))
        assert gen.output_ids == ref
        assert max(gen.draft_depths) == depth == max(drafter.told)
    # the oracle's whole drafts are accepted: each pass emits the cut draft and the bonus
    oracle = engine.generate(prompt, OracleDrafter(ref, len(prompt), depth=5), 30, budget=FixedDepth(depth))
    assert oracle.accept_lengths[1:-1] == [depth + 1] * (len(oracle.accept_lengths) - 2)
    # the cut to the room left still applies: with 2 tokens left the drafter is told 1, not 4
    near_end = DepthRecorder(OracleDrafter(ref, len(prompt), depth=5))
    engine.generate(prompt, near_end, 3, budget=FixedDepth(4))
    assert near_end.told == [1]


def test_a_fixed_budget_cuts_batched_drafts_too():
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(9)
    prompts = [[rng.randrange(4, 64) for _ in range(rng.randint(2, 12))] for _ in range(3)]
    refs = {tuple(p): greedy_reference(model, p, 16) for p in prompts}
    table = {p: OracleDrafter(r, len(p), depth=5) for p, r in refs.items()}
    gens = BatchDecoder(engine, 16, budget=FixedDepth(2)).generate([Request(p) for p in prompts],
                                                                [PerPrompt(table) for _ in range(2)], 2, refill=True)
    for p, g in zip(prompts, gens):
        assert g.output_ids == refs[tuple(p)] and max(g.draft_depths) == 2


def _points(*rows):
    """Hand-made sweep points: ``(options, Overall speedup)`` each."""
    return [result(tuple(opts), speedup) for opts, speedup in rows]


def test_oracle_on_hand_made_points():
    assert doctest.testmod(specbench.results.budget_oracle).failed == 0
    b = lambda v: (("budget", v),)  # noqa: E731
    points = _points((b("1"), 1.20), (b("4"), 1.48), (b("default"), 1.31), (b("auto"), 1.42))
    assert oracle_lines(points) == ["auto: 1.42x = 96% of the best fixed budget (budget=4, 1.48x)"]
    (o,) = budget_oracles(points)
    assert (o.best_label, o.best_speedup, o.auto_speedup) == ("budget=4", 1.48, 1.42)
    assert o.fraction == pytest.approx(1.42 / 1.48)
    # every drafting budget slower than AR: never drafting (AR, 1.00x) is the best fixed choice
    slow = _points((b("2"), 0.8), (b("auto"), 0.95), (b("default"), 0.7))
    assert oracle_lines(slow) == ["auto: 0.95x = 95% of the best fixed budget (ar: never draft, 1.00x)"]
    # another axis: one oracle per value of it, in grid order; auto beating every fixed budget is above 100%
    nd = lambda v, budget: (("num_draft", v),) + b(budget)  # noqa: E731
    two = _points((nd("2", "2"), 1.1), (nd("2", "auto"), 1.21), (nd("4", "default"), 1.3), (nd("4", "auto"), 1.17))
    assert oracle_lines(two) == ["num_draft=2: auto: 1.21x = 110% of the best fixed budget (budget=2, 1.10x)",
                                 "num_draft=4: auto: 1.17x = 90% of the best fixed budget (budget=default, 1.30x)"]
    summary = oracle_summary(two)
    assert summary[1] == {"other_options": {"num_draft": "4"}, "auto_speedup": 1.17, "best_fixed": "budget=default",
                          "best_fixed_speedup": 1.3, "fraction_of_best": pytest.approx(0.9)}
    # auto without paired AR data: said, no fraction
    assert oracle_lines(_points((b("2"), 1.1), (b("auto"), None))) == [
        "auto: no Overall speedup (no paired AR data) vs the best fixed budget (budget=2, 1.10x)"]
    # no oracle without auto, without a fixed budget, or without a budget axis
    for rows in ([(b("2"), 1.1), (b("default"), 1.2)], [(b("auto"), 1.1)], [((("c", "8"),), 1.1)]):
        assert budget_oracles(_points(*rows)) == [] and oracle_lines(_points(*rows)) == []
        assert oracle_summary(_points(*rows)) is None


def test_end_to_end_sweep_with_a_budget_axis(tmp_path, monkeypatch, capsys):
    import specbench.profiling.cost_profile as cost_profile

    def fake_curve(model, context_len, sizes, repeats, backend="auto"):  # never time anything in a unit test
        return {n: 0.02 + 0.002 * n for n in sizes}

    monkeypatch.setattr(cost_profile, "measure_forward_curve", fake_curve)
    assert main(tiny_sweep_argv(tmp_path, monkeypatch, "pld.budget=1,default,auto", "pld_budget", 12)) == 0
    out = capsys.readouterr().out
    assert "auto: " in out and "of the best fixed budget (" in out
    folder = tmp_path / "sw" / "pld_budget"
    summary = json.loads((folder / "sweep.json").read_text())
    (oracle,) = summary["budget_oracle"]
    assert oracle["best_fixed"] in ("budget=1", "budget=default", "ar: never draft")
    assert "of the best fixed budget" in (folder / "sweep.md").read_text()
    recs = {r.method: r for r in read_records(folder / "budget=1")}
    assert recs["pld"].output_ids == recs["ar"].output_ids and recs["pld"].lossless_class == "exact"
    assert max(recs["pld"].draft_depths) <= 1
    assert read_manifest(folder / "budget=1")["method_configs"]["pld"]["budget"] == 1
