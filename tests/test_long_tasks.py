"""Long-input tasks (``long_low``, ``long_mixed``, ``long_high``) and ``--context-length``.

Input lengths parsed and labelled; the fitter's exact lengths on hand-made material; every question of
every tier built to exactly its length, deterministically, from the same material at every length; a run
plan with a task per length (cut to fit a small model); one end-to-end run on a tiny model over the
embedded tokenizer (the embedded model itself never runs here).
"""
from __future__ import annotations

import doctest
import json
import re

import pytest

from specbench.api import embedded_tokenizer
from specbench.cli import main
from specbench.config.context_length import parse_lengths
from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError, TaskDataError
from specbench.paths import resolve_data_dir
from specbench.plugins.registry import make_task
from specbench.results.run_folder import read_manifest, read_records
from specbench.run.plan import config_digest, make_plan, run_dir_for
from specbench_tasks._long.fit import HEAD, TAIL, PromptFitter
from specbench_tasks.long_context import QUESTIONS, prompt_length
from tiny_model_dir import save_tiny_model

TIERS = ("long_low", "long_mixed", "long_high")


@pytest.fixture(scope="module")
def fitter() -> PromptFitter:
    return PromptFitter(embedded_tokenizer())


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, int], list]:
    """Every tier at 512 and 768 tokens (the shortest lengths: seconds, not minutes)."""
    data_dir = resolve_data_dir(None)
    if data_dir is None or not (data_dir / "gsm8k" / "train.jsonl").is_file():
        pytest.skip("long_mixed needs GSM8K train in the data dir")
    return {(t, n): make_task(t).at_context_length(n, n).load(data_dir) for t in TIERS for n in (512, 768)}


def test_lengths_parse_label_and_refuse():
    assert parse_lengths("1k, 2K,1k,3000") == (1024, 2048, 3000)
    assert parse_lengths([2048, "8k"]) == (2048, 8192)
    for bad, message in [("1m", "not a length"), ("100", "below the shortest"), ("", "empty"), ("-1k", "not a length")]:
        with pytest.raises(ConfigError, match=message):
            parse_lengths(bad)
    with pytest.raises(ConfigError, match="at least 512"):
        RunConfig(context_length=(100,)).validate()


def test_fitter_hits_exact_lengths_from_either_end(fitter):
    material = " ".join(f"word{i} and {i * 7} more" for i in range(400))
    render = lambda part: f"Read this:\n{part}\nThe end."  # noqa: E731
    for target in (100, 257, 600):
        head = fitter.fit(render, material, target, HEAD)
        tail = fitter.fit(render, material, target, TAIL)
        assert fitter.count(head) == fitter.count(tail) == target
        assert head.startswith("Read this:\nword0 and 0") and tail.endswith("word399 and 2793 more\nThe end.")
    with pytest.raises(TaskDataError, match="only .* of 5000 tokens"):
        fitter.fit(render, material, 5000, HEAD, what="q7")


def test_fitter_closes_a_cut_no_token_boundary_reaches(fitter):
    """Newlines after an ``x`` merge three at a time, so cutting the material anywhere skips every third count
    (35, 36, 37, 39, 40, 42, ...): those lengths need a cut closed with a one-token filler."""
    material = "\n\n\n\n".join(["x"] * 300)
    render = lambda part: f"Count:\n{part}\nDone"  # noqa: E731
    counts = {fitter.count(render(material[:k])) for k in range(0, 80)}
    skipped = [c for c in range(min(counts), max(counts)) if c not in counts]
    assert len(skipped) >= 4  # the material does skip lengths, so the fallback is what this exercises
    for target in skipped[:4] + sorted(counts)[2:4]:
        assert fitter.count(fitter.fit(render, material, target)) == target


def test_every_question_has_exactly_its_length_and_kinds_take_turns(built):
    for (tier, n), qs in built.items():
        assert len(qs) == QUESTIONS and len({q.question_id for q in qs}) == QUESTIONS
        assert {prompt_length(q.turns[0]) for q in qs} == {n}, (tier, n)
        kinds = [q.category for q in qs]
        period = {"long_low": 3, "long_mixed": 2, "long_high": 1}[tier]
        assert kinds[:period] == kinds[period: 2 * period] and len(set(kinds)) == period
        assert all(q.question_id.endswith(q.category) and q.task == f"{tier}@{n}" for q in qs)


