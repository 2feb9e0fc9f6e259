"""The engine's boundary with a drafter: what ``propose`` returned must be a proposal the engine can verify.

A drafter is plugin code: a proposal with a token id outside the target's vocabulary, a list where a tree
belongs, a parent that does not precede its child, ``draft_probs`` of another shape or a negative
``accept_depth`` would otherwise surface steps later as a raw traceback from the embedding lookup or the
acceptance (or, for ``accept_depth``, as wrong output), and a ``propose`` that raises would end the run with
a traceback that does not name the method. Each becomes one ``DrafterError`` saying what was returned (the
runner prefixes the method's label, ``run/method_faults.py``; exit 2).

The checks are vectorised (one ``numpy`` pass over the tokens and parents; tensor shapes are metadata), so
a step pays a few microseconds, never a loop over the tokens in Python.

>>> from specbench.engine.tree import DraftTree
>>> check_proposal(DraftTree.chain([4, 5]), vocab=64)
>>> check_proposal([4, 5], vocab=64)
Traceback (most recent call last):
...
specbench.errors.DrafterError: its propose returned a list ([4, 5]), not a DraftTree, a Proposal or None
>>> check_proposal(DraftTree.chain([4, 64]), vocab=64)
Traceback (most recent call last):
...
specbench.errors.DrafterError: its propose returned token id 64 at node 1, outside the target's vocabulary (ids 0..63)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from specbench.engine.aux_rows import AuxRows
from specbench.engine.drafter import DraftContext, Proposal
from specbench.engine.propose_deadline import propose_deadline
from specbench.engine.tree import DraftTree
from specbench.errors import USER_ERRORS, DrafterError

SHOWN = 60  # characters of a returned value or an error message a one-line error quotes

RETURNED = "its propose returned"


def _brief(value: Any) -> str:
    """``value``'s repr cut to ``SHOWN`` characters, on one line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def proposed(propose: Callable[[DraftContext], Any], ctx: DraftContext) -> Any:
    """``propose(ctx)``; anything it raises but a one-line user error becomes a ``DrafterError`` naming it."""
    try:
        with propose_deadline():  # (a propose that never returns is named after a deadline: propose_deadline.py)
            return propose(ctx)
    except USER_ERRORS:
        raise  # (already one line: a drafter refusing its input on purpose)
    except Exception as e:  # noqa: BLE001 - plugin code: whatever it raises is the drafter's fault
        message = " ".join(str(e).split())
        message = message if len(message) <= 4 * SHOWN else message[: 4 * SHOWN - 3] + "..."
        raise DrafterError(f"its propose raised {type(e).__name__}" + (f": {message}" if message else "")) from e


def check_ids(ids: Sequence[Any], vocab: int, what: str) -> None:
    """Every id of ``ids`` (a non-empty tuple) an integer in ``[0, vocab)``, else a ``DrafterError`` naming the
    first offender and its position (``what``: ``node`` or ``auxiliary row``)."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise DrafterError(f"{RETURNED} token ids that are not integers ({_brief(ids)})")
    bad = (arr < 0) | (arr >= vocab)
    if bad.any():
        i = int(bad.argmax())
        raise DrafterError(f"{RETURNED} token id {int(arr[i])} at {what} {i}, outside the target's vocabulary "
                           f"(ids 0..{vocab - 1})")


def check_tree(tree: Any, vocab: int) -> None:
    """``tree`` is a ``DraftTree`` of in-vocabulary ids whose every parent precedes its node (-1: the root)."""
    if not isinstance(tree, DraftTree):
        raise DrafterError(f"{RETURNED} a Proposal whose tree is {_kind(tree)}, not a DraftTree or None")
    if not len(tree.tokens):
        return
    check_ids(tree.tokens, vocab, "node")
    parents = np.asarray(tree.parents)
    if parents.shape != (len(tree.tokens),) or parents.dtype.kind not in "iu":
        raise DrafterError(f"{RETURNED} a tree of {len(tree.tokens)} tokens with parents {_brief(tree.parents)}")
    # (DraftTree refuses such parents when built; a tree that bypassed its constructor still stops here)
    bad = (parents < -1) | (parents >= np.arange(len(parents)))
    if bad.any():
        i = int(bad.argmax())
        raise DrafterError(f"{RETURNED} a tree whose node {i} has parent {int(parents[i])}; a parent must precede "
                           "its node (-1: the root)")


def check_probs(probs: Any, nodes: int, vocab: int) -> None:
    """``draft_probs`` is None or a ``[nodes, vocab]`` tensor (its shape only: its values stay on the device)."""
    if probs is None:
        return
    if not isinstance(probs, torch.Tensor):
        raise DrafterError(f"{RETURNED} draft_probs as {_kind(probs)}, not a tensor [len(tree), V]")
    if tuple(probs.shape) != (nodes, vocab):
        raise DrafterError(f"{RETURNED} draft_probs of shape {list(probs.shape)}, not [{nodes}, {vocab}] (a row per "
                           "tree node over the target's vocabulary)")


def check_depth(depth: Any) -> None:
    """``accept_depth`` is None or an integer >= 0."""
    if depth is None:
        return
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise DrafterError(f"{RETURNED} accept_depth={_brief(depth)}; it must be None or an integer >= 0")


def _kind(value: Any) -> str:
    """``a list ([4, 5])``: the type and a glimpse of a value that is not what the contract asks."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} ({_brief(value)})"


def check_proposal(proposal: Any, vocab: int) -> None:
    """What ``propose`` returned is None, a ``DraftTree`` or a ``Proposal`` that a target whose logits are ``vocab``
    wide can verify; anything else is a one-line ``DrafterError`` saying what it is."""
    if proposal is None:
        return
    if isinstance(proposal, DraftTree):
        check_tree(proposal, vocab)
        return
    if not isinstance(proposal, Proposal):
        raise DrafterError(f"{RETURNED} {_kind(proposal)}, not a DraftTree, a Proposal or None")
    tree, aux = proposal.tree, proposal.aux
    if tree is not None:
        check_tree(tree, vocab)
    if aux is not None:
        if not isinstance(aux, AuxRows):
            raise DrafterError(f"{RETURNED} a Proposal whose aux is {_kind(aux)}, not AuxRows or None")
        if len(aux.tokens):
            check_ids(aux.tokens, vocab, "auxiliary row")
    check_probs(proposal.draft_probs, 0 if tree is None else len(tree.tokens), vocab)
    check_depth(proposal.accept_depth)
