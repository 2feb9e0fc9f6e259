"""A small draft LM distilled from the target on CPU: the target's first layers, a reduced vocabulary (the default
draft of ``sps``, and the AR draft PARD adapts; in the core so that both reach it through ``specbench.api``).

Recipe (``DistillConfig``; ``DISTILL_RECIPES`` names the quick first-use one and the full one):
1. Read the frozen target's greedy next token at every answer position of chat-formatted corpus sequences
   (the benchmark's own prompt format) from the shared feature store: the labels (``labels.py``).
2. Vocabulary: the ``vocab - 1`` target tokens most frequent among inputs and labels, plus one slot for
   every other token. The draft's output head then costs ``vocab / V`` of the target's (8192 of 49152
   for SmolLM2), the part that dominates a small model's forward.
3. Draft = a copy of the target's architecture with ``layers`` decoder layers, initialised from the
   target's first layers and final norm, embeddings (tied with the head) = the target's rows.
4. Train all of it on the labels (cross-entropy, AdamW, cosine decay), a held-out slice of whole
   sequences measuring top-1 agreement with the target.

Output: a transformers model folder (``save_pretrained``) + ``vocab.npy`` (draft id -> target id) +
``distill.json`` (recipe, metrics, durations). Example: ``DistillConfig(layers=2, vocab=8192)`` on the
embedded SmolLM2-135M gives a 2-layer draft of about 12M parameters.
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

from specbench.errors import ConfigError
from specbench.files.checkpoint_files import checkpoint_errors, read_config
from specbench.files.content_hash import file_sha256, verify_checkpoint
from specbench.training.checkpoints import keyed_dir
from specbench.training.distill_data import DEFAULT_CORPORA
from specbench.training.draft_vocab import rank_by_count
from specbench.training.feature_store import FeatureOptions, FeatureStore
from specbench.training.labelled_sequences import STORE_SEQ_LEN, LabelledSequence, select
from specbench.training.resume import EpochState
from specbench.training.steps import optimizer_step, trainable

__all__ = ["DISTILL_RECIPES", "DistillConfig", "LabelledSequence", "choose_vocab", "distill_draft", "distilled_dir",
           "distilled_draft_folder", "load_distilled"]

DISTILL_VOCAB_FILE = "vocab.npy"
DISTILL_META_FILE = "distill.json"


@dataclass(frozen=True)
class DistillConfig:
    """The quick default (a few minutes on 2 CPU cores); larger ``tokens``/``layers`` for better drafts."""

    layers: int = 2
    vocab: int = 8192
    tokens: int = 60000  # answer positions to collect (held-out included)
    epochs: int = 1
    seq_len: int = 256
    batch_size: int = 8
    lr: float = 1e-3
    warmup: float = 0.05
    heldout_every: int = 20  # every k-th sequence is held out
    seed: int = 0

    def validate(self) -> None:
        if min(self.layers, self.tokens, self.epochs, self.batch_size, self.heldout_every) < 1:
            raise ConfigError("draft distillation: layers, tokens, epochs, batch_size, heldout_every must be >= 1")
        if self.vocab < 2 or self.seq_len < 8:
            raise ConfigError("draft distillation: vocab must be >= 2 and seq_len >= 8")


DISTILL_S_PER_POSITION = 0.0012  # s per answer position and epoch, 2 cores: docs/training.md
FULL_EPOCHS = 5
# quick: the first-use default (60k answer positions, minutes); full: 300k positions, resumable
DISTILL_RECIPES = {"quick": DistillConfig(), "full": DistillConfig(tokens=300_000, epochs=FULL_EPOCHS)}


def collect_labels(model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None,
                   cfg: DistillConfig, progress: bool = True, model_id: str = "",
                   features: FeatureOptions = FeatureOptions()) -> tuple[list[LabelledSequence], list[LabelledSequence], FeatureStore]:
    """(train, held-out) sequences with the target's greedy labels on answer positions, and their store."""
    features.validate()
    store = FeatureStore.open(model, tokenizer, corpora, data_dir, model_id=model_id,
                              max_seq_len=max(STORE_SEQ_LEN, cfg.seq_len), teacher_dtype=features.teacher_dtype,
                              root=features.root)
    train, held = select(store, cfg.seq_len, cfg.tokens, cfg.heldout_every, features.heldout_span, features.heldout_cap,
                         progress)
    if not train:
        raise ConfigError(f"draft distillation: corpus {','.join(corpora)} gave no usable sequences")
    return train, held, store


