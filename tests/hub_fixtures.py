"""Offline stand-ins for the Hugging Face hub: a hub cache built in a folder (the hub's own layout), a tiny
Vicuna-like target without a chat template, and tiny drafters in their references' file layouts.

Layout of a cache entry, as ``huggingface_hub`` writes it::

    models--ORG--NAME/blobs/<sha256 of the file>
    models--ORG--NAME/snapshots/<40-hex commit>/<file>  -> ../../blobs/<sha256>
    models--ORG--NAME/refs/main                          (the commit)
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

CHARS = " etaoinshrdlcumwfgypbvkjxqz0123456789.,:;!?'\"()[]{}=+-*/<>_#%&\n"


def publish(cache: Path, repo_id: str, folder: Path) -> str:
    """Put every file of ``folder`` into ``cache`` as hub repository ``repo_id``; returns its commit hash."""
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = f.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / f.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return commit


def vicuna_like_tokenizer():
    """A character tokenizer with Llama's habits: ``<s>`` prepended to every text, ``</s>`` as end of
    sequence, and no chat template (as Vicuna's)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{c: i + 3 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = None
    return fast


def tiny_vicuna(out: Path, seed: int = 0) -> Path:
    """A 2-layer random Llama over ``vicuna_like_tokenizer``, saved with it (no chat template) in ``out``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = vicuna_like_tokenizer()
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=1, eos_token_id=2, pad_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def eagle_reference_checkpoint(target: torch.nn.Module, out: Path) -> Path:
    """An untrained EAGLE-1/2 draft layer as the reference publishes it: a Llama ``config.json`` and
    ``pytorch_model.bin`` with the reference's parameter names (read only with ``weights_only=True``)."""
    from specbench_methods.eagle.layer import EagleLayer, LayerShape

    torch.manual_seed(1)
    layer = EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings())
    state = {k: v.clone() for k, v in layer.state_dict().items()}
    state["embed_tokens.weight"] = target.get_input_embeddings().weight.detach().clone()
    out.mkdir(parents=True, exist_ok=True)
    torch.save(state, out / "pytorch_model.bin")
    c = target.config
    (out / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": c.hidden_size, "num_attention_heads": c.num_attention_heads,
        "num_key_value_heads": c.num_key_value_heads, "intermediate_size": c.intermediate_size,
        "rms_norm_eps": c.rms_norm_eps, "vocab_size": c.vocab_size, "max_position_embeddings": c.max_position_embeddings}))
    return out


def medusa_reference_checkpoint(target: torch.nn.Module, out: Path, heads: int = 3) -> Path:
    """Untrained Medusa heads as FasterDecoding publishes them: ``medusa_lm_head.safetensors`` (per head a
    residual block ``{k}.0.linear`` and its own head ``{k}.1``) and ``config.json``'s ``medusa_num_heads``."""
    from safetensors.torch import save_file

    h, v = target.config.hidden_size, target.config.vocab_size
    torch.manual_seed(2)
    state = {}
    for k in range(heads):
        state[f"{k}.0.linear.weight"] = torch.zeros(h, h)
        state[f"{k}.0.linear.bias"] = torch.zeros(h)
        state[f"{k}.1.weight"] = target.get_output_embeddings().weight.detach().clone()
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "medusa_lm_head.safetensors"))
    (out / "config.json").write_text(json.dumps({"medusa_num_heads": heads, "medusa_num_layers": 1,
                                                 "base_model_name_or_path": "lmsys/vicuna-tiny-v1.3"}))
    return out


