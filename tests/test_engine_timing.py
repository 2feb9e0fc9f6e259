"""The engine's per-pass records that the latency and per-position statistics read (schema 4)."""
from __future__ import annotations

from conftest import make_tiny_model
from specbench.engine.drafter import BaseDrafter
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree


class FixedTreeDrafter(BaseDrafter):
    """Proposes the same 4-node tree each step: chains [1, 2, 3] and [4] (depth 3); nothing on odd steps."""

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, ctx):
        self.calls += 1
        return DraftTree.from_chains([[1, 2, 3], [4]]) if self.calls % 2 else None


def test_per_pass_depths_and_times_line_up() -> None:
    engine = Engine(make_tiny_model("llama"), stop_ids=set())
    gen = engine.generate([5, 6, 7], FixedTreeDrafter(), 24)
    n = gen.forward_passes
    assert len(gen.verify_times_s) == len(gen.step_times_s) == len(gen.draft_depths) == len(gen.draft_sizes) == n
    # the prefill drafts nothing; drafted steps carry the tree's depth (3), not its size (4), unless the
    # budget near max_new_tokens cut the tree
    assert gen.draft_depths[0] == gen.draft_sizes[0] == 0
    assert {(d, s) for d, s in zip(gen.draft_depths[1:], gen.draft_sizes[1:])} <= {(3, 4), (0, 0), (2, 3), (1, 2)}
    assert (3, 4) in set(zip(gen.draft_depths, gen.draft_sizes)) and (0, 0) in set(zip(gen.draft_depths[1:], gen.draft_sizes[1:]))
    # each step's draft and verify intervals lie inside the step; the prefill's step is the time to first token
    assert all(st >= d + v for st, d, v in zip(gen.step_times_s, gen.draft_times_s, gen.verify_times_s))
    assert gen.step_times_s[0] >= gen.verify_times_s[0] > 0
