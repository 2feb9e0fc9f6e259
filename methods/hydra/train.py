"""Self-distilling Hydra heads on CPU from the frozen target's features (the shared feature store).

An example is a position t of a corpus sequence: the heads read the context feature there (the target's
hidden state ``h_t``, through Hydra++'s prefix layer when it has one) and the TEXT's next tokens as the
drafted path (teacher forcing, as the reference trains on its dataset's tokens): head k reads
``[c_t, e(x_{t+1}), ..., e(x_{t+k+1})]`` and predicts the token at ``t + k + 2``. Its loss, summed over
heads as the reference's trainer:

- ``loss="teacher"`` (Hydra++): cross-entropy against the target's distribution there,
  ``softmax(head(h_{t+k+1}))`` (over the draft vocabulary when it is reduced);
- ``loss="lm"`` (the paper's base Hydra): cross-entropy against the text's token ``x_{t+k+2}``.

Rows are runs of consecutive positions of one sequence, cut to ``window`` rows and packed into batches with
a block-diagonal causal mask (the prefix layer attends within its run). AdamW with weight decay on
matrices only, warm-up, then a cosine decay to ``final_lr`` x the peak (the reference's
``final_lr_multiplier``). Held-out top-1 per head: the head's first choice against the target's greedy token.

Example: ``HydraTrainConfig()`` (Hydra++: prefix layer, 4 heads of 4 blocks, teacher loss, dropout 0.2,
8192-token draft vocabulary) reads 20k positions and trains ``epochs`` passes on 2 CPU cores;
``recipe_for("prefix-mlp", "full")`` reads 300k positions, resumable after every epoch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from specbench.api import LayerShape
from specbench.api import choose_vocab, pack_runs, runs
from specbench_methods.hydra.checkpoint import ARCHS, save_heads
from specbench_methods.hydra.heads import HydraHeads, SubHead
from specbench.api import (ConfigError, DistillData, EpochState, FeatureOptions, check_recipe, draft_dtype,
                           optimizer_step, stop_token_ids, trainable)

LOSSES = ("teacher", "lm")
AMPS = ("auto", "off")


@dataclass(frozen=True)
class HydraTrainConfig:
    head: str = "prefix-mlp"  # Hydra++; "mlp": the paper's base Hydra heads
    num_heads: int = 4
    num_layers: int = 4
    loss: str = "teacher"
    dropout: float = 0.2
    draft_vocab: int = 8192  # 0 = the target's whole vocabulary
    tokens: int = 20000
    epochs: int = 4
    window: int = 128
    batch_size: int = 1024  # rows per optimiser step (several windows)
    lr: float = 1e-3
    weight_decay: float = 0.1
    final_lr: float = 0.33  # the learning rate decays to this fraction of its peak
    amp: str = "auto"  # auto: bfloat16 autocast where the CPU has bf16 kernels (the reference trains in bf16); off
    max_seq_len: int = 512
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if self.head not in ARCHS:
            raise ConfigError(f"hydra train: head must be one of {', '.join(ARCHS)}, not {self.head!r}")
        if self.loss not in LOSSES:
            raise ConfigError(f"hydra train: loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")
        if min(self.num_heads, self.num_layers, self.tokens, self.epochs, self.window, self.batch_size) < 1:
            raise ConfigError("hydra train: num_heads, num_layers, tokens, epochs, window, batch_size must be >= 1")
        if self.draft_vocab < 0 or 0 < self.draft_vocab < 16:
            raise ConfigError("hydra train: draft_vocab must be 0 (whole vocabulary) or >= 16 (the tree's 10 ranks)")
        if self.amp not in AMPS:
            raise ConfigError(f"hydra train: amp must be one of {', '.join(AMPS)}, not {self.amp!r}")
        if not 0 <= self.dropout < 1 or not 0 <= self.final_lr <= 1 or self.weight_decay < 0:
            raise ConfigError("hydra train: dropout in [0, 1), final_lr in [0, 1], weight_decay >= 0")

    def mixed_precision(self, target: torch.nn.Module) -> bool:
        """Whether the forward runs under bfloat16 autocast (fp32 master weights and optimiser either way)."""
        return self.amp == "auto" and draft_dtype("auto", target) == torch.bfloat16


TRAIN_S_PER_POSITION = 0.0033  # s per position and epoch, 2 cores: docs/training.md
FULL_TOKENS, FULL_EPOCHS = 300_000, 3
RECIPES = ("quick", "full")


def recipe_for(head: str, recipe: str = "quick") -> HydraTrainConfig:
    """The default recipe of each head: Hydra++ (the reference's published recipe) or the paper's base Hydra
    (one block per head, the text's next-token loss, no dropout); ``recipe="full"``: 300k positions.

    >>> recipe_for("mlp").num_layers, recipe_for("mlp").loss, recipe_for("prefix-mlp").loss
    (1, 'lm', 'teacher')
    >>> recipe_for("prefix-mlp", "full").tokens
    300000
    """
    check_recipe("hydra", recipe, RECIPES)
    cfg = HydraTrainConfig(head="mlp", num_layers=1, loss="lm", dropout=0.0) if head == "mlp" else HydraTrainConfig()
    return cfg if recipe == "quick" else dataclasses.replace(cfg, tokens=FULL_TOKENS, epochs=FULL_EPOCHS)


def _loss(heads: HydraHeads, embed: torch.nn.Module, data: DistillData, batch: list[tuple[int, int]],
          cfg: HydraTrainConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(summed loss, hits per head [K] (first choice == the target's greedy token), rows) of one batch."""
    rows = torch.cat([torch.arange(a, a + n) for a, n in batch])  # [n]
    positions = torch.cat([torch.arange(n) for _, n in batch]).to(device)
    block = torch.cat([torch.full((n,), i) for i, (_, n) in enumerate(batch)])
    mask = ((block[:, None] == block[None, :]) & (positions.cpu()[:, None] >= positions.cpu()[None, :])).to(device)
    c = data.hidden[rows].float().to(device)  # [n, h]
    if heads.prefix is not None:
        c = heads.prefix(c, positions, mask)
    k_all = cfg.num_heads
    ahead = rows[:, None] + torch.arange(1, k_all + 2)  # [n, K + 1] positions t+1 .. t+K+1
    with torch.no_grad():  # the target's embedding is frozen (and may be tied to its output head)
        e = embed(data.tokens[ahead[:, :k_all]].to(device)).float()  # [n, K, h]
    sub = heads.shared
    teacher = where = None
    if cfg.loss == "teacher":  # the target's distributions (renormalised over the draft vocabulary), each position
        need = torch.unique(ahead[:, :k_all])  # once: in a run of rows, head k's position is head k+1's one row later
        where = torch.searchsorted(need, ahead[:, :k_all].contiguous())  # [n, K] -> rows of ``teacher``
        with torch.no_grad():
            teacher = F.softmax(sub(data.hidden[need].float().to(device)).float(), -1)  # [U, V']
    x, total = c, torch.zeros((), device=device)
    hits = torch.zeros(k_all)
    for k in range(k_all):
        x = torch.cat([x, e[:, k]], -1)  # [n, (k + 2) h]
        logits = heads.logits(k, x).float()  # [n, V']
        logp = F.log_softmax(logits, -1)
        if teacher is not None:
            total = total + -(teacher[where[:, k].to(device)] * logp).sum(-1).mean()
        else:
            label = _draft_labels(sub, data.tokens[ahead[:, k + 1]].to(device))
            total = total + F.cross_entropy(logits, label, ignore_index=-100)
        top = sub.to_target(logp.argmax(-1)).cpu()
        hits[k] = (top == data.argmax[rows + k + 1]).sum()
    return total, hits, len(rows)


def _draft_labels(sub: SubHead, target_ids: torch.Tensor) -> torch.Tensor:
    """Target ids -> draft vocabulary ids (-100 for ids outside it: no loss there)."""
    if sub.ids is None:
        return target_ids
    lookup = torch.full((int(sub.ids.max()) + 1,), -100, dtype=torch.long, device=target_ids.device)
    lookup[sub.ids] = torch.arange(len(sub.ids), device=target_ids.device)
    inside = target_ids < len(lookup)
    return torch.where(inside, lookup[target_ids.clamp(max=len(lookup) - 1)], torch.full_like(target_ids, -100))


def _autocast(cfg: HydraTrainConfig, target: torch.nn.Module) -> Any:
    """bfloat16 autocast (matmuls in bf16, losses and weights in fp32) where the device runs bf16 kernels."""
    device = next(target.parameters()).device
    return torch.autocast(device.type, dtype=torch.bfloat16) if cfg.mixed_precision(target) else contextlib.nullcontext()


def _optimizer(heads: HydraHeads, cfg: HydraTrainConfig) -> torch.optim.Optimizer:
    """AdamW; weight decay on matrices only (biases and norm weights excluded, as transformers' Trainer)."""
    params = [p for p in heads.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                             lr=cfg.lr)


@trainable
def train_hydra(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                cfg: HydraTrainConfig, model_id: str = "", progress: bool = True,
                features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the heads (resuming after their last finished epoch), save them in ``out``;
    returns held-out top-1 per head and durations."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    data, store = features.load(target, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens,
                                n_predict=cfg.num_heads, max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every,
                                progress=progress, desc="hydra: target forward")
    t_collect = time.perf_counter() - t0
    device = next(target.parameters()).device
    head = target.get_output_embeddings()
    vocab_size = int(head.weight.shape[0])
    vocab: np.ndarray | None = None
    if cfg.draft_vocab and cfg.draft_vocab < vocab_size:
        vocab = choose_vocab(data, cfg.draft_vocab, stop_token_ids(tokenizer, target), vocab_size)
    torch.manual_seed(cfg.seed)
    sub = SubHead(head, vocab).float().to(device)
    shape = LayerShape.from_config(target.config) if cfg.head == "prefix-mlp" else None
    heads = HydraHeads(int(head.weight.shape[1]), cfg.num_heads, cfg.num_layers, shape, cfg.dropout, head=sub).to(device)
    heads.train()
    embed = target.get_input_embeddings()
    opt = _optimizer(heads, cfg)
    windows = runs(data.train_starts, cfg.window)
    # each epoch's own order: runs differ in length, so how many batches an epoch packs depends on it
    orders = [torch.randperm(len(windows), generator=torch.Generator().manual_seed(cfg.seed + e)).tolist()
              for e in range(cfg.epochs)]
    total = sum(len(list(pack_runs(windows, cfg.batch_size, order))) for order in orders)
    warmup = max(1, total // 20)
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"heads": heads}, opt)
    bar = tqdm(total=total, initial=step, desc="hydra: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        for batch in pack_runs(windows, cfg.batch_size, orders[epoch]):
            frac = (step - warmup) / max(1, total - warmup)
            scale = (step + 1) / warmup if step < warmup else cfg.final_lr + (1 - cfg.final_lr) * 0.5 * (1 + math.cos(math.pi * frac))
            for g in opt.param_groups:
                g["lr"] = cfg.lr * scale
            with _autocast(cfg, target):
                loss, _, _ = _loss(heads, embed, data, batch, cfg, device)
            optimizer_step(opt, loss, bar)
            step += 1
        state.save(epoch + 1, step, {"heads": heads}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    heads.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1), "steps": total,
                               "draft_vocab": sub.size}
    held = runs(data.heldout_starts, cfg.window)
    if held:
        hits, n = torch.zeros(cfg.num_heads), 0
        with torch.no_grad(), _autocast(cfg, target):
            for batch in pack_runs(held, cfg.batch_size, list(range(len(held)))):
                _, h, k = _loss(heads, embed, data, batch, cfg, device)
                hits, n = hits + h, n + k
        metrics["heldout_top1"] = [round(float(v) / max(n, 1), 4) for v in hits]  # teacher-forced, per head
        metrics["heldout_examples"] = n
    save_heads(heads, vocab, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                                   "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[hydra] held-out top-1 per head (teacher-forced): {metrics.get('heldout_top1')}; -> {out}", file=sys.stderr)
    return metrics
