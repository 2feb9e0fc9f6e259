"""Executing a benchmark: the plan (resolved before the model loads), the runner (warm-up, interleaving, resume), lock, guards, manifest, method construction, sweeps."""
