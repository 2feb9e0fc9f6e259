"""A drafter that breaks the drafter contract ends in one line naming it, exit 2, never a raw traceback
(``engine/proposal_check.py``, ``run/method_faults.py``): ids outside the vocabulary, negative ids, a list for a
tree, a bad parent, ``draft_probs`` of another shape, a negative ``accept_depth``, a ``propose`` that raises; the
records timed before it stay. A well-behaved drafter on the same model still runs (the control)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from conftest import TINY_VOCAB, make_tiny_model
from fault_helpers import cli
from specbench.engine.aux_rows import AuxRows
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import BaseDrafter, DraftContext, Proposal
from specbench.engine.loop import Engine
from specbench.engine.sampling_config import SamplingConfig
from specbench.engine.tree import DraftTree
from specbench.errors import DrafterError
from specbench.plugins.registry import METHODS, MethodSpec
from specbench.results.run_folder import read_records
from tiny_model_dir import save_tiny_model

V = TINY_VOCAB


def bypassed(tokens: tuple, parents: tuple) -> DraftTree:
    """A ``DraftTree`` built past its constructor's check (as a drafter that copies one in place might)."""
    tree = object.__new__(DraftTree)
    object.__setattr__(tree, "tokens", tokens)
    object.__setattr__(tree, "parents", parents)
    object.__setattr__(tree, "ranks", None)
    return tree


def raising(ctx: DraftContext) -> Any:
    raise RuntimeError("the draft model's cache\nis gone")


# what propose returns (given the vocabulary's size), and the one line it must give
FAULTS: dict[str, tuple[Callable[[DraftContext], Any], str]] = {
    "id past the vocabulary": (lambda ctx: DraftTree.chain([3, V + 7]),
                               rf"its propose returned token id {V + 7} at node 1, outside the target's vocabulary "
                               rf"\(ids 0\.\.{V - 1}\)"),
    "negative id": (lambda ctx: DraftTree.chain([-4, 2]), r"its propose returned token id -4 at node 0, outside"),
    "a list": (lambda ctx: [3, 4, 5], r"its propose returned a list \(\[3, 4, 5\]\), not a DraftTree, a Proposal or "
                                      r"None"),
    "a list in a Proposal": (lambda ctx: Proposal([3, 4]), r"a Proposal whose tree is a list \(\[3, 4\]\)"),
    "float ids": (lambda ctx: bypassed((1.5, 2.0), (-1, 0)), r"token ids that are not integers \(\(1\.5, 2\.0\)\)"),
    "bad parent (bypassed)": (lambda ctx: bypassed((3, 4, 5), (-1, 5, 0)),
                              r"a tree whose node 1 has parent 5; a parent must precede its node"),
    "bad parent (built)": (lambda ctx: DraftTree((3, 4), (-1, 3)),
                           r"its propose raised ValueError: node 1 has parent 3; parents must precede their children"),
    "draft_probs of another shape": (lambda ctx: Proposal(DraftTree.chain([3, 4]), draft_probs=torch.ones(2, V - 1)),
                                     rf"draft_probs of shape \[2, {V - 1}\], not \[2, {V}\]"),
    "draft_probs a list": (lambda ctx: Proposal(DraftTree.chain([3]), draft_probs=[[1.0] * V]),
                           r"draft_probs as a list"),
    "accept_depth=-5": (lambda ctx: Proposal(DraftTree.chain([3, 4]), accept_depth=-5),
                        r"accept_depth=-5; it must be None or an integer >= 0"),
    "aux id past the vocabulary": (lambda ctx: Proposal(DraftTree.chain([3]), AuxRows.chain([2, V])),
                                   rf"token id {V} at auxiliary row 1"),
    "raises": (raising, r"its propose raised RuntimeError: the draft model's cache is gone$"),
}


