"""In-distribution (ID) datastore text: the target's own greedy answers to corpus prompts.

Answers are generated in batches with ``model.generate`` (greedy, left padding) and appended to
``<dir>/id_answers.jsonl`` (one JSON line per prompt: prompt ids and answer ids), so an interrupted
build resumes. The datastore then indexes chat-template prompt ids + answer ids: exactly the kind of
context the target sees when it is benchmarked.
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

import torch

from specbench.api import strict_json


def _read_done(path: Path) -> tuple[int, int]:
    """(prompts done, tokens done) from an existing answers file; a torn last line is dropped."""
    n = tokens = 0
    good = 0
    if path.is_file():
        with path.open("rb") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    break
                n += 1
                tokens += len(rec["prompt_ids"]) + len(rec["answer_ids"])
                good += len(line)
        with path.open("r+b") as fh:
            fh.truncate(good)
    return n, tokens


@torch.inference_mode()
def generate_answers(
    model: Any,
    tokenizer: Any,
    prompts: Iterable[str],
    out_path: Path,
    stop_ids: set[int],
    max_tokens: int | None,
    answer_tokens: int = 256,
    max_prompt_tokens: int = 512,
    batch_size: int = 8,
    progress: bool = True,
) -> Path:
    """Greedy answers for ``prompts`` until prompt + answer tokens reach ``max_tokens``; resumable."""
    from tqdm import tqdm

    from specbench.api import encode_prompt

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    n_done, tok_done = _read_done(out_path)
    it: Iterator[str] = itertools.islice(iter(prompts), n_done, None)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(stop_ids)
    device = next(model.parameters()).device
    bar = tqdm(total=max_tokens, initial=tok_done, unit="tok", desc="ID answers", disable=not progress, file=sys.stderr)
    with out_path.open("a", encoding="utf-8") as fh:
        while max_tokens is None or tok_done < max_tokens:
            chunk = list(itertools.islice(it, batch_size))
            if not chunk:
                break
            enc = [encode_prompt(tokenizer, [{"role": "user", "content": p}]) for p in chunk]
            width = max(len(e) for e in enc)
            ids = torch.full((len(enc), width), pad, dtype=torch.long)  # [B, T] left-padded
            mask = torch.zeros_like(ids)
            for b, e in enumerate(enc):
                if len(e) <= max_prompt_tokens:
                    ids[b, width - len(e):] = torch.tensor(e)
                    mask[b, width - len(e):] = 1
            keep = [b for b, e in enumerate(enc) if len(e) <= max_prompt_tokens]
            answers: dict[int, list[int]] = {}
            if keep:
                out = model.generate(
                    input_ids=ids[keep].to(device), attention_mask=mask[keep].to(device), max_new_tokens=answer_tokens,
                    do_sample=False, eos_token_id=sorted(stop_ids), pad_token_id=pad,
                )
                for row, b in enumerate(keep):
                    ans = out[row, width:].tolist()
                    for j, t in enumerate(ans):
                        if t in stop_ids:
                            ans = ans[: j + 1]
                            break
                    answers[b] = ans
            for b, e in enumerate(enc):  # one line per prompt (skipped ones too) keeps resume counting exact
                ans = answers.get(b)
                rec = {"prompt_ids": e if ans is not None else [], "answer_ids": ans or []}
                fh.write(strict_json(rec) + "\n")
                tok_done += len(rec["prompt_ids"]) + len(rec["answer_ids"])
                bar.update(len(rec["prompt_ids"]) + len(rec["answer_ids"]))
            fh.flush()
    bar.close()
    return out_path


def read_answers(path: Path) -> Iterator[list[int]]:
    """Prompt + answer ids of each generated record (empty for skipped prompts)."""
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            yield rec["prompt_ids"] + rec["answer_ids"]
