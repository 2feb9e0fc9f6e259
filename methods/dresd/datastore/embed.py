"""Teacher-forced embedding of token sequences into resumable shards of (key, value) entries.

For a sequence ``ids`` of length n, entry i has key = the target's final-norm hidden state at
position i ([h]) and value = ``ids[i+1 : i+1+n_next]`` padded with EOS ([n_next]). Shards are
safetensors files under ``<dir>/shards``; ``progress.json`` records how many input items were
consumed, so an interrupted build resumes after the last complete shard.
"""
from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch

from specbench.api import ConfigError, strict_json


@dataclass(frozen=True)
class EmbedSettings:
    """How entries are made; a resumed build must use the same settings."""

    n_next: int = 20
    max_len: int = 1024
    batch_tokens: int = 4096  # padded tokens per forward batch
    shard_tokens: int = 32768  # entries per shard file (roughly)


def next_token_values(ids: list[int], n_next: int, eos_id: int) -> np.ndarray:
    """``values[i] = ids[i+1 : i+1+n_next]`` padded with ``eos_id`` -> int32 [len(ids), n_next].

    Example: ids ``[5, 6, 7]``, n_next 2, eos 0 -> ``[[6, 7], [7, 0], [0, 0]]``.
    """
    n = len(ids)
    padded = np.full(n + n_next, eos_id, dtype=np.int32)
    padded[1:n] = ids[1:]
    rows = np.arange(n)[:, None] + 1 + np.arange(n_next)[None, :]  # [n, n_next]
    return padded[rows]


@torch.inference_mode()
def embed_batch(model: Any, seqs: list[list[int]]) -> list[np.ndarray]:
    """One teacher-forced forward of the batch (right-padded) -> final-norm hidden states, [len_i, h] each."""
    device = next(model.parameters()).device
    width = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), width, dtype=torch.long)  # [B, T]
    mask = torch.zeros(len(seqs), width, dtype=torch.long)  # [B, T]
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s)
        mask[b, : len(s)] = 1
    kwargs = {"attention_mask": mask.to(device)} if len(seqs) > 1 else {}
    out = model.base_model(input_ids=ids.to(device), use_cache=False, **kwargs)
    hidden = out.last_hidden_state.float().cpu().numpy()  # [B, T, h]
    return [hidden[b, : len(s)] for b, s in enumerate(seqs)]


def _batches(seqs: list[list[int]], batch_tokens: int) -> Iterator[list[int]]:
    """Indices of ``seqs`` grouped by similar length so each padded batch stays under ``batch_tokens``."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) + 1) * len(seqs[i]) > batch_tokens:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class ShardStore:
    """The ``shards/`` directory of a build in progress: shard files plus ``progress.json``."""

    def __init__(self, root: Path, settings: dict[str, Any]) -> None:
        self.dir = Path(root) / "shards"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.progress_path = self.dir / "progress.json"
        self.settings = settings
        self.state = {"items_done": 0, "tokens_done": 0, "shards": [], "settings": settings}
        if self.progress_path.is_file():
            state = json.loads(self.progress_path.read_text())
            if state.get("settings") != settings:
                raise ConfigError(
                    f"{self.dir} holds a partial build with other settings ({state.get('settings')}); "
                    "delete that directory or choose another --out"
                )
            self.state = state

    @property
    def items_done(self) -> int:
        return int(self.state["items_done"])

    @property
    def tokens_done(self) -> int:
        return int(self.state["tokens_done"])

    def write(self, hidden: np.ndarray, values: np.ndarray, items: int) -> None:
        """Add one shard (atomically) covering ``items`` more input items."""
        from safetensors.numpy import save_file

        name = f"shard_{len(self.state['shards']):05d}.safetensors"
        tmp = self.dir / (name + ".tmp")
        save_file({"hidden": np.ascontiguousarray(hidden, np.float32), "values": np.ascontiguousarray(values, np.int32)}, str(tmp))
        tmp.replace(self.dir / name)
        self.state["shards"].append(name)
        self.state["items_done"] += items
        self.state["tokens_done"] += int(hidden.shape[0])
        ptmp = self.progress_path.with_suffix(".tmp")
        ptmp.write_text(strict_json(self.state, indent=1), encoding="utf-8")
        ptmp.replace(self.progress_path)

    def load_all(self) -> tuple[np.ndarray, np.ndarray]:
        """All entries: hidden [N, h] float32, values [N, n_next] int32."""
        from safetensors.numpy import load_file

        if not self.state["shards"]:
            raise ConfigError(f"{self.dir}: no entries were embedded (empty corpus or --max-tokens 0?)")
        parts = [load_file(str(self.dir / name)) for name in self.state["shards"]]
        return np.concatenate([p["hidden"] for p in parts]), np.concatenate([p["values"] for p in parts])


def embed_corpus(
    model: Any,
    items: Iterable[Any],
    encode: Callable[[Any], list[int]],
    store: ShardStore,
    eos_id: int,
    max_tokens: int | None,
    settings: EmbedSettings = EmbedSettings(),
    progress: bool = True,
) -> int:
    """Embed ``encode(item)`` sequences until ``max_tokens`` entries exist; resumes after ``store``'s shards.

    Returns the number of entries on disk. The last sequence is cut so the total is exactly ``max_tokens``.
    """
    from tqdm import tqdm

    done = store.tokens_done
    if max_tokens is not None and done >= max_tokens:
        return done
    it = itertools.islice(iter(items), store.items_done, None)
    bar = tqdm(total=max_tokens, initial=done, unit="tok", desc="embedding", disable=not progress, file=sys.stderr, smoothing=0.1)
    exhausted = False
    carry = 0
    while not exhausted and (max_tokens is None or done < max_tokens):
        seqs: list[list[int]] = []
        n_items = 0
        pending = 0
        while pending < settings.shard_tokens and (max_tokens is None or done + pending < max_tokens):
            item = next(it, None)
            if item is None:
                exhausted = True
                break
            n_items += 1
            ids = list(encode(item))[: settings.max_len]
            if max_tokens is not None:
                ids = ids[: max_tokens - done - pending]
            if len(ids) >= 2:
                seqs.append(ids)
                pending += len(ids)
        if not seqs:
            carry += n_items  # items too short to give entries: counted with the next shard
            continue
        hidden: list[np.ndarray] = [np.empty(0)] * len(seqs)
        for batch in _batches(seqs, settings.batch_tokens):
            for i, h in zip(batch, embed_batch(model, [seqs[i] for i in batch])):
                hidden[i] = h
            bar.update(sum(len(seqs[i]) for i in batch))
        values = np.concatenate([next_token_values(s, settings.n_next, eos_id) for s in seqs])
        store.write(np.concatenate(hidden), values, n_items + carry)
        carry = 0
        done = store.tokens_done
    bar.close()
    return done
