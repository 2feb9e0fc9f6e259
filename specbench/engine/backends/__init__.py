"""How the target's forward runs, apart from the decode loop that calls it: the contract every backend keeps
(``contract.py``), the backends by name (``registry.py``), the torch backends (``torch_backends.py``) with their
target (``target.py``), KV caches (``kv_cache.py``, ``batch_cache.py``), packed linears (``packed_linear.py``),
skipped layers and the target as its own draft (``layer_skip.py``, ``self_draft.py``), and llama.cpp (``llamacpp/``).

A new backend is one package and one ``registry.register_backend(BackendSpec(...))``; its spec's ``caps`` say
which optional abilities (``contract.BatchedTarget``, ``contract.SkippingTarget``) it has, and they are checked
when its target is made (``contract.checked_target``). Nothing here imports the decode loop.
"""
