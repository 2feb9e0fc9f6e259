"""A drafter seen from outside: every call forwarded, what it proposed and what was verified of it recorded, and
each input compared before and after the call (the contract's obligation 4: read-only inputs).

``Watched(drafter, log)`` forwards every attribute (the capabilities the engine reads included) to the drafter;
``copy.deepcopy`` copies the drafter and keeps the log, so the copies ``--repeats`` times on (``RepeatIsolation``)
record into the same log. With ``garble`` set, ``propose`` sees the hidden states replaced by garbage of the
same shape (``"nan"``, ``"random"``): a drafter that declares ``reads_hidden_states = False`` must not notice.

>>> from specbench.engine.drafter import BaseDrafter, DraftContext
>>> from specbench.engine.tree import DraftTree
>>> class Greedy(BaseDrafter):
...     reads_hidden_states = False
...     def propose(self, ctx):
...         ctx.tokens.append(0)  # (a mutation: the engine's own list grows)
...         return DraftTree.chain([1])
>>> w = Watched(Greedy(), Log())
>>> ctx = DraftContext(tokens=[5, 6], prompt_len=1, hidden=torch.zeros(4), max_depth=4)
>>> w.propose(ctx), w.reads_hidden_states, w.log.proposals
(DraftTree(tokens=(1,), parents=(-1,)), False, [(3, (1,), (-1,))])
>>> w.log.mutations
['propose changed ctx.tokens (2 tokens before, 3 after)']
"""
from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from specbench.engine.drafter import DraftContext, Proposal, StepResult
from specbench.engine.tree import DraftTree

Drawn = tuple[int, tuple[int, ...], tuple[int, ...]] | None  # (context length, tree tokens, parents); None: no draft


@dataclass
class Log:
    """What watched drafters did: each proposal in call order (``Drawn``), the verified sibling groups whose
    parent was accepted (``groups``) and which ranks were accepted in them (``accepted_ranks``), and the inputs
    a call changed (``mutations``, each said once)."""

    proposals: list[Drawn] = field(default_factory=list)
    groups: int = 0
    accepted_ranks: Counter = field(default_factory=Counter)
    mutations: list[str] = field(default_factory=list)
    trees: int = 0  # verified drafts with siblings somewhere (not chains)

    def mutated(self, what: str) -> None:
        if what not in self.mutations:
            self.mutations.append(what)

    def drafted(self, start: int = 0) -> int:
        """Draft tokens proposed from the ``start``-th proposal on."""
        return sum(len(p[1]) for p in self.proposals[start:] if p is not None)


def tree_of(out: Any) -> DraftTree | None:
    """The tree of what ``propose`` returned (a ``DraftTree``, a ``Proposal`` or None)."""
    return out.tree if isinstance(out, Proposal) else out


def _snapshot(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return copy.deepcopy(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and bool(torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5))))
    return a == b


def _describe(call: str, name: str, before: Any, after: Any) -> str:
    if isinstance(before, list) and isinstance(after, list) and len(before) != len(after):
        return f"{call} changed {name} ({len(before)} tokens before, {len(after)} after)"
    return f"{call} changed {name}"


def garbage(t: torch.Tensor | None, kind: str) -> torch.Tensor | None:
    """A tensor of ``t``'s shape and dtype holding ``kind`` garbage: NaN, or seeded normal noise scaled up.

    >>> garbage(torch.zeros(2, 3), "nan").isnan().all().item(), garbage(None, "nan")
    (True, None)
    """
    if t is None or not t.is_floating_point():
        return t
    if kind == "nan":
        return torch.full_like(t, float("nan"))
    g = torch.Generator(device="cpu").manual_seed(int(t.numel()))
    return (10 * torch.randn(t.shape, generator=g)).to(t.device, t.dtype)


class Watched:
    """``drafter`` behind a recorder (see the module's docstring); ``garble``: None, ``"nan"`` or ``"random"``."""

    def __init__(self, drafter: Any, log: Log, garble: str | None = None) -> None:
        self.__dict__.update(inner=drafter, log=log, garble=garble)

    def __getattr__(self, name: str) -> Any:  # (the capabilities, ``report`` and anything else a method has)
        if "inner" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["inner"], name)

    def __deepcopy__(self, memo: dict) -> "Watched":
        return Watched(copy.deepcopy(self.inner, memo), self.log, self.garble)

    def _call(self, call: str, fn: Any, inputs: dict[str, Any], *args: Any) -> Any:
        """``fn(*args)``, each of ``inputs`` (name -> the object handed over) compared before and after."""
        before = {k: _snapshot(v) for k, v in inputs.items()}
        out = fn(*args)
        for k, v in inputs.items():
            if not _same(before[k], v):
                self.log.mutated(_describe(call, k, before[k], v))
        return out

    def begin(self, prompt_ids: list[int]) -> None:
        self._call("begin", self.inner.begin, {"prompt_ids": prompt_ids}, prompt_ids)

    def propose(self, ctx: DraftContext) -> Any:
        if self.garble:
            ctx = dataclasses.replace(ctx, hidden=garbage(ctx.hidden, self.garble),
                                      hidden_states=garbage(ctx.hidden_states, self.garble))
        inputs = {f"ctx.{f}": getattr(ctx, f) for f in ("tokens", "prompt_len", "hidden", "hidden_states",
                                                          "max_depth", "layer_states")}
        out = self._call("propose", self.inner.propose, inputs, ctx)
        tree = tree_of(out)
        n = len(ctx.tokens)
        self.log.proposals.append(None if tree is None or not isinstance(tree, DraftTree) or not len(tree) else
                                  (n, tuple(int(t) for t in tree.tokens), tuple(tree.parents)))
        return out

    def observe(self, result: StepResult) -> None:
        if result.tree is not None:
            self._count_groups(result.tree, result.accepted_nodes)
        inputs = {"result.tree": result.tree, "result.accepted_nodes": result.accepted_nodes,
                  "result.row_topk": result.row_topk, "result.aux_predictions": result.aux_predictions}
        self._call("observe", self.inner.observe, inputs, result)

    def learn(self, prompt_ids: list[int], output_ids: list[int]) -> None:
        self._call("learn", self.inner.learn, {"prompt_ids": prompt_ids, "output_ids": output_ids},
                   prompt_ids, output_ids)

    def _count_groups(self, tree: DraftTree, accepted: list[int]) -> None:
        """The verified sibling groups whose parent was accepted (the root always is), and the accepted ranks."""
        children: dict[int, list[int]] = {}
        for i, p in enumerate(tree.parents):
            children.setdefault(p, []).append(i)
        ranks, on_path = tree.sibling_ranks(), {-1, *accepted}
        wide = [kids for p, kids in children.items() if len(kids) > 1]
        self.log.trees += bool(wide)
        for p, kids in children.items():
            if len(kids) > 1 and p in on_path:
                self.log.groups += 1
                self.log.accepted_ranks.update(ranks[c] for c in kids if c in on_path)
