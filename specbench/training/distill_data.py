"""Self-distillation data shared by the trained drafters (ReDrafter's head, Medusa's heads, the SpS draft):
one teacher-forced pass of the frozen target over chat-formatted corpus sequences.

Per token position we keep the target's final-norm hidden state (fp16), the token id and the target's
argmax (what it would emit next); a drafter that reads intermediate layers (EAGLE-3) also asks for those
layers' states (``layers``, indices as the engine's ``TargetModel``: 0 the embeddings, ``i`` the input of
decoder layer ``i``), kept as ``layer_states [N, len(layers), h]``. Without ``layers`` nothing changes,
so the data cached by the other drafters stays valid. A training example is a position t whose window t+1 .. t+n+1 stays
in the same sequence: context = hidden[t], inputs = tokens[t+1 .. t+n], labels = argmax[t+1 .. t+n]
(distillation) or tokens[t+2 .. t+n+1] (ground truth).
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from specbench.files.jsonfile import strict_json

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

    def save(self, out_dir: Path, meta: dict[str, Any]) -> None:
        from safetensors.torch import save_file

        names = ("hidden", "tokens", "argmax", "train_starts", "heldout_starts", "layer_states")
        tensors = {k: getattr(self, k).contiguous() for k in names if getattr(self, k) is not None}
        save_file(tensors, str(out_dir / "data.safetensors.tmp"))
        (out_dir / "data.safetensors.tmp").replace(out_dir / "data.safetensors")
        (out_dir / "data.json").write_text(strict_json(meta, indent=1), encoding="utf-8")

    @staticmethod
    def load(out_dir: Path, meta: dict[str, Any]) -> "DistillData | None":
        """The cached data when it was collected with the same ``meta``, else None."""
        from safetensors.torch import load_file

        if not (out_dir / "data.json").is_file() or not (out_dir / "data.safetensors").is_file():
            return None
        if json.loads((out_dir / "data.json").read_text()) != meta:
            return None
        return DistillData(**load_file(str(out_dir / "data.safetensors")))


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


@torch.inference_mode()
def collect(model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, tokens: int,
            n_predict: int, max_seq_len: int, heldout_every: int = 20, progress: bool = True,
            desc: str = "target forward", layers: Sequence[int] = ()) -> DistillData:
    """Run the frozen target over sequences until ``tokens`` example positions are collected.

    Every ``heldout_every``-th sequence is held out (whole sequences, so no leakage of neighbours).
    ``layers``: also keep these hidden states (``DistillData.layer_states``).
    """
    from tqdm import tqdm

    base, head = model.base_model, model.get_output_embeddings()
    device = next(model.parameters()).device
    hid, tok, arg, train, held, lay = [], [], [], [], [], []
    n_flat = n_got = 0
    bar = tqdm(total=tokens, desc=desc, unit="tok", disable=not progress)
    for seq_no, (prompt, response) in enumerate(interleave(corpora, data_dir)):
        ids, start = sequence_ids(tokenizer, prompt, response, max_seq_len)
        last = len(ids) - n_predict - 2  # last start t with t + n + 1 inside the sequence
        if last < start:
            continue
        x = torch.tensor([ids], device=device)
        out = base(input_ids=x, output_hidden_states=True) if layers else base(input_ids=x)
        h = out.last_hidden_state[0]  # [S, h] final-norm hidden states
        hid.append(h.to(torch.float16).cpu())
        if layers:
            lay.append(torch.stack([out.hidden_states[i][0] for i in layers], 1).to(torch.float16).cpu())  # [S, m, h]
        tok.append(x[0].cpu())
        am = torch.zeros(len(ids), dtype=torch.long)
        am[start:] = head(h[start:]).argmax(-1).cpu()  # labels are only read at positions > start
        arg.append(am)
        starts = torch.arange(start, last + 1) + n_flat
        (held if seq_no % heldout_every == heldout_every - 1 else train).append(starts)
        n_flat += len(ids)
        n_got += len(starts)
        bar.update(len(starts))
        if n_got >= tokens:
            break
    bar.close()
    if not train:
        raise ValueError(f"corpus {','.join(corpora)} gave no usable sequences")
    cat = torch.cat
    return DistillData(cat(hid), cat(tok).long(), cat(arg).long(), cat(train).long(),
                       cat(held).long() if held else torch.zeros(0, dtype=torch.long), cat(lay) if lay else None)


def collect_cached(out_dir: Path, model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None,
                   tokens: int, n_predict: int, max_seq_len: int, heldout_every: int = 20, progress: bool = True,
                   desc: str = "target forward", model_id: str = "", layers: Sequence[int] = ()) -> DistillData:
    """``collect`` once per trainer output folder: the finished collection is saved in ``out_dir`` and
    reused, so a training interrupted after the (long) target pass resumes from its data. ``layers`` is
    recorded only when given, so the folders of drafters that read no intermediate layer keep their key."""
    meta: dict[str, Any] = {"model_id": model_id, "corpora": list(corpora), "tokens": tokens, "max_seq_len": max_seq_len,
                            "n_predict": n_predict, "heldout_every": heldout_every}
    if layers:
        meta["layers"] = [int(i) for i in layers]
    out_dir.mkdir(parents=True, exist_ok=True)
    data = DistillData.load(out_dir, meta)
    if data is None:
        data = collect(model, tokenizer, corpora, data_dir, tokens, n_predict, max_seq_len, heldout_every, progress, desc,
                       layers)
        data.save(out_dir, meta)
    return data
