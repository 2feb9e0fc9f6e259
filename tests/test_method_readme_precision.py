"""Every trained drafter's README says, in its deviation table, the dtype it really trains and drafts in.

The dtypes are read from the code, on an fp32 target on a CPU with bf16 kernels (the machine the
defaults were chosen for): training is under bfloat16 autocast where the trainer's config says so
(``mixed_precision(target)``), float32 otherwise (such a trainer must not autocast at all); drafting is
in ``draft_dtype(config.dtype, target)`` for a method with a ``dtype`` option, else in the dtype its
code fixes. The README's deviation table (the section headed "Deviations ...") must say
``trains in <dtype>`` and ``drafts in <dtype>`` in its "here" / "ours" column, and never another dtype.
EAGLE-3's table once said fp32 training while it trained under bf16 autocast.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest
import torch

import specbench.engine.backends.packed_linear as packed_linear
from specbench.api import draft_dtype
from specbench.plugins.registry import METHODS

ROOT = Path(__file__).resolve().parents[1]
NAMES = {torch.bfloat16: "bfloat16", torch.float32: "float32", None: "the target's dtype"}


def _medusa_heads() -> torch.dtype:
    from specbench_methods.medusa.method import HEADS_DTYPE

    return HEADS_DTYPE


def _redrafter_training(target: torch.nn.Module) -> torch.dtype:
    from specbench_methods.redrafter.train import head_placement

    return head_placement(target)[1]  # the head's master weights; its module must not autocast either


# method -> (its trainer's module, the trainer's default config or None); drafting dtype of methods
# without a ``dtype`` option (None: the target's own, as ``methods.sps.method.load_draft`` loads it)
TRAINERS = {
    "eagle": ("specbench_methods.eagle.train", lambda m: m.RECIPES["quick"]),
    "eagle3": ("specbench_methods.eagle3.train", lambda m: m.RECIPES["quick"]),
    "dflash": ("specbench_methods.dflash.train", lambda m: m.RECIPES["quick"]),
    "ddtree": ("specbench_methods.dflash.train", lambda m: m.RECIPES["quick"]),  # dflash's draft, unchanged
    "hydra": ("specbench_methods.hydra.train", lambda m: m.HydraTrainConfig()),
    "medusa": ("specbench_methods.medusa.train", lambda m: m.RECIPES["quick"]),
    "redrafter": ("specbench_methods.redrafter.train", lambda m: m.TrainConfig()),
    "sps": ("specbench.training.draft_distill", lambda m: m.DISTILL_RECIPES["quick"]),
    "pard": ("specbench_methods.pard.adapt", lambda m: m.RECIPES["quick"]),
}
README_DIRS = {"ddtree": "dflash"}  # a method whose README is another's (its deviation table covers the draft)
FIXED_DRAFTING = {"medusa": _medusa_heads, "sps": lambda: None, "pard": lambda: None}


@pytest.fixture
def bf16_cpu(monkeypatch) -> torch.nn.Module:
    """An fp32 target on a CPU that runs oneDNN bf16 kernels."""
    monkeypatch.setattr(packed_linear, "packing_supported", lambda device, dtype: True)
    return torch.nn.Linear(2, 2)


def trains_in(method: str, target: torch.nn.Module) -> str:
    module_name, default = TRAINERS[method]
    module = importlib.import_module(module_name)
    mixed = getattr(default(module), "mixed_precision", None)
    if mixed is not None and mixed(target):
        return "bfloat16 autocast"
    if mixed is None:
        assert "autocast" not in inspect.getsource(module), f"{module_name} autocasts without mixed_precision()"
    if method == "redrafter":
        return NAMES[_redrafter_training(target)]
    return "float32"


def drafts_in(method: str, target: torch.nn.Module) -> str:
    cls = METHODS.get(method).config_cls
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    if "dtype" in fields:
        return NAMES[draft_dtype(fields["dtype"], target)]
    return NAMES[FIXED_DRAFTING[method]()]


def deviation_cells(text: str) -> list[str]:
    """The "here" / "ours" column of the table(s) in the README's "## Deviations ..." section.

    >>> deviation_cells("## Deviations\\n\\n| what | reference | here (default) |\\n| --- | --- | --- |\\n| a | b | c |\\n## Next")
    ['c']
    """
    section = re.search(r"^## Deviations.*?(?=^## |\Z)", text, re.M | re.S)
    cells, column = [], None
    for line in (section.group(0) if section else "").splitlines():
        if not line.startswith("|"):
            column = None
            continue
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = next((i for i, h in enumerate(row) if h.lower().startswith(("here", "ours"))), -1)
        elif column >= 0 and not set(line) <= set("|-: ") and column < len(row):
            cells.append(row[column])
    return cells


def precision_errors(cells: list[str], trains: str, drafts: str) -> list[str]:
    """What the deviation table gets wrong: a missing ``trains in`` / ``drafts in`` claim, or another dtype.

    >>> precision_errors(["..., fp32, clip by norm 0.5"], "bfloat16 autocast", "bfloat16")
    ['does not say "trains in bfloat16 autocast"', 'does not say "drafts in bfloat16"']
    """
    text = " ".join(cells)
    errors = [f'does not say "{verb} {dtype}"' for verb, dtype in (("trains in", trains), ("drafts in", drafts))
              if f"{verb} {dtype}" not in text]
    for verb, dtype in (("trains in", trains), ("drafts in", drafts)):
        errors += [f'says "{verb} {other}"' for other in re.findall(rf"{verb} ((?:bfloat16|float32|float16)\b(?: autocast)?)", text)
                   if not dtype.startswith(other) and other != dtype]
    return errors


@pytest.mark.parametrize("method", sorted(TRAINERS))
def test_deviation_table_names_the_real_dtypes(method: str, bf16_cpu: torch.nn.Module) -> None:
    text = (ROOT / "methods" / README_DIRS.get(method, method) / "README.md").read_text(encoding="utf-8")
    errors = precision_errors(deviation_cells(text), trains_in(method, bf16_cpu), drafts_in(method, bf16_cpu))
    assert not errors, f"methods/{method}/README.md's deviation table: " + "; ".join(errors)


def test_dtypes_read_from_the_code(bf16_cpu: torch.nn.Module) -> None:
    """The derivation is not vacuous: the mixed-precision trainers and the bf16 drafters are told apart."""
    assert {m: trains_in(m, bf16_cpu) for m in TRAINERS} == {
        "eagle": "float32", "eagle3": "bfloat16 autocast", "hydra": "bfloat16 autocast", "medusa": "float32",
        "redrafter": "float32", "sps": "float32", "pard": "float32", "dflash": "bfloat16 autocast",
        "ddtree": "bfloat16 autocast"}
    assert {m: drafts_in(m, bf16_cpu) for m in TRAINERS} == {
        "eagle": "bfloat16", "eagle3": "bfloat16", "hydra": "bfloat16", "medusa": "float32",
        "redrafter": "bfloat16", "sps": "the target's dtype", "pard": "the target's dtype", "dflash": "bfloat16",
        "ddtree": "bfloat16"}
