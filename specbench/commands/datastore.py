"""``specbench datastore <action>``: datastore tooling contributed by methods (build, compact, ...).

Methods register actions with ``register_datastore_action(DatastoreAction(...))``; ``build`` is shared
and dispatches on ``--kind`` to a registered builder.
"""
from __future__ import annotations

import argparse

from specbench.registry import DATASTORE_ACTIONS


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("datastore", help="build and manage retrieval datastores")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    for name in DATASTORE_ACTIONS.names():
        action = DATASTORE_ACTIONS.get(name)
        ap = actions.add_parser(name, help=action.help)
        action.add_arguments(ap)
        ap.set_defaults(func=action.run)
