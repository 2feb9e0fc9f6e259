"""What the engine asks of a backend, its target and its KV cache: declared contracts, not name checks.

A backend (``torch_backends.py``: ``reference``, ``fast``; ``llamacpp/``) prepares the model, makes a KV cache per
generation and hands the engine a ``Target`` whose ``run`` is the only forward the decode loop calls (``forward``:
the same pass, hidden states and logits alone, for the lossless check's margins and the profiler). What a target
can do beyond that is declared in its backend's spec, ``BackendSpec.caps`` (``TargetCaps``), the one place it is
declared: the backend and its target read it from there, and the loops, the budget and the run configuration ask
it instead of testing the backend's name:

- ``batching``: the target is a ``BatchedTarget`` (``run_batch``, ``head``, ``layout``: the batched loop,
  ``batch_loop.py``) and the backend a ``BatchingBackend`` (``new_batch_cache``);
- ``intermediate_layers``: ``run(..., layers=...)`` returns chosen layers' states (EAGLE-3, Hydra++'s prefix);
- ``prompt_states_cost``: a prompt's final hidden states cost more than its logits (llama.cpp outputs every
  prompt row's logits with them), so ``budget=auto`` prices them (``draft_or_skip.fetch_prompt_states``);
- ``tree_masks``: a pass may verify a token tree (an ancestor mask), not only a chain;
- ``skips_layers``: the target is a ``SkippingTarget``: ``run_skipping`` runs it with chosen decoder sub-layers
  skipped (``layer_skip.py``), the draft of a drafter that ``drafts_with_target`` (SWIFT; the engine hands it a
  ``self_draft.SelfDraft``).

Declared means checked: ``checked_target`` makes a backend's target and refuses, in one line, a target (or a
backend) without what its caps declare; ``require`` is how the code that uses an optional part asks for it, and
refuses in one line where the caps say no.

A cache that keeps the accepted rows itself declares ``trim`` (``TrimsRows``); a transformers cache without it is
trimmed by gathering its tensors (``kv_cache.trim_cache``).

A backend is registered by name with a ``BackendSpec`` (``registry.py``): its target's caps, the dtypes it
runs, how reports label it and what its lossless check compared at, and a factory that builds it (imported only
when a run uses it, so ``--help`` and reports never load llama.cpp).

Example: ``backend_spec("fast").caps`` -> ``TargetCaps(batching=True, intermediate_layers=True,
prompt_states_cost=False, tree_masks=True, skips_layers=True)``, which ``TargetModel(model, caps)`` is given;
llama.cpp's spec declares ``batching=False, intermediate_layers=False, prompt_states_cost=True,
skips_layers=False``. A target that cannot batch is refused where the batched loop asks for it:

>>> from types import SimpleNamespace
>>> single = SimpleNamespace(caps=TargetCaps(batching=False))
>>> require(single, SkippingTarget) is single
True
>>> require(single, BatchedTarget)
Traceback (most recent call last):
...
specbench.errors.ConfigError: this backend's target has no batched forward (caps.batching is False)
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol, TypeVar, runtime_checkable

from specbench.errors import ConfigError

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


@runtime_checkable
class WarmsUp(Protocol):
    """A backend with work to do before a generation of ``positions`` positions is timed (``compiled``: compiling
    its shapes); the engine calls ``warm_up`` before its clock starts, the runner before a job's
    (``Engine.warm_up``). ``layers``: whether the generation reads intermediate layers' states."""

    def warm_up(self, model: Any, positions: int, layers: bool = False) -> None: ...


@runtime_checkable
class PadsRows(Protocol):
    """A backend whose forward of ``n`` rows runs as more (``compiled``: the row bucket holding them), so a step
    is priced at the rows it pays for (``run/budgets.py``): ``padded_rows(9)`` -> 16."""

    def padded_rows(self, rows: int) -> int: ...


class Target(Protocol):
    """The forward the decode loop runs (``target.TargetModel`` on torch, ``llamacpp.target.LlamaTarget``)."""

    device: torch.device
    dtype: torch.dtype
    num_layers: int
    caps: TargetCaps  # its backend spec's

    def check_layers(self, layers: tuple[int, ...]) -> None: ...

    def scratch_cache(self, capacity: int) -> Any: ...

    def run(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, position_offsets: torch.Tensor | None = None,
            ancestor_mask: torch.Tensor | None = None, *, last_logits_only: bool = False,
            layers: tuple[int, ...] = (), hidden: bool = True) -> Forward: ...

    def forward(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, position_offsets: torch.Tensor | None = None,
                ancestor_mask: torch.Tensor | None = None,
                last_logits_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]: ...


@runtime_checkable
class BatchedTarget(Target, Protocol):
    """``caps.batching``: several sequences' rows in one padded forward (``batch_loop.py``, ``batch_inputs.py``).

    ``run_batch`` gives hidden states only; ``head`` (the output head) runs afterwards on the rows that need logits,
    and ``layout`` (``attention_layout.AttentionLayout``) is what the padded masks are built for."""

    head: Callable[[torch.Tensor], torch.Tensor]
    layout: Any

    def run_batch(self, input_ids: torch.Tensor, cache: Any, positions: torch.Tensor, mask: Any,
                  layers: tuple[int, ...] = ()) -> tuple[torch.Tensor, torch.Tensor | None]: ...


