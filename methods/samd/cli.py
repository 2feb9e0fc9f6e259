"""``specbench datastore build --kind samd``: build a static automaton once, for ``samd.datastore=DIR``.

Example: ``specbench datastore build --kind samd --corpus sharegpt --out ds/samd-sharegpt --max-tokens 5000000``
then ``python run_bench.py --methods samd --method-opt samd.datastore=ds/samd-sharegpt ...``.
``--set check_test_prompts=false`` skips dropping corpus sequences that contain a benchmark prompt.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench_methods.samd.store import build_static_sam
from specbench.api import (ConfigError, dir_bytes, load_model, parse_corpora, parse_settings, register_datastore_builder,
                           resolve_data_dir)


@register_datastore_builder("samd")
def build_samd_cli(args: Any) -> int:
    sets = parse_settings(args.set)
    unknown = set(sets) - {"check_test_prompts"}
    if unknown:
        raise ConfigError(f"samd datastore: unknown --set key(s) {', '.join(sorted(unknown))} (known: check_test_prompts)")
    check = sets.get("check_test_prompts", "true").lower() not in ("0", "false", "no", "off")
    corpora = parse_corpora(args.corpus, None)
    loaded = load_model(args.model, args.dtype, "cpu")
    out = Path(args.out)
    header = build_static_sam(corpora, out, loaded.tokenizer, loaded.model_id, resolve_data_dir(args.data_dir),
                              args.max_tokens, check)
    print(f"samd static automaton {out}: {header['n_tokens']:,} tokens, {header['n_states']:,} states, "
          f"{header['n_edges']:,} transitions, {dir_bytes(out):,} bytes; test prompts found/dropped sequences: "
          f"{header['contamination_check']['prompts_found']}/{header['contamination_check']['entries_dropped']}")
    return 0
