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

from specbench.api import (BaseDrafter, ConfigError, DatastoreAction, DraftContext, DraftTree, MethodEnv,
                           datastore_artifacts, open_rest_datastore, positive_int, register_datastore_action,
                           register_method)


@dataclass(frozen=True)
class CRESTConfig:
    """``top_t`` n-grams per n (n = 1..max_n) with REST trees (k, m, c, cut as in REST; the k matches
    spread evenly over all of a key's matches, see ``specbench.datastore.ngram_store``).

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
    cut: bool = True

    def validate(self) -> None:
        if self.top_t < 1 or self.max_n < 1:
            raise ConfigError("crest: top_t and max_n must be >= 1")
        if self.k < 1 or self.m < 1 or self.c < 1:
            raise ConfigError("crest: k, m and c must be >= 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError("crest: max_tokens must be >= 1")


class CRESTDrafter(BaseDrafter):
    """Proposes the stored tree of the longest kept suffix n-gram; ``latencies_s`` per step."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, store: Any) -> None:
        self.store = store
        self.latencies_s: list[float] = []

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        t = time.perf_counter()
        tree = self.store.lookup(ctx.tokens)
        self.latencies_s.append(time.perf_counter() - t)
        return tree


def _cached_store(config: CRESTConfig, env: MethodEnv) -> Any:
    from specbench.api import NGRAM_STORE_FILE as DB
    from specbench.api import NGRAM_STORE_VERSION as FORMAT_VERSION
    from specbench.api import NgramStore, build_lock, tokenizer_hash, write_ngram_store

    th = tokenizer_hash(env.tokenizer)
    if config.datastore:
        return NgramStore(config.datastore, vocab_size=len(env.tokenizer), tokenizer_hash=th)
    ds = open_rest_datastore(config.rest_datastore, config.corpus, config.max_tokens, env)
    name = f"{Path(ds.path).name}-{ds.header['tokens_sha256'][:10]}-t{config.top_t}-n{config.max_n}-k{config.k}-m{config.m}-c{config.c}{'' if config.cut else '-uncut'}-v{FORMAT_VERSION}"
    path = Path(env.cache_dir) / "datastores" / "crest" / th / name
    if not (path / DB).is_file():
        with build_lock(path):
            if not (path / DB).is_file():
                print(f"[specbench] compacting {ds.path} into a CREST datastore (once) -> {path}", file=sys.stderr)
                write_ngram_store(ds, path, config.top_t, config.max_n, config.k, config.m, config.c,
                                  meta={"source": str(ds.path)}, cut=config.cut)
                from specbench.api import dir_bytes

                print(f"[specbench] CREST store: {storage_ratios(ds.nbytes_on_disk(), ds.n_tokens, dir_bytes(path))}", file=sys.stderr)
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
    p.add_argument("--no-cut", dest="cut", action="store_false", help="pure top-c trees (no reference cut)")


def _compact(args: Any) -> int:
    from specbench.api import TokenDatastore, write_ngram_store

    cfg = CRESTConfig(top_t=args.top_t, max_n=args.max_n, k=args.k, m=args.m, c=args.c, cut=args.cut)
    cfg.validate()
    ds = TokenDatastore.load(args.source)
    header = write_ngram_store(ds, args.out, cfg.top_t, cfg.max_n, cfg.k, cfg.m, cfg.c, meta={"source": str(args.source)}, cut=cfg.cut)
    from specbench.api import dir_bytes

    print(f"CREST datastore {args.out}: {header['n_keys']:,} n-gram keys (top-t {cfg.top_t}, n <= {cfg.max_n}), "
          f"built in {header['build_seconds']} s; {storage_ratios(ds.nbytes_on_disk(), ds.n_tokens, dir_bytes(Path(args.out)))}")
    return 0


REFERENCE_BYTES_PER_TOKEN = 6  # the REST reference's store: u16 token + i32 suffix-array entry


def storage_ratios(rest_bytes: int, rest_tokens: int, crest_bytes: int) -> str:
    """CREST's size against both REST formats: ours on disk and the reference's 6 B/token.

    Example: ``storage_ratios(8_000_000, 1_000_000, 400_000)`` ->
    ``"400,000 bytes vs REST 8,000,000 bytes here (20.0x smaller), 6,000,000 in the reference's 6 B/token format (15.0x smaller)"``.
    """
    ref = REFERENCE_BYTES_PER_TOKEN * rest_tokens
    c = max(crest_bytes, 1)
    return (f"{crest_bytes:,} bytes vs REST {rest_bytes:,} bytes here ({rest_bytes / c:.1f}x smaller), "
            f"{ref:,} in the reference's {REFERENCE_BYTES_PER_TOKEN} B/token format ({ref / c:.1f}x smaller)")


register_datastore_action(DatastoreAction("compact", "CREST: compact a REST datastore into top-t n-gram trees (SQLite)", _compact_args, _compact))
