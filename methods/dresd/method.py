"""``dresd`` factory: find (or build and cache) the datastore, check it fits the target, make the drafter."""
from __future__ import annotations

import sys
from pathlib import Path

from specbench_methods.dresd.config import DReSDConfig
from specbench_methods.dresd.drafter import DReSDDrafter
from specbench.api import MethodEnv, PendingBuild, register_first_use_build, register_method

# seconds of a first-use build besides its target pass over ``max_tokens`` tokens (priced with the cost
# profile): reading the corpus, the normalisation and the index. A 2,000-entry ShareGPT build took 18 s of CPU
# time in all on this project's 2-core CPU (`specbench datastore build --kind dresd --corpus sharegpt
# --max-tokens 2000`, 45 s wall beside other jobs), its target pass about 8 of them (4 s on the 2 cores)
DRESD_BUILD_OVERHEAD_S = 10.0

_LOADED: dict[str, object] = {}  # path -> DenseDatastore, shared by the tasks of one run


def default_datastore_path(config: DReSDConfig, env: MethodEnv, corpus: str) -> Path:
    """Cache location of the default datastore for (model, corpus, OOD format/ID, size); ``qa`` keeps the
    key it had before the format option, so its earlier builds are reused."""
    from specbench_methods.dresd.datastore.fingerprint import model_fingerprint

    kind = "id" if config.id else "ood" if config.text_format == "qa" else f"ood-{config.text_format}"
    return Path(env.cache_dir) / "datastores" / "dresd" / f"{corpus}-{kind}-{config.max_tokens}-{model_fingerprint(env.model)}"


def resolve_datastore(config: DReSDConfig, env: MethodEnv):
    """Load the configured datastore, building the default one under the cache on first use."""
    from specbench_methods.dresd.datastore.build import BuildSettings, build_datastore
    from specbench_methods.dresd.datastore.store import DenseDatastore
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


@register_first_use_build("dresd")
def dresd_first_use(config: DReSDConfig, env: MethodEnv) -> PendingBuild | None:
    """The default datastore of ``env``'s task that ``resolve_datastore`` would build now (None: built, or
    given): a target pass over ``max_tokens`` corpus tokens (an ID store first generates its answers: not counted)."""
    if config.datastore:
        return None
    corpus = config.corpus_for(env.task)
    path = default_datastore_path(config, env, corpus)
    if (path / "header.json").is_file():
        return None
    return PendingBuild(f"build dresd's {'ID ' if config.id else ''}datastore", DRESD_BUILD_OVERHEAD_S, str(path),
                        target_tokens=config.max_tokens,
                        detail=f"of {corpus}" + (" (its answers' generation not counted)" if config.id else ""))
