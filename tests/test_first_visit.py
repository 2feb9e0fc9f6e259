"""The runner's untimed first visit of each question and the CUDA attention switch.

- Before the first timed generation of each (question, turn, repeat), the runner prefills that prompt once,
  untimed, so the first method timed on it (AR) does not alone pay a kernel library's first-shape costs;
- cuDNN's scaled-dot-product attention stays off after a model is loaded (it builds a graph per new shape,
  which made the first method to meet a length pay about 40 ms a step on an H200).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from specbench.config.run_config import RunConfig
from specbench.engine.loop import Engine
from specbench.models.device import precision_flags
from specbench.run.plan import make_plan, run_dir_for
from specbench.run.runner import Runner
from tiny_model_dir import save_tiny_model


def test_each_question_is_prefilled_once_untimed_before_its_first_timed_method(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    tasks = tmp_path / "q.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "q1", "turns": ["Say one two three.", "Again."]}, {"id": "q2", "turns": ["Count to five."]}]))
    cfg = RunConfig(methods=("pld",), tasks=(f"jsonl:{tasks}",), max_new_tokens=6, warmup=0,
                    model=str(save_tiny_model(tmp_path / "model", seed=3)), device="cpu",
                    out_dir=str(tmp_path / "runs"))
    calls: list[tuple[int, str, int]] = []  # (prompt length, who, max_new_tokens)
    original = Engine.generate

    def spy(self, prompt_ids, drafter, max_new_tokens, **kw):
        calls.append((len(prompt_ids), "ar" if drafter is None else "pld", max_new_tokens))
        return original(self, prompt_ids, drafter, max_new_tokens, **kw)

    monkeypatch.setattr(Engine, "generate", spy)
    plan = make_plan(cfg)
    assert Runner(plan, run_dir_for(plan), progress=False).execute() == 0
    timed = [c for c in calls if c[2] != 1]
    visits = [c for c in calls if c[2] == 1]
    assert len(timed) == 6 and len(visits) == 3  # 3 units (q1 t1, q1 t2, q2 t1) x (ar, pld); one visit each
    for k, visit in enumerate(visits):  # each visit comes just before its unit's two timed generations
        i = calls.index(visit)
        assert visit[1] == "ar" and calls[i + 1][:2] == (visit[0], "ar") and calls[i + 2][:2] == (visit[0], "pld")
        assert calls[i + 1][2] == 6 and (k == len(visits) - 1 or calls[i + 3][2] == 1)
    assert not torch.backends.cuda.cudnn_sdp_enabled() and precision_flags()["sdpa_cudnn"] is False
