"""The ``--plugins PATH_OR_MODULE`` flag of every command: outside methods and tasks, loaded before the command's
parser is built (a parser may list the registered names) and before any registry is read.

The flag is repeatable; each value is a ``.py`` file, a folder, or a module name (``outside.py``). Every
subcommand, nested ones included, accepts it, so ``--help`` documents it where it is used.

>>> plugin_values(["run", "--plugins", "a.py", "--methods", "x", "--plugins=pkg.mod"])
['a.py', 'pkg.mod']
>>> plugin_values(["run", "--plugins"])  # (argparse then says the value is missing)
[]
"""
from __future__ import annotations

import argparse
from typing import Sequence

from specbench.plugins.outside import PluginOrigin, PluginSpec, load_plugin

FLAG = "--plugins"
HELP = ("load an outside method or task first: a .py file, a folder, or a module name (repeatable); installed "
        "plugins with a specbench.methods / specbench.tasks entry point load without it")


def plugin_values(argv: Sequence[str]) -> list[str]:
    """The values given to ``--plugins`` in ``argv``, in order."""
    found: list[str] = []
    for i, arg in enumerate(argv):
        if arg == FLAG and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith(FLAG + "="):
            found.append(arg.split("=", 1)[1])
    return found


def load_flag_plugins(argv: Sequence[str]) -> list[PluginOrigin]:
    """Run discovery (built-ins and installed entry points), then load each ``--plugins`` value in order."""
    from specbench.plugins.discovery import load_plugins

    values = list(dict.fromkeys(plugin_values(argv)))
    if values:  # (without the flag, discovery waits for the first registry read, as it always has)
        load_plugins()
    return [load_plugin(PluginSpec(value)) for value in values]


def add_flag_everywhere(parser: argparse.ArgumentParser) -> None:
    """Add ``--plugins`` to every subcommand's parser, nested ones included (its value was read already)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # (an alias maps to the same parser)
                add_flag_everywhere(sub)
    if FLAG not in parser._option_string_actions:
        parser.add_argument(FLAG, action="append", default=[], metavar="PATH_OR_MODULE", help=HELP)
