"""Self-distilling an EAGLE draft layer on CPU from the frozen target's features (the shared feature store).

Row p of a training window reads the target's feature ``f_p`` (plus uniform noise of width
``noise * noise_len / L`` for a sequence of L positions, as the reference's ``AddUniformNoise``) and token ``p + 1``; the loss is the reference's: smooth-L1 to the target's next feature
``f_{p+1}`` plus 0.1 x the cross-entropy against the target's distribution ``softmax(head(f_{p+1}))``
(over the draft vocabulary when it is reduced). Windows are runs of consecutive positions of one
sequence, cut to ``window`` rows and packed into batches with a block-diagonal causal mask.

Example: ``RECIPES["quick"]`` (``EagleTrainConfig()``) reads 20k positions and trains 10 epochs over an
8192-token draft vocabulary: minutes on 2 CPU cores (``README.md`` gives the measured time); ``RECIPES["full"]``
reads 300k positions, resumable after every epoch.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from methods.eagle.checkpoint import save_layer
from methods.eagle.layer import EagleLayer, LayerShape
from specbench.api import (ConfigError, DistillData, EpochState, FeatureOptions, choose_vocab, lr_scale, optimizer_step,
                           pack_runs, runs, sequence_lengths, stop_token_ids, trainable)


@dataclass(frozen=True)
class EagleTrainConfig:
    tokens: int = 20000
    epochs: int = 10
    draft_vocab: int = 8192  # 0 = the target's whole vocabulary
    window: int = 128
    batch_size: int = 1024  # rows per optimiser step (several windows)
    lr: float = 1e-3
    noise: float = 0.2  # the reference's std: uniform noise of width noise * noise_len / L on input features
    noise_len: int = 512  # the reference's 512 / seq_len scaling; 0 = width `noise` whatever the length
    clip: float = 0.5  # the reference's grad_clip
    clip_by: str = "value"  # "value" (clip_grad_value_, the reference) or "norm" (clip_grad_norm_)
    p_weight: float = 0.1  # the reference's weight of the distribution loss (feature loss weight 1)
    max_seq_len: int = 512
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if min(self.tokens, self.epochs, self.window, self.batch_size) < 1:
            raise ConfigError("eagle train: tokens, epochs, window and batch_size must be >= 1")
        if self.draft_vocab < 0 or 0 < self.draft_vocab < 2:
            raise ConfigError("eagle train: draft_vocab must be 0 (whole vocabulary) or >= 2")
        if self.clip_by not in ("value", "norm"):
            raise ConfigError(f"eagle train: clip_by must be value or norm, not {self.clip_by!r}")
        if self.noise_len < 0 or self.noise < 0:
            raise ConfigError("eagle train: noise and noise_len must be >= 0")


TRAIN_S_PER_POSITION = 0.0005  # s per position and epoch, 2 cores: docs/training.md
FULL_EPOCHS = 20
# quick: the first-use default (20k positions, minutes); full: 15x the positions, epochs sized to about an hour
RECIPES = {"quick": EagleTrainConfig(), "full": EagleTrainConfig(tokens=300_000, epochs=FULL_EPOCHS)}












def _inputs(data: DistillData, batch: list[tuple[int, int]], device: torch.device) -> tuple[torch.Tensor, ...]:
    """(rows [n], positions [n], block-diagonal causal mask [n, n])."""
    rows = torch.cat([torch.arange(a, a + n) for a, n in batch])
    positions = torch.cat([torch.arange(n) for _, n in batch])
    block = torch.cat([torch.full((n,), i) for i, (_, n) in enumerate(batch)])
    mask = (block[:, None] == block[None, :]) & (positions[:, None] >= positions[None, :])
    return rows.to(device), positions.to(device), mask.to(device)


def _loss(layer: EagleLayer, head_w: torch.Tensor, ids: torch.Tensor | None, data: DistillData, batch: list[tuple[int, int]],
          cfg: EagleTrainConfig, device: torch.device, seq_len: torch.Tensor | None) -> tuple[torch.Tensor, int, int]:
    """(loss, rows whose draft top-1 equals the target's greedy token, rows); ``ids``: draft id -> target id.

    ``seq_len`` (training only): each position's sequence length, for the reference's noise width.
    """
    rows, positions, mask = _inputs(data, batch, device)
    feats = data.hidden[rows.cpu()].float().to(device)
    if seq_len is not None and cfg.noise > 0:
        width = cfg.noise * (cfg.noise_len / seq_len[rows.cpu()] if cfg.noise_len else torch.ones(len(rows)))
        feats = feats + (torch.rand_like(feats) - 0.5) * width[:, None].to(device)
    target = data.hidden[rows.cpu() + 1].float().to(device)
    pred = layer(feats, data.tokens[rows.cpu() + 1].to(device), positions, mask)
    with torch.no_grad():
        p_target = F.softmax(target @ head_w.T, -1)
    logp = F.log_softmax(pred @ head_w.T, -1)
    loss = F.smooth_l1_loss(pred, target) + cfg.p_weight * -(p_target * logp).sum(-1).mean()
    top = logp.argmax(-1).cpu()
    hits = int(((top if ids is None else ids[top]) == data.argmax[rows.cpu() + 1]).sum())
    return loss, hits, len(rows)


@trainable
def train_eagle(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                cfg: EagleTrainConfig, model_id: str = "", progress: bool = True,
                features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the layer (resuming after its last finished epoch), save it in ``out``;
    returns held-out top-1 and durations."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    data, store = features.load(target, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens, n_predict=1,
                                max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every, progress=progress,
                                desc="eagle: target forward")
    t_collect = time.perf_counter() - t0
    param = next(target.parameters())
    device = param.device
    vocab_size = int(target.get_output_embeddings().weight.shape[0])
    vocab = choose_vocab(data, cfg.draft_vocab, stop_token_ids(tokenizer, target), vocab_size) if cfg.draft_vocab else None
    full_w = target.get_output_embeddings().weight.detach().float()
    ids = None if vocab is None else torch.as_tensor(vocab)
    head_w = full_w if ids is None else full_w[ids.to(full_w.device)]
    torch.manual_seed(cfg.seed)
    layer = EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings()).to(device).train()
    opt = torch.optim.AdamW(layer.parameters(), lr=cfg.lr)
    windows = runs(data.train_starts, cfg.window)
    seq_len = sequence_lengths(data.train_starts, len(data.hidden))
    per_epoch = len(list(pack_runs(windows, cfg.batch_size, list(range(len(windows))))))
    total = per_epoch * cfg.epochs
    warmup = max(1, total // 20)
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"layer": layer}, opt)
    bar = tqdm(total=total, initial=step, desc="eagle: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(cfg.seed + epoch)).tolist()
        for batch in pack_runs(windows, cfg.batch_size, order):
            scale = lr_scale(step, warmup, total)
            for g in opt.param_groups:
                g["lr"] = cfg.lr * scale
            loss, _, _ = _loss(layer, head_w, ids, data, batch, cfg, device, seq_len)
            optimizer_step(opt, loss, bar, clip=cfg.clip, clip_by=cfg.clip_by)
            step += 1
        state.save(epoch + 1, step, {"layer": layer}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    layer.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1), "steps": total}
    held = runs(data.heldout_starts, cfg.window)
    if held:
        with torch.no_grad():
            hits = n = 0
            for batch in pack_runs(held, cfg.batch_size, list(range(len(held)))):
                _, h, k = _loss(layer, head_w, ids, data, batch, cfg, device, None)
                hits, n = hits + h, n + k
        metrics["heldout_top1"] = round(hits / max(n, 1), 4)  # teacher-forced: the draft's first token vs the target's
        metrics["heldout_examples"] = n
    save_layer(layer, vocab, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                                   "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[eagle] held-out top-1 (first draft token, teacher-forced): {metrics.get('heldout_top1')}; -> {out}",
          file=sys.stderr)
    return metrics