def choose_vocab(seqs: list[LabelledSequence], size: int, keep: set[int]) -> np.ndarray:
    """Draft id -> target id: slot 0 for every other token, then ``keep`` and the most frequent ones."""
    ids = torch.tensor([t for s in seqs for t in s.ids + [x for x in s.labels if x >= 0]], dtype=torch.long)
    top = max([int(ids.max()) if len(ids) else -1, *keep]) + 1
    ranked = rank_by_count(torch.bincount(ids, minlength=top), size - 1, keep, seen_only=True)
    return np.array([-1] + ranked.tolist(), dtype=np.int64)


def draft_ids(vocab: np.ndarray, target_vocab: int) -> np.ndarray:
    """Target id -> draft id of a reduced vocabulary ``vocab`` (draft id -> target id, slot 0 "any other token"):
    0 for every target id it lacks. Sized for the vocabulary's ids too (a tokenizer may name more tokens than the
    model's config counts).

    >>> draft_ids(np.array([-1, 5, 2]), 4).tolist()
    [0, 0, 2, 0, 0, 1]
    """
    out = np.zeros(max(target_vocab, int(vocab.max()) + 1), dtype=np.int64)
    out[vocab[1:]] = np.arange(1, len(vocab))
    return out


DISTILLED_PARTS = ("layers", "norm")  # what a distilled draft copies from its target's base model


def distill_refusal(target: Any) -> str | None:
    """Why no draft can be distilled from ``target`` (its own architecture cut to fewer layers, their weights
    copied), or None when one can: its base model must hold decoder ``layers`` and a final ``norm``
    (Llama-style: Llama, Qwen2, Mistral; GPT-2 names them ``h`` and ``ln_f``). Asked before any drafter is built
    (``register_model_requirement``) and by ``build_draft``.

    >>> from types import SimpleNamespace as NS
    >>> distill_refusal(NS(base_model=NS(layers=[], norm=None))) is None, distill_refusal(NS(base_model=NS(h=[])))
    (True, 'SimpleNamespace has no `layers`/`norm` to copy into a distilled draft (Llama-style models only)')
    """
    base = getattr(target, "base_model", None)
    if base is not None and all(hasattr(base, part) for part in DISTILLED_PARTS):
        return None
    return f"{type(target).__name__} has no `layers`/`norm` to copy into a distilled draft (Llama-style models only)"


def build_draft(target: torch.nn.Module, vocab: np.ndarray, layers: int) -> torch.nn.Module:
    """The target's architecture cut to ``layers`` layers and ``len(vocab)`` tokens, initialised from it."""
    from transformers import AutoModelForCausalLM

    cfg = target.config.__class__.from_dict(target.config.to_dict())
    cfg.num_hidden_layers = layers
    cfg.vocab_size = len(vocab)
    cfg.tie_word_embeddings = True
    draft = AutoModelForCausalLM.from_config(cfg).to(next(target.parameters()).device, torch.float32)
    refusal = distill_refusal(target) or distill_refusal(draft)
    if refusal:
        raise ConfigError(f"draft distillation: {refusal}")
    src, dst = target.get_input_embeddings().weight, draft.get_input_embeddings().weight
    with torch.no_grad():
        dst[1:] = src[torch.as_tensor(vocab[1:], device=src.device)].float()
        dst[0] = src.float().mean(0)
        t_layers, d_layers = target.base_model.layers, draft.base_model.layers
        for i in range(layers):
            d_layers[i].load_state_dict({k: v.float() for k, v in t_layers[i].state_dict().items()})
        draft.base_model.norm.load_state_dict(target.base_model.norm.state_dict())
    draft.tie_weights()
    return draft


