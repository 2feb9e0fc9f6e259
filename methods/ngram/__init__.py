"""llama.cpp's n-gram drafters (``--spec-type ngram-*``, ``common/ngram-map.cpp``) as methods on the shared engine,
one registered name per llama.cpp speculation type, so ``ngram-simple`` pairs with the engine row
``engine:ngram-simple``. See ``README.md`` beside this file (options, deviations, the reference commit)."""
from specbench_methods.ngram import cache, map_k, map_k4v, mod, simple  # noqa: F401  (registration side effects)
