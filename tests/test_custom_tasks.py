"""Your own prompts: ``--tasks jsonl:PATH`` and ``--tasks hf:DATASET[:CONFIG]:SPLIT:FIELD`` (issue 15, item 3).

Loaders on constructed files and a dataset saved with ``save_to_disk`` (no network); every bad input is
one line on stderr and exit 2; one end-to-end run on a tiny model mixes both sources in one ``--tasks``.
"""
from __future__ import annotations

import doctest
import json
import os
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.config.run_config import RunConfig
from specbench.run.plan import config_digest, make_plan, run_dir_for
from specbench.results.run_folder import read_manifest, read_records
from specbench.errors import UnknownNameError
from specbench.plugins.registry import make_task
from specbench.errors import TaskDataError
from tiny_model_dir import save_tiny_model


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def one_line_error(argv: list[str], capsys) -> str:
    """stderr of a CLI call that must fail with exit 2 and exactly one error line, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_jsonl_plain_and_spec_bench_format(tmp_path):
    plain = write_jsonl(tmp_path / "mine.jsonl", [{"id": "a", "turns": ["Hi"]}, {"id": 7, "turns": ["One", "Two"]}])
    task = make_task(f"jsonl:{plain}")
    qs = task.load(None)
    assert [q.question_id for q in qs] == ["a", "7"] and qs[1].turns == ("One", "Two")
    assert task.subtask == "mine" and task.subtask_for(qs[0]) == "mine" and task.slug == "jsonl-mine"
    spec = write_jsonl(tmp_path / "question.jsonl", [
        {"question_id": 81, "category": "writing", "turns": ["Write.", "Again."], "reference": ["r"]},
        {"question_id": 82, "category": "math_reasoning", "turns": ["2+2?"]},
    ])
    st = make_task(f"jsonl:{spec}")
    q81, q82 = st.load(None)
    assert (q81.question_id, st.subtask_for(q81), q81.reference) == ("81", "writing", ("r",))
    assert st.subtask_for(q82) == "math_reasoning"


def test_version_is_the_content_hash(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "turns": ["Hi"]}])
    v1 = make_task(f"jsonl:{path}").version
    assert make_task(f"jsonl:{path}").version == v1  # stable
    write_jsonl(path, [{"id": "a", "turns": ["Hi!"]}])
    assert make_task(f"jsonl:{path}").version != v1
    # the config digest (resume guard and default folder name) follows the content
    cfg = RunConfig(methods=("pld",), tasks=(f"jsonl:{path}",), out_dir=str(tmp_path))
    d2 = config_digest(make_plan(cfg))
    write_jsonl(path, [{"id": "a", "turns": ["Hi"]}])
    plan = make_plan(cfg)
    assert config_digest(plan) != d2
    assert run_dir_for(plan).name.startswith("ar-pld_jsonl-q_lfull_")


@pytest.mark.parametrize("rows, message", [
    (None, r"question file not found: .*nope.jsonl"),
    ([], r"q.jsonl: no questions \(the file is empty\)"),
    (["", "  "], r"q.jsonl: no questions"),
    ([{"id": "a", "turns": ["x"]}, '{"id": "b", "turns": '], r"q.jsonl:2: malformed JSON"),
    (["[1, 2]"], r"q.jsonl:1: expected a JSON object, got list"),
    ([{"turns": ["x"]}], r"q.jsonl:1: missing 'id' \(or Spec-Bench's 'question_id'\)"),
    ([{"id": "a"}], r"q.jsonl:1: missing 'turns'"),
    ([{"id": "a", "turns": []}], r"q.jsonl:1: 'turns' must be a non-empty list of strings"),
    ([{"id": "a", "turns": "just text"}], r"q.jsonl:1: 'turns' must be"),
    ([{"id": "a", "turns": ["x"]}, {"id": "a", "turns": ["y"]}], r"q.jsonl:2: duplicate id 'a' \(first on line 1\)"),
    ([{"id": "a", "turns": ["x"], "category": 3}], r"q.jsonl:1: 'category' must be a string"),
])
def test_bad_jsonl_is_one_line(tmp_path, capsys, rows, message):
    path = tmp_path / ("nope.jsonl" if rows is None else "q.jsonl")
    if rows is not None:
        write_jsonl(path, rows)
    with pytest.raises(TaskDataError, match=message):
        make_task(f"jsonl:{path}")
    err = one_line_error(["run", "--tasks", f"gsm8k,jsonl:{path}", "--methods", "pld"], capsys)
    assert err.startswith("specbench run: error:")


@pytest.mark.parametrize("make, kind", [(os.mkfifo, "a FIFO (named pipe)"), (os.mkdir, "a folder"),
                                        (None, "a character device")])
def test_a_question_path_that_is_no_regular_file_says_what_it_is(tmp_path, capsys, make, kind):
    path = tmp_path / "q.jsonl" if make else Path("/dev/null")
    if make:
        make(path)
    err = one_line_error(["run", "--tasks", f"jsonl:{path}", "--methods", "pld"], capsys)
    assert err == f"specbench run: error: question file {path} is {kind}, not a regular file"  # (never waits on it)


def test_bad_task_names_are_one_line(tmp_path, capsys):
    (tmp_path / "latin1.jsonl").write_bytes(b'{"id": "a", "turns": ["caf\xe9"]}\n')
    assert "not UTF-8" in one_line_error(["run", "--tasks", f"jsonl:{tmp_path / 'latin1.jsonl'}"], capsys)
    assert "unknown task source 'jsnl'; did you mean 'jsonl'?" in one_line_error(["run", "--tasks", "jsnl:x"], capsys)
    assert "jsonl:PATH needs a path" in one_line_error(["run", "--tasks", "jsonl:"], capsys)
    assert "expected hf:DATASET[:CONFIG]:SPLIT:FIELD" in one_line_error(["run", "--tasks", "hf:only"], capsys)
    with pytest.raises(UnknownNameError):
        make_task("no_such_task")


@pytest.fixture(scope="module")
def saved_datasets(tmp_path_factory) -> tuple[Path, Path]:
    """A DatasetDict (train/test, an id and a category column) and a single Dataset, both saved to disk."""
    import datasets

    root = tmp_path_factory.mktemp("hf")
    rows = {"id": ["p1", "p2", "p3"], "prompt": ["Name a colour.", "Count to three.", "Say hi."],
            "category": ["easy", "easy", "chat"]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows),
                          "test": datasets.Dataset.from_dict({"text": [["First turn", "Second turn"]]})}
                         ).save_to_disk(str(root / "dict"))
    datasets.Dataset.from_dict({"question": ["What is 2+2?", "Why?"]}).save_to_disk(str(root / "single"))
    return root / "dict", root / "single"


def test_hf_dataset_saved_to_disk(saved_datasets):
    dict_dir, single_dir = saved_datasets
    task = make_task(f"hf:{dict_dir}:train:prompt")
    qs = task.load(None)
    assert [q.question_id for q in qs] == ["p1", "p2", "p3"] and qs[0].turns == ("Name a colour.",)
    assert [task.subtask_for(q) for q in qs] == ["easy", "easy", "chat"]
    two = make_task(f"hf:{dict_dir}:test:text").load(None)  # a list column gives several turns
    assert two[0].turns == ("First turn", "Second turn") and two[0].question_id == "0"
    single = make_task(f"hf:{single_dir}:train:question")
    assert [q.turns[0] for q in single.load(None)] == ["What is 2+2?", "Why?"]
    assert single.subtask == "single/train" and single.slug == "hf-single_train"


def test_bad_hf_specs(saved_datasets, tmp_path):
    dict_dir, _ = saved_datasets
    for spec, message in [
        (f"hf:{dict_dir}:validation:prompt", r"no split 'validation' \(has: train, test\)"),
        (f"hf:{dict_dir}:train:answer", r"no column 'answer' \(has: id, prompt, category\)"),
        (f"hf:{dict_dir}:cfg:train:prompt", "a saved dataset has no configs"),
        (f"hf:{dict_dir}:train:id:extra:more", "expected hf:DATASET"),
        (f"hf:{tmp_path}:train:prompt", "not a dataset folder written by save_to_disk"),
    ]:
        with pytest.raises(TaskDataError, match=message):
            make_task(spec)


def test_mixed_sources_end_to_end(saved_datasets, tmp_path, monkeypatch):
    """One --tasks list with a built-in task, a JSONL file (Spec-Bench format, two categories) and a saved dataset."""
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    dict_dir, _ = saved_datasets
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [
        {"question_id": 1, "category": "writing", "turns": ["Write a line.", "Another."]},
        {"question_id": 2, "category": "coding", "turns": ["def f():"]},
    ])
    tasks = f"gsm8k,jsonl:{prompts},hf:{dict_dir}:train:prompt"
    argv = ["run", "--model", str(model), "--tasks", tasks, "--limit", "2", "--methods", "pld",
            "--max-new-tokens", "4", "--warmup", "0", "--out-dir", str(tmp_path / "runs"), "--no-progress",
            "--device", "cpu"]
    assert main(argv) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert "_gsm8k-jsonl-prompts-hf-dict_train_" in run_dir.name
    recs = read_records(run_dir)
    assert {(r.task, r.subtask) for r in recs} == {(f"jsonl:{prompts}", "writing"), (f"jsonl:{prompts}", "coding"),
                                                   (f"hf:{dict_dir}:train:prompt", "easy"), ("gsm8k", "GSM8K")}
    assert len(recs) == 2 * (2 + 2 + 1 + 2)  # (ar, pld) x (two gsm8k + two turns + one turn + two hf questions)
    manifest = read_manifest(run_dir)
    assert set(manifest["task_versions"]) == {"gsm8k", f"jsonl:{prompts}", f"hf:{dict_dir}:train:prompt"}
    assert "writing" in (run_dir / "report.md").read_text()
    assert main(argv) == 0 and len(read_records(run_dir)) == len(recs)  # same command resumes: nothing added


def test_docstring_examples():
    import specbench_tasks._jsonl
    import specbench_tasks._source_task
    import specbench_tasks.hf_dataset

    for mod in (specbench_tasks._jsonl, specbench_tasks._source_task, specbench_tasks.hf_dataset):
        assert doctest.testmod(mod).failed == 0, mod.__name__