def hydra_reference_checkpoint(target: torch.nn.Module, out: Path, arch: str = "prefix-mlp", heads: int = 3,
                               layers: int = 2) -> Path:
    """Random Hydra heads as zankner/Hydra publishes them (``ankner/hydra-vicuna-7b-v1.3``): ``hydra_lm_head.pt``
    holding the head module's state dict under the reference's names (``hydra_mlp.{k}.{j}.linear|res_connection``,
    the blocks after the first repeated copies of one block; ``hydra_lm_head.{k}[.1]``; Hydra++'s
    ``prefix_embeding_layer.*``: a one-layer Llama, its unused ``embed_tokens`` included) and ``config.json``'s
    ``hydra_*`` keys. Weights are random (not zero) so a wrong name or order changes the heads' output."""
    from transformers import LlamaConfig, LlamaModel

    c = target.config
    h, v = int(c.hidden_size), int(c.vocab_size)
    g = torch.Generator().manual_seed(3)

    def rnd(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * 0.2).to(torch.float16)  # published heads are fp16

    state: dict[str, torch.Tensor] = {}
    first = 1 if arch == "prefix-mlp" else 0  # Hydra++ puts a Dropout before every block: blocks at odd indices
    step = 2 if arch == "prefix-mlp" else 1
    for k in range(heads):
        state[f"hydra_mlp.{k}.{first}.linear.weight"] = rnd(h, (k + 2) * h)
        state[f"hydra_mlp.{k}.{first}.linear.bias"] = rnd(h)
        state[f"hydra_mlp.{k}.{first}.res_connection.weight"] = rnd(h, (k + 2) * h)
        state[f"hydra_mlp.{k}.{first}.res_connection.bias"] = rnd(h)
        block_w, block_b = rnd(h, h), rnd(h)
        for j in range(1, layers):  # one module repeated: the same values under every index
            state[f"hydra_mlp.{k}.{first + j * step}.linear.weight"] = block_w.clone()
            state[f"hydra_mlp.{k}.{first + j * step}.linear.bias"] = block_b.clone()
        lm = f"hydra_lm_head.{k}.1" if arch == "prefix-mlp" else f"hydra_lm_head.{k}"
        state[f"{lm}.weight"] = (target.get_output_embeddings().weight.detach() + rnd(v, h).float()).to(torch.float16)
        state[f"{lm}.bias"] = rnd(v)
    if arch == "prefix-mlp":
        torch.manual_seed(4)
        prefix = LlamaModel(LlamaConfig(vocab_size=v, hidden_size=h, intermediate_size=c.intermediate_size,
                                        num_hidden_layers=1, num_attention_heads=c.num_attention_heads,
                                        num_key_value_heads=c.num_key_value_heads, rms_norm_eps=c.rms_norm_eps,
                                        max_position_embeddings=c.max_position_embeddings))
        for name, value in prefix.state_dict().items():
            state[f"prefix_embeding_layer.{name}"] = value.detach().to(torch.float16)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(state, out / "hydra_lm_head.pt")
    (out / "config.json").write_text(json.dumps({
        "base_model_name_or_path": "lmsys/vicuna-tiny-v1.3", "grounded_heads": True, "hidden_state_offset": 0,
        "hydra_head_arch": arch, "hydra_num_heads": heads, "hydra_num_layers": layers, "transformers_version": "4.33.2"}))
    return out


def eagle3_reference_checkpoint(target: torch.nn.Module, out: Path, draft_vocab: int = 16) -> Path:
    """An untrained EAGLE-3 draft as the reference publishes it (``yuhuili/EAGLE3-*``): a Llama ``config.json``
    with ``draft_vocab_size`` and ``pytorch_model.bin`` in fp16 with the reference's names (``fc``, ``midlayer.*``,
    ``norm``, ``lm_head``) and its vocabulary maps (``d2t`` offsets, ``t2d`` mask), no embedding. Written
    here from the reference's shapes, not by specbench's own saver."""
    c = target.config
    h, heads, kv, inter, vocab = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size, c.vocab_size
    d = h // heads
    g = torch.Generator().manual_seed(3)

    def rand(*shape: int) -> torch.Tensor:
        return (0.2 * torch.randn(*shape, generator=g)).half()

    kept = torch.sort(torch.randperm(vocab, generator=g)[:draft_vocab]).values
    state = {"fc.weight": rand(h, 3 * h), "norm.weight": torch.ones(h).half(), "lm_head.weight": rand(draft_vocab, h),
             "midlayer.hidden_norm.weight": torch.ones(h).half(), "midlayer.input_layernorm.weight": torch.ones(h).half(),
             "midlayer.post_attention_layernorm.weight": torch.ones(h).half(),
             "midlayer.self_attn.q_proj.weight": rand(heads * d, 2 * h), "midlayer.self_attn.k_proj.weight": rand(kv * d, 2 * h),
             "midlayer.self_attn.v_proj.weight": rand(kv * d, 2 * h), "midlayer.self_attn.o_proj.weight": rand(h, heads * d),
             "midlayer.mlp.gate_proj.weight": rand(inter, h), "midlayer.mlp.up_proj.weight": rand(inter, h),
             "midlayer.mlp.down_proj.weight": rand(h, inter),
             "d2t": kept - torch.arange(draft_vocab), "t2d": torch.zeros(vocab, dtype=torch.bool).index_fill(0, kept, True)}
    out.mkdir(parents=True, exist_ok=True)
    torch.save(state, out / "pytorch_model.bin")
    (out / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_act": "silu", "hidden_size": h,
        "intermediate_size": inter, "num_attention_heads": heads, "num_key_value_heads": kv, "num_hidden_layers": 1,
        "rms_norm_eps": c.rms_norm_eps, "max_position_embeddings": 2048, "pad_token_id": 0, "tie_word_embeddings": False,
        "torch_dtype": "float16", "vocab_size": vocab, "draft_vocab_size": draft_vocab}))
    return out


