"""One shared, sharded feature store per target and corpus slice, read by every trained drafter.

The frozen target runs once, teacher-forced and batched (``feature_collect.py``), over the chat-formatted
corpus stream (``interleave`` over the corpora, ``sequence_ids``); per response position it keeps the
final-norm hidden state, the greedy next token and, for EAGLE-3, intermediate layers' states. A store
is keyed by the target (id + a fingerprint of its weights + its tokenizer), the corpora, ``max_seq_len``,
the kept layers, the teacher's dtype and the format version; it lives in ``<cache>/features/<slug>-<hash>``
(files: ``feature_shards.py``). It grows on demand: asked for more positions than it has, it extends
itself from its stream cursor, so the first 20k positions of a 1M store are exactly the 20k store, and an
interrupted collection keeps its finished shards (~25k positions each) and resumes from the last cursor.

Example::

    store = FeatureStore.open(model, tok, DEFAULT_CORPORA, None, model_id="tiny")
    data = store.data(20000, n_predict=1)  # DistillData: train / held-out starts as each trainer had them

``teacher_dtype``: ``float32`` (the default: the numerics the drafters always had) or ``bfloat16`` (a faster
prefill on a CPU with avx512_bf16, 1.1-1.5x measured here under load; the references also compute features with
a half-precision target). Measured on the embedded SmolLM2-135M over the first 24 sequences of the default
corpora (3,288 response positions): bf16's greedy labels differ from fp32's at 62 positions (1.9%; 2.3% of
the first 1,992), its hidden states by 1.5% (mean relative L2 error). ``docs/training.md`` has the figures.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from specbench.errors import ConfigError
from specbench.files.jsonfile import strict_json
from specbench.training.distill_data import DistillData
from specbench.training.feature_collect import TEACHER_DTYPES, extend_store
from specbench.training.feature_shards import HELDOUT_EVERY, KEY, Index, SequenceTable, read_sequences
from specbench.training.feature_view import assemble, select

FORMAT_VERSION = 1
MAX_PREDICT_MARGIN = 8  # collect enough for any trainer predicting up to 8 tokens, so the next one reuses it


def default_root() -> Path:
    """``<cache>/features``: where stores live unless a caller names another root."""
    from specbench.paths import cache_dir

    return cache_dir() / "features"


def weights_fingerprint(model: torch.nn.Module) -> str:
    """16 hex digits over every parameter's name, shape, dtype and a strided sample of its values: cheap
    (no full hash of hundreds of MB) and different for any two differently initialised or trained models."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        sample = flat[:: max(1, flat.numel() // 4096)][:4096].float().cpu().numpy()
        h.update(f"{name}{tuple(p.shape)}{p.dtype}".encode())
        h.update(sample.tobytes())
    return h.hexdigest()[:16]


def _tokenizer_id(tokenizer: Any) -> str:
    from specbench.datastore.tokenize_corpus import tokenizer_hash

    return tokenizer_hash(tokenizer) if hasattr(tokenizer, "get_vocab") else type(tokenizer).__name__


@dataclass(frozen=True)
class FeatureOptions:
    """How a trainer reads the store: its root (default ``<cache>/features``), the teacher's dtype, and an
    optional fixed held-out set (``heldout_span`` positions, capped at ``heldout_cap`` held-out starts)."""

    root: Path | None = None
    teacher_dtype: str = "float32"
    heldout_span: int | None = None
    heldout_cap: int | None = None

    def validate(self) -> None:
        if self.teacher_dtype not in TEACHER_DTYPES:
            raise ConfigError(f"teacher_dtype must be one of {', '.join(TEACHER_DTYPES)}, got {self.teacher_dtype!r}")

    def load(self, model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, model_id: str,
             *, positions: int, n_predict: int, max_seq_len: int, heldout_every: int = HELDOUT_EVERY,
             layers: Sequence[int] = (), progress: bool = True, desc: str = "target forward") -> tuple[DistillData, "FeatureStore"]:
        """(the trainer's data, the store it came from)."""
        self.validate()
        store = FeatureStore.open(model, tokenizer, corpora, data_dir, model_id=model_id, max_seq_len=max_seq_len,
                                  layers=layers, teacher_dtype=self.teacher_dtype, root=self.root)
        data = store.data(positions, n_predict, heldout_every=heldout_every, heldout_span=self.heldout_span,
                          heldout_cap=self.heldout_cap, progress=progress, desc=desc)
        return data, store


