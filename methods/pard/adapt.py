"""PARD's adaptation on CPU: the distilled SpS draft (``methods/sps/distill.py``) taught to draft K tokens per forward.

Recipe (``AdaptConfig``; ``RECIPES`` names the quick first-use one and the full one):
1. The labelled sequences of the shared feature store (the target's greedy label at every answer position of
   chat-formatted corpus text), as the distillation reads them.
2. The draft gains one token, the mask (a new embedding row, initialised as the mean of the others; the tied head
   gains the same row, never proposed).
3. Each sequence is laid out in ``copies`` copies (``parallel_batch.py``, with COD); copy 0 learns the target's
   greedy label (as the distillation), copy ``i`` the text's token ``i + 1`` steps after its last real token (the
   reference's labels, its SFT data being text); only answer positions are trained. Cross-entropy, AdamW, warm-up
   and cosine decay.

Output: the adapted model folder + ``vocab.npy`` (draft id -> target id) + ``pard.json`` (the mask id, the recipe,
held-out top-1 agreement per copy, durations), written last.
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

import numpy as np
import torch
import torch.nn.functional as F

from specbench_methods.pard.parallel_batch import parallel_layout
from specbench.api import (ConfigError, DistillConfig, EpochState, FeatureOptions, LabelledSequence, collect_labels,
                           draft_ids, load_distilled, optimizer_step, save_draft, trainable)

META_FILE = "pard.json"
IGNORE = -100


@dataclass(frozen=True)
class AdaptConfig:
    """The quick default (minutes on 2 CPU cores) and its knobs; ``copies`` is the reference's ``para_num``."""

    copies: int = 8
    tokens: int = 60000  # answer positions read (held-out included), as the distillation's quick recipe
    epochs: int = 1
    seq_len: int = 256
    batch_size: int = 4
    lr: float = 1e-3
    warmup: float = 0.05
    heldout_every: int = 20
    seed: int = 0

    def validate(self) -> None:
        if min(self.copies, self.tokens, self.epochs, self.batch_size, self.heldout_every) < 1:
            raise ConfigError("pard adaptation: copies, tokens, epochs, batch_size, heldout_every must be >= 1")


TRAIN_S_PER_POSITION = 0.004  # s per answer position and epoch at 8 copies (COD), 2 cores; measured at first use
RECIPES = {"quick": AdaptConfig(), "full": AdaptConfig(tokens=300_000, epochs=3)}


def add_mask_token(draft: torch.nn.Module) -> int:
    """Give ``draft`` one more token (its id returned), embedded as the mean of the others; a tied head follows."""
    emb = draft.get_input_embeddings().weight
    mean = emb.detach().mean(0)
    mask_id = emb.shape[0]
    draft.resize_token_embeddings(mask_id + 1, mean_resizing=False)
    with torch.no_grad():
        draft.get_input_embeddings().weight[mask_id] = mean
    draft.config.pard_token = mask_id  # (the reference's config field: a PARD checkpoint names its mask so)
    return mask_id


