"""Linear layers through oneDNN-packed weights on CPU, with sibling projections fused into one matmul.

MKL's ``sgemm`` (what ``nn.Linear`` calls on CPU) is slow for the few-row inputs of decoding: on an AMD
EPYC a 16-row product can cost 2x a 1-row one. The same weights reordered once into oneDNN's blocked
layout (``torch.ops.mkldnn._reorder_linear_weight``) run close to memory bandwidth for 1..32 rows.

Decoding a small model is bound by reading its weights, and many small matmuls read them less
efficiently than a few larger ones. Projections that read the same input (attention's q/k/v, the MLP's
gate/up) are therefore fused: the first call computes all of them with one packed matrix, the siblings
take their slice. Which linears share an input is found by a probe forward, not by module names, so
any architecture works; a sibling that is ever called with another input just computes its own slice.

Example: ``pack_linears(model)`` on SmolLM2 replaces 211 ``nn.Linear`` by 121 packed products per token
(q/k/v -> 1, gate/up -> 1, o, down, LM head). The original parameters stay in place (tied weights,
``state_dict`` and drafters reading ``lm_head.weight`` are unaffected); ``unpack_linears`` restores
the plain modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

# oneDNN picks its blocking for this many rows; decode steps verify 1..~32 rows
PACK_BATCH_HINT = 16


def packing_supported(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether oneDNN packed linears can run for this device and dtype."""
    if device.type != "cpu" or not torch.backends.mkldnn.is_available():
        return False
    if dtype == torch.float32:
        return True
    if dtype == torch.bfloat16:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    if dtype == torch.float16:
        return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    return False


def draft_dtype(name: str, target: nn.Module) -> torch.dtype:
    """A drafter's weight dtype: ``auto`` = bfloat16 where oneDNN runs it on CPU, else the target's; or a
    name of ``specbench.models.loading.DTYPES``. A draft only proposes, so its rounding cannot change the verified
    output, and bf16 halves the bytes read (measured: EAGLE's 8192-row head 2.7x faster, ReDrafter's
    draft with an 8192-row LM head 1.9x). Example: ``draft_dtype("auto", smollm2_fp32_on_cpu)`` ->
    ``torch.bfloat16`` on a CPU with oneDNN bf16 kernels."""
    from specbench.models.dtypes import DTYPES

    param = next(target.parameters())
    if name != "auto":
        return DTYPES[name]
    if param.device.type == "cpu" and packing_supported(param.device, torch.bfloat16):
        return torch.bfloat16
    return param.dtype


@dataclass(eq=False)
class _SharedProduct:
    """One packed product over the concatenated weights of sibling linears that read the same input."""

    packed: torch.Tensor  # oneDNN layout of cat([w_0, w_1, ...]) [sum(out_i), in]
    bias: torch.Tensor | None  # cat of the biases, or None
    bounds: list[tuple[int, int]]  # output columns of each member
    _input: torch.Tensor | None = None
    _version: int = -1
    _outputs: list[torch.Tensor | None] = field(default_factory=list)

    def output(self, member: int, x: torch.Tensor) -> torch.Tensor:
        version = _version(x)
        if self._input is not x or self._version != version or self._outputs[member] is None:
            y = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
            self._input, self._version = x, version
            self._outputs = [y[..., a:b].contiguous() for a, b in self.bounds]
        out = self._outputs[member]
        self._outputs[member] = None
        if all(o is None for o in self._outputs):
            self._input = None  # release the activation once every member took its slice
        assert out is not None
        return out


def _version(x: torch.Tensor) -> int:
    # inference tensors keep no version counter; nothing writes into an activation between sibling calls
    return 0 if x.is_inference() else x._version


class PackedLinear(nn.Module):
    """Drop-in for ``nn.Linear`` computing ``x @ weight.T + bias`` from oneDNN-packed weights.

    ``weight``/``bias`` remain the original parameters (shared, not copied); the packed copy is a
    plain attribute, so it is neither saved nor moved by ``state_dict``/``.to()``.
    """

    def __init__(self, linear: nn.Linear, shared: _SharedProduct | None = None, member: int = 0) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self._shared = shared
        self._member = member
        if shared is None:
            self._packed = _pack(linear.weight)
            self._bias = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._shared is not None:
            return self._shared.output(self._member, x)
        return torch.ops.mkldnn._linear_pointwise(x, self._packed, self._bias, "none", [], "")

    def to_linear(self) -> nn.Linear:
        """The plain ``nn.Linear`` over the same parameters."""
        lin = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        lin.weight = self.weight
        if self.bias is not None:
            lin.bias = self.bias
        return lin

    def extra_repr(self) -> str:
        fused = "" if self._shared is None else f", fused member {self._member} of {len(self._shared.bounds)}"
        return f"in_features={self.in_features}, out_features={self.out_features}{fused}"


