"""``speed_bench``: SPEED-Bench's qualitative split read from a small dataset written in the test, in the
dataset's own schema (``question_id``, ``category``, ``sub_category``, ``turns``, ``source``, ``src_id``,
``difficulty``, ``multiturn``), saved with ``save_to_disk``; nothing is downloaded. One end-to-end run on a
tiny model shows the categories as report columns."""
from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.errors import TaskDataError
from specbench.plugins.registry import make_task
from specbench.results.run_folder import read_manifest, read_records
from specbench_tasks.speed_bench import PLACEHOLDER
from tiny_model_dir import save_tiny_model

PLACEHOLDER_TURN = f"{PLACEHOLDER} USING SPECDEC_BENCH\n\nSummarize the following article:\n{{article}}"


def features():
    import datasets

    string = datasets.Value("string")
    return datasets.Features({"question_id": string, "category": string, "sub_category": string,
                              "turns": datasets.List(string), "source": string, "src_id": string,
                              "difficulty": string, "multiturn": datasets.Value("bool")})


def row(qid: str, category: str, turns: list[str]) -> dict:
    return {"question_id": qid, "category": category, "sub_category": f"{category}-sub", "turns": turns,
            "source": "test", "src_id": qid, "difficulty": "easy", "multiturn": len(turns) > 1}


ROWS = [
    row("c1", "coding", ["Write a Python function that reverses a string."]),
    row("c2", "coding", ["Explain list comprehensions.", "Now give an example with a condition."]),
    row("m1", "math", ["What is 12 times 13?"]),
    row("s1", "summarization", [PLACEHOLDER_TURN]),
    row("s2", "summarization", ["Summarize: the cat sat on the mat all day."]),
    row("w1", "writing", ["Write a haiku about rain."]),
]


def save(folder: Path, rows: list[dict], as_dict: bool = True) -> Path:
    import datasets

    ds = datasets.Dataset.from_list(rows, features=features(), split=datasets.Split.TEST)
    (datasets.DatasetDict({"test": ds}) if as_dict else ds).save_to_disk(str(folder))
    return folder


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    save(root / "speed_bench", ROWS)
    return root


def test_reads_the_schema_interleaves_categories_and_skips_placeholders(data_dir, capsys):
    task = make_task("speed_bench")
    qs = task.load(data_dir)
    assert [q.question_id for q in qs] == ["c1", "m1", "s2", "w1", "c2"]  # one of each category, then the second
    assert qs[-1].turns == ("Explain list comprehensions.", "Now give an example with a condition.")
    assert [task.subtask_for(q) for q in qs[:4]] == ["SPEED/coding", "SPEED/math", "SPEED/summarization",
                                                      "SPEED/writing"]
    err = capsys.readouterr().err
    assert "skipped 1 row(s)" in err and "summarization 1" in err
    again = make_task("speed_bench")
    again.load(data_dir)
    assert again.version == task.version and len(task.version) == 12


def test_version_follows_the_content(data_dir, tmp_path):
    base = make_task("speed_bench")
    base.load(data_dir)
    filled = [dict(r, turns=["Summarize: a long article."]) if r["question_id"] == "s1" else r for r in ROWS]
    other = make_task("speed_bench")
    qs = other.load(save(tmp_path / "speed_bench", filled, as_dict=False).parent)  # a Dataset saved alone
    assert len(qs) == 6 and other.version != base.version


def test_speed_bench_source_names_a_folder(data_dir):
    task = make_task(f"speed_bench:{data_dir / 'speed_bench'}")
    assert [q.question_id for q in task.load(None)][:2] == ["c1", "m1"]
    assert task.name == f"speed_bench:{data_dir / 'speed_bench'}" and task.slug == "speed_bench-speed_bench"


def test_missing_data_and_bad_schema_are_one_line(tmp_path):
    with pytest.raises(TaskDataError, match="not found at .*speed_bench; save it there with: .*save_to_disk"):
        make_task("speed_bench").load(tmp_path)
    cases = [
        ([{k: v for k, v in r.items() if k != "category"} for r in ROWS], "no column\\(s\\) category"),
        ([row("x", "qa", [PLACEHOLDER_TURN])], "no usable rows"),
        ([row("x", "qa", ["a"]), row("x", "qa", ["b"])], "duplicate question_id 'x'"),
        ([row("x", "qa", ["a", ""])], "non-empty list of non-empty strings"),
    ]
    for i, (rows, message) in enumerate(cases):
        import datasets

        folder = tmp_path / f"case{i}" / "speed_bench"
        datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))
        with pytest.raises(TaskDataError, match=message):
            make_task("speed_bench").load(folder.parent)
    with pytest.raises(TaskDataError, match="needs a folder or a hub id"):
        make_task("speed_bench: ")


def test_run_on_the_fixture(data_dir, tmp_path):
    """``--tasks speed_bench`` end to end: a column per category, the multi-turn row's two turns, exact."""
    model = save_tiny_model(tmp_path / "m")
    argv = ["run", "--model", str(model), "--tasks", "speed_bench", "--data-dir", str(data_dir), "--methods", "pld",
            "--max-new-tokens", "4", "--warmup", "0", "--out-dir", str(tmp_path / "runs"), "--no-progress",
            "--device", "cpu"]
    assert main(argv) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    recs = read_records(run_dir)
    assert len(recs) == 2 * 6 and {r.subtask for r in recs} == {"SPEED/coding", "SPEED/math",
                                                                 "SPEED/summarization", "SPEED/writing"}
    assert {r.turn for r in recs if r.question_id == "c2"} == {1, 2}
    assert all(r.context_length is None for r in recs)
    assert len(read_manifest(run_dir)["task_versions"]["speed_bench"]) == 12
    header = next(line for line in (run_dir / "report.md").read_text().splitlines() if "SPEED/coding" in line)
    assert header.index("SPEED/coding") < header.index("SPEED/math") < header.index("SPEED/writing")


def test_docstring_examples():
    import specbench_tasks.speed_bench

    assert doctest.testmod(specbench_tasks.speed_bench).failed == 0