def test_questions_read_the_same_material_at_every_length(built):
    low, low2 = built[("long_low", 512)], built[("long_low", 768)]
    for a, b in zip(low, low2):
        body = a.turns[0].split("\n\n", 1)[1][:300]  # after the instruction line: the start of the code or numbers
        assert body in b.turns[0]
    for a, b in zip(built[("long_high", 512)], built[("long_high", 768)]):
        assert a.turns[0][-400:] == b.turns[0][-400:]  # the conversation to answer ends both
    for a, b in zip(built[("long_mixed", 512)], built[("long_mixed", 768)]):
        if a.category == "needle":
            fact = next(line for line in a.turns[0].splitlines() if line.startswith("The access code for the"))
            assert fact in b.turns[0] and fact.split(" archive")[0].split("the ", 1)[1] in a.turns[0].splitlines()[-1]
        else:
            exam = a.turns[0].split("Now take the exam below.")[1]
            assert exam == b.turns[0].split("Now take the exam below.")[1] and exam.count("(D)") == 3


def test_build_is_deterministic_and_versioned_by_content(built):
    data_dir = resolve_data_dir(None)
    again = make_task("long_high").at_context_length(512, 512)
    assert again.load(data_dir) == built[("long_high", 512)]
    other = make_task("long_high").at_context_length(768, 768)
    other.load(data_dir)
    assert again.version.startswith("1-") and again.version != other.version
    assert (again.name, again.subtask, again.slug) == ("long_high@512", "Long-high 512", "long_high_512")
    with pytest.raises(TaskDataError, match="needs? an input length|built at an input length"):
        make_task("long_low").load(data_dir)  # (so the datastores' contamination check skips it)


def test_plan_runs_a_task_per_length_cut_to_fit_the_model(tmp_path):
    model = save_tiny_model(tmp_path / "m", context=1024)
    cfg = RunConfig(methods=("pld",), tasks=("long_high", "gsm8k"), context_length=(512, 1024), limit=2,
                    max_new_tokens=8, model=str(model), out_dir=str(tmp_path))
    plan = make_plan(cfg)
    assert list(plan.tasks) == ["long_high@512", "long_high@1k", "gsm8k"]
    t1k = plan.tasks["long_high@1k"]
    assert (t1k.context_length, t1k.prompt_tokens, t1k.subtask) == (1024, 1024 - 8 - 128, "Long-high 1k")
    assert [prompt_length(q.turns[0]) for q in plan.questions["long_high@1k"]] == [888, 888]
    assert "long_high_512-long_high_1k-gsm8k" in run_dir_for(plan).name
    one = make_plan(RunConfig(methods=("pld",), tasks=("long_high@512",), limit=1, model=str(model)))
    assert list(one.tasks) == ["long_high@512"] and config_digest(one) != config_digest(plan)
    for bad, message in [(dict(tasks=("gsm8k",), context_length=(1024,)), "applies to long-input tasks"),
                         (dict(tasks=("gsm8k@1k",)), "has no input length"),
                         (dict(tasks=("long_low",), context_length=(1024,), max_new_tokens=512), "leaves 384 tokens")]:
        with pytest.raises(ConfigError, match=message):
            make_plan(RunConfig(**{"methods": ("pld",), "model": str(model), **bad}))


