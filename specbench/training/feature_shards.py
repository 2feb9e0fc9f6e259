"""The files of a feature store: its shards (safetensors + a small json each) and the index of finished ones.

One shard holds whole sequences, in corpus-stream order:

- ``tokens`` int32 ``[T]``: every position of its sequences, prompts included (the SpS draft reads them);
- ``seq_offsets`` int64 ``[S+1]`` into ``tokens``; ``seq_start`` int64 ``[S]``: a sequence's first response
  position (the last prompt token: its hidden state predicts the first answer token); ``seq_index`` int64
  ``[S]``: its place in the corpus stream; ``seq_heldout`` uint8 ``[S]``: held out (every 20th sequence);
- ``row_offsets`` int64 ``[S+1]`` into the rows, one row per response position ``start .. len - 1``:
  ``hidden`` fp16 ``[R, h]`` (final-norm hidden state), ``labels`` int32 ``[R]`` (the target's greedy next
  token), ``layer_states`` fp16 ``[R, m, h]`` when intermediate layers are kept.

Example: a shard of two sequences of lengths 5 and 4 starting their answers at 2 and 1 has
``seq_offsets = [0, 5, 9]``, ``row_offsets = [0, 3, 6]`` (rows 2..4 of the first, 1..3 of the second).
Every file is written to ``NAME.tmp`` and renamed, so a reader never sees half a file; the index
(``index.json``) names a shard only once both of its files are complete.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.files.jsonfile import strict_json

INDEX = "index.json"
KEY = "key.json"
HELDOUT_EVERY = 20  # every 20th sequence of the stream is held out (whole sequences: no neighbour leaks)


@dataclass
class SequenceFeatures:
    """One teacher-forced sequence: its ids and, per response position, the target's outputs."""

    index: int  # place in the corpus stream
    ids: list[int]
    start: int  # first response position
    hidden: torch.Tensor  # [len - start, h] fp16
    labels: torch.Tensor  # [len - start] int32
    layer_states: torch.Tensor | None = None  # [len - start, m, h] fp16

    @property
    def rows(self) -> int:
        return len(self.ids) - self.start


@dataclass
class ShardInfo:
    name: str
    positions: int  # response positions (rows)
    sequences: int
    cursor: int  # the corpus stream's next sequence after this shard
    seconds: float = 0.0


@dataclass
class Index:
    shards: list[ShardInfo] = field(default_factory=list)
    exhausted: bool = False  # the corpora ran out: nothing follows the last shard

    @property
    def positions(self) -> int:
        return sum(s.positions for s in self.shards)

    @property
    def cursor(self) -> int:
        return self.shards[-1].cursor if self.shards else 0

    @staticmethod
    def read(folder: Path) -> "Index":
        path = folder / INDEX
        if not path.is_file():
            return Index()
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Index([ShardInfo(**s) for s in raw["shards"]], bool(raw.get("exhausted")))

    def write(self, folder: Path) -> None:
        body = {"shards": [vars(s) for s in self.shards], "exhausted": self.exhausted,
                "positions": self.positions, "cursor": self.cursor}
        _write_text(folder / INDEX, strict_json(body, indent=1))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_shard(folder: Path, number: int, seqs: list[SequenceFeatures], cursor: int, seconds: float) -> ShardInfo:
    """Write ``seqs`` as shard ``number`` (atomically) and return its index entry."""
    from safetensors.torch import save_file

    name = f"shard-{number:05d}"
    lengths = torch.tensor([len(s.ids) for s in seqs], dtype=torch.long)
    rows = torch.tensor([s.rows for s in seqs], dtype=torch.long)
    zero = torch.zeros(1, dtype=torch.long)
    tensors = {
        "tokens": torch.tensor([t for s in seqs for t in s.ids], dtype=torch.int32),
        "seq_offsets": torch.cat([zero, lengths.cumsum(0)]),
        "seq_start": torch.tensor([s.start for s in seqs], dtype=torch.long),
        "seq_index": torch.tensor([s.index for s in seqs], dtype=torch.long),
        "seq_heldout": torch.tensor([s.index % HELDOUT_EVERY == HELDOUT_EVERY - 1 for s in seqs], dtype=torch.uint8),
        "row_offsets": torch.cat([zero, rows.cumsum(0)]),
        "hidden": torch.cat([s.hidden for s in seqs]).contiguous(),
        "labels": torch.cat([s.labels for s in seqs]).contiguous(),
    }
    if seqs[0].layer_states is not None:
        tensors["layer_states"] = torch.cat([s.layer_states for s in seqs]).contiguous()  # type: ignore[misc]
    tmp = folder / f"{name}.safetensors.tmp"
    save_file(tensors, str(tmp))
    tmp.replace(folder / f"{name}.safetensors")
    info = ShardInfo(name, int(rows.sum()), len(seqs), cursor, round(seconds, 1))
    _write_text(folder / f"{name}.json", strict_json(vars(info), indent=1))
    return info


