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

from specbench_methods.eagle.checkpoint import save_layer
from specbench_methods.eagle.hass import align_mask, harmonized_forward, next_stream, topk_loss
from specbench_methods.eagle.layer import EagleLayer, LayerShape
from specbench.api import (ConfigError, DistillData, EpochState, FeatureOptions, added_field, choose_vocab, eta_minutes,
                           lr_scale, optimizer_step, pack_runs, runs, sequence_lengths, stop_token_ids, trainable)


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
    # HASS (hass.py): forwards per batch reading the draft's own features (1 = plain EAGLE; the reference's 3)
    # (added after the quick and full folders were keyed: out of their key while at these defaults)
    align_steps: int = added_field(1)
    topk: int = added_field(10)  # HASS's top-k distillation: the target's k most likely tokens
    topk_weight: float = added_field(0.0)  # its weight in the first epochs (the reference's first stage: 0)
    tune_epochs: int = added_field(0)  # the last epochs of ``epochs`` as HASS's second stage: a fresh optimiser at
    tune_lr: float = added_field(3.3e-4)  # this rate (the reference's 1e-5 after 3e-5: a third) with
    tune_topk_weight: float = added_field(1.0)  # this top-k weight

    def validate(self) -> None:
        if min(self.tokens, self.epochs, self.window, self.batch_size, self.align_steps, self.topk) < 1:
            raise ConfigError("eagle train: tokens, epochs, window, batch_size, align_steps and topk must be >= 1")
        if not 0 <= self.tune_epochs < self.epochs:
            raise ConfigError("eagle train: tune_epochs must be >= 0 and below epochs")
        if min(self.topk_weight, self.tune_topk_weight, self.tune_lr) < 0:
            raise ConfigError("eagle train: topk_weight, tune_topk_weight and tune_lr must be >= 0")
        if self.draft_vocab < 0 or 0 < self.draft_vocab < 2:
            raise ConfigError("eagle train: draft_vocab must be 0 (whole vocabulary) or >= 2")
        if self.clip_by not in ("value", "norm"):
            raise ConfigError(f"eagle train: clip_by must be value or norm, not {self.clip_by!r}")
        if self.noise_len < 0 or self.noise < 0:
            raise ConfigError("eagle train: noise and noise_len must be >= 0")


    def cost_factor(self) -> float:
        """Training cost per position and epoch relative to plain EAGLE's: forward ``j`` of HASS's ``align_steps``
        projects and attends over ``j`` streams (measured: ``HASS_COST_PER_STEP``).

        >>> EagleTrainConfig().cost_factor(), round(EagleTrainConfig(align_steps=3).cost_factor(), 2)
        (1.0, 4.0)
        """
        return 1.0 + HASS_COST_PER_STEP * (self.align_steps * (self.align_steps + 1) // 2 - 1)

    def eta_minutes(self) -> float:
        """Rough minutes on 2 CPU cores, the target pass included (``specbench train``'s estimate)."""
        return eta_minutes(self.tokens, self.epochs, TRAIN_S_PER_POSITION * self.cost_factor())


TRAIN_S_PER_POSITION = 0.0005  # s per position and epoch, 2 cores: docs/training.md
# each extra stream a forward reads adds this share of a plain EAGLE step: 3 forwards cost 4.0x (3.06 s vs 0.76 s
# per 1024-row step, embedded model, 2 quiet cores; README, "HASS")
HASS_COST_PER_STEP = 0.6
FULL_EPOCHS = 20
HASS_TUNE_EPOCHS = 4  # the reference's 40 + 10 epochs, as 16 + 4 of the full recipe's 20
# quick: the first-use default (20k positions, minutes); full: 15x the positions, epochs sized to about an hour;
# hass: full's positions and epochs with HASS's 3 aligned forwards and its two stages (README, "HASS")
RECIPES = {"quick": EagleTrainConfig(), "full": EagleTrainConfig(tokens=300_000, epochs=FULL_EPOCHS),
           "hass": EagleTrainConfig(tokens=300_000, epochs=FULL_EPOCHS, align_steps=3, tune_epochs=HASS_TUNE_EPOCHS)}


def _inputs(data: DistillData, batch: list[tuple[int, int]], device: torch.device) -> tuple[torch.Tensor, ...]:
    """(rows [n], positions in their window [n], window of each row [n])."""
    rows = torch.cat([torch.arange(a, a + n) for a, n in batch])
    positions = torch.cat([torch.arange(n) for _, n in batch])
    block = torch.cat([torch.full((n,), i) for i, (_, n) in enumerate(batch)])
    return rows.to(device), positions.to(device), block.to(device)


def _loss(layer: EagleLayer, head_w: torch.Tensor, ids: torch.Tensor | None, data: DistillData, batch: list[tuple[int, int]],
          cfg: EagleTrainConfig, device: torch.device, seq_len: torch.Tensor | None, steps: int = 1,
          topk_weight: float = 0.0) -> tuple[torch.Tensor, list[int], int]:
    """(loss summed over the ``steps`` aligned forwards, rows whose draft top-1 equals the target's greedy token at
    each forward, rows); ``ids``: draft id -> target id. Forward 1 is plain EAGLE's (the target's features);
    forward ``j`` reads the draft's own features of the last ``j - 1`` positions (``hass.py``).

    ``seq_len`` (training only): each position's sequence length, for the reference's noise width.
    """
    rows, positions, block = _inputs(data, batch, device)
    feats = data.hidden[rows.cpu()].float().to(device)
    if seq_len is not None and cfg.noise > 0:
        width = cfg.noise * (cfg.noise_len / seq_len[rows.cpu()] if cfg.noise_len else torch.ones(len(rows)))
        feats = feats + (torch.rand_like(feats) - 0.5) * width[:, None].to(device)
    target = data.hidden[rows.cpu() + 1].float().to(device)
    tokens = data.tokens[rows.cpu() + 1].to(device)
    with torch.no_grad():
        p_target = F.softmax(target @ head_w.T, -1)
    streams, total, hits = [feats], torch.zeros((), device=device), []
    for j in range(1, steps + 1):
        mask = align_mask(block, positions, j)
        pred = layer(feats, tokens, positions, mask) if j == 1 else harmonized_forward(layer, streams, tokens, positions, mask)
        logp = F.log_softmax(pred @ head_w.T, -1)
        total = total + F.smooth_l1_loss(pred, target) + cfg.p_weight * -(p_target * logp).sum(-1).mean()
        if topk_weight:
            total = total + topk_weight * topk_loss(p_target, logp, cfg.topk)
        top = logp.argmax(-1).cpu()
        hits.append(int(((top if ids is None else ids[top]) == data.argmax[rows.cpu() + 1]).sum()))
        if j < steps:
            streams.append(next_stream(streams[-1], pred, positions))
    return total, hits, len(rows)


HELDOUT_DEPTHS = 3  # held-out top-1 at forwards 1..3: the draft reading 0, 1, 2 of its own features


@trainable
def train_eagle(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                cfg: EagleTrainConfig, model_id: str = "", progress: bool = True,
                features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the layer (resuming after its last finished epoch), save it in ``out``;
    returns held-out top-1 and durations. With ``cfg.tune_epochs`` the last epochs are HASS's second stage
    (a fresh optimiser at ``tune_lr``, the top-k term at ``tune_topk_weight``)."""
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
    first_tune = cfg.epochs - cfg.tune_epochs  # the first epoch of HASS's second stage (= epochs: none)
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"layer": layer}, opt)
    bar = tqdm(total=total, initial=step, desc="eagle: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        tune = epoch >= first_tune
        if epoch == first_tune:  # the reference's second run loads the weights only: fresh moments, own schedule
            opt = torch.optim.AdamW(layer.parameters(), lr=cfg.tune_lr)
        lr, weight = (cfg.tune_lr, cfg.tune_topk_weight) if tune else (cfg.lr, cfg.topk_weight)
        stage_start = first_tune * per_epoch if tune else 0  # each stage its own warm-up and decay
        stage_steps = total - stage_start if tune else first_tune * per_epoch
        warmup = max(1, stage_steps // 20)
        order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(cfg.seed + epoch)).tolist()
        for batch in pack_runs(windows, cfg.batch_size, order):
            scale = lr_scale(step - stage_start, warmup, stage_steps)
            for g in opt.param_groups:
                g["lr"] = lr * scale
            loss, _, _ = _loss(layer, head_w, ids, data, batch, cfg, device, seq_len, cfg.align_steps, weight)
            optimizer_step(opt, loss, bar, clip=cfg.clip, clip_by=cfg.clip_by)
            step += 1
        state.save(epoch + 1, step, {"layer": layer}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    layer.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1), "steps": total}
    held = runs(data.heldout_starts, cfg.window)
    if held:
        with torch.no_grad():
            hits, n = [0] * HELDOUT_DEPTHS, 0
            for batch in pack_runs(held, cfg.batch_size, list(range(len(held)))):
                _, h, k = _loss(layer, head_w, ids, data, batch, cfg, device, None, HELDOUT_DEPTHS)
                hits, n = [a + b for a, b in zip(hits, h)], n + k
        metrics["heldout_top1"] = round(hits[0] / max(n, 1), 4)  # teacher-forced: the draft's first token vs the target's
        # the same token read through 0, 1, 2 of the draft's own features (HASS's alignment): depth 1, 2, 3
        metrics["heldout_top1_aligned"] = [round(h / max(n, 1), 4) for h in hits]
        metrics["heldout_examples"] = n
    save_layer(layer, vocab, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                                   "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[eagle] held-out top-1 (first draft token, teacher-forced): {metrics.get('heldout_top1')}; reading 0/1/2 "
          f"of its own features: {metrics.get('heldout_top1_aligned')}; -> {out}", file=sys.stderr)
    return metrics
