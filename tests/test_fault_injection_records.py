"""Fault injection (issue 23, items 2-4): readers refuse records that are not the run's, ``check`` fails on
missing records, token ids are validated when a record is read. Each refusal is one line naming the file
and line, exit 2, for every reader."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fault_helpers import DEFAULT_MANIFEST, cli, cli_out, fake_run, record, run_args
from specbench.results.loaded_run import load_run
from tiny_model_dir import save_tiny_model

READERS = ["report", "check", "compare", "leaderboard", "merge", "export-specbench"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def reader_argv(command: str, run: Path, tmp: Path) -> list[str]:
    return {"report": ["report", str(run)], "check": ["check", str(run), "--ids"],
            "compare": ["compare", str(run), str(run), "--bootstrap", "50"],
            "leaderboard": ["leaderboard", str(run), "--out", str(tmp / "lb"), "--no-plots", "--bootstrap", "50"],
            "merge": ["merge", str(run), str(run), "--out", str(tmp / "merged"), "--force"],
            "export-specbench": ["export-specbench", str(run), "--out", str(tmp / "exported")]}[command]


def manifest(**changes) -> dict:
    return json.loads(json.dumps(DEFAULT_MANIFEST)) | changes


FOREIGN = {
    "duplicate unit": ([record("ar", [1, 2]), record("pld", [1, 2], "exact"), record("ar", [1, 2])],
                       manifest(), "records.jsonl:3: duplicate record ar gsm8k/1 turn 1 repeat 0 (also line 1)"),
    "method not in manifest": ([record("ar", [1, 2]), record("rest", [1, 2], "exact")], manifest(),
                               "records.jsonl:2: method 'rest' is not one of the run's methods"),
    "task not in manifest": ([record("ar", [1, 2]), record("ar", [1, 2], task="humaneval")], manifest(),
                             "records.jsonl:2: task 'humaneval' is not one of the run's tasks"),
    "question not in manifest": ([record("ar", [1, 2], question_id="9")], manifest(),
                                 "records.jsonl:1: question gsm8k/9 is not one of the run's questions"),
    "T=1 in a greedy run": ([record("ar", [1, 2]), record("pld", [1, 2], None, schema_version=5,
                                                         sampling={"temperature": 1.0, "top_p": 1.0, "top_k": 0, "seed": 0})],
                            manifest(), "records.jsonl:2: sampled with T=1 seed 0, but the run is T=0"),
    "T=0 in a sampled run": ([record("ar", [1, 2], schema_version=5)],
                             manifest(sampling={"temperature": 1.0, "top_p": 1.0, "top_k": 0, "seed": 0}),
                             "records.jsonl:1: sampled with T=0"),
    "other config digest": ([record("ar", [1, 2], schema_version=6, config_digest="x"),
                             record("pld", [1, 2], "exact", schema_version=6, config_digest="y")], manifest(),
                            "records.jsonl:2: written under configuration y, not the run's (x)"),
    "other task version": ([record("ar", [1, 2], task_version="2")], manifest(task_versions={"gsm8k": "1"}),
                           "records.jsonl:1: task gsm8k version 2 differs"),
    "id beyond the vocabulary": ([record("ar", [1, 70000]), record("pld", [1, 70000], "exact")],
                                 manifest(model={"vocab_size": 49152}),
                                 "records.jsonl:1: token id 70000 at output position 1 is outside the vocabulary"),
    "negative id": ([record("ar", [1, -3])], manifest(), "records.jsonl:1: token id -3 at output position 1"),
    "huge id": ([record("ar", [1, 10**30])], manifest(), "token id 1000000000000000000000000000000"),
    "string id": ([record("ar", [1, "7"])], manifest(), "records.jsonl:1: field 'output_ids' must hold integers"),
    "float id": ([record("ar", [1, 2.5])], manifest(), "records.jsonl:1: field 'output_ids' must hold integers"),
    "infinite time": (['{"schema_version": 2, "method": "ar", "task": "gsm8k", "subtask": "GSM8K", "task_version": "1", '
                       '"question_id": "1", "category": "", "turn": 1, "repeat": 0, "prompt_tokens": 3, "new_tokens": 1, '
                       '"wall_time_s": Infinity, "forward_passes": 1, "draft_time_s": 0.0, "verify_time_s": 0.1, '
                       '"accept_lengths": [1], "draft_sizes": [0], "draft_times_s": [0.0], "output_ids": [1]}'],
                      manifest(), "records.jsonl:1: field 'wall_time_s' must be a finite number"),
}


@pytest.mark.parametrize("case", list(FOREIGN))
@pytest.mark.parametrize("command", READERS)
def test_readers_refuse_records_that_are_not_the_runs(tmp_path, capsys, command, case):
    records, man, needle = FOREIGN[case]
    run = fake_run(tmp_path / "run", records, man)
    code, err = cli(reader_argv(command, run, tmp_path), capsys)
    assert code == 2 and needle in err, err
    assert not any((tmp_path / d).exists() for d in ("lb", "merged", "exported")) and not (run / "report.md").exists()


def test_concatenated_runs_are_refused_not_pooled(tiny_dir, tmp_path, capsys):
    """Two real runs' records in one file: the overlapping units, and a run of another configuration."""
    out = tmp_path / "out"
    for name, tokens in (("a", 4), ("b", 6)):
        argv = run_args(tiny_dir, out, name, tokens)
        argv[argv.index("--limit") + 1] = "2"
        assert cli(argv, capsys)[0] == 0
    a, b = out / "a", out / "b"
    a_lines, b_lines = (d.joinpath("records.jsonl").read_text().splitlines(keepends=True) for d in (a, b))
    shutil.copytree(a, out / "both")
    (out / "both" / "records.jsonl").write_text("".join(a_lines + a_lines))  # a run's records twice
    for command in READERS:
        code, err = cli(reader_argv(command, out / "both", tmp_path), capsys)
        assert code == 2 and f"records.jsonl:{len(a_lines) + 1}: duplicate record ar" in err, (command, err)
    (out / "both" / "records.jsonl").write_text("".join(a_lines + b_lines))  # another configuration's records
    for command in READERS:
        code, err = cli(reader_argv(command, out / "both", tmp_path), capsys)
        assert code == 2 and f"records.jsonl:{len(a_lines) + 1}: written under configuration" in err, (command, err)
    assert len(load_run(a).records) == len(a_lines) and len(load_run(b).records) == len(b_lines)


