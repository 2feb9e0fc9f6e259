"""``suffix``: SuffixDecoding (Oliaro et al., NeurIPS 2025): speculation trees grown by continuation frequency
from a suffix index over the prompt and one over the run's earlier answers. See ``README.md`` beside this file."""
from specbench_methods.suffix import method  # noqa: F401  (registration side effects)
