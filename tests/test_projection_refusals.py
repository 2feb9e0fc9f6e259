"""What a projection refuses in one line rather than pricing without a word (issue 85, defects 3, 6 and 12):
drafters timed on other torch threads than the run drafted on, a sampled run, a run decoded only in batches."""
from __future__ import annotations

import dataclasses

from specbench.reports.projection_table import build_projection, onto_profile
from test_projection import A, B, one_line_refusal as refusal, profile_of, run_on


def test_drafters_timed_on_other_threads_than_the_run_drafted_on_are_refused_naming_the_flag():
    run = run_on(A)
    run.manifest["drafter_threads"] = 2
    one_thread = {**profile_of(B), "drafter_threads": 1}
    err = refusal(run, one_thread)
    assert "timed its drafters on 1 torch threads" in err and "on 2" in err and "--threads 2" in err
    assert build_projection(run, [onto_profile("b.json", {**profile_of(B), "drafter_threads": 2})]).rows
    old = run_on(A)  # (a run from before drafter_threads: its hardware's torch threads, as the manifest was written)
    old.manifest["hardware"] = {"torch_threads": 2}
    assert "--threads 2" in refusal(old, {**profile_of(B), "machine": {"cpu": "x", "torch_threads": 1}})


def test_a_sampled_run_is_refused_saying_its_temperature():
    run = run_on(A)
    run.manifest["sampling"] = {"temperature": 0.8, "top_p": 1.0, "top_k": 0, "seed": 0}
    err = refusal(run, profile_of(B))
    assert "T=0.8" in err and "greedy" in err


def test_a_run_decoded_only_in_batches_is_refused_with_the_reason():
    run = run_on(A)
    run.records[:] = [r if r.method == "ar" else dataclasses.replace(r, batch_size=2)
                      for r in run.records]  # (ar at batch size 1: the lossless reference a batched run keeps)
    err = refusal(run, profile_of(B))
    assert "only at batch size 2" in err and "--batch-size 1" in err
