"""SAM-Decoding: suffix automata over the context and a corpus, alone or switching to an auxiliary drafter (method ``samd``)."""
from specbench_methods.samd import cli, method  # noqa: F401  (registration side effects)
