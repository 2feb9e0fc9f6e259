"""Spec-Bench interop (issue 15, item 4): ``import-specbench`` and ``export-specbench``.

The test writes a small Spec-Bench answer folder in Spec-Bench's documented format (one
``<model_id>.jsonl`` per method; per line ``question_id``, ``category``, ``answer_id``, ``model_id``,
``choices[{index, turns, decoding_steps, new_tokens, wall_time, accept_lengths}]``, ``tstamp``) with
timings built so every speedup is known exactly, imports it, reports, leaderboards and compares it,
and round-trips it through export. A native run exported and imported again keeps its speedups.
"""
from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.catalog import OVERALL
from specbench.reports.compare import compare_runs
from specbench.reports.leaderboard.build import build_leaderboard
from specbench.results.run_folder import read_manifest, read_records
from specbench.interop.spec_bench_import import NOTE
from specbench.results.loaded_run import load_run
from specbench.results.stats import run_stats
from test_custom_tasks import one_line_error
from tiny_model_dir import save_tiny_model

MODEL = "tiny-7b-v1.3"
# (question_id, category, new tokens per turn): MT-Bench questions have two turns
QUESTIONS = [(81, "writing", [12, 9]), (82, "math", [8, 10]), (91, "translation", [10]),
             (92, "summarization", [14]), (93, "qa", [6]), (94, "math_reasoning", [11]), (95, "rag", [9])]
SECONDS_PER_TOKEN = {"vanilla-float16-temp-0.0": 0.02, "eagle-float16": 0.01, "pld-float16": 0.016}
SPEEDUP = {"eagle": 2.0, "pld": 1.25}


