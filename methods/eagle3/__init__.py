"""EAGLE-3: fused low / middle / high target features, training-time test, a reduced draft vocabulary, and
EAGLE-2's dynamic tree (method ``eagle3``)."""
from specbench_methods.eagle3 import cost, method, train_cli  # noqa: F401  (registration side effects)
