"""Registration of ``redrafter`` (``build_redrafter``), its default head's cache folder (``default_checkpoint_dir``,
by the core's ``keyed_dir`` rule) and the first-use training that fills it; the package's ``__init__`` imports it.

Example: ``--methods redrafter`` with no checkpoint -> the quick recipe's head in
``<cache>/redrafter/default-<key>``, trained on first use (``_train_default``), then loaded and shared.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from specbench_methods.redrafter.config import ReDrafterConfig
from specbench_methods.redrafter.drafter import ReDrafter
from specbench_methods.redrafter.head import DraftHead
from specbench_methods.redrafter.vocab import COUNTS, DATA
from specbench.api import (FeatureOptions, MethodEnv, PendingBuild, draft_dtype, keyed_dir, load_or_train,
                           pack_for_inference, recipe_prefix, register_first_use_build, register_method,
                           stop_token_ids)

if TYPE_CHECKING:
    from specbench_methods.redrafter.train import TrainConfig


def default_train_config(config: ReDrafterConfig) -> "TrainConfig":
    """The ``TrainConfig`` of the default head: the recipe's budget and the head options."""
    from specbench_methods.redrafter.train import TrainConfig

    tokens, epochs = config.train_budget()
    return TrainConfig(tokens=tokens, epochs=epochs, n_predict=config.n_predict, proj=config.proj, num_blocks=config.num_blocks)


def default_checkpoint_dir(env: MethodEnv, config: ReDrafterConfig) -> Path:
    """Cache location of the auto-trained default head for this target, its dtype and training recipe.

    Every option that changes the head goes into the key through the ``TrainConfig``. The target's
    dtype enters the key only when it is not float32, so the float32 heads cached before it did keep
    their keys (they were all trained on float32 targets).
    """
    emb = env.model.get_input_embeddings().weight
    tcfg = default_train_config(config)
    recipe = {"model": env.model_id, "shape": list(emb.shape), "corpus": config.default_corpus,
              "tokens": tcfg.tokens, "train": dataclasses.asdict(tcfg)}
    dtype = next(env.model.parameters()).dtype
    if dtype != torch.float32:  # hidden states of another precision: another head
        recipe["dtype"] = str(dtype)
    return keyed_dir(env, "redrafter", recipe_prefix(config.recipe), recipe)


def _train_default(env: MethodEnv, config: ReDrafterConfig, out: Path) -> None:
    from specbench_methods.redrafter.train import train_redrafter

    tcfg = default_train_config(config)
    print(
        f"[specbench] redrafter: no checkpoint given; training a default head once on {config.default_corpus} "
        f"({tcfg.tokens} tokens, {tcfg.epochs} epoch(s), recipe {config.recipe}; roughly {tcfg.eta_minutes():.0f} min "
        f"on 2 CPU cores{'; interrupted, it resumes where it stopped' if config.recipe != 'quick' else ''}) -> {out}\n"
        f"[specbench] (train your own with `specbench train redrafter ...` and pass --method-opt redrafter.checkpoint=DIR)",
        file=sys.stderr,
    )
    t = time.perf_counter()
    train_redrafter(env.model, env.tokenizer, config.default_corpus.split(","), env.data_dir, out, tcfg, model_id=env.model_id,
                    features=FeatureOptions(root=Path(env.cache_dir) / "features"), recipe=config.recipe)
    print(f"[specbench] redrafter: default head trained in {(time.perf_counter() - t) / 60:.1f} min", file=sys.stderr)