def _batches(seqs: list[LabelledSequence], to_draft: np.ndarray, cfg: DistillConfig, epoch: int | None):
    """Padded (ids, labels, lengths) batches; shuffled per epoch, in order for ``epoch=None``."""
    order = np.arange(len(seqs)) if epoch is None else np.random.default_rng(cfg.seed + epoch).permutation(len(seqs))
    for b in range(0, len(order), cfg.batch_size):
        group = [seqs[i] for i in order[b : b + cfg.batch_size]]
        width = max(len(s.ids) for s in group)
        ids = np.zeros((len(group), width), dtype=np.int64)
        lab = np.full((len(group), width), -100, dtype=np.int64)
        for r, s in enumerate(group):
            ids[r, : len(s.ids)] = to_draft[s.ids]
            mapped = np.array([to_draft[x] if x >= 0 else -100 for x in s.labels])
            mapped[mapped == 0] = -100  # labels outside the draft vocabulary teach nothing
            lab[r, : len(s.ids)] = mapped
        yield torch.from_numpy(ids), torch.from_numpy(lab), torch.tensor([len(s.ids) for s in group])


def _loss(draft: torch.nn.Module, ids: torch.Tensor, lab: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, int, int]:
    dev = next(draft.parameters()).device
    mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).long()
    logits = draft(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits  # [B, S, v]
    lab = lab.to(dev)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1), ignore_index=-100)
    valid = lab != -100
    hits = int((logits.argmax(-1) == lab)[valid].sum())
    return loss, hits, int(valid.sum())


def heldout_agreement(draft: torch.nn.Module, seqs: list[LabelledSequence], to_draft: np.ndarray, cfg: DistillConfig) -> dict[str, float]:
    """Top-1 agreement with the target's greedy token: over in-vocabulary labels and over all labels."""
    hits = n_in = n_all = 0
    with torch.inference_mode():
        for ids, lab, lengths in _batches(seqs, to_draft, cfg, epoch=None):
            _, h, n = _loss(draft, ids, lab, lengths)
            hits, n_in = hits + h, n_in + n
    n_all = sum(sum(1 for x in s.labels if x >= 0) for s in seqs)
    return {"top1_in_vocab": round(hits / max(n_in, 1), 4), "top1_all": round(hits / max(n_all, 1), 4),
            "heldout_labels": n_all}


@trainable
def distill_draft(target: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, out: Path,
                  cfg: DistillConfig, model_id: str = "", progress: bool = True,
                  features: FeatureOptions = FeatureOptions(), recipe: str = "custom") -> dict[str, Any]:
    """Read labels, choose the vocabulary, train the draft (resuming after its last finished epoch) and save
    it in ``out``; returns the metrics."""
    from tqdm import tqdm

    from specbench.models.loading import stop_token_ids

    cfg.validate()
    t0 = time.perf_counter()
    train, held, store = collect_labels(target, tokenizer, corpora, data_dir, cfg, progress, model_id, features)
    t_collect = time.perf_counter() - t0
    vocab = choose_vocab(train, cfg.vocab, stop_token_ids(tokenizer, target))
    to_draft = draft_ids(vocab, int(target.config.vocab_size))
    torch.manual_seed(cfg.seed)
    draft = build_draft(target, vocab, cfg.layers)
    draft.train()
    opt = torch.optim.AdamW(draft.parameters(), lr=cfg.lr, weight_decay=0.0)
    per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    warm = max(1, int(cfg.warmup * total))
    state = EpochState(out, {"train": dataclasses.asdict(cfg), "features": store.key})
    first_epoch, step = state.restore({"draft": draft}, opt)
    bar = tqdm(total=total, initial=step, desc="draft: train", unit="step", disable=not progress)
    for epoch in range(first_epoch, cfg.epochs):
        for ids, lab, lengths in _batches(train, to_draft, cfg, epoch):
            lr = cfg.lr * (step + 1) / warm if step < warm else cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))
            for g in opt.param_groups:
                g["lr"] = lr
            loss, _, _ = _loss(draft, ids, lab, lengths)
            optimizer_step(opt, loss, bar, clip=1.0)
            step += 1
        state.save(epoch + 1, step, {"draft": draft}, opt, last=epoch + 1 == cfg.epochs)
    bar.close()
    draft.eval()
    metrics = heldout_agreement(draft, held, to_draft, cfg) if held else {}
    metrics.update(collect_s=round(t_collect, 1), train_s=round(state.elapsed_s(), 1), steps=total,
                   train_sequences=len(train), heldout_sequences=len(held),
                   parameters=sum(p.numel() for p in draft.parameters()))
    state.clear()  # before the folder's files are hashed
    save_draft(draft, vocab, out, {"model_id": model_id, "corpora": list(corpora), "recipe": dataclasses.asdict(cfg),
                                   "recipe_name": recipe, "features": store.describe(), "metrics": metrics})
    print(f"[draft] distilled draft: held-out top-1 agreement with the target {metrics.get('top1_all')} "
          f"(in-vocabulary labels {metrics.get('top1_in_vocab')}); -> {out}", file=sys.stderr)
    return metrics


