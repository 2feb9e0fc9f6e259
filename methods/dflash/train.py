"""Self-distilling a DFlash draft on CPU from the frozen target, on the shared feature store.

The store (a store of its own: it keeps the tapped layers' states) gives, per response row, the target's states at
those layers, the token and the target's greedy next token. Each epoch draws ``anchors`` rows of every training
sequence at random (the reference draws a fixed number of anchors per sequence anew each epoch); each anchor starts
a block ``[token, MASK x (B - 1)]`` that sees the context rows before it (``blocks.py``), and block row ``j`` learns
the target's greedy token at ``anchor + j`` by cross-entropy weighted ``exp(-(j - 1) / gamma)``, scored by the
target's frozen head. AdamW, a short warm-up and a cosine decay, gradient clipping by norm.

Held out: blocks tiling every held-out sequence; top-1 per block row and the mean number of leading rows right
(what the engine would accept on the target's own text). Example: ``RECIPES["quick"]`` on SmolLM2-135M reads 20k
positions (one target pass keeping 5 layers) and trains minutes on 2 CPU cores.
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

from .blocks import IGNORE, BlockArrays, Blocks, accepted_lengths, draw_anchors, loss_weights, make_blocks, spaced_anchors
from .checkpoint import new_draft, save_draft
from .network import DFlashDraft, reference_layers
from specbench.api import (ConfigError, DistillData, EpochState, FeatureOptions, draft_dtype, lr_scale, optimizer_step,
                           runs, trainable)

AUTOCASTS = ("auto", "bfloat16", "none")


@dataclass(frozen=True)
class DFlashTrainConfig:
    tokens: int = 20000
    epochs: int = 2
    layers: int = 5  # draft layers, one target layer tapped per draft layer (the reference's default)
    block_size: int = 16  # the reference's b16 drafts
    anchors: int = 8  # blocks per sequence and epoch (the reference: 512 per 3072-token sequence)
    gamma: float = 7.0  # loss weight of block row j: exp(-(j - 1) / gamma) (SpecForge's 7 for blocks of 16)
    batch_size: int = 4  # sequences per optimiser step
    lr: float = 6e-4
    clip: float = 1.0
    mask_token: int = -1  # -1: the target's last vocabulary id (which row only matters as a fixed input)
    autocast: str = "auto"  # bfloat16 autocast where the draft runs in bfloat16 (fp32 master weights)
    max_seq_len: int = 512
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if min(self.tokens, self.epochs, self.layers, self.anchors, self.batch_size) < 1 or self.block_size < 2:
            raise ConfigError("dflash train: tokens, epochs, layers, anchors and batch_size must be >= 1, block_size >= 2")
        if self.gamma <= 0:
            raise ConfigError("dflash train: gamma must be > 0")
        if self.autocast not in AUTOCASTS:
            raise ConfigError(f"dflash train: autocast must be one of {', '.join(AUTOCASTS)}")

    def mixed_precision(self, target: torch.nn.Module) -> bool:
        """Whether the forward runs under bfloat16 autocast (fp32 master weights and optimiser either way)."""
        return self.autocast == "bfloat16" or (self.autocast == "auto" and draft_dtype("auto", target) == torch.bfloat16)


# s per position and epoch at 8 anchors per sequence, 2 cores: ~17.6 ms per block row timed on the embedded model at
# load 4.6 (three steps; README), 8 x 16 block rows per ~150-row sequence, about halved on a quiet machine
TRAIN_S_PER_POSITION = 0.01
# quick: the first-use default (minutes); full: 15x the positions, at about an hour and a half
RECIPES = {"quick": DFlashTrainConfig(), "full": DFlashTrainConfig(tokens=300_000)}


def block_loss(draft: DFlashDraft, batch: Blocks, gamma: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(weighted mean cross-entropy, ``hits [N, B - 1]`` top-1 right per block row, ``scored [N, B - 1]``)."""
    t = batch.layer_states.shape[1]
    context = draft.context(batch.layer_states)  # [S, T, h]
    kv = draft.context_kv(context, torch.arange(t, device=context.device))
    out = draft(batch.ids, batch.positions, kv, batch.mask)  # [S, A*B, h]
    block = draft.block_size
    labels = batch.labels.view(-1, block)  # [N, B]
    weights = loss_weights(block, gamma).to(out.device).expand_as(labels)
    scored = labels != IGNORE
    logits = draft.logits(out.view(-1, block, out.shape[-1])[scored], training=True).float()  # [rows, V]
    ce = F.cross_entropy(logits, labels[scored], reduction="none")
    loss = (ce * weights[scored]).sum() / weights[scored].sum().clamp(min=1e-6)
    hits = torch.zeros_like(scored)
    hits[scored] = logits.argmax(-1) == labels[scored]
    return loss, hits[:, 1:], scored[:, 1:]


