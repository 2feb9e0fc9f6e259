"""A new (untrained) EAGLE-3 draft sized for a target, as training starts from it and ``checkpoint=random`` uses it.

Sizes come from the target's config (the decoder layer is a Llama layer with the target's head layout and
RoPE). ``head_init="target"``: ``lm_head`` starts as the target's output-head rows of the draft vocabulary
and ``norm`` as the target's final RMSNorm weight (when it has one), so the untrained draft already scores
tokens the way the target's head would score its feature; ``"random"`` is the reference's fresh init.

Example: ``new_draft(smollm2, DraftVocab.from_ids(ids, 49152))`` -> an ``Eagle3Layer`` with ``fc`` 1728 -> 576
and an 8192-row head copied from the target's.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from specbench.api import LayerShape
from specbench_methods.eagle3.layer import Eagle3Layer
from specbench_methods.eagle3.vocab import DraftVocab


def new_draft(target: nn.Module, vocab: DraftVocab | None, head_init: str = "target") -> Eagle3Layer:
    """An untrained draft for ``target`` over ``vocab`` (None: the target's whole vocabulary)."""
    shape = dataclasses.replace(LayerShape.from_config(target.config), qkv_bias=False)  # the reference: no biases
    head = target.get_output_embeddings()
    vocab_size = int(head.weight.shape[0])
    draft_vocab = vocab_size if vocab is None else vocab.size
    layer = Eagle3Layer(shape, shape.hidden, vocab_size, draft_vocab, target.get_input_embeddings())
    layer = layer.to(head.weight.device)
    if vocab is not None:
        layer.d2t.copy_(vocab.d2t())
        layer.t2d.copy_(vocab.mask())
    if head_init == "target":
        with torch.no_grad():
            rows = head.weight.detach().float()
            layer.lm_head.weight.copy_(rows if vocab is None else rows[vocab.ids.to(rows.device)])
            norm = getattr(target.base_model, "norm", None)
            weight = getattr(norm, "weight", None)
            if weight is not None and getattr(norm, "bias", None) is None and weight.shape == (shape.hidden,):
                layer.norm.weight.copy_(weight.detach().float())
    return layer
