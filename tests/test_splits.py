"""Per-task dev / eval splits (issue 14): disjoint, eval's first questions and default digests as before.

The pinned ids and digests below were computed with the code before splits existed (``make_plan`` on the
same configs), so a change that moved eval questions or default-split digests fails here.
"""
from __future__ import annotations

import dataclasses
import doctest

import pytest

import specbench.prompts.task
from specbench.catalog import ALL_TASKS
from specbench.cli import main
from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError, TaskDataError
from specbench.paths import default_data_dir
from specbench.plugins.registry import TASKS
from specbench.prompts.task import Question, dev_size, split_questions
from specbench.run.plan import config_digest, make_plan, run_dir_for

needs_data = pytest.mark.skipif(default_data_dir() is None, reason="no data dir (../shared/data)")
BUILT_IN = (*ALL_TASKS, "nq")
# ``make_plan(RunConfig(methods=("pld",), tasks=("all", "nq"), limit=5))`` before splits existed
FIRST_FIVE = {"mt_bench": ["81", "82", "83", "84", "85"], "humaneval": [f"HumanEval/{i}" for i in range(5)],
              "gsm8k": ["401", "402", "403", "404", "405"], "cnndm": ["241", "242", "243", "244", "245"],
              "nq_rag": ["481", "482", "483", "484", "485"], "wmt": ["161", "162", "163", "164", "165"],
              "nq": ["321", "322", "323", "324", "325"]}
DEV_IDS = {"mt_bench": ("153", "160"), "humaneval": ("HumanEval/147", "HumanEval/163"), "gsm8k": ("473", "480"),
           "cnndm": ("313", "320"), "nq_rag": ("553", "560"), "wmt": ("233", "240"), "nq": ("393", "400")}


def ids(qs: list[Question]) -> list[str]:
    return [q.question_id for q in qs]


@needs_data
@pytest.mark.parametrize("name", BUILT_IN)
def test_dev_and_eval_are_disjoint_and_cover_the_task(name):
    task = TASKS.get(name)()
    everything = task.load(default_data_dir())
    dev, ev = task.split(everything, "dev"), task.split(everything, "eval")
    assert not set(ids(dev)) & set(ids(ev))
    assert ids(ev) + ids(dev) == ids(everything) == ids(task.split(everything, "all"))
    assert len(dev) == -(-len(everything) // 10)  # ceil(10%)
    assert (ids(dev)[0], ids(dev)[-1]) == DEV_IDS[name]  # as each task's docstring documents


@needs_data
def test_limit_on_eval_keeps_the_first_questions_and_the_digest():
    plan = make_plan(RunConfig(methods=("pld",), tasks=("all", "nq"), limit=5))
    assert {t: ids(qs) for t, qs in plan.questions.items()} == FIRST_FIVE
    explicit = make_plan(RunConfig(methods=("pld",), tasks=("all", "nq"), limit=5, split="eval"))
    assert config_digest(explicit) == config_digest(plan)


def test_default_split_keeps_the_digests_from_before_splits():
    greedy = make_plan(RunConfig(methods=("pld",), tasks=("gsm8k", "mt_bench"), limit=5, max_new_tokens=64))
    assert run_dir_for(greedy).name == "ar-pld_gsm8k-mt_bench_l5_n64_float32_658dfb10"
    sampled = make_plan(RunConfig(methods=("rest", "pld"), tasks=("all",), limit=2, temperature=1.0))
    assert run_dir_for(sampled).name == "ar-rest-pld_all_l2_n128_float32_T1_c1d3b422"
    dev = make_plan(dataclasses.replace(greedy.config, split="dev"))
    assert config_digest(dev) != config_digest(greedy) and run_dir_for(dev).name.startswith(
        "ar-pld_gsm8k-mt_bench_l5_n64_float32_dev_")
    assert dev.questions["gsm8k"][0].question_id == "473"


def test_split_rule_on_constructed_questions():
    qs = [Question(str(i), "t", ("q",)) for i in range(25)]
    assert [dev_size(n) for n in (1, 9, 10, 11, 25, 164)] == [0, 0, 1, 2, 3, 17]
    assert ids(split_questions("t", qs, "dev", 3)) == ["22", "23", "24"]
    assert ids(split_questions("t", qs, "eval", 3)) == ids(qs[:22])
    assert ids(split_questions("t", qs, "dev", 3)[:10]) == ["22", "23", "24"]  # a larger --limit takes what is there
    assert ids(split_questions("t", qs[:3], "eval", dev_size(3))) == ["0", "1", "2"]  # a small file: all eval
    with pytest.raises(TaskDataError, match=r"task t: its dev split is empty \(3 question\(s\); fewer than 10"):
        split_questions("t", qs[:3], "dev", dev_size(3))
    with pytest.raises(TaskDataError, match=r"task t: its eval split is empty \(1 question\(s\); the last 1 form"):
        split_questions("t", qs[:1], "eval", 1)
    with pytest.raises(TaskDataError, match="--split must be one of eval, dev, all"):
        split_questions("t", qs, "test", 1)
    with pytest.raises(ConfigError, match="--split must be one of eval, dev, all, got 'train'"):
        RunConfig(split="train").validate()
    assert doctest.testmod(specbench.prompts.task).failed == 0


def test_run_flag_errors_are_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):  # argparse choices
        main(["run", "--split", "train"])
    assert "invalid choice: 'train'" in capsys.readouterr().err
    one = tmp_path / "one.jsonl"
    one.write_text('{"id": "a", "turns": ["Hi"]}\n')
    assert main(["sweep", "--method", "pld", "--grid", "pld.num_draft=2,4", "--tasks", f"jsonl:{one}",
                 "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "its dev split is empty" in err
