"""``specbench golden record|verify``: store AR reference outputs, then check methods reproduce them exactly.

    specbench golden record --methods all --tasks mt_bench,humaneval,gsm8k --limit 2 --out golden.json
    specbench golden verify golden.json            # exit 1 if any method's output differs
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specbench.errors import UserError
from specbench.errors import ConfigError
from specbench.paths import cache_dir, resolve_data_dir
from specbench.models.dtypes import DTYPE_NAMES


def _methods(text: str | None, default: list[str]) -> list[str]:
    from specbench.plugins.registry import METHODS

    if not text:
        return default
    names = METHODS.names() if text == "all" else [m.strip() for m in text.split(",") if m.strip()]
    for m in names:
        METHODS.get(m)  # unknown names: one-line error with a suggestion
    return names


def _load(args: argparse.Namespace):
    from specbench.models.loading import ModelLoadError, load_model

    try:
        return load_model(args.model, args.dtype, args.device)
    except ModelLoadError as e:
        raise ConfigError(str(e)) from None


def _data_dir(args: argparse.Namespace) -> Path | None:
    return resolve_data_dir(args.data_dir)


def record_command(args: argparse.Namespace) -> int:
    from specbench.config.run_flags import parse_method_opts
    from specbench.engine.loop import Engine
    from specbench.run.golden import make_golden, record_outputs, save_golden, task_prompt_builders
    from specbench.models.loading import stop_token_ids
    from specbench.plugins.registry import TASKS

    methods = _methods(args.methods, ["all"]) if args.methods != "all" else ["all"]
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    for t in tasks:
        TASKS.get(t)
    lm = _load(args)
    stops = stop_token_ids(lm.tokenizer, lm.model)
    engine = Engine(lm.model, stops)
    data_dir = _data_dir(args)
    entries = record_outputs(engine, args.max_new_tokens,
                             task_turns=lambda: task_prompt_builders(lm.tokenizer, tasks, args.limit, data_dir))
    golden = make_golden(
        entries,
        model={"name": args.model, "id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype},
        config={"tasks": tasks, "limit": args.limit, "max_new_tokens": args.max_new_tokens, "methods": methods,
                "method_options": parse_method_opts(args.method_opt)},
        stop_ids=stops,
        task_versions={t: TASKS.get(t).version for t in tasks},
        device=lm.device,
    )
    save_golden(golden, args.out)
    print(f"wrote {args.out}: {len(entries)} AR outputs ({sum(len(e['output_ids']) for e in entries)} tokens), "
          f"model hash {lm.model_hash}")
    return 0


def verify_command(args: argparse.Namespace) -> int:
    from specbench.config.run_flags import parse_method_opts
    from specbench.run.golden import device_note, load_golden, verify_golden
    from specbench.run.method_env import MethodEnv
    from specbench.plugins.registry import METHODS

    golden = load_golden(args.file)
    cfg = golden["config"]
    stored = cfg.get("methods") or ["all"]
    methods = _methods(args.methods, METHODS.names() if stored == ["all"] else list(stored))
    opts = {m: dict(kv) for m, kv in (cfg.get("method_options") or {}).items()}
    for m, kv in parse_method_opts(args.method_opt).items():
        opts.setdefault(m, {}).update(kv)
    if args.model is None:
        args.model = golden["model"].get("name", "embedded")
    if args.dtype is None:
        args.dtype = golden["model"].get("dtype", "float32")
    lm = _load(args)
    if lm.model_hash != golden["model"].get("hash") and not args.force:
        raise UserError(f"model hash {lm.model_hash} != golden {golden['model'].get('hash')} (use --force)")
    data_dir = _data_dir(args)
    note = device_note(golden, lm.device)
    if note:
        print(f"note: {note}", file=sys.stderr)

    def env_for(task: str) -> MethodEnv:
        return MethodEnv.for_task(lm, data_dir, cache_dir(), task)

    result = verify_golden(golden, lm.model, env_for, methods, opts)
    for m in methods:
        n_fail = len(result.failures.get(m, []))
        print(f"{m}: {result.passed[m]}/{result.passed[m] + n_fail} golden outputs reproduced "
              f"({result.accepted[m]}/{result.drafted[m]} draft tokens accepted)" + ("" if not n_fail else " -- FAIL"))
        for line in result.failures.get(m, []):
            print(f"  {line}")
    print("OK: every method reproduces the golden AR tokens" if result.ok else "FAIL: lossless regression", file=sys.stderr)
    return 0 if result.ok else 1


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("golden", help="record AR reference outputs / verify methods reproduce them exactly")
    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    acts.required = True

    def common(q: argparse.ArgumentParser, model_default: str | None, dtype_default: str | None) -> None:
        q.add_argument("--methods", help="comma-separated methods or 'all' (default: all registered)")
        q.add_argument("--method-opt", action="append", metavar="METHOD.KEY=VALUE", help="method option (repeatable)")
        q.add_argument("--model", default=model_default, help="HF id, directory or 'embedded'")
        q.add_argument("--dtype", default=dtype_default, choices=DTYPE_NAMES)
        q.add_argument("--device", default="cpu")
        q.add_argument("--data-dir", help="data dir (default: $SPECBENCH_DATA_DIR or ../shared/data)")

    r = acts.add_parser("record", help="store AR outputs (token ids + model hash + config) in a golden JSON file")
    common(r, "embedded", "float32")
    r.add_argument("--tasks", default="mt_bench,humaneval,gsm8k", help="comma-separated tasks")
    r.add_argument("--limit", type=int, default=2, help="first N questions of each task")
    r.add_argument("--max-new-tokens", type=int, default=64)
    r.add_argument("--out", required=True, help="golden JSON file to write")
    r.set_defaults(func=record_command)

    v = acts.add_parser("verify", help="re-run methods on the golden prompts; exit 1 unless all reproduce AR exactly")
    v.add_argument("file", help="golden JSON file from `specbench golden record`")
    common(v, None, None)
    v.add_argument("--force", action="store_true", help="verify even if the model hash differs from the golden one")
    v.set_defaults(func=verify_command)
