"""The draft budget's decisions, frozen (issue 88): a recorded run of the decode loops (``data/budget_replay.json``,
made by ``data/record_budget_replay.py`` on a tiny random model: per-step seconds, drafts and accepted nodes of
``budget=auto`` and of a fixed depth K = 2, at batch sizes 1 and 2) is replayed through the budget as it is now
(``budget_replay.py``), and every decision must be the one recorded: whether each step drafts or runs plain, how
deep the drafter is asked, and which nodes are verified. A change that moves the budget without changing it
passes; one that changes a price, a draw or a cut fails at its first different decision."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from budget_replay import replay_run

FIXTURE = Path(__file__).resolve().parent / "data" / "budget_replay.json"
DATA = json.loads(FIXTURE.read_text())
RUNS = {f"{r['budget']}-batch{r['batch']}": r for r in DATA["runs"]}


def recorded(run: dict) -> list[tuple[str, object]]:
    """The decisions the recorded run made, in call order (``budget_replay.py``'s module docstring)."""
    out = []
    for e in run["events"]:
        if e["call"] == "depth":
            out.append(("depth", min(e["room"] - 1, e["out"])))
        elif e["call"] == "draft":
            out.append(("draft", [e["depth"], e["kept"]]))
        elif e["call"] in ("plan", "select", "select_batch"):
            out.append((e["call"], e["out"]))
    return out


def first_difference(got: list, want: list) -> str:
    i = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    return f"decision {i} of {len(want)}: got {got[i:i + 1]}, recorded {want[i:i + 1]}"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_budget_decides_as_recorded(name: str) -> None:
    run = RUNS[name]
    got, summaries = replay_run(run, DATA)
    want = recorded(run)
    assert got == want, first_difference(got, want)
    if run["summaries"] is not None:  # each sequence's counts and priced seconds, as its record keeps them
        assert len(summaries) == len(run["summaries"])
        for mine, theirs in zip(summaries, run["summaries"]):
            assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-15)


def test_the_fixture_covers_what_it_freezes() -> None:
    assert {(r["budget"], r["batch"]) for r in DATA["runs"]} == {("auto", 1), ("auto", 2), (2, 1), (2, 2)}
    for name in ("auto-batch1", "auto-batch2"):
        plans = [d for call, ds in recorded(RUNS[name]) if call == "plan" for d in ds]
        assert True in plans and False in plans, name  # drafted and skipped steps
    depths = {d for r in RUNS.values() for call, d in recorded(r) if call == "depth"}
    assert len(depths) > 1
    fixed = [d for r in (RUNS["2-batch1"], RUNS["2-batch2"]) for _, d in recorded(r)]
    assert {d[0] for d in fixed} == {1, 2} and any(d[1] for d in fixed)  # cut to K, and to the room near the end


def test_the_replay_tells_a_different_budget() -> None:
    """Another seed of the budget's draws decides otherwise somewhere: the comparison can fail."""
    run = RUNS["auto-batch1"]
    got, _ = replay_run(run, DATA, seed=1)
    assert got != recorded(run)
