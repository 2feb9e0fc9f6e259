#!/usr/bin/env python
"""Shim for ``specbench run``: ``python run_bench.py --methods ar,pld --tasks all --limit 2``."""
import sys

from specbench.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
