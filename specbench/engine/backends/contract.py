"""What the engine asks of a backend, its target and its KV cache: declared contracts, not name checks.

A backend (``torch_backends.py``: ``reference``, ``fast``; ``llamacpp/``) prepares the model, makes a KV cache per
generation and hands the engine a ``Target`` whose ``run`` is the only forward the decode loop calls. What a
target can do beyond that is declared in its ``caps`` (``TargetCaps``), so the loops, the budget and the run
configuration ask instead of testing the backend's name:

- ``batching``: ``run_batch`` and ``head`` exist (the batched loop, ``batch_loop.py``);
- ``intermediate_layers``: ``run(..., layers=...)`` returns chosen layers' states (EAGLE-3, Hydra++'s prefix);
- ``prompt_states_cost``: a prompt's final hidden states cost more than its logits (llama.cpp outputs every
  prompt row's logits with them), so ``budget=auto`` prices them (``draft_or_skip.fetch_prompt_states``);
- ``tree_masks``: a pass may verify a token tree (an ancestor mask), not only a chain;
- ``skips_layers``: ``run_skipping`` runs the target with chosen decoder sub-layers skipped (``layer_skip.py``),
  the draft of a drafter that ``drafts_with_target`` (SWIFT; the engine hands it a ``self_draft.SelfDraft``).

A cache that keeps the accepted rows itself declares ``trim`` (``TrimsRows``); a transformers cache without it is
trimmed by gathering its tensors (``kv_cache.trim_cache``).

A backend is registered by name with a ``BackendSpec`` (``registry.py``): its target's caps, the dtypes it
runs, how reports label it and what its lossless check compared at, and a factory that builds it (imported only
when a run uses it, so ``--help`` and reports never load llama.cpp).

Example: ``TargetModel(model).caps`` -> ``TargetCaps(batching=True, intermediate_layers=True,
prompt_states_cost=False, tree_masks=True, skips_layers=True)``; the llama.cpp target declares ``batching=False,
intermediate_layers=False, prompt_states_cost=True, skips_layers=False``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:  # (the contract is read by reports too: importing it must not load torch)
    import torch


@dataclass(frozen=True)
class TargetCaps:
    """What a target's forward can do besides one sequence's ``run`` (module docstring)."""

    batching: bool = True
    intermediate_layers: bool = True
    prompt_states_cost: bool = False
    tree_masks: bool = True
    skips_layers: bool = True


class Forward(NamedTuple):
    """One forward's outputs: final-norm hidden states, logits and, when asked, chosen layers' hidden states."""

    hidden: torch.Tensor  # [n, h]
    logits: torch.Tensor  # [n, V] ([1, V] with last_logits_only)
    layer_states: torch.Tensor | None = None  # [n, len(layers), h]


@runtime_checkable
class TrimsRows(Protocol):
    """A KV cache that keeps the context plus a pass's accepted rows itself (preallocated, llama.cpp)."""

    def trim(self, n_ctx: int, rows: list[int]) -> None: ...


class Target(Protocol):
    """The forward the decode loop runs (``target.TargetModel`` on torch, ``llamacpp.target.LlamaTarget``)."""

    device: torch.device
    dtype: torch.dtype
    num_layers: int
    caps: TargetCaps

    def check_layers(self, layers: tuple[int, ...]) -> None: ...

    def scratch_cache(self, capacity: int) -> Any: ...

    def run(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, position_offsets: torch.Tensor | None = None,
            ancestor_mask: torch.Tensor | None = None, last_logits_only: bool = False, layers: tuple[int, ...] = (),
            hidden: bool = True) -> Forward: ...


class Backend(Protocol):
    """How the target's forward runs: ``name`` as recorded in the manifest, ``key`` its cost profile's key."""

    name: str

    @property
    def key(self) -> str: ...

    def prepare(self, model: Any) -> None: ...

    def new_cache(self, model: Any, capacity: int) -> Any: ...

    def target(self, model: Any) -> Target: ...

    def describe(self, model: Any = None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class BackendSpec:
    """A backend as the rest of specbench asks about it, registered by name (``registry.py``).

    ``factory`` (``"module:function"``, imported on first use) builds it: ``function(name, device, dtype, gguf,
    threads)``. ``dtypes``: the ``--dtype`` values it runs (empty: the torch dtypes). ``batch_refusal``: why
    ``--batch-size`` above 1 cannot run on it (with ``caps.batching`` False). ``torch_forward``: its forward is
    torch's (torch's profiler sees it; ``--threads`` sets torch's threads). ``label`` and ``precision``: reports'
    name for a run's ``backend`` manifest entry and the numbers its lossless check compared at (None: the name,
    and the model's dtype).

    Example: ``BackendSpec("toy", "a test backend", "tests.toy_backend:build")`` registers a backend that runs with
    ``--backend toy`` once ``register_backend`` has seen it.
    """

    name: str
    summary: str  # --backend's help for it
    factory: str
    caps: TargetCaps = TargetCaps()
    dtypes: tuple[str, ...] = ()
    batch_refusal: str = ""
    torch_forward: bool = True
    label: Callable[[dict[str, Any]], str] | None = None
    precision: Callable[[dict[str, Any]], str] | None = None
    loader: str = ""  # "module:function" loading the model with a file of its own: (name, dtype, device, threads)

    def create(self, device: Any, dtype: Any, gguf: Any = None, threads: int | None = None) -> Backend:
        """The backend on ``device`` in ``dtype`` (``gguf``: the file a GGUF backend runs)."""
        module, _, function = self.factory.partition(":")
        return getattr(importlib.import_module(module), function)(self.name, device, dtype, gguf, threads)
