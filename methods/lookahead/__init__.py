"""``lookahead``: lookahead decoding (Fu et al., ICML 2024), the Jacobi window as auxiliary rows.

Each step runs, in the engine's one forward pass, the verification of the pool's n-grams that follow
the root (a draft tree) and the 2D Jacobi window (auxiliary rows, ``specbench/engine/aux_rows.py``)
whose predictions grow new n-grams. See ``README.md`` beside this file for the reference's defaults and
the remaining deviations.
"""
from specbench_methods.lookahead import method  # noqa: F401  (registration side effects)