class Stub(BaseDrafter):
    """Proposes whatever ``make(ctx)`` returns, from its second step on (a good first step: faults come late)."""

    def __init__(self, make: Callable[[DraftContext], Any]) -> None:
        self.make, self.calls = make, 0

    def propose(self, ctx: DraftContext) -> Any:
        self.calls += 1
        return DraftTree.chain([1]) if self.calls == 1 else self.make(ctx)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(make_tiny_model("llama", seed=1), set())


@pytest.mark.parametrize("fault", FAULTS)
def test_each_faulty_proposal_is_one_drafter_error(engine: Engine, fault: str) -> None:
    make, message = FAULTS[fault]
    with pytest.raises(DrafterError, match=message) as e:
        engine.generate([1, 2, 3], Stub(make), 8)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fault", ["id past the vocabulary", "draft_probs of another shape", "accept_depth=-5"])
def test_the_sampled_and_batched_loops_check_too(engine: Engine, fault: str) -> None:
    make, message = FAULTS[fault]
    with pytest.raises(DrafterError, match=message):
        engine.generate([1, 2, 3], Stub(make), 8, sampling=SamplingConfig(temperature=1.0))
    with pytest.raises(DrafterError, match=message):
        BatchDecoder(engine, 8).generate([Request([1, 2, 3]), Request([4, 5])], [Stub(make), Stub(make)], 2)


def test_a_well_formed_proposal_still_runs(engine: Engine) -> None:
    """The control: the same shapes, well formed, run and give AR's output."""
    good = lambda ctx: Proposal(DraftTree((3, 4, 5), (-1, 0, -1)), AuxRows.chain([2]), accept_depth=0)  # noqa: E731
    want = engine.generate([1, 2, 3], None, 8).output_ids
    assert engine.generate([1, 2, 3], Stub(good), 8).output_ids == want
    probs = lambda ctx: Proposal(DraftTree.chain([3, 4]), draft_probs=torch.full((2, V), 1.0 / V))  # noqa: E731
    sampled = SamplingConfig(temperature=1.0)
    assert len(engine.generate([1, 2, 3], Stub(probs), 8, sampling=sampled, seed=3).output_ids) == 8


@dataclass(frozen=True)
class NoOptions:
    def validate(self) -> None:
        return None


@pytest.mark.parametrize("fault", ["id past the vocabulary", "accept_depth=-5", "raises"])
def test_a_run_stops_on_one_line_naming_the_method_and_keeps_the_records_before(tmp_path: Path, capsys, monkeypatch,
                                                                                fault: str) -> None:
    make, message = FAULTS[fault]
    model = save_tiny_model(tmp_path / "model")
    vocab = json.loads((model / "config.json").read_text())["vocab_size"]
    shifted = (lambda ctx: DraftTree.chain([3, vocab + 7])) if fault == "id past the vocabulary" else make
    METHODS.names()  # discovery first, so the entry added below is not overwritten
    monkeypatch.setitem(METHODS._entries, "faulty", MethodSpec("faulty", NoOptions, lambda c, e: Stub(shifted), "x"))
    tasks = tmp_path / "q.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"q{i}", "turns": [f"Count to {i}."]}) + "\n" for i in range(2)))
    code, err = cli(["run", "--model", str(model), "--tasks", f"jsonl:{tasks}", "--methods", "pld,faulty",
                     "--max-new-tokens", "8", "--warmup", "0", "--out-dir", str(tmp_path / "res"), "--run-name", "r",
                     "--no-progress", "--device", "cpu"], capsys)
    assert code == 2, err
    line = err.splitlines()[-1]
    assert line.startswith("specbench run: error: method faulty: its propose") and "Traceback" not in err
    if fault != "id past the vocabulary":
        assert re.search(message, line), line
    else:
        assert f"token id {vocab + 7} at node 1" in line
    kept = {(r.method, r.question_id) for r in read_records(tmp_path / "res" / "r")}
    assert kept == {("ar", "q0"), ("pld", "q0")}  # the question's other methods, timed before it, stay