def test_check_fails_on_missing_records_unless_partial(tmp_path, capsys):
    man = manifest(questions={"gsm8k": ["1", "2"]}, turns={"gsm8k": [1, 1]})
    only_ar = fake_run(tmp_path / "ar_only", [record("ar", [1, 2]), record("ar", [1, 2], question_id="2")], man)
    code, out, _ = cli_out(["check", str(only_ar), "--ids"], capsys)
    assert code == 1 and "FAIL: 2 expected record(s) missing: pld gsm8k/1 turn 1 repeat 0, pld gsm8k/2" in out
    code, out, _ = cli_out(["check", str(only_ar), "--ids", "--partial"], capsys)
    assert code == 0 and "PARTIAL: 2 expected record(s) missing" in out and out.strip().endswith("OK: every method reproduces ar")
    only_method = fake_run(tmp_path / "method_only", [record("pld", [1, 2], "exact")], man)
    code, out, _ = cli_out(["check", str(only_method), "--ids"], capsys)
    assert code == 1 and "3 expected record(s) missing: ar gsm8k/1 turn 1 repeat 0, ar gsm8k/2" in out
    crashed = fake_run(tmp_path / "crashed", [record("ar", [1, 2]), record("pld", [1, 2], "exact"),
                                              record("ar", [1, 2], question_id="2")], man)
    code, out, _ = cli_out(["check", str(crashed), "--ids"], capsys)
    assert code == 1 and "1 expected record(s) missing: pld gsm8k/2 turn 1 repeat 0" in out
    complete = fake_run(tmp_path / "complete", [record("ar", [1, 2]), record("pld", [1, 2], "exact"),
                                                record("ar", [1, 2], question_id="2"),
                                                record("pld", [1, 2], "exact", question_id="2")], man)
    assert cli(["check", str(complete), "--ids"], capsys)[0] == 0


def test_check_counts_turns_and_repeats(tmp_path, capsys):
    """The second turn and the repeats of the plan count too (manifests before ``turns``: the turns seen)."""
    man = manifest(questions={"mt_bench": ["81"]}, turns={"mt_bench": [2]}, config={"methods": ["ar"], "repeats": 2})
    recs = [record("ar", [1], task="mt_bench", question_id="81", turn=t, repeat=r) for t, r in ((1, 0), (2, 0), (1, 1))]
    run = fake_run(tmp_path / "run", recs, man)
    code, out, _ = cli_out(["check", str(run), "--ids"], capsys)
    assert code == 1 and "1 expected record(s) missing: ar mt_bench/81 turn 2 repeat 1" in out


def test_sampled_run_check_fails_on_missing_records(tmp_path, capsys):
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "seed": 0}
    rec = record("ar", [1, 2], schema_version=5, sampling=sampling, target_logprob=-1.0)
    run = fake_run(tmp_path / "run", [rec], manifest(sampling=sampling))
    code, out, _ = cli_out(["check", str(run), "--ids"], capsys)
    assert code == 1 and out.strip().splitlines()[-1].startswith("FAIL: 1 expected record(s) missing: pld")


def test_old_manifest_ids_checked_against_the_tokenizer(tmp_path, capsys, monkeypatch):
    """A manifest from before ``vocab_size``: ``check`` bounds ids by the run's tokenizer before decoding."""
    import specbench.results.check as check

    monkeypatch.setattr(check, "load_run_tokenizer", lambda manifest: list(range(100)))  # 100 "tokens"
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), record("pld", [1, 150], "exact")])
    code, err = cli(["check", str(run)], capsys)
    assert code == 2 and "records.jsonl:2: token id 150 at output position 1 is outside the vocabulary [0, 100)" in err


def test_real_run_manifest_records_what_readers_check(tiny_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(run_args(tiny_dir, out), capsys)[0] == 0
    man = json.loads((out / "r" / "manifest.json").read_text())
    assert man["model"]["vocab_size"] == 49152 and man["turns"] == {"gsm8k": [1]}
    recs = [json.loads(line) for line in (out / "r" / "records.jsonl").read_text().splitlines()]
    assert {r["config_digest"] for r in recs} == {man["config_digest"]} and recs[0]["schema_version"] == 10
    assert cli(["check", str(out / "r")], capsys)[0] == 0


def test_docstring_examples():
    import doctest

    import specbench.files.content_hash
    import specbench.models.embedded
    import specbench.errors
    import specbench.files.jsonfile
    import specbench.results.run_folder
    import specbench.run.lock
    import specbench.results.validation
    import specbench.files.safe_yaml

    for mod in (specbench.files.content_hash, specbench.models.embedded, specbench.errors, specbench.files.jsonfile,
                specbench.results.run_folder, specbench.run.lock, specbench.results.validation, specbench.files.safe_yaml):
        assert doctest.testmod(mod).failed == 0, mod.__name__
