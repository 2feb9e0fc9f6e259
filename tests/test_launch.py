"""``specbench launch`` (issue 15, item 6): Slurm array scripts (content, and their expansion per array
task), one-line errors, and the Ray launcher on a local Ray instance with a tiny model and two shards,
one of which is killed mid-run and must be resumed before the merge."""
from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.results.run_folder import read_manifest, read_records
from test_custom_tasks import one_line_error, write_jsonl
from tiny_model_dir import save_tiny_model

QUESTIONS = [{"id": f"q{i}", "turns": [f"Say {w}."]} for i, w in enumerate(["one", "two", "three"])]


def test_slurm_scripts(tmp_path, capsys):
    prompts = write_jsonl(tmp_path / "q.jsonl", [*QUESTIONS, {"id": "q3", "turns": ["Say four."]}])  # one a shard
    echo = tmp_path / "echo_args.sh"  # stands in for python: records the arguments each array task gets
    echo.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/args_$SLURM_ARRAY_TASK_ID.txt\n')
    echo.chmod(0o755)
    out = tmp_path / "runs" / "full"
    assert main(["launch", "--slurm", "--shards", "4", "--out", str(out), "--partition", "gpu", "--time", "01:00:00",
                 "--python", str(echo), "--", "--methods", "pld", "--tasks", f"jsonl:{prompts}", "--device", "cuda"]) == 0
    array, merge = (tmp_path / "runs" / "full.sbatch").read_text(), (tmp_path / "runs" / "full.merge.sbatch").read_text()
    for line in ("#SBATCH --array=1-4", "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=8", "#SBATCH --partition=gpu",
                 "#SBATCH --time=01:00:00", "#SBATCH --requeue", f"--out-dir {tmp_path}/runs/full_shards",
                 "--shard ${SLURM_ARRAY_TASK_ID}/4", "--run-name shard${SLURM_ARRAY_TASK_ID}of4",
                 "sbatch --dependency=afterok:$jid"):
        assert line in array, line
    shards = " ".join(f"{tmp_path}/runs/full_shards/shard{k}of4" for k in range(1, 5))
    assert f"-m specbench merge {shards} --out {out}" in merge and "#SBATCH --job-name=specbench-merge" in merge
    assert "submit with" in capsys.readouterr().out
    for script in ("full.sbatch", "full.merge.sbatch"):
        subprocess.run(["bash", "-n", str(tmp_path / "runs" / script)], check=True)
    # what array task 3 runs: the shard's own index and folder name, the user's arguments untouched
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "3"}
    subprocess.run(["bash", str(tmp_path / "runs" / "full.sbatch")], check=True, env=env, cwd=tmp_path)
    args = (tmp_path / "args_3.txt").read_text().splitlines()
    assert args[:2] == ["-m", "specbench"] and args[args.index("--shard") + 1] == "3/4"
    assert args[args.index("--run-name") + 1] == "shard3of4" and args[args.index("--tasks") + 1] == f"jsonl:{prompts}"


def test_launch_errors_are_one_line(tmp_path, capsys):
    prompts = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    base = ["launch", "--slurm", "--out", str(tmp_path / "o")]
    assert "--shards must be at least 2" in one_line_error([*base, "--shards", "1", "--", "--tasks", f"jsonl:{prompts}"], capsys)
    assert "launch sets --shard itself" in one_line_error([*base, "--shards", "2", "--", "--shard", "1/2"], capsys)
    assert "launch sets --out-dir itself" in one_line_error([*base, "--shards", "2", "--", "--out-dir=x"], capsys)
    assert "unknown method 'pdl'" in one_line_error([*base, "--shards", "2", "--", "--methods", "pdl",
                                                     "--tasks", f"jsonl:{prompts}"], capsys)
    assert "run arguments not understood: --bogus" in one_line_error([*base, "--shards", "2", "--", "--bogus"], capsys)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "manifest.json").write_text("{}")
    assert "already holds a run" in one_line_error([*base, "--shards", "2", "--", "--tasks", f"jsonl:{prompts}"], capsys)


@pytest.mark.ray
def test_ray_launch_resumes_a_killed_shard_and_merges(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray", reason="Ray is not installed (optional extra: pip install 'specbench[ray]')")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    prompts = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "runs" / "full"
    shard2 = tmp_path / "runs" / "full_shards" / "shard2of2"
    flaky = tmp_path / "flaky_python.sh"  # kills shard 2's first attempt once it has written a record
    flaky.write_text(f"""#!/bin/bash
echo "$*" >> {tmp_path}/attempts.txt
if [[ "$*" == *"--shard 2/2"* && ! -e {tmp_path}/killed ]]; then
  touch {tmp_path}/killed
  {sys.executable} "$@" &
  pid=$!
  for i in $(seq 1200); do
    if [ -s {shard2}/records.jsonl ] || ! kill -0 $pid 2>/dev/null; then break; fi
    sleep 0.1
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  exit 137
fi
exec {sys.executable} "$@"
""")
    flaky.chmod(0o755)
    code = main(["launch", "--ray", "--shards", "2", "--out", str(out), "--python", str(flaky), "--retries", "1",
                 "--", "--model", str(model), "--tasks", f"jsonl:{prompts}", "--methods", "pld",
                 "--max-new-tokens", "4", "--warmup", "0", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "shard 2/2 failed (exit 137); resuming it, retry 1/1" in err and "shard 2/2 done (exit 0, attempt 2)" in err
    attempts = (tmp_path / "attempts.txt").read_text().splitlines()
    assert sum("--shard 2/2" in a for a in attempts) == 2 and sum("--shard 1/2" in a for a in attempts) == 1
    recs = read_records(out)
    keys = [r.key for r in recs]
    assert len(keys) == len(set(keys)) == 2 * len(QUESTIONS)  # (ar, pld) x 3 one-turn questions, none twice
    assert {r.question_id for r in recs} == {"q0", "q1", "q2"}
    assert all(r.lossless_class == "exact" for r in recs if r.method == "pld")
    manifest = read_manifest(out)
    assert [m["shard"] for m in manifest["merged_from"]] == [[1, 2], [2, 2]]
    assert (out / "report.md").is_file() and json.loads((shard2 / "manifest.json").read_text())["shard"] == [2, 2]


def test_docstring_examples():
    import specbench.launch.ray_launcher
    import specbench.launch.shards
    import specbench.launch.slurm

    for mod in (specbench.launch.shards, specbench.launch.slurm, specbench.launch.ray_launcher):
        assert doctest.testmod(mod).failed == 0, mod.__name__
