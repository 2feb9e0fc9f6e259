"""The ``compiled`` backend: the target's forward with static shapes, compiled by ``torch.compile``.

Every forward has one of a few shapes: a step's rows padded to a bucket (``buckets.py``), a KV cache of fixed
capacity written in place (``static_cache.py``), the attention mask and positions as static-shape inputs
(``target.py``); each shape is compiled once, outside the timed window (``compiler.py``), so a GPU run measures
the GPU rather than Python and kernel launches (on CUDA: CUDA graphs, ``mode="reduce-overhead"``).
"""