def laid_out_batch(seqs: Sequence[LabelledSequence], to_draft: np.ndarray, copies: int, mask_id: int,
                   rng: np.random.Generator | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids [B, N], positions [B, N], additive mask [B, 1, N, N], labels [B, N], copy of each row [B, N]) of the
    sequences laid out in ``copies`` copies (``rng``: COD), padded to the longest; a padding row sees itself only."""
    rows = []
    for s in seqs:
        lay = parallel_layout(len(s.ids), copies, rng)
        ids = torch.as_tensor(to_draft[np.asarray(s.ids)], dtype=torch.long)
        teacher = torch.tensor([to_draft[x] if x >= 0 else 0 for x in s.labels], dtype=torch.long)
        labels = lay.targets(ids, teacher)
        answer = torch.tensor([x >= 0 for x in s.labels])[lay.position]  # only answer positions are trained
        labels[~answer | (labels == 0)] = IGNORE  # (0: a token outside the draft's vocabulary teaches nothing)
        rows.append((lay.inputs(ids, mask_id), lay.position, lay.visible, labels, lay.copy))
    n = max(len(r[0]) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    pos = torch.zeros(len(rows), n, dtype=torch.long)
    lab = torch.full((len(rows), n), IGNORE, dtype=torch.long)
    copy = torch.full((len(rows), n), -1, dtype=torch.long)
    mask = torch.full((len(rows), 1, n, n), torch.finfo(torch.float32).min)
    for b, (i, p, v, y, c) in enumerate(rows):
        m = len(i)
        ids[b, :m], pos[b, :m], lab[b, :m], copy[b, :m] = i, p, y, c
        mask[b, 0, :m, :m].masked_fill_(v, 0.0)
        mask[b, 0, torch.arange(m, n), torch.arange(m, n)] = 0.0
    return ids, pos, mask, lab, copy


def _loss(draft: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ids, pos, mask, lab, copy = (t.to(next(draft.parameters()).device) for t in batch)
    logits = draft(input_ids=ids, position_ids=pos, attention_mask=mask).logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1), ignore_index=IGNORE)
    return loss, logits.argmax(-1) == lab, (lab != IGNORE) & (copy >= 0)


def heldout_agreement(draft: torch.nn.Module, seqs: Sequence[LabelledSequence], to_draft: np.ndarray, cfg: AdaptConfig,
                      mask_id: int) -> list[float]:
    """Top-1 agreement per copy on held-out sequences (no COD): copy 0 with the target, copy i with the text."""
    hits, counts = np.zeros(cfg.copies), np.zeros(cfg.copies)
    with torch.inference_mode():
        for b in range(0, len(seqs), cfg.batch_size):
            batch = laid_out_batch(seqs[b: b + cfg.batch_size], to_draft, cfg.copies, mask_id, None)
            _, hit, valid = _loss(draft, batch)
            copy = batch[4].to(hit.device)
            for i in range(cfg.copies):
                sel = valid & (copy == i)
                hits[i] += int(hit[sel].sum())
                counts[i] += int(sel.sum())
    return [round(float(h / max(c, 1)), 4) for h, c in zip(hits, counts)]


@trainable
def adapt_draft(distilled: Path, target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str],
                data_dir: Path | None, out: Path, cfg: AdaptConfig, model_id: str = "", progress: bool = True,
                features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Adapt the AR draft in the folder ``distilled`` (``sps``'s distilled draft) into a parallel one in ``out``
    (resuming after its last finished epoch); returns the metrics."""
    from tqdm import tqdm

    cfg.validate()
    t0 = time.perf_counter()
    train, held, store = collect_labels(target, tokenizer, corpora, data_dir,
                                        DistillConfig(tokens=cfg.tokens, seq_len=cfg.seq_len,
                                                      heldout_every=cfg.heldout_every), progress, model_id, features)
    t_collect = time.perf_counter() - t0
    loaded = load_distilled(distilled, torch.device("cpu"), torch.float32)  # (a fresh, unpacked copy to train)
    if loaded is None:
        raise ConfigError(f"pard: {distilled} holds no complete distilled draft to adapt")
    model, vocab = loaded
    model.train()
    to_draft = draft_ids(vocab, int(target.config.vocab_size))
    mask_id = add_mask_token(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    per_epoch = math.ceil(len(train) / cfg.batch_size)
    total, warm = per_epoch * cfg.epochs, max(1, int(cfg.warmup * per_epoch * cfg.epochs))
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"draft": model}, opt)
    bar = tqdm(total=total, initial=step, desc="pard: adapt", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        rng = np.random.default_rng(cfg.seed + epoch)
        order = rng.permutation(len(train))
        for b in range(0, len(order), cfg.batch_size):
            lr = cfg.lr * (step + 1) / warm if step < warm else \
                cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))
            for g in opt.param_groups:
                g["lr"] = lr
            batch = laid_out_batch([train[i] for i in order[b: b + cfg.batch_size]], to_draft, cfg.copies, mask_id, rng)
            optimizer_step(opt, _loss(model, batch)[0], bar, clip=1.0)
            step += 1
        state.save(epoch + 1, step, {"draft": model}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    model.eval()
    metrics: dict[str, Any] = {"heldout_top1_per_copy": heldout_agreement(model, held, to_draft, cfg, mask_id) if held else []}
    metrics.update(collect_s=round(t_collect, 1), train_s=round(state.elapsed_s(), 1), steps=total,
                   train_sequences=len(train), heldout_sequences=len(held))
    state.clear()
    save_draft(model, vocab, out, {"model_id": model_id, "corpora": list(corpora), "recipe": dataclasses.asdict(cfg),
                                   "recipe_name": recipe, "features": store.describe(), "metrics": metrics})
    (out / META_FILE).write_text(json.dumps({"mask_id": mask_id, "copies": cfg.copies, "metrics": metrics}, indent=1),
                                 encoding="utf-8")
    print(f"[pard] adapted draft: held-out top-1 per copy {metrics['heldout_top1_per_copy']} -> {out}", file=sys.stderr)
    return metrics