def sequences(starts: torch.Tensor) -> list[tuple[int, int]]:
    """(first row, rows) of each sequence whose example starts (``n_predict = 1``) are ``starts``: a sequence's
    starts stop two rows before its end."""
    return [(first, n + 2) for first, n in runs(starts, 1 << 62)]


def evaluate(draft: DFlashDraft, data: DistillData, arrays: BlockArrays, cfg: DFlashTrainConfig) -> dict[str, Any]:
    """Held-out top-1 per block row and mean accepted length, over blocks tiling the held-out sequences."""
    held = sequences(data.heldout_starts)
    if not held:
        return {}
    hits, scored, accepted, blocks = torch.zeros(cfg.block_size - 1), torch.zeros(cfg.block_size - 1), 0, 0
    with torch.no_grad():
        for i in range(0, len(held), cfg.batch_size):
            part = held[i : i + cfg.batch_size]
            batch = make_blocks(part, [spaced_anchors(n, cfg.block_size) for _, n in part], arrays, cfg.block_size,
                                draft.mask_token_id)
            _, h, s = block_loss(draft, batch, cfg.gamma)
            real = s[:, 0]  # blocks of real anchors
            hits, scored = hits + (h & s).sum(0).float(), scored + s.sum(0).float()
            accepted, blocks = accepted + int(accepted_lengths(h[real] & s[real]).sum()), blocks + int(real.sum())
    top1 = (hits / scored.clamp(min=1)).tolist()
    return {"heldout_top1": round(top1[0], 4), "heldout_top1_steps": [round(x, 4) for x in top1],
            "heldout_accept": round(accepted / max(blocks, 1), 4), "heldout_blocks": blocks}


@trainable
def train_dflash(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                 cfg: DFlashTrainConfig, model_id: str = "", progress: bool = True,
                 features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the draft (resuming after its last finished epoch), save it in ``out`` (the
    reference's layout); returns held-out metrics."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    n_target = int(target.config.num_hidden_layers)
    layers = reference_layers(n_target, cfg.layers)
    data, store = features.load(target, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens, n_predict=1,
                                max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every, layers=layers,
                                progress=progress, desc="dflash: target forward")
    t_collect = time.perf_counter() - t0
    assert data.layer_states is not None, "dflash needs data collected with its feature layers"
    device = next(target.parameters()).device
    arrays = BlockArrays(data.tokens, data.argmax.long(), data.layer_states)
    torch.manual_seed(cfg.seed)
    draft = new_draft(target, cfg.layers, cfg.block_size, cfg.mask_token).train()
    opt = torch.optim.AdamW(list(draft.parameters()), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    amp = cfg.mixed_precision(target)
    train = sequences(data.train_starts)
    total = math.ceil(len(train) / cfg.batch_size) * cfg.epochs
    warmup = max(1, total // 25)  # ~4% warm-up
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"draft": draft}, opt)
    bar = tqdm(total=total, initial=step, desc="dflash: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        gen = torch.Generator().manual_seed(cfg.seed + epoch)
        order = torch.randperm(len(train), generator=gen).tolist()
        for i in range(0, len(order), cfg.batch_size):
            part = [train[k] for k in order[i : i + cfg.batch_size]]
            batch = make_blocks(part, [draw_anchors(n, cfg.anchors, gen) for _, n in part], arrays, cfg.block_size,
                                draft.mask_token_id)
            batch = dataclasses.replace(batch, layer_states=batch.layer_states.float().to(device),
                                        ids=batch.ids.to(device), labels=batch.labels.to(device),
                                        positions=batch.positions.to(device), mask=batch.mask.to(device))
            for g in opt.param_groups:
                g["lr"] = cfg.lr * lr_scale(step, warmup, total)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                loss, _, _ = block_loss(draft, batch, cfg.gamma)
            optimizer_step(opt, loss, bar, clip=cfg.clip, clip_by="norm")
            step += 1
        state.save(epoch + 1, step, {"draft": draft}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    draft.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1), "steps": total,
                               **evaluate(draft, data, arrays, cfg)}
    save_draft(draft, out, n_target, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                                      "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[dflash] held-out top-1 per block row (teacher-forced context): {metrics.get('heldout_top1_steps')}, "
          f"mean accepted {metrics.get('heldout_accept')}; -> {out}", file=sys.stderr)
    return metrics
