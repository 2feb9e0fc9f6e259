"""A run's results as data: the typed record, the run folder, its validation, statistics, the lossless and distributional checks, merge, golden files."""