@runtime_checkable
class SkippingTarget(Target, Protocol):
    """``caps.skips_layers``: the target with chosen decoder sub-layers skipped (``layer_skip.py``, ``self_draft.py``)."""

    def run_skipping(self, input_ids: torch.Tensor, cache: Any, positions: torch.Tensor, visible: torch.Tensor,
                     skip: Any) -> torch.Tensor: ...


class Backend(Protocol):
    """How the target's forward runs: ``name`` as recorded in the manifest, ``key`` its cost profile's key,
    ``caps`` its spec's (``BackendSpec.caps``)."""

    name: str
    caps: TargetCaps

    @property
    def key(self) -> str: ...

    def prepare(self, model: Any) -> None: ...

    def new_cache(self, model: Any, capacity: int) -> Any: ...

    def target(self, model: Any) -> Target: ...

    def describe(self, model: Any = None) -> dict[str, Any]: ...


@runtime_checkable
class BatchingBackend(Backend, Protocol):
    """``caps.batching``: the backend also makes the batched loop's cache, one slot per sequence."""

    def new_batch_cache(self, slots: int, capacity: int) -> Any: ...


@dataclass(frozen=True)
class Ability:
    """An optional part of the contract: the caps field that declares it, what a refusal calls it, and whether the
    backend (not its target) provides it."""

    flag: str
    what: str
    of_backend: bool = False


ABILITIES: dict[type, Ability] = {
    BatchedTarget: Ability("batching", "batched forward"),
    SkippingTarget: Ability("skips_layers", "forward with layers skipped"),
    BatchingBackend: Ability("batching", "batched KV cache", of_backend=True),
}
Able = TypeVar("Able")


def require(target: Any, ability: type[Able], refusal: str = "") -> Able:
    """``target`` as ``ability`` (``BatchedTarget``, ``SkippingTarget``) when its caps declare it; a one-line
    ``ConfigError`` otherwise: ``refusal``, or one naming the ability (module docstring). ``checked_target``
    has made sure a target declaring an ability has its members, so nothing else is probed here."""
    part = ABILITIES[ability]
    if not getattr(target.caps, part.flag):
        raise ConfigError(refusal or f"this backend's target has no {part.what} (caps.{part.flag} is False)")
    return target  # type: ignore[no-any-return]


def missing(obj: Any, ability: type) -> list[str]:
    """The members ``ability`` adds to its base protocol that ``obj`` lacks (``["run_skipping"]``)."""
    own = vars(ability)
    names = [*own.get("__annotations__", {}), *(n for n, v in own.items() if callable(v) and not n.startswith("_"))]
    return [n for n in names if not hasattr(obj, n)]


def checked_target(backend: Backend, model: Any) -> Target:
    """``backend.target(model)``, once its caps are its backend's and it (and the backend) have every optional
    ability those caps declare; a one-line ``TypeError`` naming the backend, the caps field and what is missing.

    Example: a backend whose spec declares ``TargetCaps(batching=False)`` (``skips_layers`` left True) but whose
    target has no ``run_skipping`` -> ``TypeError: backend 'plain' declares caps.skips_layers, but its target
    PlainTarget has no run_skipping``."""
    target = backend.target(model)
    if target.caps != backend.caps:
        raise TypeError(f"backend {backend.name!r}: its target {type(target).__name__} declares {target.caps}, "
                        f"not its spec's {backend.caps}")
    for ability, part in ABILITIES.items():
        obj, what = (backend, "backend") if part.of_backend else (target, "target")
        lacks = missing(obj, ability) if getattr(backend.caps, part.flag) else []
        if lacks:
            raise TypeError(f"backend {backend.name!r} declares caps.{part.flag}, but its {what} "
                            f"{type(obj).__name__} has no {', '.join(lacks)}")
    return target


@dataclass(frozen=True)
class BackendSpec:
    """A backend as the rest of specbench asks about it, registered by name (``registry.py``).

    ``factory`` (``"module:function"``, imported on first use) builds it: ``function(name, device, dtype, gguf,
    threads)``. ``caps``: what its target can do (module docstring); the backend and its target read them here.
    ``dtypes``: the ``--dtype`` values it runs (empty: the torch dtypes). ``batch_refusal``: why
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
        """The backend on ``device`` in ``dtype`` (``gguf``: the file a GGUF backend runs); a one-line
        ``TypeError`` for a backend whose caps are not its spec's (they are declared once, here)."""
        module, _, function = self.factory.partition(":")
        backend = getattr(importlib.import_module(module), function)(self.name, device, dtype, gguf, threads)
        if backend.caps != self.caps:
            raise TypeError(f"backend {self.name!r} declares {backend.caps}, not its spec's {self.caps}")
        return backend
