"""The steps of ``scripts/gpu_check.py``, one module each: exactness of every method, the CLI end to end,
the cost profile of a 7B-shaped model, and the summary they are written to."""
