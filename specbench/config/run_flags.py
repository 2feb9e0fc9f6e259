"""The flags of ``specbench run``, shared by every command that starts runs (``run``, ``sweep``, ``launch``,
``golden``), and the ``RunConfig`` they make: YAML (``--config``) overlaid with the flags given, then the
preset's values (``--preset``) for whatever neither set.

>>> parse_method_opts(["pld.num_draft=5", "rest@auto.c=16"])
{'pld': {'num_draft': '5'}, 'rest@auto': {'c': '16'}}
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from specbench.catalog import ALL_TASKS
from specbench.config.argtypes import non_negative_int, positive_int
from specbench.config.coerce import from_dict, load_yaml
from specbench.config.context_length import parse_lengths
from specbench.config.run_config import RunConfig
from specbench.engine.backends.registry import backend_choices, backend_names, backend_spec
from specbench.budget.names import RUN_BUDGETS
from specbench.errors import ConfigError
from specbench.config.presets import PRESETS, describe, merge_preset, preset_values
from specbench.models.dtypes import DTYPE_NAMES
from specbench.prompts.task import SPLITS
from specbench.config.method_labels import split_label


def add_run_arguments(parser: argparse.ArgumentParser, omit: tuple[str, ...] = (),
                      helps: dict[str, str] | None = None) -> None:
    """Add the run flags to ``parser``, except those in ``omit`` (a command that sets them itself), with
    ``helps`` replacing the help of some (``{"--out-dir": "..."}``)."""
    class Only:  # the parser, seen through the two arguments
        @staticmethod
        def add_argument(*names: str, **kwargs: Any) -> None:
            if names[0] not in omit:
                parser.add_argument(*names, **{**kwargs, "help": (helps or {}).get(names[0], kwargs.get("help"))})

    p = Only()
    p.add_argument("--methods", help="comma-separated methods (ar is always added as the baseline); default ar,pld")
    p.add_argument("--tasks", help=f"comma-separated tasks, or 'all' = {','.join(ALL_TASKS)} (also: nq); your own "
                   "prompts: jsonl:PATH or hf:DATASET[:CONFIG]:SPLIT:FIELD; default all")
    p.add_argument("--context-length", metavar="1k,2k,...",
                   help="input lengths of the long-input tasks (long_low, long_mixed, long_high): comma-separated "
                        "token counts, k = 1024 (default 1k,2k,4k,8k); a length past the model's context is cut to "
                        "fit it with --max-new-tokens and the draft headroom")
    p.add_argument("--limit", type=positive_int, help="first N questions of each task's split (default: all)")
    p.add_argument("--split", choices=SPLITS, help="questions of each task: eval (default) = all but the last "
                   "ceil(10%%), dev = those last ones (calibration, as `specbench sweep` uses), all")
    p.add_argument("--max-new-tokens", type=positive_int, help="tokens to generate per turn (default 128)")
    p.add_argument("--repeats", type=positive_int, help="timed generations per (method, question, turn) (default 1)")
    p.add_argument("--warmup", type=non_negative_int, help="warm-up generations per method before timing (default 1)")
    p.add_argument("--model", help="HF model id, local model directory, a local .gguf file, or 'embedded' (default: "
                   "embedded SmolLM2-135M)")
    own = {n: [d for d in backend_spec(n).dtypes if d not in DTYPE_NAMES] for n in backend_names()}
    p.add_argument("--dtype", choices=DTYPE_NAMES + tuple(d for ds in own.values() for d in ds),
                   help="model dtype (default float32, TF32 off)" + "".join(
                       f"; {' and '.join(ds)}: the GGUF quantised, on --backend {n}" for n, ds in own.items() if ds))
    p.add_argument("--device", help="auto, cpu or cuda[:N] (default auto)")
    p.add_argument("--backend", choices=backend_choices(),
                   help="how the target's forward runs: " + ", ".join(
                       f"{n} ({backend_spec(n).summary})" for n in backend_names()) + ", auto = the fastest lossless "
                   "one (default)")
    p.add_argument("--threads", type=positive_int, help="CPU threads of the target's forward: llama.cpp's (default: "
                   "the cores this process may use) and, when given, torch's on the other backends")
    p.add_argument("--data-dir", help="data dir (default: $SPECBENCH_DATA_DIR, else ../shared/data if present, else the hub)")
    p.add_argument("--out-dir", help="parent folder of run folders (default results)")
    p.add_argument("--run-name", help="run folder name (default: derived from the configuration; same command = same folder)")
    p.add_argument("--config", help="YAML file with any of these settings (flags override it)")
    p.add_argument("--method-opt", action="append", metavar="METHOD.KEY=VALUE",
                   help="method hyper-parameter, e.g. pld.num_draft=5 (repeatable; see `specbench list`)")
    p.add_argument("--budget", choices=RUN_BUDGETS,
                   help="draft budget of every drafting method: default = verify each draft whole; auto = verify the "
                        "part worth its cost on this machine (labelled NAME@auto); both = each method twice, side by "
                        "side (also per method: --methods rest,rest@auto or --method-opt rest.budget=auto)")
    p.add_argument("--shard", metavar="K/N", help="run only the K-th of N deterministic slices of the questions")
    p.add_argument("--allow-mismatch", action="store_true", help="exit 0 even if a method's output differs from AR")
    p.add_argument("--no-verify", action="store_true", help="trust the recorded hashes of the model weights, "
                   "datastores and heads instead of reading them in full (about 1 s per GB; noted in the manifest)")
    p.add_argument("--tie-threshold", type=float, help="relative AR top-2 logit margin below which a divergence is a numerical tie (default 1e-4 in float32, 2e-2 in float16/bfloat16)")
    p.add_argument("--temperature", type=float, help="0 = greedy, checked token for token against AR (default); "
                   "> 0 = speculative sampling, checked in distribution")
    p.add_argument("--top-p", type=float, help="sampling: keep the smallest set of tokens reaching this probability (default 1)")
    p.add_argument("--top-k", type=int, help="sampling: keep the K most likely tokens (default 0 = all)")
    p.add_argument("--seed", type=int, help="sampling: run seed; each generation's seed derives from it and its "
                   "question/turn/repeat (default 0)")
    p.add_argument("--chat-template", help="how turns become the prompt: auto (default: the tokenizer's own, else a "
                   "known family's: Vicuna, Llama-2 chat; else raw with a warning), model, vicuna (FastChat vicuna_v1.1, "
                   "as Spec-Bench), llama-2, raw, or a Jinja template file")
    p.add_argument("--preset", choices=PRESETS, help="a named protocol filling every setting not given explicitly: "
                   + describe().replace("%", "%%"))
    p.add_argument("--batch-size", metavar="B[,B...]", help="sequences of a task decoded together, each with its own "
                   "draft, verified in one forward (default 1); a list (1,2,4,8) runs every size side by side, each "
                   "method's speedup taken against AR at the same size")
    p.add_argument("--refill", action="store_true", help="with --batch-size: a finished sequence's slot takes the "
                   "next question at once (continuous batching) instead of waiting for its batch to finish")
    p.add_argument("--engine", help="an engine under test, measured as a subject: llama-server (started by specbench, "
                   "one server per setting) or openai:http://HOST:PORT (a vLLM / SGLang / llama.cpp server you started, "
                   "speculation off); its rows are --methods engine:SETTING, each against the same engine without "
                   "speculation (engine:off)")
    p.add_argument("--engine-opt", action="append", metavar="KEY=VALUE",
                   help="engine option (repeatable): ready_timeout_s (default 300), request_timeout_s (600: the most "
                        "seconds one request may take, from sending it to the end of its answer), flags "
                        "(extra llama-server flags for every setting), model (a GGUF file llama-server runs instead of "
                        "the run's model converted)")
    p.add_argument("--concurrency", metavar="C[,C...]", help="requests in flight at once at the engine (default 1); "
                   "a list (1,4,16) measures every level, each engine row against engine:off at the same level")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def parse_method_opts(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["pld.num_draft=5", "rest@auto.c=16"]`` -> ``{"pld": {"num_draft": "5"}, "rest@auto": {"c": "16"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items or []:
        lhs, sep, value = item.partition("=")
        method, dot, key = lhs.partition(".")
        if not sep or not dot or not method or not key:
            raise ConfigError(f"--method-opt expects METHOD.KEY=VALUE, got {item!r}")
        out.setdefault(method.strip(), {})[key.strip()] = value.strip()
    return out


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """YAML (if any) overlaid with the flags given on the command line."""
    values: dict[str, Any] = load_yaml(args.config) if args.config else {}
    for name in ("methods", "tasks"):
        if isinstance(values.get(name), str):
            values[name] = values[name].split(",")
    if values.get("context_length") is not None:  # YAML: "1k,2k" or a list such as [1k, 2048]
        values["context_length"] = parse_lengths(values["context_length"])
    flags = {
        # (an empty --methods '' is a list of nothing, refused, not the default)
        "methods": args.methods.split(",") if getattr(args, "methods", None) is not None else None,
        "tasks": args.tasks.split(",") if args.tasks is not None else None,
        "limit": args.limit,
        "split": args.split,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "model": args.model,
        "dtype": args.dtype,
        "device": args.device,
        "backend": args.backend,
        "threads": getattr(args, "threads", None),
        "data_dir": args.data_dir,
        "out_dir": args.out_dir,
        "run_name": getattr(args, "run_name", None),  # (commands such as sweep have no --methods/--run-name)
        "tie_threshold": args.tie_threshold,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "top_k": args.top_k,
        "seed": args.seed,
        "budget": args.budget,
        "chat_template": getattr(args, "chat_template", None),
        "context_length": parse_lengths(args.context_length) if getattr(args, "context_length", None) is not None else None,
        "batch_size": args.batch_size.split(",") if getattr(args, "batch_size", None) is not None else None,
        "engine": getattr(args, "engine", None),
        "concurrency": args.concurrency.split(",") if getattr(args, "concurrency", None) is not None else None,
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    if args.allow_mismatch:
        values["allow_mismatch"] = True
    if getattr(args, "no_verify", False):
        values["verify"] = False
    if getattr(args, "refill", False):
        values["refill"] = True
    opts = values.get("method_options") or {}
    for method, kv in parse_method_opts(args.method_opt).items():
        opts.setdefault(method, {}).update(kv)
    values["method_options"] = opts
    engine_opts = dict(values.get("engine_options") or {})
    for item in getattr(args, "engine_opt", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--engine-opt expects KEY=VALUE, got {item!r}")
        engine_opts[key.strip()] = value.strip()
    values["engine_options"] = engine_opts
    preset = getattr(args, "preset", None) or values.get("preset")
    if preset:  # the preset fills what neither the YAML nor a flag set
        values = merge_preset(_preset_for(preset, values), values)
    return from_dict(RunConfig, values)


def _preset_for(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """The preset's values for this model and device, its method options kept to the run's methods."""
    model, device = str(values.get("model") or RunConfig.model), str(values.get("device") or RunConfig.device)
    preset = preset_values(name, model, device)
    methods = [str(m).strip() for m in values.get("methods") or RunConfig.methods]
    names = set(methods) | {split_label(m)[0] for m in methods}
    preset["method_options"] = {m: o for m, o in preset["method_options"].items() if m in names}
    return preset


def mismatch_exit_code(mismatches: int, allowed: bool, tag: str, where: str) -> int:
    """1 with a note on stderr when records differ from AR's output and ``--allow-mismatch`` is off, else 0."""
    if mismatches and not allowed:
        print(f"{tag} {mismatches} record(s) differ from AR output (MISMATCH); see {where}. "
              "Use --allow-mismatch to exit 0 anyway.", file=sys.stderr)
        return 1
    return 0
