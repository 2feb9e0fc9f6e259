"""Training the draft head by self-distillation (frozen target), with checkpoints and resume.

The head trains on the target's device in float32 master weights whatever the target's dtype (half
precision would lose the small AdamW updates); it borrows the target's embedding table without a copy,
and every batch and running total lives on that device (``head_placement``).

The features come from the shared feature store (``specbench/training/feature_store.py``: computed once per
target and corpora, reused by every trained drafter). Output directory layout:
``train_state.safetensors``/``train_state.json`` (head + AdamW moments + step, written every
``checkpoint_every`` steps), and finally ``head.safetensors``/``config.json`` (the checkpoint).
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from specbench_methods.redrafter.checkpoint import save_checkpoint
from specbench_methods.redrafter.vocab import save_token_counts
from specbench.api import ConfigError, DistillData, FeatureOptions, eta_minutes, strict_json, trainable
from specbench_methods.redrafter.head import DraftHead, build_head, head_config_for


@dataclass(frozen=True)
class TrainConfig:
    """Recipe (paper defaults where they fit a CPU): AdamW lr 1e-3, cosine decay, 10% warmup."""

    tokens: int = 20000  # training examples (positions) to collect, held-out included
    epochs: int = 1
    n_predict: int = 3  # predicted positions per example
    labels: str = "target"  # "target" (self-distillation: target argmax) or "ground_truth"
    batch_size: int = 64
    lr: float = 1e-3
    warmup: float = 0.1
    weight_decay: float = 0.0
    max_seq_len: int = 512
    heldout_every: int = 20  # every k-th sequence is held out for the accuracy report
    proj: bool = True  # project 2h -> h (CPU size); False = the reference 2h-wide head
    num_blocks: int = 1
    checkpoint_every: int = 100
    seed: int = 0

    def validate(self) -> None:
        if self.labels not in ("target", "ground_truth"):
            raise ConfigError("redrafter train: labels must be 'target' or 'ground_truth'")
        if min(self.tokens, self.epochs, self.n_predict, self.batch_size, self.max_seq_len, self.heldout_every) < 1:
            raise ConfigError("redrafter train: tokens, epochs, n_predict, batch_size, max_seq_len must be >= 1")
        if not 0 <= self.warmup < 1:
            raise ConfigError("redrafter train: warmup must be in [0, 1)")

    def eta_minutes(self) -> float:
        """Rough wall time on 2 CPU cores: the target pass (the feature store's, when its features are new)
        and ``TRAIN_S_PER_POSITION`` per example and epoch. A training step costs ~n_predict/3 times more with
        more predicted positions and ~1.3x more for the 2h-wide head (measured: 3.9 s vs 1.8 s per batch of
        64 for the reference vs the default head)."""
        cost = self.n_predict / 3 * (1.0 if self.proj else 1.3)
        return eta_minutes(self.tokens, self.epochs, TRAIN_S_PER_POSITION * cost)


TRAIN_S_PER_POSITION = 0.0068  # s per position and epoch, 2 cores: docs/training.md


def loss_fn(head: DraftHead, context: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum over predicted positions of the mean cross-entropy; also per-position top-1 hits ``[n]``."""
    logits = head(context, inputs)  # [B, n, V]
    ce = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none").view(labels.shape)
    hits = (logits.argmax(-1) == labels).float().mean(0)  # [n]
    return ce.mean(0).sum(), hits.detach()


def head_placement(model: torch.nn.Module) -> tuple[torch.device, torch.dtype]:
    """Where a head for ``model`` trains: the target's device, float32 master weights.

    >>> head_placement(torch.nn.Linear(2, 2).to(torch.bfloat16))
    (device(type='cpu'), torch.float32)
    """
    return next(model.parameters()).device, torch.float32


def build_train_head(model: torch.nn.Module, cfg: "TrainConfig") -> DraftHead:
    """A fresh trainable head on the target's device in fp32, attached *after* the move so the
    borrowed embedding keeps the target's storage (``.float()`` would copy it into a new fp32 table)."""
    device, dtype = head_placement(model)
    head = build_head(head_config_for(model, cfg.proj, cfg.num_blocks))
    head.to(device=device, dtype=dtype)
    head.init_from_target(model.get_output_embeddings().weight)
    head.attach(model.get_input_embeddings().weight)
    return head.train()


def to_head(batch: tuple[torch.Tensor, ...], head: DraftHead) -> tuple[torch.Tensor, ...]:
    """Move a ``(context, inputs, labels)`` batch to the head's device, the context in the head's dtype."""
    w = head.lm_head.weight
    return tuple(t.to(w.device, w.dtype if t.is_floating_point() else t.dtype, non_blocking=True) for t in batch)


def lr_at(step: int, total: int, cfg: TrainConfig) -> float:
    warm = max(1, int(cfg.warmup * total))
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(head: DraftHead, cfg: TrainConfig) -> torch.optim.AdamW:
    return torch.optim.AdamW([p for p in head.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=cfg.weight_decay)


def train_step(head: DraftHead, opt: torch.optim.Optimizer, batch: tuple[torch.Tensor, ...], lr: float) -> tuple[float, torch.Tensor]:
    """One AdamW step on ``(context, inputs, labels)``; returns (loss, per-position train accuracy)."""
    for group in opt.param_groups:
        group["lr"] = lr
    loss, hits = loss_fn(head, *batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return float(loss.detach()), hits


@torch.no_grad()
def evaluate(head: DraftHead, data: DistillData, starts: torch.Tensor, cfg: TrainConfig) -> dict[str, Any]:
    """Held-out mean loss and top-1 accuracy per predicted position (labels as in training)."""
    if len(starts) == 0:
        return {"heldout_examples": 0}
    device = head.lm_head.weight.device
    tot_loss, tot_hits = 0.0, torch.zeros(cfg.n_predict, device=device)
    for i in range(0, len(starts), 256):
        chunk = starts[i : i + 256]
        loss, hits = loss_fn(head, *to_head(data.batch(chunk, cfg.n_predict, cfg.labels), head))
        tot_loss += float(loss) * len(chunk)
        tot_hits += hits * len(chunk)
    n = len(starts)
    return {"heldout_examples": n, "heldout_loss": round(tot_loss / n, 4),
            "heldout_top1": [round(float(a), 4) for a in tot_hits / n]}


def _save_state(out: Path, head: DraftHead, opt: torch.optim.Optimizer, info: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    sd = opt.state_dict()
    tensors = {f"head.{k}": v.detach().cpu().contiguous() for k, v in head.state_dict().items()}
    for idx, st in sd["state"].items():
        for key, val in st.items():
            tensors[f"opt.{idx}.{key}"] = torch.as_tensor(val).cpu().contiguous()
    save_file(tensors, str(out / "train_state.safetensors.tmp"))
    (out / "train_state.safetensors.tmp").replace(out / "train_state.safetensors")
    (out / "train_state.json").write_text(strict_json({**info, "param_groups": sd["param_groups"]}, indent=1), encoding="utf-8")


def _load_state(out: Path, head: DraftHead, opt: torch.optim.Optimizer, train_cfg: dict[str, Any]) -> dict[str, Any] | None:
    from safetensors.torch import load_file

    if not (out / "train_state.json").is_file():
        return None
    info = json.loads((out / "train_state.json").read_text())
    if info.get("train") != train_cfg:
        print("[redrafter] train_state.json was written with another recipe; starting over", file=sys.stderr)
        return None
    tensors = load_file(str(out / "train_state.safetensors"))
    head.load_state_dict({k[5:]: v for k, v in tensors.items() if k.startswith("head.")})
    state: dict[int, dict[str, torch.Tensor]] = {}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, idx, key = k.split(".", 2)
            state.setdefault(int(idx), {})[key] = v
    opt.load_state_dict({"state": state, "param_groups": info["param_groups"]})
    return info


def train_redrafter(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Collect (or reuse) distillation data, train (or resume) the head, save the checkpoint in ``out``.

    Arguments: ``(model, tokenizer, corpora, data_dir, out, cfg, model_id="", progress=True,
    features=FeatureOptions(), recipe="custom")``; the target is only read (its hidden states, embeddings and output head). Safe to call from inside
    an inference-mode region (e.g. a method factory).
    """
    return trainable(_train)(*args, **kwargs)


def _train(model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
           cfg: TrainConfig, model_id: str = "", progress: bool = True, features: FeatureOptions = FeatureOptions(),
           recipe: str = "custom") -> dict[str, Any]:
    from tqdm import tqdm

    cfg.validate()
    train_cfg = dataclasses.asdict(cfg)
    t0 = time.perf_counter()
    data, store = features.load(model, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens,
                                n_predict=cfg.n_predict, max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every,
                                progress=progress, desc="redrafter: target forward")
    out.mkdir(parents=True, exist_ok=True)
    t_collect = time.perf_counter() - t0

    torch.manual_seed(cfg.seed)
    head = build_train_head(model, cfg)
    device = head.lm_head.weight.device
    opt = make_optimizer(head, cfg)
    per_epoch = math.ceil(len(data.train_starts) / cfg.batch_size)
    total = cfg.epochs * per_epoch
    info = _load_state(out, head, opt, train_cfg) or {"step": 0, "curve": [], "train": train_cfg}
    step, curve = info["step"], info["curve"]
    # the interrupted runs' training seconds count too: a resumed training reports its whole duration
    t1 = time.perf_counter() - float(info.get("train_s", 0.0))
    bar = tqdm(total=total, initial=step, desc="redrafter: train", unit="step", disable=not progress)
    run_loss, run_hits, run_n = 0.0, torch.zeros(cfg.n_predict, device=device), 0
    while step < total:
        epoch, k = divmod(step, per_epoch)
        perm = torch.randperm(len(data.train_starts), generator=torch.Generator().manual_seed(cfg.seed + epoch))
        idx = data.train_starts[perm[k * cfg.batch_size : (k + 1) * cfg.batch_size]]
        batch = to_head(data.batch(idx, cfg.n_predict, cfg.labels), head)
        loss, hits = train_step(head, opt, batch, lr_at(step, total, cfg))
        step += 1
        run_loss, run_hits, run_n = run_loss + loss, run_hits + hits, run_n + 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")
        if step % 20 == 0 or step == total:
            curve.append({"step": step, "examples": step * cfg.batch_size, "loss": round(run_loss / run_n, 4),
                          "top1": [round(float(a), 4) for a in run_hits / run_n]})
            run_loss, run_hits, run_n = 0.0, torch.zeros(cfg.n_predict, device=device), 0
        if step % cfg.checkpoint_every == 0 or step == total:
            _save_state(out, head, opt, {"step": step, "curve": curve, "train": train_cfg,
                                         "train_s": round(time.perf_counter() - t1, 1)})
    bar.close()
    head.eval()
    metrics = evaluate(head, data, data.heldout_starts, cfg)
    metrics.update(train_examples=len(data.train_starts), steps=total, collect_s=round(t_collect, 1),
                   train_s=round(time.perf_counter() - t1, 1))
    # the draft vocabulary's counts (``vocab.py``), before the head file that marks the folder complete
    save_token_counts(out, data.argmax, data.tokens, head.config.vocab_size)
    save_checkpoint(head, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe, "train": train_cfg,
                                "features": store.describe(), "metrics": metrics, "curve": curve})
    for name in ("train_state.safetensors", "train_state.json"):  # finished: resume state no longer needed
        (out / name).unlink(missing_ok=True)
    print(f"[redrafter] held-out top-1 per position: {metrics.get('heldout_top1')} "
          f"({metrics['heldout_examples']} examples); checkpoint -> {out}", file=sys.stderr)
    return metrics
