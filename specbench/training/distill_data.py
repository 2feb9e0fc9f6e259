"""Self-distillation data shared by the trained drafters: what a trainer reads from the feature store
(``feature_store.py``: one teacher-forced pass of the frozen target over chat-formatted corpus sequences).

Per response position the trainer gets the target's final-norm hidden state (fp16), the token id and the
target's argmax (what it would emit next); a drafter that reads intermediate layers (EAGLE-3) also asks
for those layers' states (``layers``, indices as the engine's ``TargetModel``: 0 the embeddings, ``i`` the
input of decoder layer ``i``), kept as ``layer_states [N, len(layers), h]``. A training example is a
position t whose window t+1 .. t+n+1 stays in the same sequence: context = hidden[t], inputs = tokens[t+1 .. t+n],
labels = argmax[t+1 .. t+n] (distillation) or tokens[t+2 .. t+n+1] (ground truth).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch


# the corpora trained drafters learn from by default: chat, code and math answers in the benchmark's format
DEFAULT_CORPORA = ("sharegpt", "code_alpaca", "gsm8k_train")


@dataclass
class DistillData:
    """Flat per-token arrays over all sequences plus the valid example starts (train / held-out)."""

    hidden: torch.Tensor  # [N, h] fp16
    tokens: torch.Tensor  # [N] long
    argmax: torch.Tensor  # [N] long
    train_starts: torch.Tensor  # [M] long
    heldout_starts: torch.Tensor  # [K] long
    layer_states: torch.Tensor | None = None  # [N, len(layers), h] fp16, only when collected with ``layers``

    def batch(self, starts: torch.Tensor, n_predict: int, labels: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(context [B, h] fp32, inputs [B, n], labels [B, n]) for example starts ``[B]``."""
        off = torch.arange(1, n_predict + 1)
        idx = starts.unsqueeze(1) + off  # [B, n] positions t+1 .. t+n
        lab = self.argmax[idx] if labels == "target" else self.tokens[idx + 1]
        return self.hidden[starts].float(), self.tokens[idx], lab


def sequence_ids(tokenizer: Any, prompt: str, response: str, max_len: int) -> tuple[list[int], int]:
    """(token ids, first position whose next-token prediction is in the response).

    Chat corpora: the chat-templated prompt (as at benchmark time) + response + end of turn.
    Plain text (empty prompt): the tokenised text.
    """
    from specbench.prompts.task import encode_prompt

    if prompt:
        ids = encode_prompt(tokenizer, [{"role": "user", "content": prompt}])
        start = len(ids) - 1
        resp = list(tokenizer(response, add_special_tokens=False)["input_ids"])
        eot = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else tokenizer.eos_token_id
        ids = ids + resp + ([int(eot)] if eot is not None else [])
    else:
        ids, start = list(tokenizer(response)["input_ids"]), 0
    if start >= max_len - 4:  # prompt alone fills the window: keep its tail
        cut = start - max_len // 2
        ids, start = ids[cut:], start - cut
    return ids[:max_len], start


def interleave(corpora: Sequence[str], data_dir: Path | None) -> Iterator[tuple[str, str]]:
    """Round-robin (prompt, response) pairs over several corpora until all are exhausted."""
    from specbench.datastore.corpora import iter_pairs

    its = [iter(iter_pairs(name, data_dir)) for name in corpora]
    for group in itertools.zip_longest(*its):
        for pair in group:
            if pair is not None:
                yield pair
