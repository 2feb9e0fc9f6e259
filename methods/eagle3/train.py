"""Self-distilling an EAGLE-3 draft on CPU from the frozen target, with training-time test (``ttt.py``).

The shared feature store (``specbench/training/feature_store.py``, a store of its own since it keeps the
three feature layers) runs the target once over chat-formatted corpus sequences and keeps, per position,
the hidden states of the three feature layers, the final state (the teacher's distribution over the draft
vocabulary) and its argmax. The draft vocabulary is the most
frequent response tokens (the reference's ``scandata``). Windows of consecutive response rows are
unrolled ``ttt_steps`` steps; AdamW with betas (0.9, 0.95) and gradient-norm clipping at 0.5 as the
reference's DeepSpeed config, a short warm-up and a cosine decay.

Example: ``RECIPES["quick"]`` (``Eagle3TrainConfig()``) on SmolLM2-135M reads 20k positions and trains about
four minutes on 2 CPU cores (``README.md`` gives the measured time and held-out accuracy); ``RECIPES["full"]``
reads 300k positions, resumable after every epoch.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from specbench.api import lr_scale, runs
from specbench_methods.eagle3.checkpoint import save_draft
from specbench_methods.eagle3.init import new_draft
from specbench_methods.eagle3.layer import Eagle3Layer, reference_layers
from specbench_methods.eagle3.ttt import Windows, ttt_loss
from specbench_methods.eagle3.vocab import most_frequent
from specbench.api import (ConfigError, DistillData, EpochState, FeatureOptions, draft_dtype, optimizer_step,
                           trainable)

HEAD_INITS = ("target", "random")
AUTOCASTS = ("auto", "bfloat16", "none")


@dataclass(frozen=True)
class Eagle3TrainConfig:
    tokens: int = 20000
    epochs: int = 4
    ttt_steps: int = 5  # unrolled steps (the reference's 7; 5 = the default tree's depth + 1, deeper steps never draft)
    decay: float = 0.8  # weight of step j: decay ** j, as the reference
    draft_vocab: int = 8192  # 0 = the target's whole vocabulary
    window: int = 128
    batch_size: int = 1024  # rows per optimiser step (several windows)
    lr: float = 1e-3
    clip: float = 0.5  # the reference's gradient clipping (DeepSpeed: by global norm)
    head_init: str = "target"  # the head's rows (and its norm) start from the target's head; "random" = the reference's
    autocast: str = "auto"  # mixed precision as the reference's fp16 autocast: auto = bfloat16 where the draft runs in it
    max_seq_len: int = 512
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if min(self.tokens, self.epochs, self.window, self.batch_size, self.ttt_steps) < 1:
            raise ConfigError("eagle3 train: tokens, epochs, ttt_steps, window and batch_size must be >= 1")
        if self.draft_vocab < 0 or 0 < self.draft_vocab < 2:
            raise ConfigError("eagle3 train: draft_vocab must be 0 (whole vocabulary) or >= 2")
        if self.head_init not in HEAD_INITS:
            raise ConfigError(f"eagle3 train: head_init must be one of {', '.join(HEAD_INITS)}")
        if not 0 < self.decay <= 1:
            raise ConfigError("eagle3 train: decay must be in (0, 1]")
        if self.autocast not in AUTOCASTS:
            raise ConfigError(f"eagle3 train: autocast must be one of {', '.join(AUTOCASTS)}")

    def mixed_precision(self, target: torch.nn.Module) -> bool:
        """Whether the forward runs under bfloat16 autocast (fp32 master weights and optimiser either way)."""
        return self.autocast == "bfloat16" or (self.autocast == "auto" and draft_dtype("auto", target) == torch.bfloat16)


TRAIN_S_PER_POSITION = 0.0018  # s per position and epoch, 2 cores: docs/training.md
FULL_EPOCHS = 5
# quick: the first-use default (20k positions, minutes); full: 15x the positions, epochs sized to about an hour
RECIPES = {"quick": Eagle3TrainConfig(), "full": Eagle3TrainConfig(tokens=300_000, epochs=FULL_EPOCHS)}


def _batches(windows: list[tuple[int, int]], per_batch: int, order: list[int]) -> Iterator[list[tuple[int, int]]]:
    for i in range(0, len(order), per_batch):
        yield [windows[w] for w in order[i : i + per_batch]]


def gather(data: DistillData, batch: list[tuple[int, int]], window: int, steps: int, device: torch.device) -> Windows:
    """The padded tensors of windows ``(first row, rows)`` (each row a valid start for ``steps`` steps)."""
    span = window + steps - 1
    first = torch.tensor([a for a, _ in batch])[:, None]  # [B, 1]
    n = torch.tensor([k for _, k in batch])[:, None]
    rows = torch.arange(window)[None] < n  # [B, w]
    at = (first + torch.arange(window)[None]).clamp(max=len(data.tokens) - 1)  # row positions
    after = (first + 1 + torch.arange(span)[None]).clamp(max=len(data.tokens) - 1)  # positions p + 1 onwards
    assert data.layer_states is not None, "eagle3 needs data collected with its feature layers"
    return Windows(layer_states=data.layer_states[at].float().to(device), tokens=data.tokens[after].to(device),
                   teacher=data.hidden[after].float().to(device), labels=data.argmax[after].to(device),
                   rows=rows.to(device))


def response_tokens(data: DistillData, steps: int) -> torch.Tensor:
    """Every response token of the training sequences, the end-of-turn token included (the reference counts
    all loss-masked tokens). A sequence's starts run ``first .. first + n - 1`` and stop ``steps + 1``
    positions before its last token (the store's view with ``n_predict = steps``)."""
    spans = [data.tokens[first + 1 : first + n + steps + 1] for first, n in runs(data.train_starts, 1 << 62)]
    return torch.cat(spans) if spans else data.tokens[:0]


def evaluate(layer: Eagle3Layer, data: DistillData, cfg: Eagle3TrainConfig, head_w: torch.Tensor,
             device: torch.device) -> dict[str, Any]:
    """Held-out top-1 per unrolled step (step 0: the first draft token, teacher-forced, as ``eagle``'s metric)."""
    held = runs(data.heldout_starts, cfg.window)
    if not held:
        return {}
    per_batch = max(1, cfg.batch_size // cfg.window)
    hits, n = [0] * cfg.ttt_steps, 0
    with torch.no_grad():
        for batch in _batches(held, per_batch, list(range(len(held)))):
            _, h, k = ttt_loss(layer, gather(data, batch, cfg.window, cfg.ttt_steps, device), cfg.ttt_steps, head_w,
                               cfg.decay)
            hits, n = [a + b for a, b in zip(hits, h)], n + k
    coverage = float(layer.t2d.cpu()[data.argmax[data.heldout_starts + 1]].float().mean())
    return {"heldout_top1": round(hits[0] / max(n, 1), 4), "heldout_top1_steps": [round(h / max(n, 1), 4) for h in hits],
            "heldout_examples": n, "heldout_vocab_coverage": round(coverage, 4)}


@trainable
def train_eagle3(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                 cfg: Eagle3TrainConfig, model_id: str = "", progress: bool = True,
                 features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read the features, train the draft (resuming after its last finished epoch), save it in ``out`` (the
    reference's layout); returns held-out metrics."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    layers = reference_layers(int(target.config.num_hidden_layers))
    data, store = features.load(target, tokenizer, corpora, data_dir, model_id, positions=cfg.tokens,
                                n_predict=cfg.ttt_steps, max_seq_len=cfg.max_seq_len, heldout_every=cfg.heldout_every,
                                layers=layers, progress=progress, desc="eagle3: target forward")
    t_collect = time.perf_counter() - t0
    device = next(target.parameters()).device
    vocab_size = int(target.get_output_embeddings().weight.shape[0])
    vocab = None
    if cfg.draft_vocab and cfg.draft_vocab < vocab_size:
        vocab = most_frequent(response_tokens(data, cfg.ttt_steps), cfg.draft_vocab, vocab_size)
    torch.manual_seed(cfg.seed)
    layer = new_draft(target, vocab, head_init=cfg.head_init).to(device).train()
    head_w = target.get_output_embeddings().weight.detach().float()
    head_w = head_w if vocab is None else head_w[vocab.ids.to(head_w.device)]  # [N, H]
    opt = torch.optim.AdamW([p for p in layer.parameters() if p.requires_grad], lr=cfg.lr, betas=(0.9, 0.95))
    amp = cfg.mixed_precision(target)
    windows = runs(data.train_starts, cfg.window)
    per_batch = max(1, cfg.batch_size // cfg.window)
    total = math.ceil(len(windows) / per_batch) * cfg.epochs
    warmup = max(1, total // 20)
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"layer": layer}, opt)
    bar = tqdm(total=total, initial=step, desc="eagle3: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(cfg.seed + epoch)).tolist()
        for batch in _batches(windows, per_batch, order):
            scale = lr_scale(step, warmup, total)
            for g in opt.param_groups:
                g["lr"] = cfg.lr * scale
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                loss, _, _ = ttt_loss(layer, gather(data, batch, cfg.window, cfg.ttt_steps, device), cfg.ttt_steps,
                                      head_w, cfg.decay)
            optimizer_step(opt, loss, bar, clip=cfg.clip, clip_by="norm")
            step += 1
        state.save(epoch + 1, step, {"layer": layer}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    layer.eval()
    metrics: dict[str, Any] = {"collect_s": round(t_collect, 1), "train_s": round(state.elapsed_s(), 1),
                               "steps": total, **evaluate(layer, data, cfg, head_w, device)}
    save_draft(layer, layers, out, {"model_id": model_id, "corpora": list(corpora), "recipe": recipe,
                                    "train": dataclasses.asdict(cfg), "features": store.describe(), "metrics": metrics})
    state.clear()
    print(f"[eagle3] held-out top-1 per drafted depth (teacher-forced context): {metrics.get('heldout_top1_steps')}; "
          f"-> {out}", file=sys.stderr)
    return metrics
