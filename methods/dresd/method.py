"""``dresd`` factory: find (or build and cache) the datastore, check it fits the target, make the drafter."""
from __future__ import annotations

import sys
from pathlib import Path

from methods.dresd.config import DReSDConfig
from methods.dresd.drafter import DReSDDrafter
from specbench.api import MethodEnv, register_method

_LOADED: dict[str, object] = {}  # path -> DenseDatastore, shared by the tasks of one run


def default_datastore_path(config: DReSDConfig, env: MethodEnv, corpus: str) -> Path:
    """Cache location of the default datastore for (model, corpus, OOD format/ID, size); ``qa`` keeps the
    key it had before the format option, so its earlier builds are reused."""
    from methods.dresd.datastore.fingerprint import model_fingerprint

    kind = "id" if config.id else "ood" if config.text_format == "qa" else f"ood-{config.text_format}"
    return Path(env.cache_dir) / "datastores" / "dresd" / f"{corpus}-{kind}-{config.max_tokens}-{model_fingerprint(env.model)}"


def resolve_datastore(config: DReSDConfig, env: MethodEnv):
    """Load the configured datastore, building the default one under the cache on first use."""
    from methods.dresd.datastore.build import BuildSettings, build_datastore
    from methods.dresd.datastore.store import DenseDatastore
    from specbench.api import stop_token_ids

    corpus = config.corpus_for(env.task)
    if config.datastore:
        path = Path(config.datastore.replace("{corpus}", corpus)).expanduser()
    else:
        path = default_datastore_path(config, env, corpus)
        if not (path / "header.json").is_file():
            print(f"[specbench] dresd: building a {config.max_tokens}-token {'ID' if config.id else 'OOD'} datastore "
                  f"of {corpus} -> {path}", file=sys.stderr)
            build_datastore(env.model, env.tokenizer, [corpus], path, config.max_tokens, config.id, env.data_dir,
                            BuildSettings(text_format=config.text_format), env.model_id, stop_token_ids(env.tokenizer, env.model))
    key = str(path.resolve())
    if key not in _LOADED:
        _LOADED[key] = DenseDatastore.load(path)
    ds = _LOADED[key]
    ds.check_compatible(env.model, env.tokenizer)
    return ds


@register_method("dresd", DReSDConfig)
def build_dresd(config: DReSDConfig, env: MethodEnv) -> DReSDDrafter:
    """DReSD (Gritta et al. 2025): draft from nearest neighbours of the target's own hidden states."""
    ds = resolve_datastore(config, env)
    env.artifacts.update(
        datastore=ds.header.get("path"), datastore_hash=ds.digest, datastore_entries=len(ds),
        datastore_corpora=ds.header.get("corpora"), datastore_id=ds.header.get("id"), index=ds.header.get("index"),
    )
    env.declare_overhead(storage_bytes=int(ds.keys.nbytes + ds.values.nbytes))  # the index adds its own copy on top
    return DReSDDrafter(ds, config.num_drafts, config.draft_len, config.k, config.nprobe, config.exact)