def _accepts(tokens: int, method: str) -> list[int]:
    """Per-step emitted tokens summing to ``tokens``: ones for the baseline, chunks of 3 otherwise."""
    size = 1 if method.startswith("vanilla") else 3
    out = [size] * (tokens // size)
    return out + ([tokens % size] if tokens % size else [])


def write_spec_bench_folder(root: Path, slowdown: float = 1.0) -> Path:
    """Spec-Bench answer files for a baseline and two methods, times = tokens x seconds per token."""
    root.mkdir(parents=True)
    for suffix, spt in SECONDS_PER_TOKEN.items():
        model_id = f"{MODEL}-{suffix}"
        lines = []
        for qid, category, tokens in QUESTIONS:
            accepts = [_accepts(n, suffix) for n in tokens]
            choice = {"index": 0, "turns": [f"answer {qid} turn {t + 1} by {suffix}" for t in range(len(tokens))],
                      "decoding_steps": [len(a) for a in accepts], "new_tokens": tokens,
                      "wall_time": [n * spt * slowdown for n in tokens], "accept_lengths": [x for a in accepts for x in a]}
            lines.append({"question_id": qid, "category": category, "answer_id": f"id{qid}{suffix[:3]}",
                          "model_id": model_id, "choices": [choice], "tstamp": 1712345678.5 + qid})
        (root / f"{model_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


@pytest.fixture
def imported(tmp_path) -> Path:
    src = write_spec_bench_folder(tmp_path / "model_answer")
    out = tmp_path / "imported"
    assert main(["import-specbench", str(src), "--out", str(out), "--hardware", "A100 80GB", "--max-new-tokens", "1024"]) == 0
    return out


def test_import_gives_known_speedups_and_is_marked(imported, capsys):
    recs = read_records(imported)
    n_turns = sum(len(t) for _, _, t in QUESTIONS)
    assert len(recs) == 3 * n_turns and {r.method for r in recs} == {"ar", "eagle", "pld"}
    assert all(r.lossless_class is None and r.output_ids == [] for r in recs)
    first = next(r for r in recs if r.method == "eagle" and r.question_id == "81" and r.turn == 1)
    assert (first.task, first.subtask, first.category, first.new_tokens, first.forward_passes) == \
        ("mt_bench", "MT-Bench", "writing", 12, 4)
    assert first.accept_lengths == [3, 3, 3, 3]
    stats = run_stats(load_run(imported), n_boot=50)
    assert set(stats["eagle"]) == {"MT-Bench", "WMT", "CNN/DM", "NQ", "GSM8K", "NQ-RAG", OVERALL}
    for method, expected in SPEEDUP.items():
        for cell in stats[method].values():
            assert cell.speedup == pytest.approx(expected, rel=1e-9)
    assert stats["ar"][OVERALL].tau == 1.0
    tokens = sum(sum(t) for _, _, t in QUESTIONS)
    steps = sum(len(a) for _, _, t in QUESTIONS for a in (_accepts(n, "eagle") for n in t))
    assert stats["eagle"][OVERALL].tau == pytest.approx(tokens / steps)
    manifest = read_manifest(imported)
    assert manifest["imported"]["note"] == NOTE and manifest["backend"]["name"] == "spec-bench-import"
    assert manifest["model"] == {"id": MODEL, "dtype": "float16", "hash": None, "tf32": "not recorded"}
    assert manifest["questions"]["mt_bench"] == ["81", "82"]
    report = (imported / "report.md").read_text()
    assert NOTE in report and "unchecked" in report and "A100 80GB (Spec-Bench import)" in report
    # no token ids: ``check`` refuses with one line instead of inventing a verdict
    assert "no lossless check is possible" in one_line_error(["check", str(imported)], capsys)


def test_imported_runs_in_leaderboard_and_compare(imported, tmp_path):
    paths = build_leaderboard([imported], tmp_path / "lb", n_boot=20, plots=False)
    md = paths["markdown"].read_text()
    assert "A100 80GB (Spec-Bench import)" in md and NOTE in md
    eagle_row = next(line for line in md.splitlines() if line.startswith("| eagle "))
    assert "2.00x" in eagle_row and "unchecked" in eagle_row
    # the same answers timed on a machine half as fast: every speedup the same, ar tokens/s ratio 0.5
    slow = tmp_path / "slow"
    assert main(["import-specbench", str(write_spec_bench_folder(tmp_path / "slow_answers", 2.0)),
                 "--out", str(slow), "--max-new-tokens", "1024"]) == 0
    tables, diffs = compare_runs([load_run(imported), load_run(slow)], n_boot=20)
    assert diffs == []
    source = next(row for row in tables[0].rows if row[0] == "source")
    assert source[1:] == [NOTE, NOTE]
    ar_overall = next(row for row in tables[1].rows if row[0] == OVERALL)
    assert ar_overall[-1] == "0.50"
    eagle = next(t for t in tables if t.title.startswith("eagle"))
    assert next(row for row in eagle.rows if row[0] == OVERALL)[-1] == "1.00"


def test_export_round_trips_the_spec_bench_files(imported, tmp_path):
    out = tmp_path / "exported"
    assert main(["export-specbench", str(imported), "--out", str(out)]) == 0
    src = tmp_path / "model_answer"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in src.iterdir())
    for path in src.iterdir():
        original = [json.loads(x) for x in path.read_text().splitlines()]
        again = [json.loads(x) for x in (out / path.name).read_text().splitlines()]
        assert again == original, path.name


@pytest.mark.parametrize("content, message", [
    (['{"question_id": 1, "category": "qa"'], r"x-vanilla-float16.jsonl:1: malformed JSON"),
    (['{"question_id": 1, "category": "qa"}'], r"x-vanilla-float16.jsonl:1: missing 'choices'"),
    ([], r"x-vanilla-float16.jsonl: no answers \(the file is empty\)"),
    (['{"question_id": 1, "category": "qa", "choices": [{"turns": ["a"], "new_tokens": [1, 2], "wall_time": [0.1]}]}'],
     r"turns, new_tokens, wall_time \(and decoding_steps\) differ in length"),
    (['{"question_id": 1, "category": "qa", "choices": [{"turns": ["a"], "new_tokens": ["1"], "wall_time": [0.1]}]}'],
     r"choices\[\].new_tokens must be a list of numbers"),
])
def test_bad_answer_files_are_one_line(tmp_path, capsys, content, message):
    src = tmp_path / "answers"
    src.mkdir()
    (src / "x-vanilla-float16.jsonl").write_text("".join(line + "\n" for line in content))
    err = one_line_error(["import-specbench", str(src), "--out", str(tmp_path / "out")], capsys)
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "out").exists()


