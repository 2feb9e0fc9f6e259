"""Hydra: sequentially dependent draft heads (Hydra++ by default), verified as the reference's tree (method ``hydra``)."""
from specbench_methods.hydra import cost, method, train_cli  # noqa: F401  (registration side effects)