def _pack(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACK_BATCH_HINT)


def _linears(model: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    return [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Linear
    ]


def _sibling_groups(model: nn.Module, found: list[tuple[nn.Module, str, nn.Linear]]) -> list[list[int]]:
    """Indices of same-parent linears that one probe forward called on the very same input tensor."""
    calls: list[tuple[int, torch.Tensor]] = []
    hooks = [
        lin.register_forward_pre_hook(lambda _m, args, i=i: calls.append((i, args[0])))
        for i, (_, _, lin) in enumerate(found)
    ]
    try:
        base = getattr(model, "base_model", model)
        device = next(model.parameters()).device
        with torch.inference_mode():
            base(input_ids=torch.tensor([[0, 1, 2]], device=device), use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    groups: list[list[int]] = []
    for i, x in calls:
        last = groups[-1] if groups else None
        if last and calls_input(calls, last[0]) is x and found[last[0]][0] is found[i][0] and i not in last:
            last.append(i)
        else:
            groups.append([i])
    seen: set[int] = set()
    unique = []
    for g in groups:  # a linear called more than once keeps its first grouping only
        if not seen.intersection(g):
            unique.append(g)
            seen.update(g)
    return unique


def calls_input(calls: list[tuple[int, torch.Tensor]], index: int) -> torch.Tensor | None:
    """The input tensor of the first probe call of linear ``index``."""
    return next((x for i, x in calls if i == index), None)


def pack_linears(model: nn.Module, fuse: bool = True) -> int:
    """Replace every ``nn.Linear`` of ``model`` by a :class:`PackedLinear`, in place; returns the count.

    Idempotent: already packed layers are left alone. Raises ``ValueError`` where packing is not
    supported (see :func:`packing_supported`).
    """
    param = next(model.parameters())
    if not packing_supported(param.device, param.dtype):
        raise ValueError(f"oneDNN packed linears are not supported for {param.device} / {param.dtype}")
    found = _linears(model)
    if not found:
        return 0
    groups = _sibling_groups(model, found) if fuse else []
    grouped = {i for g in groups for i in g}
    groups += [[i] for i in range(len(found)) if i not in grouped]
    for group in groups:
        members = [found[i] for i in group]
        if len(group) == 1 or any(lin.in_features != members[0][2].in_features for _, _, lin in members):
            for parent, name, lin in members:
                setattr(parent, name, PackedLinear(lin))
            continue
        shared = _fused_product([lin for _, _, lin in members])
        for k, (parent, name, lin) in enumerate(members):
            setattr(parent, name, PackedLinear(lin, shared, k))
    return len(found)


def pack_for_inference(module: nn.Module) -> bool:
    """Pack a drafter's own inference-only model (no fusion probe) where oneDNN supports it.

    Returns whether it packed. Packed layers have no backward: call this after any training.
    Example: ReDrafter's head (``h x V`` LM head scored for W beams per step) -> ``True`` on CPU fp32.
    """
    param = next(module.parameters(), None)
    if param is None or not packing_supported(param.device, param.dtype):
        return False
    pack_linears(module, fuse=False)
    return True


def _fused_product(linears: list[nn.Linear]) -> _SharedProduct:
    weight = torch.cat([lin.weight.detach() for lin in linears])
    biases = [lin.bias for lin in linears]
    bias = None
    if any(b is not None for b in biases):
        bias = torch.cat(
            [b.detach() if b is not None else weight.new_zeros(lin.out_features) for b, lin in zip(biases, linears)]
        )
    bounds, start = [], 0
    for lin in linears:
        bounds.append((start, start + lin.out_features))
        start += lin.out_features
    return _SharedProduct(_pack(weight), bias, bounds, _outputs=[None] * len(linears))


def unpack_linears(model: nn.Module) -> int:
    """Restore plain ``nn.Linear`` modules (same parameters) in place; returns the count."""
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, PackedLinear):
                setattr(parent, name, child.to_linear())
                count += 1
    return count


def is_packed(model: nn.Module) -> bool:
    return any(isinstance(m, PackedLinear) for m in model.modules())


def describe(model: nn.Module) -> dict[str, Any]:
    """Counts for the manifest: packed linears and fused groups."""
    packed = [m for m in model.modules() if isinstance(m, PackedLinear)]
    groups = {id(m._shared) for m in packed if m._shared is not None}
    return {"packed_linears": len(packed), "fused_groups": len(groups)}
