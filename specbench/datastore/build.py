"""Building REST token datastores from registered corpora, and the build-and-cache used on first use.

Default corpora per task (overridable with the method option ``corpus=a,b`` or ``datastore=DIR``):
chat-style tasks use ``sharegpt``; ``humaneval`` uses ``python_stdlib,code_alpaca``; ``gsm8k`` uses
``gsm8k_train,sharegpt``.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

from specbench.datastore.contamination import ContaminationFilter, prompt_probes, test_prompts
from specbench.datastore.token_files import DEFAULT_CHUNK_TOKENS, HEADER, write_datastore
from specbench.datastore.suffix_array import DatastoreError, TokenDatastore
from specbench.datastore.tokenize_corpus import corpus_texts, tokenize_entries, tokenizer_hash
from specbench.files.build_lock import build_lock  # (re-exported: plugins import it through specbench.api)
from specbench.files.jsonfile import strict_json

TASK_CORPORA: dict[str, tuple[str, ...]] = {
    "humaneval": ("python_stdlib", "code_alpaca"),
    "gsm8k": ("gsm8k_train", "sharegpt"),
}
DEFAULT_CORPORA: tuple[str, ...] = ("sharegpt",)


def default_corpora(task: str | None) -> tuple[str, ...]:
    """The documented default datastore corpora of a task."""
    return TASK_CORPORA.get(task or "", DEFAULT_CORPORA)


def parse_corpora(spec: str | None, task: str | None) -> tuple[str, ...]:
    """``"a,b"`` -> ("a", "b"); None or empty -> the task's default."""
    from specbench.plugins.registry import CORPORA

    names = tuple(n.strip() for n in (spec or "").replace("+", ",").split(",") if n.strip())
    for n in names:
        CORPORA.get(n)  # a misspelled name fails now, before a cache folder or lock file is made
    return names or default_corpora(task)


def build_rest_datastore(
    corpora: tuple[str, ...],
    out: Path,
    tokenizer: Any,
    tokenizer_id: str,
    data_dir: Path | None,
    max_tokens: int | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    check_test_prompts: bool = True,
) -> dict[str, Any]:
    """Tokenise ``corpora`` with the target tokenizer and write a suffix-array datastore to ``out``."""
    from specbench.plugins.registry import CORPORA

    for name in corpora:
        CORPORA.get(name)  # unknown names fail before any work
    t0 = time.time()
    stats: dict[str, int] = {}
    entries = tokenize_entries(corpus_texts(corpora, data_dir), tokenizer, max_tokens, desc=f"tokenizing {'+'.join(corpora)}", stats=stats)
    filt = ContaminationFilter(prompt_probes(test_prompts(data_dir), tokenizer) if check_test_prompts else [])
    meta = {
        "kind": "rest",
        "tokenizer_id": tokenizer_id,
        "tokenizer_hash": tokenizer_hash(tokenizer),
        "corpora": list(corpora),
        "max_tokens": max_tokens,
        "chunk_tokens": chunk_tokens,
    }
    header = write_datastore(entries, out, vocab_size=len(tokenizer), meta=meta, chunk_tokens=chunk_tokens, chunk_hook=filt)
    header["contamination_check"] = filt.summary()
    header["build_seconds"] = round(time.time() - t0, 2)
    (Path(out) / HEADER).write_text(strict_json(header, indent=1), encoding="utf-8")
    if filt.dropped_entries:
        print(f"[specbench] dropped {filt.dropped_entries} corpus entries containing a test prompt verbatim", file=sys.stderr)
    return header


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)[:80]


def _rest_name(corpora: tuple[str, ...], max_tokens: int | None) -> str:
    return "+".join(corpora) + (f"-max{max_tokens}" if max_tokens else "")


def cached_rest_path(cache_root: Path, corpora: tuple[str, ...], tokenizer: Any, max_tokens: int | None) -> Path:
    """The folder ``cached_rest_datastore`` keeps (tokenizer, corpora, max_tokens)'s datastore in."""
    return Path(cache_root) / "datastores" / "rest" / tokenizer_hash(tokenizer) / _slug(_rest_name(corpora, max_tokens))


def datastore_built(path: Path) -> bool:
    """Whether ``path`` holds a finished datastore (its header is written last)."""
    return (Path(path) / HEADER).is_file()


def cached_rest_datastore(
    cache_root: Path, corpora: tuple[str, ...], tokenizer: Any, tokenizer_id: str, data_dir: Path | None, max_tokens: int | None
) -> TokenDatastore:
    """Open the cached datastore for (tokenizer, corpora, max_tokens), building it on first use."""
    path = cached_rest_path(cache_root, corpora, tokenizer, max_tokens)
    if not datastore_built(path):
        with build_lock(path):  # another process may be building the same datastore
            if not datastore_built(path):
                print(f"[specbench] building the REST datastore {_rest_name(corpora, max_tokens)} (once) -> {path}",
                      file=sys.stderr)
                build_rest_datastore(corpora, path, tokenizer, tokenizer_id, data_dir, max_tokens)
    try:  # (the folder above the datastore's is named by the tokenizer's hash)
        return TokenDatastore.load(path, vocab_size=len(tokenizer), tokenizer_hash=path.parent.name)
    except DatastoreError as e:
        raise DatastoreError(f"{e} (delete {path} to rebuild it)") from None


def open_rest_datastore(datastore: str | None, corpus: str | None, max_tokens: int | None, env: Any) -> TokenDatastore:
    """The token datastore a REST-style method asks for (REST's own, CREST's source): the folder ``datastore``,
    else the cached build of ``corpus`` (None: the task's default corpora) for ``env``'s task and tokenizer
    (``env``: the method's ``MethodEnv``)."""
    if datastore:
        return TokenDatastore.load(datastore, vocab_size=len(env.tokenizer), tokenizer_hash=tokenizer_hash(env.tokenizer))
    corpora = parse_corpora(corpus, env.task)
    return cached_rest_datastore(env.cache_dir, corpora, env.tokenizer, env.model_id, env.data_dir, max_tokens)


def datastore_artifacts(ds: TokenDatastore) -> dict[str, Any]:
    """What a run depends on: the datastore's path, size and content hash (the manifest's artifacts)."""
    h = ds.header
    return {
        "datastore": str(ds.path),
        "datastore_corpora": h.get("corpora"),
        "datastore_tokens": ds.n_tokens,
        "datastore_bytes": ds.nbytes_on_disk(),
        "datastore_tokens_sha256": h.get("tokens_sha256"),
        "datastore_contamination_check": h.get("contamination_check"),
    }
