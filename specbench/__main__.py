"""``python -m specbench COMMAND ...``: the same entry point as the ``specbench`` console script."""
import sys

from specbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
