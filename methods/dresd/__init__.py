"""DReSD: dense retrieval speculative decoding (method ``dresd``, datastore kind ``dresd``)."""
from specbench_methods.dresd import cli, method  # noqa: F401  (registration side effects)
