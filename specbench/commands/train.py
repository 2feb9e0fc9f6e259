"""``specbench train METHOD ...``: train a learned drafter; methods contribute their trainer with
``register_trainer`` (``methods/redrafter/train_cli.py`` adds ``specbench train redrafter``)."""
from __future__ import annotations

import argparse

from specbench.plugins.registry import TRAINERS


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("train", help="train a learned drafter (eagle, eagle3, hydra, medusa, redrafter, the sps draft): --recipe quick|full, --curve")
    kinds = p.add_subparsers(dest="kind", metavar="METHOD", parser_class=type(p))
    kinds.required = True
    for name in TRAINERS.names():
        trainer = TRAINERS.get(name)
        tp = kinds.add_parser(name, help=trainer.help)
        trainer.add_arguments(tp)
        tp.set_defaults(func=trainer.run)
