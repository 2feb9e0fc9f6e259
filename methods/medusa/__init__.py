"""Medusa-1: extra decoding heads on the target's last hidden state, verified as a sparse tree (method ``medusa``)."""
from specbench_methods.medusa import cost, method, train_cli  # noqa: F401  (registration side effects)