def test_import_refusals(tmp_path, capsys):
    src = write_spec_bench_folder(tmp_path / "answers")
    vanilla = src / f"{MODEL}-vanilla-float16-temp-0.0.jsonl"  # the model ids inside name the methods
    (src / f"{MODEL}-base-float16.jsonl").write_text(vanilla.read_text().replace("vanilla-float16-temp-0.0", "base-float16"))
    vanilla.unlink()
    assert "no baseline among the answer files" in one_line_error(
        ["import-specbench", str(src), "--out", str(tmp_path / "o1")], capsys)
    # naming the baseline file explicitly works
    assert main(["import-specbench", str(src), "--out", str(tmp_path / "o1"), "--baseline", f"{MODEL}-base-float16.jsonl"]) == 0
    assert {r.method for r in read_records(tmp_path / "o1")} == {"ar", "eagle", "pld"}
    capsys.readouterr()
    assert "exists and is not empty" in one_line_error(["import-specbench", str(src), "--out", str(tmp_path / "o1")], capsys)
    (tmp_path / "empty").mkdir()
    assert "no *.jsonl answer files" in one_line_error(["import-specbench", str(tmp_path / "empty"), "--out",
                                                        str(tmp_path / "o2")], capsys)
    assert "answer folder not found" in one_line_error(["import-specbench", str(tmp_path / "none"), "--out",
                                                        str(tmp_path / "o3")], capsys)


def test_native_run_exports_and_imports_with_the_same_speedups(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    prompts = tmp_path / "question.jsonl"
    prompts.write_text("".join(json.dumps(q) + "\n" for q in [
        {"question_id": 81, "category": "writing", "turns": ["Write a line.", "Another."]},
        {"question_id": 93, "category": "qa", "turns": ["Who wrote it?"]}]))
    assert main(["run", "--model", str(model), "--tasks", f"jsonl:{prompts}", "--methods", "pld",
                 "--max-new-tokens", "6", "--warmup", "0", "--out-dir", str(tmp_path / "runs"), "--run-name", "native",
                 "--no-progress", "--device", "cpu"]) == 0
    native = tmp_path / "runs" / "native"
    assert main(["export-specbench", str(native)]) == 0
    exported = native / "spec_bench_answers"
    assert sorted(p.name for p in exported.iterdir()) == ["model-pld-float32.jsonl", "model-vanilla-float32-temp-0.0.jsonl"]
    base = [json.loads(x) for x in (exported / "model-vanilla-float32-temp-0.0.jsonl").read_text().splitlines()]
    assert [(b["question_id"], b["category"], len(b["choices"][0]["turns"])) for b in base] == [(81, "writing", 2), (93, "qa", 1)]
    ar = {(r.question_id, r.turn): r for r in read_records(native) if r.method == "ar"}
    choice = base[0]["choices"][0]
    assert choice["new_tokens"] == [ar[("81", 1)].new_tokens, ar[("81", 2)].new_tokens]
    assert choice["decoding_steps"] == choice["new_tokens"] and all(isinstance(t, str) for t in choice["turns"])
    back = tmp_path / "back"
    assert main(["import-specbench", str(exported), "--out", str(back)]) == 0
    a, b = run_stats(load_run(native), n_boot=0), run_stats(load_run(back), n_boot=0)
    assert b["pld"][OVERALL].speedup == pytest.approx(a["pld"][OVERALL].speedup, rel=1e-12)
    assert b["pld"][OVERALL].tau == pytest.approx(a["pld"][OVERALL].tau, rel=1e-12)


def test_docstring_examples():
    import specbench.files.jsonfile
    import specbench.interop.spec_bench_format

    for mod in (specbench.interop.spec_bench_format, specbench.files.jsonfile):
        assert doctest.testmod(mod).failed == 0, mod.__name__
