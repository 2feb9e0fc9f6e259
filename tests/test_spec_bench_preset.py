"""``--preset spec-bench``: Spec-Bench's protocol in one flag, overridable by explicit flags; and the whole
reproduction path offline: a Vicuna-like target without a chat template and published-layout drafters by
hub id, from a hub cache built in the test."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub_fixtures import eagle_reference_checkpoint, medusa_reference_checkpoint, publish, tiny_vicuna
from specbench.config.run_flags import add_run_arguments, config_from_args
from specbench.results.lossless import EXACT, TIE
from specbench.config.presets import SPEC_BENCH_TASKS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _config(*argv: str):
    p = argparse.ArgumentParser()
    add_run_arguments(p)
    return config_from_args(p.parse_args(list(argv)))


def test_preset_fills_spec_bench_values_and_flags_override() -> None:
    cfg = _config("--preset", "spec-bench", "--model", "lmsys/vicuna-7b-v1.3", "--device", "cpu",
                  "--methods", "eagle,lookahead,sps")
    assert cfg.preset == "spec-bench" and tuple(cfg.tasks) == SPEC_BENCH_TASKS and cfg.split == "all"
    assert (cfg.max_new_tokens, cfg.dtype, cfg.temperature, cfg.chat_template) == (1024, "float32", 0.0, "vicuna")
    assert cfg.method_options["eagle"] == {"tree": "dynamic", "top_k": 10, "depth": 5, "total_tokens": 59,
                                           "checkpoint": "yuhuili/EAGLE-Vicuna-7B-v1.3"}
    assert cfg.method_options["sps"]["draft_model"] == "double7/vicuna-68m"
    assert cfg.method_options["lookahead"] == {"ngram": 5, "window": 7, "guess": 7}
    assert "medusa" not in cfg.method_options  # options only for the run's methods
    mine = _config("--preset", "spec-bench", "--model", "lmsys/vicuna-13b-v1.3", "--device", "cpu", "--methods", "eagle",
                   "--max-new-tokens", "64", "--tasks", "gsm8k", "--method-opt", "eagle.top_k=4", "--chat-template", "raw")
    assert (mine.max_new_tokens, tuple(mine.tasks), mine.chat_template) == (64, ("gsm8k",), "raw")
    assert mine.method_options["eagle"]["top_k"] == "4" and mine.method_options["eagle"]["depth"] == 5
    assert mine.method_options["eagle"]["checkpoint"] == "yuhuili/EAGLE-Vicuna-13B-v1.3"
    plain = _config("--methods", "eagle")
    assert plain.preset is None and plain.method_options == {} and plain.chat_template == "auto"


@pytest.mark.skipif(not (DATA / "spec_bench" / "question.jsonl").is_file(), reason="needs ../shared/data")
def test_spec_bench_reproduction_offline(tmp_path) -> None:
    """The issue's acceptance: preset + Vicuna-like target + EAGLE / Medusa / SpS drafters by hub id, no
    network; 0 MISMATCH; the manifest names template vicuna and each repository's revision and hash."""
    import torch
    from transformers import AutoModelForCausalLM

    hub = tmp_path / "hub"
    target_dir = tiny_vicuna(tmp_path / "target")
    target = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32)
    commits = {
        "lmsys/vicuna-tiny-v1.3": publish(hub, "lmsys/vicuna-tiny-v1.3", target_dir),
        "yuhuili/EAGLE-Vicuna-tiny": publish(hub, "yuhuili/EAGLE-Vicuna-tiny", eagle_reference_checkpoint(target, tmp_path / "e")),
        "FasterDecoding/medusa-vicuna-tiny": publish(hub, "FasterDecoding/medusa-vicuna-tiny",
                                                     medusa_reference_checkpoint(target, tmp_path / "m")),
        "double7/vicuna-tiny-68m": publish(hub, "double7/vicuna-tiny-68m", tiny_vicuna(tmp_path / "draft", seed=1)),
    }
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub), "HF_HOME": str(tmp_path / "hf"),
                        "SPECBENCH_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "run_bench.py", "--preset", "spec-bench", "--model", "lmsys/vicuna-tiny-v1.3",
           "--methods", "eagle,medusa,sps,pld", "--tasks", "mt_bench,gsm8k", "--limit", "1", "--max-new-tokens", "12",
           "--method-opt", "eagle.checkpoint=yuhuili/EAGLE-Vicuna-tiny",
           "--method-opt", f"medusa.checkpoint=FasterDecoding/medusa-vicuna-tiny@{commits['FasterDecoding/medusa-vicuna-tiny']}",
           "--method-opt", "sps.draft_model=double7/vicuna-tiny-68m",
           "--out-dir", str(tmp_path / "results"), "--run-name", "sb", "--data-dir", str(DATA), "--no-progress"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "results" / "sb" / "manifest.json").read_text())
    assert manifest["config"]["preset"] == "spec-bench" and manifest["config"]["max_new_tokens"] == 12
    assert manifest["chat_template"]["name"] == "vicuna" and len(manifest["chat_template"]["first_prompt_sha256"]) == 16
    art = manifest["artifacts"]
    for method, key, repo in (("eagle", "checkpoint_source", "yuhuili/EAGLE-Vicuna-tiny"),
                              ("medusa", "checkpoint_source", "FasterDecoding/medusa-vicuna-tiny"),
                              ("sps", "draft_source", "double7/vicuna-tiny-68m")):
        source = art[method]["mt_bench"][key]
        assert source["repo"] == repo and source["revision"] == commits[repo] and len(source["sha256"]) == 64
    records = [json.loads(line) for line in (tmp_path / "results" / "sb" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 5 * 3  # ar + 4 methods, MT-Bench's 2 turns + GSM8K's 1
    classes = {r["lossless_class"] for r in records if r["method"] != "ar"}
    assert classes and classes <= {EXACT, TIE}  # 0 MISMATCH
    report = (tmp_path / "results" / "sb" / "report.md").read_text()
    assert "chat template `vicuna`" in report and "Preset: `spec-bench`" in report