@register_method("redrafter", ReDrafterConfig)
def build_redrafter(config: ReDrafterConfig, env: MethodEnv) -> ReDrafter:
    """ReDrafter: recurrent draft head + beam search, beams deduplicated into one verified tree."""
    from specbench_methods.redrafter.checkpoint import checkpoint_hash, load_checkpoint
    from specbench_methods.redrafter.head import build_head, head_config_for
    from specbench_methods.redrafter.shared import shared_head

    info = {"beam_width": config.beam_width, "beam_length": config.beam_length, "top_k": config.top_k}
    if config.checkpoint == "random":
        head_cfg = head_config_for(env.model, config.proj, config.num_blocks)

        def random_head() -> DraftHead:
            param = next(env.model.parameters())
            head = build_head(head_cfg).to(device=param.device, dtype=param.dtype)
            head.init_from_target(env.model.get_output_embeddings().weight)
            return head.attach(env.model.get_input_embeddings().weight).eval()

        key: tuple = ("random", head_cfg)
        head = shared_head(env.model, key, random_head)
        env.artifacts.update(info, checkpoint="random")
        env.declare_overhead(parameters=head_parameters(head))
        return _drafter(head, key, None, config, env)
    ckpt = load_or_train(config.checkpoint, env, option="redrafter.checkpoint", what="head", done="head.safetensors",
                         default=lambda: default_checkpoint_dir(env, config), announce=False,
                         train=lambda out: _train_default(env, config, out))
    digest = checkpoint_hash(ckpt)
    key = (str(ckpt.resolve()), digest)
    head, meta = shared_head(env.model, key, lambda: load_checkpoint(ckpt, env.model))
    env.artifacts.update(info, checkpoint=str(ckpt), checkpoint_sha256=digest, head=meta["head"],
                         heldout_accuracy=meta.get("metrics", {}).get("heldout_top1"),
                         recipe=config.recipe if config.checkpoint in (None, "default") else meta.get("recipe"))
    env.declare_overhead(storage_bytes=(ckpt / "head.safetensors").stat().st_size, parameters=head_parameters(head))
    return _drafter(head, key, ckpt, config, env)


@register_first_use_build("redrafter")
def redrafter_first_use(config: ReDrafterConfig, env: MethodEnv) -> PendingBuild | None:
    """The default head ``build_redrafter`` would train now (None: trained, or a checkpoint is given), with
    its recipe's own estimate (``TrainConfig.eta_minutes``)."""
    if config.checkpoint not in (None, "default"):
        return None
    path = default_checkpoint_dir(env, config)
    if (path / "head.safetensors").is_file():
        return None
    return PendingBuild(f"train redrafter's {config.recipe} recipe", default_train_config(config).eta_minutes() * 60,
                        str(path))


def _drafter(head: DraftHead, key: tuple, ckpt: Path | None, config: ReDrafterConfig, env: MethodEnv) -> ReDrafter:
    """The drafter over the drafting copy of ``head``: ``config.draft_vocab`` rows, ``config.dtype`` weights.

    ``draft_vocab=0`` in the head's own dtype drafts with the loaded head itself (the behaviour before the
    option). The copy is shared like the head, keyed by the head and both options.
    """
    from specbench_methods.redrafter.head import drafting_head
    from specbench_methods.redrafter.shared import shared_head
    from specbench_methods.redrafter.vocab import choose_draft_vocab, token_counts

    dtype = draft_dtype(config.dtype, env.model)
    vocab_size = head.config.vocab_size

    def build() -> tuple[DraftHead, torch.Tensor | None, bool]:
        ids = None
        if 0 < config.draft_vocab < vocab_size:
            keep = stop_token_ids(env.tokenizer, env.model) if env.tokenizer is not None else set()
            ids = choose_draft_vocab(token_counts(ckpt, vocab_size), config.draft_vocab, keep, vocab_size)
            ids = ids.to(head.lm_head.weight.device)
        draft = head if ids is None and dtype == head.lm_head.weight.dtype else drafting_head(head, ids, dtype)
        return draft, ids, pack_for_inference(draft)

    draft, ids, packed = shared_head(env.model, (*key, config.draft_vocab, str(dtype)), build)
    has_data = ckpt is not None and ((ckpt / COUNTS).is_file() or (ckpt / DATA).is_file())
    env.artifacts.update(packed=packed, draft_dtype=str(dtype).removeprefix("torch."),
                         draft_vocab=None if ids is None else len(ids),
                         draft_vocab_source=None if ids is None else ("checkpoint data" if has_data else "token id order"))
    return ReDrafter(draft, config, ids)


def head_parameters(head: torch.nn.Module) -> int:
    """Parameters the head adds (the borrowed target embedding is a buffer, not counted)."""
    return sum(p.numel() for p in head.parameters())
