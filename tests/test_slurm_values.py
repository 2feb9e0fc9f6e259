"""``specbench launch --slurm`` (issue 44, item 4): every value written into the sbatch scripts is checked, so a
newline or a shell metacharacter in ``--partition``, ``--time``, ``--account``, ``--out`` or a run argument is a
one-line error and never a line of its own in a script Slurm runs."""
from __future__ import annotations

import doctest

import pytest

from specbench.cli import main
from specbench.errors import ConfigError
from specbench.launch.slurm import SlurmOptions
from test_custom_tasks import one_line_error, write_jsonl
from test_launch import QUESTIONS

VALID_TIMES = ("30", "30:15", "04:00:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED", "infinite")
BAD_TIMES = ("1:00\ntouch pwned", "1h", "04:00:00;id", "1:2:3:4", "-5", "2-", "$(id)", " 30", "1-2-3")


def _launch(tmp_path, *flags: str, out: str | None = None) -> list[str]:
    prompts = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    return ["launch", "--slurm", "--shards", "2", "--out", out or str(tmp_path / "runs" / "full"), *flags,
            "--", "--methods", "pld", "--tasks", f"jsonl:{prompts}", "--device", "cuda"]


@pytest.mark.parametrize("flag, value", [
    ("--partition", "p\ntouch PWNED"),
    ("--time", "01:00:00\ntouch PWNED"),
    ("--account", "acct\ntouch PWNED"),
    ("--partition", "gpu;touch PWNED"),
    ("--account", "$(touch PWNED)"),
    ("--partition", "gpu debug"),
    ("--time", "1h"),
])
def test_injected_slurm_values_are_one_line_errors(tmp_path, capsys, flag, value):
    err = one_line_error(_launch(tmp_path, flag, value), capsys)
    assert flag in err and repr(value) in err, err
    assert not (tmp_path / "runs" / "full.sbatch").exists() and not (tmp_path / "runs" / "full.merge.sbatch").exists()


def test_a_newline_in_the_out_folder_or_run_arguments_is_refused(tmp_path, capsys):
    err = one_line_error(_launch(tmp_path, out=str(tmp_path / "runs" / "x\ntouch PWNED")), capsys)
    assert "--out" in err and "control character" in err
    err = one_line_error(_launch(tmp_path, "--shards-dir", str(tmp_path / "s\ntouch PWNED")), capsys)
    assert "--shards-dir" in err and "control character" in err
    assert not list(tmp_path.rglob("*.sbatch"))


@pytest.mark.parametrize("flag, value", [("--gpus-per-shard", "nan"), ("--gpus-per-shard", "1.5"),
                                         ("--gpus-per-shard", "-1"), ("--cpus-per-shard", "inf")])
def test_bad_resource_counts_are_one_line_errors(tmp_path, capsys, flag, value):
    assert flag in one_line_error(_launch(tmp_path, flag, value), capsys)


def test_every_documented_time_format_and_slurm_names_are_written(tmp_path):
    for n, time in enumerate(VALID_TIMES):
        out = tmp_path / "runs" / f"r{n}"
        assert main(_launch(tmp_path, "--time", time, "--partition", "gpu,debug", "--account", "proj-1.x_y",
                            out=str(out))) == 0
        script = (tmp_path / "runs" / f"r{n}.sbatch").read_text()
        assert f"#SBATCH --time={time}\n" in script and "#SBATCH --partition=gpu,debug\n" in script
        assert "#SBATCH --account=proj-1.x_y\n" in script


def test_options_checked_when_built_directly():
    for time in VALID_TIMES:
        assert SlurmOptions(time=time).time == time
    for time in BAD_TIMES:
        with pytest.raises(ConfigError, match="--time"):
            SlurmOptions(time=time)
    with pytest.raises(ConfigError, match="--partition"):
        SlurmOptions(partition="a\nb")
    with pytest.raises(ConfigError, match="--account"):
        SlurmOptions(account="a b")
    with pytest.raises(ConfigError, match="--gpus-per-shard"):
        SlurmOptions(gpus_per_shard=-1)


def test_docstring_examples():
    from specbench.launch import slurm_values

    assert doctest.testmod(slurm_values).failed == 0
