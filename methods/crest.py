"""``crest``: REST with a compact datastore (Ho, Park, Wang: CREST): frequent n-grams -> precomputed trees.

The store keeps the top-t most frequent n-grams of each n = 1..max_n of a REST datastore, each with the
tree live REST retrieval would give for exactly that n-gram. At decode time the longest suffix of the
context (ending with the root) that is a key, tried from max_n down to 1, selects the tree.

Example: context ``[.., 12, 7, 8]``; if ``(12, 7, 8)`` is not kept but ``(7, 8)`` is, CREST proposes the
stored tree of ``(7, 8)``.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from methods.rest import RESTConfig, datastore_artifacts, open_rest_datastore
from specbench.argtypes import positive_int
from specbench.config import ConfigError
from specbench.drafter import BaseDrafter, DraftContext
from specbench.engine.tree import DraftTree
from specbench.method_env import MethodEnv
from specbench.registry import DatastoreAction, register_datastore_action, register_method


@dataclass(frozen=True)
class CRESTConfig:
    """``top_t`` n-grams per n (n = 1..max_n) with REST trees (k, m, c as in REST).

    ``datastore``: a compacted CREST directory; else one is compacted from ``rest_datastore`` (or the
    task's cached REST datastore built from ``corpus``/``max_tokens``) and cached.
    """

    top_t: int = 5000
    max_n: int = 5
    k: int = 5000
    m: int = 10
    c: int = 64
    datastore: str | None = None
    rest_datastore: str | None = None
    corpus: str | None = None
    max_tokens: int | None = None

    def validate(self) -> None:
        if self.top_t < 1 or self.max_n < 1:
            raise ConfigError("crest: top_t and max_n must be >= 1")
        if self.k < 1 or self.m < 1 or self.c < 1:
            raise ConfigError("crest: k, m and c must be >= 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError("crest: max_tokens must be >= 1")


class CRESTDrafter(BaseDrafter):
    """Proposes the stored tree of the longest kept suffix n-gram; ``latencies_s`` per step."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.latencies_s: list[float] = []

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        t = time.perf_counter()
        tree = self.store.lookup(ctx.tokens)
        self.latencies_s.append(time.perf_counter() - t)
        return tree


def _cached_store(config: CRESTConfig, env: MethodEnv) -> Any:
    from specbench.datastore.build import build_lock
    from specbench.datastore.ngram_store import DB, NgramStore, write_ngram_store
    from specbench.datastore.tokenize_corpus import tokenizer_hash

    th = tokenizer_hash(env.tokenizer)
    if config.datastore:
        return NgramStore(config.datastore, vocab_size=len(env.tokenizer), tokenizer_hash=th)
    rest_cfg = RESTConfig(datastore=config.rest_datastore, corpus=config.corpus, max_tokens=config.max_tokens)
    ds = open_rest_datastore(rest_cfg, env)
    name = f"{Path(ds.path).name}-{ds.header['tokens_sha256'][:10]}-t{config.top_t}-n{config.max_n}-k{config.k}-m{config.m}-c{config.c}"
    path = Path(env.cache_dir) / "datastores" / "crest" / th / name
    if not (path / DB).is_file():
        with build_lock(path):
            if not (path / DB).is_file():
                print(f"[specbench] compacting {ds.path} into a CREST datastore (once) -> {path}", file=sys.stderr)
                write_ngram_store(ds, path, config.top_t, config.max_n, config.k, config.m, config.c, meta={"source": str(ds.path)})
    env.artifacts.update({f"rest_{k}": v for k, v in datastore_artifacts(ds).items()})
    return NgramStore(path, vocab_size=len(env.tokenizer), tokenizer_hash=th)


@register_method("crest", CRESTConfig)
def build_crest(config: CRESTConfig, env: MethodEnv) -> CRESTDrafter:
    """CREST: REST trees precomputed for the most frequent n-grams, looked up in SQLite."""
    store = _cached_store(config, env)
    env.artifacts.update(
        datastore=str(store.path),
        datastore_bytes=store.nbytes_on_disk(),
        datastore_keys=store.header.get("n_keys"),
        datastore_source_tokens_sha256=store.header.get("source_tokens_sha256"),
    )
    env.declare_overhead(storage_bytes=store.nbytes_on_disk())
    return CRESTDrafter(store)


def _compact_args(p: Any) -> None:
    p.add_argument("--from", dest="source", required=True, help="REST datastore directory")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--top-t", type=positive_int, default=CRESTConfig.top_t, help="n-grams kept per n")
    p.add_argument("--max-n", type=positive_int, default=CRESTConfig.max_n, help="longest n-gram")
    p.add_argument("--k", type=positive_int, default=CRESTConfig.k, help="REST matches per tree")
    p.add_argument("--m", type=positive_int, default=CRESTConfig.m, help="REST continuation length")
    p.add_argument("--c", type=positive_int, default=CRESTConfig.c, help="REST tree size")


def _compact(args: Any) -> int:
    from specbench.datastore.ngram_store import write_ngram_store
    from specbench.datastore.suffix_array import TokenDatastore

    cfg = CRESTConfig(top_t=args.top_t, max_n=args.max_n, k=args.k, m=args.m, c=args.c)
    cfg.validate()
    ds = TokenDatastore.load(args.source)
    header = write_ngram_store(ds, args.out, cfg.top_t, cfg.max_n, cfg.k, cfg.m, cfg.c, meta={"source": str(args.source)})
    from specbench.datastore.suffix_array import dir_bytes

    rest_b, crest_b = ds.nbytes_on_disk(), dir_bytes(Path(args.out))
    print(
        f"CREST datastore {args.out}: {header['n_keys']:,} n-gram keys (top-t {cfg.top_t}, n <= {cfg.max_n}), "
        f"{crest_b:,} bytes vs REST {rest_b:,} bytes ({rest_b / max(crest_b, 1):.1f}x smaller), built in {header['build_seconds']} s"
    )
    return 0


register_datastore_action(DatastoreAction("compact", "CREST: compact a REST datastore into top-t n-gram trees (SQLite)", _compact_args, _compact))
