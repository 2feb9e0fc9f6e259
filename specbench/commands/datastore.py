"""``specbench datastore <action>``: ``build`` (dispatching on ``--kind``) plus actions methods register.

Builders register with ``@register_datastore_builder("rest")`` and receive the parsed args; method-
specific settings come as repeated ``--set KEY=VALUE``. Other actions (e.g. ``compact``) register a
``DatastoreAction``.
"""
from __future__ import annotations

import argparse

from specbench.config.argtypes import positive_int
from specbench.models.dtypes import DTYPE_NAMES
from specbench.plugins.registry import DATASTORE_ACTIONS, DATASTORE_BUILDERS


def _run_build(args: argparse.Namespace) -> int:
    return DATASTORE_BUILDERS.get(args.kind)(args)


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("datastore", help="build and manage retrieval datastores")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    b = actions.add_parser("build", help="build a datastore of a given kind from registered corpora")
    b.add_argument("--kind", required=True, help=f"datastore kind: {', '.join(DATASTORE_BUILDERS.names())}")
    b.add_argument("--corpus", required=True, help="comma-separated corpus names (see specbench corpora)")
    b.add_argument("--out", required=True, help="output directory")
    b.add_argument("--max-tokens", type=positive_int, default=None, help="stop after this many corpus tokens")
    b.add_argument("--id", action="store_true", help="(dresd) index the target's own greedy answers")
    b.add_argument("--model", default="embedded", help="target model (HF id, directory or 'embedded')")
    b.add_argument("--dtype", default="float32", choices=DTYPE_NAMES)
    b.add_argument("--device", default="auto")
    b.add_argument("--data-dir", default=None, help="data dir (default: $SPECBENCH_DATA_DIR or ../shared/data)")
    b.add_argument("--set", action="append", metavar="KEY=VALUE", help="kind-specific setting (repeatable)")
    b.set_defaults(func=_run_build)
    for name in DATASTORE_ACTIONS.names():
        action = DATASTORE_ACTIONS.get(name)
        ap = actions.add_parser(name, help=action.help)
        action.add_arguments(ap)
        ap.set_defaults(func=action.run)
