"""``specbench check-method NAME``: whether a method keeps the drafter contract, one line per property.

    specbench check-method pld
    specbench check-method rest --method-opt corpus=check-method-echo --method-opt k=8
    specbench check-method mine --plugins ./my_method.py

Runs the properties of ``specbench/conformance/`` on tiny random models (``PASS``/``FAIL``/``SKIP name: why``),
then one summary line with the elapsed time; exit 1 on any FAIL, 2 on bad input (an unknown method, an option it
does not have, a method that cannot be built on the tiny models).
"""
from __future__ import annotations

import argparse
import sys
import time

from specbench.config.argtypes import int_at_least
from specbench.errors import ConfigError

ECHO = "check-method-echo"  # (``conformance/tiny.py``'s corpus: each prompt with a tiny target's own answer)
# what the built-in methods need to build, and draft, on the tiny models: used when no --method-opt is given
TINY_DEFAULTS: dict[str, dict[str, str]] = {
    "rest": {"corpus": ECHO}, "crest": {"corpus": ECHO}, "samd": {"corpus": ECHO},
    "dresd": {"corpus": ECHO, "max_tokens": "3000", "k": "8", "nprobe": "4"},
    **{m: {"checkpoint": "random"} for m in ("eagle", "eagle3", "medusa", "hydra", "redrafter", "dflash", "ddtree")},
    # llama.cpp's n-gram sizes rarely match on the tiny models' short texts
    "ngram-simple": {"size_n": "1", "size_m": "8"}, "ngram-map-k": {"size_n": "1", "size_m": "4"},
    "ngram-map-k4v": {"size_n": "1", "size_m": "4"}, "ngram-mod": {"n_match": "1", "n_max": "4", "n_min": "1"},
}
EPILOG = ("without --method-opt, a built-in method gets what it needs on the tiny models (datastores over a corpus "
          "of their own answers, untrained heads):\n" + "\n".join(
              f"  {name:14s} {' '.join(f'{k}={v}' for k, v in opts.items())}" for name, opts in TINY_DEFAULTS.items())
          + "\n  sps, pard      draft_model=DIR: a model over the tiny targets' 64-symbol vocabulary (no default)"
          + "\n  others         none\nyour own method: whatever options let it build on a 2-layer random target "
          "over 64 characters (hidden size 32, no download): a random head, the corpus " + ECHO + ".")


def parse_options(name: str, items: list[str] | None) -> dict[str, str]:
    """``["k=8", "rest.c=16"]`` -> ``{"k": "8", "c": "16"}`` (a ``NAME.`` prefix of the checked method is allowed).

    >>> parse_options("rest", ["corpus=x", "rest.k=8"])
    {'corpus': 'x', 'k': '8'}
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().removeprefix(f"{name}.")
        if not sep or not key or "." in key:
            raise ConfigError(f"--method-opt expects KEY=VALUE (an option of {name}), got {item!r}")
        out[key] = value.strip()
    return out


def check_method_command(args: argparse.Namespace) -> int:
    from specbench.conformance.suite import check_method
    from specbench.conformance.tiny import FAMILIES
    from specbench.conformance.world import CheckLimits
    from specbench.plugins.registry import METHODS
    from specbench.config.method_labels import split_label

    METHODS.get(split_label(args.name)[0])  # an unknown name: one line with a suggestion
    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise ConfigError(f"--families takes some of {', '.join(FAMILIES)}, got {args.families!r}")
    limits = CheckLimits(families=families, max_new=args.max_new_tokens, samples=args.samples)
    options = parse_options(args.name, args.method_opt)
    base = split_label(args.name)[0]
    if not args.method_opt and base in TINY_DEFAULTS:
        options = dict(TINY_DEFAULTS[base])
        print(f"({args.name} on the tiny models: {' '.join(f'{k}={v}' for k, v in options.items())})", file=sys.stderr)
    start = time.perf_counter()
    outcomes = check_method(args.name, options, limits,
                            emit=lambda outcome: print(outcome, flush=True))
    count = {s: sum(o.status == s for o in outcomes) for s in ("PASS", "FAIL", "SKIP")}
    print(f"check-method {args.name}: {count['PASS']} passed, {count['FAIL']} failed, {count['SKIP']} skipped "
          f"in {time.perf_counter() - start:.1f} s")
    return 1 if count["FAIL"] else 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("check-method", help="check that a method keeps the drafter contract (exact, batched, "
                                             "sampled, repeats, resume, declared capabilities, read-only inputs)",
                        description="Runs the drafter contract's properties on one method, built on tiny random "
                                    "models of four families, and prints PASS/FAIL/SKIP name: why per property "
                                    "(exit 1 on any FAIL). About a minute on 2 cores for a model-free method.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="a registered method or label (a plugin's with --plugins)")
    p.add_argument("--method-opt", action="append", metavar="KEY=VALUE",
                   help="an option of the method (repeatable; replaces the built-in defaults below)")
    p.add_argument("--families", default="llama,qwen2,gpt2,gpt-neox",
                   help="tiny model families to check on (default: all four)")
    p.add_argument("--max-new-tokens", type=int_at_least(8), default=32, help="tokens per greedy generation")
    p.add_argument("--samples", type=int_at_least(50), default=600,
                   help="sampled generations of the distributional check (default 600)")
    p.set_defaults(func=check_method_command)
