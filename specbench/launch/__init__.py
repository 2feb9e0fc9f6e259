"""Running the shards of one ``specbench run`` across machines: Ray tasks, or a generated Slurm array.

``shards.py`` holds what both share (each shard's command line and folder, and the merge); the Ray
launcher runs shards as tasks (``ray`` is an optional extra), ``slurm.py`` writes sbatch scripts.
"""
