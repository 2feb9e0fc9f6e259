"""Epoch checkpoints of a training, so an interrupted one resumes after its last finished epoch.

After every epoch but the last, ``EpochState.save`` writes the trained modules, the optimiser's moments,
the step counter and torch's RNG state (dropout, noise) to ``train_state.safetensors`` + ``.json`` in the
output folder (tmp + rename). ``restore`` reads them back when they were written by the same recipe
(``key``), so the resumed run continues exactly as the uninterrupted one would; ``clear`` removes them
once the checkpoint is saved.

Example::

    state = EpochState(out, {"train": dataclasses.asdict(cfg)})
    first_epoch, step = state.restore({"layer": layer}, opt)  # (0, 0) on a fresh start
    for epoch in range(first_epoch, cfg.epochs):
        ...
        state.save(epoch + 1, step, {"layer": layer}, opt, last=epoch + 1 == cfg.epochs)
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from specbench.files.checkpoint_files import checkpoint_errors, read_config, read_tensors
from specbench.files.jsonfile import strict_json

STATE = "train_state.safetensors"
INFO = "train_state.json"


class EpochState:
    def __init__(self, out: Path, key: dict[str, Any]) -> None:
        self.out, self.key = Path(out), json.loads(strict_json(key))  # the key as json reads it back
        self.seconds_before = 0.0  # training seconds of the interrupted runs this one resumes
        self._clock = time.perf_counter()

    def elapsed_s(self) -> float:
        """Training seconds so far, the interrupted runs' included: a resumed training reports its whole
        duration, not only its last part (``restore`` starts the clock; ``save`` stores the sum)."""
        return self.seconds_before + time.perf_counter() - self._clock

    def save(self, epochs_done: int, step: int, modules: dict[str, torch.nn.Module], opt: torch.optim.Optimizer,
             last: bool = False) -> None:
        """Checkpoint after ``epochs_done`` epochs (nothing after the last: the trainer saves the result)."""
        from safetensors.torch import save_file

        if last:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        sd = opt.state_dict()
        tensors: dict[str, torch.Tensor] = {}
        seen: set[int] = set()
        for name, m in modules.items():
            for k, v in m.state_dict().items():
                t = v.detach().cpu().contiguous()
                # tied weights (a draft LM's embedding and LM head) are one storage under two names, which
                # safetensors refuses; a copy of the second keeps both names, and loading sets both alike
                tensors[f"{name}.{k}"] = t.clone() if t.data_ptr() in seen else t
                seen.add(t.data_ptr())
        for idx, st in sd["state"].items():
            for k, v in st.items():
                tensors[f"opt.{idx}.{k}"] = torch.as_tensor(v).cpu().contiguous()
        tensors["rng"] = torch.get_rng_state()
        tmp = self.out / f"{STATE}.tmp"
        save_file(tensors, str(tmp))
        tmp.replace(self.out / STATE)
        info = {"key": self.key, "epochs_done": epochs_done, "step": step, "param_groups": sd["param_groups"],
                "train_s": round(self.elapsed_s(), 1)}
        (self.out / f"{INFO}.tmp").write_text(strict_json(info, indent=1), encoding="utf-8")
        (self.out / f"{INFO}.tmp").replace(self.out / INFO)

    def restore(self, modules: dict[str, torch.nn.Module], opt: torch.optim.Optimizer) -> tuple[int, int]:
        """(epochs already done, optimiser steps taken): the saved state loaded into ``modules`` and ``opt``,
        or ``(0, 0)`` when there is none or it belongs to another recipe. A damaged state: one-line ``ConfigError``."""
        self._clock = time.perf_counter()
        if not (self.out / INFO).is_file() or not (self.out / STATE).is_file():
            return 0, 0
        with checkpoint_errors("train", self.out, f"delete {STATE} and {INFO} in it to start over"):
            return self._restore(modules, opt)

    def _restore(self, modules: dict[str, torch.nn.Module], opt: torch.optim.Optimizer) -> tuple[int, int]:
        info = read_config(self.out, "train", "an epoch checkpoint", INFO)
        if info.get("key") != self.key:
            print(f"[train] {self.out / INFO} was written by another recipe; starting over", file=sys.stderr)
            return 0, 0
        tensors = read_tensors(self.out / STATE, "train")
        for name, m in modules.items():
            m.load_state_dict({k[len(name) + 1 :]: v for k, v in tensors.items() if k.startswith(f"{name}.")})
        state: dict[int, dict[str, torch.Tensor]] = {}
        for k, v in tensors.items():
            if k.startswith("opt."):
                _, idx, field = k.split(".", 2)
                state.setdefault(int(idx), {})[field] = v
        opt.load_state_dict({"state": state, "param_groups": info["param_groups"]})
        torch.set_rng_state(tensors["rng"])
        self.seconds_before = float(info.get("train_s", 0.0))  # states written before it was kept: 0
        self._clock = time.perf_counter()
        print(f"[train] resuming after epoch {info['epochs_done']} (step {info['step']}) from {self.out}", file=sys.stderr)
        return int(info["epochs_done"]), int(info["step"])

    def clear(self) -> None:
        for name in (STATE, INFO):
            (self.out / name).unlink(missing_ok=True)