class FeatureStore:
    def __init__(self, path: Path, key: dict[str, Any], model: torch.nn.Module, tokenizer: Any,
                 data_dir: Path | None) -> None:
        self.path, self.key, self.model, self.tokenizer, self.data_dir = path, key, model, tokenizer, data_dir
        self._table: tuple[int, SequenceTable] | None = None
        self.forwards = 0  # extensions run by this object (tests: a second trainer runs none)

    @staticmethod
    def open(model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, *, model_id: str,
             max_seq_len: int = 512, layers: Sequence[int] = (), teacher_dtype: str = "float32",
             root: Path | None = None) -> "FeatureStore":
        """The store of this key (created empty when new; nothing is computed until data is asked)."""
        if teacher_dtype not in TEACHER_DTYPES:
            raise ConfigError(f"teacher_dtype must be one of {', '.join(TEACHER_DTYPES)}, got {teacher_dtype!r}")
        key = {"model_id": model_id, "weights": weights_fingerprint(model), "tokenizer": _tokenizer_id(tokenizer),
               "corpora": list(corpora), "max_seq_len": int(max_seq_len), "layers": [int(i) for i in layers],
               "teacher_dtype": teacher_dtype, "format": FORMAT_VERSION}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        short = re.sub(r"[^A-Za-z0-9]+", "-", model_id.split("/")[-1].split(" ")[0]).strip("-").lower()[:40] or "model"
        slug = f"{short}-{'+'.join(corpora)}-{max_seq_len}" + (f"-l{'.'.join(map(str, layers))}" if layers else "")
        slug += "-bf16" if teacher_dtype == "bfloat16" else ""
        path = Path(root or default_root()) / f"{re.sub(r'[^A-Za-z0-9_.+-]+', '_', slug)[:100]}-{digest}"
        path.mkdir(parents=True, exist_ok=True)
        if not (path / KEY).is_file():
            (path / KEY).write_text(strict_json(key, indent=1), encoding="utf-8")
        return FeatureStore(path, key, model, tokenizer, data_dir)

    @property
    def index(self) -> Index:
        return Index.read(self.path)

    def table(self) -> SequenceTable:
        """Every stored sequence's metadata (re-read only when shards were added)."""
        index = self.index
        if self._table is None or self._table[0] != len(index.shards):
            self._table = (len(index.shards), SequenceTable.read(self.path, index))
        return self._table[1]

    def ensure(self, positions: int, progress: bool = True, desc: str = "target forward",
               clock: dict[str, float] | None = None) -> Index:
        """Extend the store until it holds ``positions`` response positions (or its corpora ran out)."""
        from specbench.files.build_lock import build_lock

        index = self.index
        if index.positions >= positions or index.exhausted:
            return index
        with build_lock(self.path):  # another process may be extending the same store
            index = self.index
            if index.positions < positions and not index.exhausted:
                self.forwards += 1
                index = extend_store(self.path, index, self.model, self.tokenizer, self.key["corpora"], self.data_dir,
                                     self.key["max_seq_len"], self.key["layers"], self.key["teacher_dtype"], positions,
                                     progress, desc, clock)
        return index

    def grow_until(self, enough: Any, progress: bool = True, desc: str = "target forward") -> SequenceTable:
        """The table once ``enough(table)`` returns None, extending the store by what it returns (response
        positions still missing, an estimate) until then; a one-line error when the corpora run out."""
        while True:
            table = self.table()
            missing = enough(table)
            if missing is None:
                return table
            index = self.index
            if index.exhausted:
                raise ConfigError(f"feature store: corpora {','.join(self.key['corpora'])} ran out after "
                                  f"{index.positions} positions; ask for fewer positions or add corpora")
            self.ensure(index.positions + max(int(missing), 256), progress, desc)

    def sequences(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Stored sequences ``rows`` of ``table()`` (ascending): dicts ``ids, start, hidden, labels[, layer_states]``."""
        return read_sequences(self.path, self.index, self.table(), rows, bool(self.key["layers"]))

    def data(self, positions: int, n_predict: int, heldout_every: int = HELDOUT_EVERY, heldout_span: int | None = None,
             heldout_cap: int | None = None, progress: bool = True, desc: str = "target forward") -> DistillData:
        """``positions`` example starts for ``n_predict`` predicted tokens (``feature_view.py``), reading only
        the shards those sequences lie in; the store extends itself first when it is short."""
        goal = max(positions, heldout_span or 0)
        margin = max(n_predict, MAX_PREDICT_MARGIN)

        def enough(table: SequenceTable) -> float | None:
            if select(table, positions, n_predict, heldout_every, heldout_span, heldout_cap).complete:
                return None
            got = select(table, goal, margin, heldout_every).got  # collect for the largest n_predict at once
            rows = int((table.length - table.start).sum())
            ratio = rows / got if got else 1.1  # response rows per start, guessed for an empty store (~1.06 on chat data)
            return (goal - got) * max(1.0, ratio) * 1.02

        table = self.grow_until(enough, progress, desc)
        sel = select(table, positions, n_predict, heldout_every, heldout_span, heldout_cap)
        chosen = np.concatenate([sel.train, sel.heldout])
        order = np.argsort(chosen, kind="stable")
        chosen, is_held = chosen[order], (np.arange(len(chosen)) >= len(sel.train))[order]
        if not len(sel.train):
            raise ConfigError(f"feature store: corpora {','.join(self.key['corpora'])} gave no usable sequences")
        items = self.sequences(chosen)
        return assemble(items, is_held.tolist(), n_predict)

    def describe(self) -> dict[str, Any]:
        """What a checkpoint records about its features: the store's folder, key and size."""
        index = self.index
        return {"path": str(self.path), "key": self.key, "positions": index.positions, "shards": len(index.shards)}
