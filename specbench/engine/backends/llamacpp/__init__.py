"""The ``llamacpp`` backend: the engine's target forward on llama.cpp (``backend.py``), the pass's mask as
sequence ids (``seq_layout.py``), the cache that keeps the accepted path (``target.py``), the context (``context.py``)."""
