"""Bad inputs get a one-line error and exit code 2, never a traceback."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_main(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse errors
        code = e.code
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["run", "--methods", "nope"], "unknown method 'nope'"),
        (["run", "--methods", "pdl"], "did you mean 'pld'"),
        (["run", "--tasks", "gsm9k"], "did you mean 'gsm8k'"),
        (["run", "--limit", "0"], "--limit: expected a positive integer, got 0"),
        (["run", "--max-new-tokens", "-5"], "expected a positive integer, got -5"),
        (["run", "--repeats", "abc"], "expected a positive integer, got 'abc'"),
        (["run", "--warmup", "-1"], "expected an integer >= 0"),
        (["run", "--method-opt", "pld.num_draft"], "METHOD.KEY=VALUE"),
        (["run", "--method-opt", "pld.bogus=1"], "unknown key(s) bogus"),
        (["run", "--method-opt", "pld.num_draft=0"], "num_draft must be >= 1"),
        (["run", "--shard", "3/2"], "1 <= k <= N"),
        (["run", "--data-dir", "/nonexistent/dir"], "--data-dir not found"),
        (["run", "--config", "/nonexistent.yaml"], "config file not found"),
        (["report", "/nonexistent/run"], "run folder not found"),
    ],
)
def test_bad_input_exit_2(argv, needle, capsys):
    code, err = run_main(argv, capsys)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_missing_model_path(capsys, tmp_path):
    code, err = run_main(["run", "--tasks", "gsm8k", "--limit", "1", "--model", str(tmp_path / "no_model"),
                          "--out-dir", str(tmp_path)], capsys)
    assert code == 2 and "model directory not found" in err.splitlines()[-1]


def test_malformed_question_file(capsys, tmp_path):
    (tmp_path / "spec_bench").mkdir()
    (tmp_path / "spec_bench" / "question.jsonl").write_text(json.dumps({"category": "qa", "turns": "x"}) + "\n")
    code, err = run_main(["run", "--tasks", "nq", "--data-dir", str(tmp_path)], capsys)
    assert code == 2 and "question.jsonl:1" in err and "'turns' list" in err


def test_yaml_config_is_read(capsys, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limit: 0\n")
    code, err = run_main(["run", "--config", str(cfg)], capsys)
    assert code == 2 and "--limit must be a positive integer" in err


def test_real_process_prints_one_line():
    proc = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "--methods", "nope"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "unknown method 'nope'" in proc.stderr


def test_help_documents_every_flag():
    out = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=300).stdout
    for flag in ("--methods", "--tasks", "--limit", "--max-new-tokens", "--repeats", "--model", "--dtype",
                 "--device", "--data-dir", "--method-opt", "--allow-mismatch", "--shard", "--config", "--temperature",
                 "--top-p", "--top-k", "--seed"):
        assert flag in out