def tiny_family_dir(out: Path, family: str, seed: int = 0) -> Path:
    """A 2-layer random ``family`` model (``conftest.make_tiny_model``: llama, qwen2, gpt2, neox) over
    ``vicuna_like_tokenizer``, saved with it in ``out``; ``tiny_family_dir(out, "llama")`` is a Llama like
    ``tiny_vicuna``'s without its end-of-sequence id (every generation runs to its token limit)."""
    from conftest import make_tiny_model

    tok = vicuna_like_tokenizer()
    make_tiny_model(family, seed=seed, vocab=len(tok)).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def dflash_reference_checkpoint(target: torch.nn.Module, out: Path, layers: int = 2, block: int = 4) -> Path:
    """An untrained DFlash draft as z-lab publishes it (``z-lab/Qwen3-8B-DFlash-b16``): a Qwen3 ``config.json`` with
    ``block_size``, ``num_target_layers`` and ``dflash_config`` (``mask_token_id``, ``target_layer_ids``), and
    ``model.safetensors`` in bfloat16 with the reference's names (``layers.{i}.self_attn.q_norm``, ``fc``,
    ``hidden_norm``, ``norm``), no embedding or head. Written here from the reference's shapes, not by specbench's
    own saver; ``target_layer_ids`` are the reference's (the outputs of those target layers)."""
    from safetensors.torch import save_file

    c = target.config
    h, heads, kv, inter, vocab = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size, c.vocab_size
    d = h // heads
    g = torch.Generator().manual_seed(5)

    def rand(*shape: int) -> torch.Tensor:
        return (0.2 * torch.randn(*shape, generator=g)).to(torch.bfloat16)

    def ones(n: int) -> torch.Tensor:
        return torch.ones(n, dtype=torch.bfloat16)

    state = {"fc.weight": rand(h, layers * h), "hidden_norm.weight": ones(h), "norm.weight": ones(h)}
    for i in range(layers):
        p = f"layers.{i}."
        state |= {p + "self_attn.q_proj.weight": rand(heads * d, h), p + "self_attn.k_proj.weight": rand(kv * d, h),
                  p + "self_attn.v_proj.weight": rand(kv * d, h), p + "self_attn.o_proj.weight": rand(h, heads * d),
                  p + "self_attn.q_norm.weight": ones(d), p + "self_attn.k_norm.weight": ones(d),
                  p + "mlp.gate_proj.weight": rand(inter, h), p + "mlp.up_proj.weight": rand(inter, h),
                  p + "mlp.down_proj.weight": rand(h, inter), p + "input_layernorm.weight": ones(h),
                  p + "post_attention_layernorm.weight": ones(h)}
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps({
        "architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
        "model_type": "qwen3", "hidden_act": "silu", "hidden_size": h, "intermediate_size": inter, "head_dim": d,
        "num_attention_heads": heads, "num_key_value_heads": kv, "num_hidden_layers": layers, "attention_bias": False,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000, "rope_scaling": None, "max_position_embeddings": 40960,
        "layer_types": ["full_attention"] * layers, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vocab_size": vocab, "block_size": block, "num_target_layers": int(c.num_hidden_layers),
        "dflash_config": {"mask_token_id": vocab - 2, "target_layer_ids": [0] * layers}}))
    return out
