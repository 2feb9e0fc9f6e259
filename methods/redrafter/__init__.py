"""``redrafter``: Recurrent Drafter (Apple, 2024): an RNN draft head on the target's last hidden state,
beam search, and dynamic tree attention over the deduplicated beams. See ``methods/redrafter/README.md``.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from methods.redrafter import train_cli  # noqa: F401  (registers `specbench train redrafter`)
from methods.redrafter.config import HeadConfig, ReDrafterConfig
from methods.redrafter.drafter import ReDrafter
from specbench.engine.packed_linear import pack_for_inference
from specbench.method_env import MethodEnv
from specbench.registry import register_method

__all__ = ["HeadConfig", "ReDrafterConfig", "ReDrafter", "build_redrafter", "default_checkpoint_dir"]


def default_checkpoint_dir(env: MethodEnv, config: ReDrafterConfig) -> Path:
    """Cache location of the auto-trained default head for this target and training recipe."""
    from methods.redrafter.train import TrainConfig

    emb = env.model.get_input_embeddings().weight
    recipe = {"model": env.model_id, "shape": list(emb.shape), "corpus": config.default_corpus,
              "tokens": config.default_tokens, "train": TrainConfig().__dict__}
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    return env.cache_dir / "redrafter" / f"default-{key}"


def _train_default(env: MethodEnv, config: ReDrafterConfig, out: Path) -> None:
    from methods.redrafter.train import TrainConfig, train_redrafter

    tcfg = TrainConfig(tokens=config.default_tokens)
    print(
        f"[specbench] redrafter: no checkpoint given; training a default head once on {config.default_corpus} "
        f"({config.default_tokens} tokens, 1 epoch; roughly {tcfg.eta_minutes():.0f} min on 2 CPU cores) -> {out}\n"
        f"[specbench] (train your own with `specbench train redrafter ...` and pass --method-opt redrafter.checkpoint=DIR)",
        file=sys.stderr,
    )
    t = time.perf_counter()
    train_redrafter(env.model, env.tokenizer, config.default_corpus.split(","), env.data_dir, out, tcfg, model_id=env.model_id)
    print(f"[specbench] redrafter: default head trained in {(time.perf_counter() - t) / 60:.1f} min", file=sys.stderr)


@register_method("redrafter", ReDrafterConfig)
def build_redrafter(config: ReDrafterConfig, env: MethodEnv) -> ReDrafter:
    """ReDrafter: recurrent draft head + beam search, beams deduplicated into one verified tree."""
    from methods.redrafter.checkpoint import checkpoint_hash, load_checkpoint
    from methods.redrafter.head import build_head, head_config_for
    from methods.redrafter.shared import shared_head

    info = {"beam_width": config.beam_width, "beam_length": config.beam_length}
    if config.checkpoint == "random":
        def random_head() -> tuple:
            param = next(env.model.parameters())
            head = build_head(head_config_for(env.model)).to(device=param.device, dtype=param.dtype)
            head.init_from_target(env.model.get_output_embeddings().weight)
            head.attach(env.model.get_input_embeddings().weight).eval()
            return head, pack_for_inference(head)

        head, packed = shared_head(env.model, "random", random_head)
        env.artifacts.update(info, checkpoint="random", packed=packed)
        env.declare_overhead(parameters=head_parameters(head))
        return ReDrafter(head, config)
    if config.checkpoint is None:
        ckpt = default_checkpoint_dir(env, config)
        if not (ckpt / "head.safetensors").is_file():
            _train_default(env, config, ckpt)
    else:
        ckpt = Path(config.checkpoint).expanduser()
    digest = checkpoint_hash(ckpt)

    def load() -> tuple:
        head, meta = load_checkpoint(ckpt, env.model)
        return head, meta, pack_for_inference(head)

    head, meta, packed = shared_head(env.model, (str(ckpt.resolve()), digest), load)
    env.artifacts.update(info, checkpoint=str(ckpt), checkpoint_sha256=digest, head=meta["head"],
                         heldout_accuracy=meta.get("metrics", {}).get("heldout_top1"), packed=packed)
    env.declare_overhead(storage_bytes=(ckpt / "head.safetensors").stat().st_size, parameters=head_parameters(head))
    return ReDrafter(head, config)


def head_parameters(head: torch.nn.Module) -> int:
    """Parameters the head adds (the borrowed target embedding is a buffer, not counted)."""
    return sum(p.numel() for p in head.parameters())
