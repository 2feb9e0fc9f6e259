"""EAGLE-1/2: a one-layer draft over the target's features, drafting a static or dynamic tree (method ``eagle``)."""
from specbench_methods.eagle import cost, method, train_cli  # noqa: F401  (registration side effects)