def distilled_dir(env: Any, recipe: DistillConfig, name: str = "quick") -> Path:
    """The cache folder of the target's distilled draft, keyed by model, corpora and recipe (``quick``:
    ``<cache>/sps/distilled-<hash>`` as before recipes had names; else ``distilled-<name>-<hash>``, the name in the
    key). ``sps`` trains it there on first use; PARD adapts the same one."""
    fields: dict[str, Any] = {"model": env.model_id, "corpora": DEFAULT_CORPORA, "recipe": dataclasses.asdict(recipe)}
    if name != "quick":
        fields["recipe_name"] = name
    return keyed_dir(env, "sps", "distilled" if name == "quick" else f"distilled-{name}", fields)


def distilled_draft_folder(env: Any, name: str = "quick") -> Path:
    """The folder of the target's distilled draft of recipe ``name`` (``DISTILL_RECIPES``), trained there on first
    use: ``sps``'s default draft, and, written as a GGUF, ``engine:draft``'s."""
    from specbench.training.checkpoints import load_or_train
    from specbench.training.recipes import eta_minutes

    recipe = DISTILL_RECIPES[name]
    features = FeatureOptions(root=Path(env.cache_dir) / "features")
    return load_or_train(None, env, option="sps.draft_model", what="draft (distilled from the target)",
                         done=DISTILL_META_FILE, recipe=name,
                         minutes=eta_minutes(recipe.tokens, recipe.epochs, DISTILL_S_PER_POSITION),
                         default=lambda: distilled_dir(env, recipe, name),
                         train=lambda out: distill_draft(env.model, env.tokenizer, DEFAULT_CORPORA, env.data_dir, out,
                                                         recipe, env.model_id, features=features, recipe=name))


def save_draft(draft: torch.nn.Module, vocab: np.ndarray, out: Path, meta: dict[str, Any]) -> None:
    """Write the folder atomically enough: the metadata file, written last, marks it complete."""
    out.mkdir(parents=True, exist_ok=True)
    draft.save_pretrained(out)
    np.save(out / DISTILL_VOCAB_FILE, vocab)
    hashes = {f.name: file_sha256(f) for f in (*sorted(out.glob("*.safetensors")), out / DISTILL_VOCAB_FILE)}
    (out / DISTILL_META_FILE).write_text(json.dumps({**meta, "files_sha256": hashes}, indent=1), encoding="utf-8")


def load_distilled(out: Path, device: torch.device, dtype: torch.dtype) -> tuple[torch.nn.Module, np.ndarray] | None:
    """(draft model, draft id -> target id) from a complete folder, else None."""
    from transformers import AutoModelForCausalLM

    if not (out / DISTILL_META_FILE).is_file():
        return None
    with checkpoint_errors("sps", out, f"delete {out} to distill it again"):
        meta = read_config(out, "sps", "a distilled draft", DISTILL_META_FILE)
        for name, expected in (meta.get("files_sha256") or {}).items():  # drafts distilled before it: nothing to check
            verify_checkpoint(out / name, expected, "sps", f"{DISTILL_META_FILE}'s files_sha256")
        vocab = np.load(out / DISTILL_VOCAB_FILE, allow_pickle=False)
        draft = AutoModelForCausalLM.from_pretrained(str(out), dtype=dtype).to(device).eval()
    return draft, vocab
