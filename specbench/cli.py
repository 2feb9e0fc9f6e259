"""``specbench`` console entry: subcommands are discovered from ``specbench/commands/*.py``.

Each command module defines ``register(subparsers) -> None``, adding a parser whose ``func(args)``
returns the exit code. User errors (bad names, values, files) print one line and exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from specbench.errors import USER_ERRORS, write_error
from specbench.plugins.flag import add_flag_everywhere, load_flag_plugins
from specbench.profiling.wait_policy import apply_default_wait_policy


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line + exit 2, as argparse does, without the usage dump
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specbench", description="Benchmark speculative decoding methods on your hardware.")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subs.required = True
    import specbench.commands as commands

    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"specbench.commands.{mod.name}").register(subs)
    add_flag_everywhere(parser)  # (outside methods and tasks: specbench/plugins/flag.py)
    return parser


def degrade_output() -> None:
    """Characters stdout / stderr cannot encode (a non-UTF-8 locale) print as ``?``, never crash a command."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; returns the process exit code."""
    apply_default_wait_policy()  # before the commands' imports load torch, which reads it once
    degrade_output()
    argv = sys.argv[1:] if argv is None else argv
    try:  # outside plugins first (a command's parser may list the registered names), and discovery's failures
        load_flag_plugins(argv)
        parser = build_parser()
    except USER_ERRORS as e:
        print(f"specbench: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as e:
        print(f"specbench {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full, read-only or restricted disk anywhere: one line naming the file
        err = write_error(e)
        if err is None:
            raise
        print(f"specbench {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted; records written so far are kept (re-run the same command to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