def test_context_length_from_yaml_and_flag_one_line_errors(tmp_path, capsys):
    from specbench.config.run_flags import add_run_arguments, config_from_args
    import argparse

    p = argparse.ArgumentParser()
    add_run_arguments(p)
    (tmp_path / "run.yaml").write_text("tasks: long_low\ncontext_length: [1k, 2048]\n")
    assert config_from_args(p.parse_args(["--config", str(tmp_path / "run.yaml")])).context_length == (1024, 2048)
    assert config_from_args(p.parse_args(["--context-length", "4k"])).context_length == (4096,)
    assert main(["run", "--tasks", "long_low", "--context-length", "2q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'2q' is not a length" in err


def test_end_to_end_on_a_tiny_model(tmp_path):
    """Records carry their length and the exact prompt length, the manifest both, the report its length tables
    and figure; the same command resumes."""
    model = save_tiny_model(tmp_path / "m", context=2048)
    argv = ["run", "--model", str(model), "--tasks", "long_low,long_high", "--context-length", "512,1k",
            "--limit", "1", "--methods", "pld", "--max-new-tokens", "6", "--warmup", "0", "--out-dir",
            str(tmp_path / "runs"), "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    recs = read_records(run_dir)
    assert len(recs) == 2 * 4 and all(r.lossless_class in (None, "exact") for r in recs)
    assert {(r.task, r.subtask, r.context_length, r.prompt_tokens) for r in recs} == {
        ("long_low@512", "Long-low 512", 512, 512), ("long_low@1k", "Long-low 1k", 1024, 1024),
        ("long_high@512", "Long-high 512", 512, 512), ("long_high@1k", "Long-high 1k", 1024, 1024)}
    manifest = read_manifest(run_dir)
    assert manifest["config"]["context_length"] == [512, 1024]
    assert manifest["context_lengths"]["long_low@1k"] == {"requested": 1024, "prompt_tokens": 1024}
    report = (run_dir / "report.md").read_text()
    for title in ("Speedup vs AR by input length", "Decode-only speedup", "tau) by input length",
                  "Time to first token (ms, mean) by input length"):
        assert title in report
    assert "| Long-low  | 1k       |            1024 |" in report
    assert (run_dir / "long_context.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((run_dir / "summary.json").read_text())["run"]
    assert main(argv) == 0 and len(read_records(run_dir)) == len(recs)


def test_budget_both_profiles_up_to_the_longest_context(tmp_path, monkeypatch):
    """``--budget both`` on long inputs: the cost profile reaches the run's longest context (its curves injected:
    nothing is timed) and the report predicts each length's speedup."""
    import specbench.profiling.cost_profile as cost_profile
    import specbench.run.budgets as runner_mod

    contexts: list[int] = []
    real = runner_mod.cached_cost_profile

    def fake(model, context, sizes, repeats, backend="auto"):
        contexts.append(context)
        return {n: 0.01 * (1 + context / 2048) + 0.002 * n for n in sizes}

    monkeypatch.setattr(cost_profile, "measure_forward_curve", fake)
    monkeypatch.setattr(runner_mod, "cached_cost_profile",
                        lambda lm, backend, _root, quiet=False, longest=None: real(lm, backend, tmp_path / "cache",
                                                                                   quiet=True, longest=longest))
    model = save_tiny_model(tmp_path / "m", context=2048)
    argv = ["run", "--model", str(model), "--tasks", "long_high", "--context-length", "512,1k", "--limit", "1",
            "--methods", "pld", "--budget", "both", "--max-new-tokens", "6", "--warmup", "0", "--out-dir",
            str(tmp_path / "runs"), "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    assert contexts == [128, 512, 1024, 2048 - 128]  # the longest: a 1024-token prompt, its answer, a turn's markup
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert list(json.loads((run_dir / "profile.json").read_text())["latency_by_context_s"]) == ["128", "512", "1024",
                                                                                               "1920"]
    report = (run_dir / "report.md").read_text()
    table = report.split("### Cost model by input length")[1].split("###")[0]
    assert "| Long-high | 1k " in table and table.count("%)") == 4  # pld and pld@auto at both lengths


def test_docstring_examples():
    import specbench.config.context_length
    import specbench.results.context_lengths
    import specbench_tasks._long.sources

    for module in (specbench.config.context_length, specbench.results.context_lengths, specbench_tasks._long.sources):
        assert doctest.testmod(module).failed == 0


def test_a_length_past_the_models_context_is_named_by_the_length_built(tmp_path):
    """``--context-length 1000000`` on a 1024-token model builds 888-token prompts: its task, column, records and
    length table say 888 (the manifest and the report say 1000000 → 888), never "1000000"."""
    model = save_tiny_model(tmp_path / "m", context=1024)
    argv = ["run", "--model", str(model), "--tasks", "long_low", "--context-length", "1000000", "--limit", "1",
            "--methods", "pld", "--max-new-tokens", "8", "--warmup", "0", "--out-dir", str(tmp_path / "runs"),
            "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert {(r.task, r.subtask, r.context_length, r.prompt_tokens) for r in read_records(run_dir)} == {
        ("long_low@888", "Long-low 888", 888, 888)}
    assert read_manifest(run_dir)["context_lengths"] == {"long_low@888": {"requested": 1000000, "prompt_tokens": 888}}
    report = (run_dir / "report.md").read_text()
    assert "long_low@888 1000000 → 888 tokens" in report and re.search(r"\| Long-low \| +888 \| +888 \|", report)
    assert "1000000" not in report.replace("long_low@888 1000000 → 888", "")  # (only where it says what was asked)
