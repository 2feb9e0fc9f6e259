"""Self-distilling Medusa heads on CPU: the frozen target's hidden states and greedy labels
(the shared feature store, ``specbench/training/feature_store.py``), one cross-entropy per head summed unweighted, as the reference's trainer
(``medusa/train/train_legacy.py``); ``decay`` < 1 weights head k by ``decay ** k`` (0.8 is the decay
coefficient of the reference's separate axolotl recipe).

Example: ``RECIPES["quick"]`` (``MedusaTrainConfig()``: 4 heads, 1 block each, the target's LM head shared)
reads 20k positions and trains one epoch: a few minutes on 2 CPU cores; ``RECIPES["full"]`` reads 300k
positions, resumable after every epoch.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from specbench_methods.medusa.checkpoint import save_heads
from specbench_methods.medusa.heads import MedusaHeads
from specbench.api import ConfigError, DistillData, EpochState, FeatureOptions, optimizer_step, trainable


@dataclass(frozen=True)
class MedusaTrainConfig:
    num_heads: int = 4
    num_layers: int = 1
    own_lm_head: bool = False
    tokens: int = 20000
    epochs: int = 1
    batch_size: int = 64
    lr: float = 1e-3
    decay: float = 1.0  # weight of head k's loss: decay ** k; 1 = the legacy trainer's plain sum (axolotl recipe: 0.8)
    max_seq_len: int = 512
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if min(self.num_heads, self.num_layers, self.tokens, self.epochs, self.batch_size) < 1:
            raise ConfigError("medusa train: num_heads, num_layers, tokens, epochs, batch_size must be >= 1")


TRAIN_S_PER_POSITION = 0.0056  # s per position and epoch, 2 cores: docs/training.md
FULL_EPOCHS = 2
# quick: the first-use default (20k positions, minutes); full: 15x the positions, epochs sized to about an hour
RECIPES = {"quick": MedusaTrainConfig(), "full": MedusaTrainConfig(tokens=300_000, epochs=FULL_EPOCHS)}


def _step_loss(heads: MedusaHeads, data: DistillData, starts: torch.Tensor, cfg: MedusaTrainConfig,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    hidden, _, labels = data.batch(starts, cfg.num_heads, "target")  # labels[:, k]: head k's token
    logits = heads(hidden.to(device))  # [B, K, V]
    labels = labels.to(device)
    per_head = torch.stack([F.cross_entropy(logits[:, k], labels[:, k]) for k in range(cfg.num_heads)])
    weights = torch.tensor([cfg.decay ** k for k in range(cfg.num_heads)], device=device)
    hits = (logits.argmax(-1) == labels).float().mean(0)  # [K] top-1 per head
    return (per_head * weights).sum(), hits


@trainable
def train_medusa(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                 cfg: MedusaTrainConfig, model_id: str = "", progress: bool = True,
                 features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the heads (resuming after their last finished epoch), save them in ``out``;
    returns held-out top-1 per head and durations."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    data, store = features.load(target, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens,
                                n_predict=cfg.num_heads, max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every,
                                progress=progress, desc="medusa: target forward")
    t_collect = time.perf_counter() - t0
    param = next(target.parameters())
    torch.manual_seed(cfg.seed)
    head = target.get_output_embeddings()
    heads = MedusaHeads(int(target.config.hidden_size), int(target.config.vocab_size), cfg.num_heads, cfg.num_layers,
                        None if cfg.own_lm_head else head).to(param.device)
    if cfg.own_lm_head:
        for own in heads.own_heads:  # the reference starts every head's LM head from the target's
            own.weight.data.copy_(head.weight.detach().float())
    heads.train()
    opt = torch.optim.AdamW([p for p in heads.parameters() if p.requires_grad], lr=cfg.lr)
    per_epoch = math.ceil(len(data.train_starts) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"heads": heads}, opt)
    bar = tqdm(total=total, initial=step, desc="medusa: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        perm = torch.randperm(len(data.train_starts), generator=torch.Generator().manual_seed(cfg.seed + epoch))
        for b in range(per_epoch):
            for g in opt.param_groups:
                g["lr"] = cfg.lr * 0.5 * (1 + math.cos(math.pi * step / total))
            loss, _ = _step_loss(heads, data, data.train_starts[perm[b * cfg.batch_size : (b + 1) * cfg.batch_size]], cfg, param.device)
            optimizer_step(opt, loss, bar)
            step += 1
        state.save(epoch + 1, step, {"heads": heads}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    heads.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1), "steps": total}
    if len(data.heldout_starts):
        with torch.no_grad():
            chunks = data.heldout_starts.split(256)
            hits = sum(_step_loss(heads, data, c, cfg, param.device)[1] * len(c) for c in chunks) / len(data.heldout_starts)
        metrics["heldout_top1"] = [round(float(h), 4) for h in hits]
        metrics["heldout_examples"] = len(data.heldout_starts)
    save_heads(heads, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                            "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[medusa] held-out top-1 per head: {metrics.get('heldout_top1')}; -> {out}", file=sys.stderr)
    return metrics
