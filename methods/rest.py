"""``rest``: retrieval-based speculative decoding (He et al. 2023) over a suffix-array token datastore.

Each step the query is the last s tokens of the context (which ends with the root), for the largest s
in [n_min, n_max] that occurs in the datastore; the next m tokens after at most k matches go into a
counting trie and the c most frequent prefixes become the draft tree, pruned as the reference retriever
does (``cut``, see ``specbench.datastore.trie.cut_to_choices``).

Example: datastore ``[.., 7, 8, 9, 1, .., 7, 8, 9, 2, ..]``, context ending ``[.., 7, 8, 9]`` -> both
matches' continuations ``[1, ..]`` and ``[2, ..]`` are drafted as sibling branches.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from specbench.api import (
    BaseDrafter, ConfigError, DraftContext, DraftTree, MethodEnv, PendingBuild, datastore_artifacts,
    open_rest_datastore, parse_settings, query_tree, register_datastore_builder, register_first_use_build,
    register_method, resolve_data_dir)

# seconds of a first-use build of the cached datastore (tokenizing, suffix array, test-prompt check) of
# ShareGPT, the largest default (27.8M tokens; every task's but HumanEval's, whose 4.2M take less): 39 s and
# 41 s wall for ShareGPT alone and GSM8K-train+ShareGPT, 12 s for stdlib+CodeAlpaca, on this project's quiet
# 2-core CPU (`python run_bench.py --methods rest,dresd,redrafter --limit 2`, load 0.97 before the run)
REST_BUILD_S = 40.0


@dataclass(frozen=True)
class RESTConfig:
    """Paper defaults: n_max 16 (down to 2), k = 5000 matches, m = 10 tokens each, c = 64 nodes.

    ``cut``: prune the top-c nodes with the reference retriever's rule (default; ``false`` = the paper's
    pure top-c). ``max_paths``/``path_len`` (0 = off) keep only the first root-to-leaf paths of the tree,
    each truncated, as the DReSD paper's REST baseline does (see methods/dresd/README.md).

    ``datastore``: a built datastore directory; else one is built from ``corpus`` (comma-separated;
    default: the task's corpora, see methods/rest_crest.md), capped at ``max_tokens``, and cached.
    """

    n_max: int = 16
    n_min: int = 2
    k: int = 5000
    m: int = 10
    c: int = 64
    datastore: str | None = None
    corpus: str | None = None
    max_tokens: int | None = None
    cut: bool = True
    max_paths: int = 0
    path_len: int = 0

    def validate(self) -> None:
        if self.max_paths < 0 or self.path_len < 0:
            raise ConfigError("rest: max_paths and path_len must be >= 0 (0 = off)")
        if not 1 <= self.n_min <= self.n_max:
            raise ConfigError("rest: need 1 <= n_min <= n_max")
        if self.k < 1 or self.m < 1 or self.c < 1:
            raise ConfigError("rest: k, m and c must be >= 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError("rest: max_tokens must be >= 1")


def rest_tree(ds: Any, context: Sequence[int], cfg: RESTConfig) -> DraftTree | None:
    """The REST tree for a context ending with the root (longest matching suffix, n_max down to n_min)."""
    s = ds.longest_suffix_match(context, cfg.n_max, cfg.n_min)
    if s == 0:
        return None
    tree = query_tree(ds, list(context[-s:]), cfg.k, cfg.m, cfg.c, cfg.cut)
    if tree is not None and (cfg.max_paths or cfg.path_len):
        tree = first_paths(tree, cfg.max_paths, cfg.path_len)
    return tree


def first_paths(tree: DraftTree, max_paths: int, path_len: int) -> DraftTree:
    """The first ``max_paths`` root-to-leaf paths (leaves in tree order), each cut to ``path_len`` tokens.

    0 turns either limit off. Example: tokens ``(1, 2, 5, 7)``, parents ``(-1, 0, 0, -1)`` (leaves 2, 5, 7),
    max_paths 2, path_len 1 -> the paths ``[1]`` and ``[1]`` merge: tokens ``(1,)``.
    """
    children = {p for p in tree.parents if p >= 0}
    leaves = [i for i in range(len(tree)) if i not in children]
    if max_paths:
        leaves = leaves[:max_paths]
    chains = []
    for leaf in leaves:
        path = []
        node = leaf
        while node >= 0:
            path.append(tree.tokens[node])
            node = tree.parents[node]
        path.reverse()
        chains.append(path[:path_len] if path_len else path)
    return DraftTree.from_chains(chains)


class RESTDrafter(BaseDrafter):
    """Proposes REST trees; ``latencies_s`` holds the retrieval + trie time of every step."""

    reads_hidden_states = False  # drafts from tokens alone (a backend may skip the target's hidden states)

    def __init__(self, ds: Any, config: RESTConfig) -> None:
        self.ds = ds
        self.config = config
        self.latencies_s: list[float] = []

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        t = time.perf_counter()
        tree = rest_tree(self.ds, ctx.tokens, self.config)
        self.latencies_s.append(time.perf_counter() - t)
        return tree


@register_method("rest", RESTConfig)
def build_rest(config: RESTConfig, env: MethodEnv) -> RESTDrafter:
    """REST: drafts from a suffix-array datastore (top-c trie of retrieved continuations)."""
    ds = open_rest_datastore(config.datastore, config.corpus, config.max_tokens, env)
    env.artifacts.update(datastore_artifacts(ds))
    env.declare_overhead(storage_bytes=ds.nbytes_on_disk())
    return RESTDrafter(ds, config)


@register_first_use_build("rest")
def rest_first_use(config: RESTConfig, env: MethodEnv) -> PendingBuild | None:
    """The cached datastore of ``env``'s task that ``build_rest`` would build now (None: built, or given)."""
    from specbench.api import cached_rest_path, datastore_built, parse_corpora

    if config.datastore:
        return None
    corpora = parse_corpora(config.corpus, env.task)
    path = cached_rest_path(env.cache_dir, corpora, env.tokenizer, config.max_tokens)
    return None if datastore_built(path) else PendingBuild("build rest's datastore", REST_BUILD_S, str(path),
                                                           detail=f"of {'+'.join(corpora)}")


@register_datastore_builder("rest")
def build_rest_cli(args: Any) -> int:
    """``specbench datastore build --kind rest --corpus A,B --out DIR [--max-tokens T] [--set chunk_tokens=N]``."""
    from pathlib import Path

    from specbench.api import build_rest_datastore, parse_corpora
    from specbench.api import DEFAULT_CHUNK_TOKENS, dir_bytes
    from specbench.api import load_model

    sets = parse_settings(args.set)
    unknown = set(sets) - {"chunk_tokens", "check_test_prompts"}
    if unknown:
        raise ConfigError(f"rest datastore: unknown --set key(s) {', '.join(sorted(unknown))} (known: chunk_tokens, check_test_prompts)")
    try:
        chunk_tokens = int(sets.get("chunk_tokens", DEFAULT_CHUNK_TOKENS))
    except ValueError:
        raise ConfigError(f"rest datastore: --set chunk_tokens expects an integer, got {sets['chunk_tokens']!r}") from None
    if chunk_tokens < 1:
        raise ConfigError(f"rest datastore: --set chunk_tokens must be >= 1, got {chunk_tokens}")
    check = sets.get("check_test_prompts", "true").lower() not in ("0", "false", "no", "off")
    data_dir = resolve_data_dir(args.data_dir)
    corpora = parse_corpora(args.corpus, None)
    loaded = load_model(args.model, args.dtype, "cpu")
    header = build_rest_datastore(corpora, Path(args.out), loaded.tokenizer, loaded.model_id, data_dir, args.max_tokens, chunk_tokens, check)
    print(
        f"REST datastore {args.out}: {header['n_tokens']:,} tokens, {header['n_entries']:,} entries, "
        f"{len(header['chunks'])} chunk(s), {dir_bytes(Path(args.out)):,} bytes, built in {header['build_seconds']} s; "
        f"test prompts found/dropped entries: {header['contamination_check']['prompts_found']}/{header['contamination_check']['entries_dropped']}"
    )
    return 0