@dataclass
class SequenceTable:
    """Per-sequence metadata of every finished shard, in stream order (numpy arrays of equal length)."""

    shard: np.ndarray  # which shard (position in the index)
    local: np.ndarray  # the sequence's number inside its shard
    index: np.ndarray  # place in the corpus stream
    length: np.ndarray  # tokens
    start: np.ndarray  # first response position

    def __len__(self) -> int:
        return len(self.index)

    @staticmethod
    def read(folder: Path, index: Index) -> "SequenceTable":
        from safetensors import safe_open

        cols: dict[str, list[np.ndarray]] = {k: [] for k in ("shard", "local", "index", "length", "start")}
        for i, info in enumerate(index.shards):
            with safe_open(str(folder / f"{info.name}.safetensors"), "pt") as f:
                offsets = f.get_tensor("seq_offsets").numpy()
                n = len(offsets) - 1
                cols["shard"].append(np.full(n, i))
                cols["local"].append(np.arange(n))
                cols["index"].append(f.get_tensor("seq_index").numpy())
                cols["length"].append(np.diff(offsets))
                cols["start"].append(f.get_tensor("seq_start").numpy())
        return SequenceTable(**{k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in cols.items()})


def read_sequences(folder: Path, index: Index, table: SequenceTable, chosen: np.ndarray,
                   want_layers: bool) -> list[dict[str, Any]]:
    """Rows ``chosen`` of ``table`` (ascending) as dicts ``ids, start, hidden, labels[, layer_states]``; each
    shard is opened once and only its needed rows are read."""
    from safetensors import safe_open

    out: list[dict[str, Any]] = []
    for shard in np.unique(table.shard[chosen]):
        mine = chosen[table.shard[chosen] == shard]
        local = table.local[mine]
        with safe_open(str(folder / f"{index.shards[shard].name}.safetensors"), "pt") as f:
            seq_off = f.get_tensor("seq_offsets")
            row_off = f.get_tensor("row_offsets")
            first, last = int(row_off[local[0]]), int(row_off[local[-1] + 1])
            tok = f.get_slice("tokens")[int(seq_off[local[0]]) : int(seq_off[local[-1] + 1])]
            hidden = f.get_slice("hidden")[first:last]
            labels = f.get_slice("labels")[first:last]
            layers = f.get_slice("layer_states")[first:last] if want_layers else None
            t0 = int(seq_off[local[0]])
            for j in local.tolist():
                a, b = int(row_off[j]) - first, int(row_off[j + 1]) - first
                item = {"ids": tok[int(seq_off[j]) - t0 : int(seq_off[j + 1]) - t0], "hidden": hidden[a:b],
                        "labels": labels[a:b]}
                if layers is not None:
                    item["layer_states"] = layers[a:b]
                out.append(item)
    for item, row in zip(out, chosen.tolist()):  # shards ascend, and sequences inside each: ``chosen``'s order
        item["start"] = int(table.start[row])
    return out
