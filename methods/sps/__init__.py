"""SpS: speculative decoding with a smaller draft model of the same tokenizer (method ``sps``)."""
from specbench_methods.sps import cost, method, train_cli  # noqa: F401  (registration side effects)
