"""``recycling``: Token Recycling (Luo et al., 2024): each token's likeliest successors, recycled from every
verification's logits into an adjacency matrix, drafted along a static tree. See ``README.md`` beside this file."""
from specbench_methods.recycling import method  # noqa: F401  (registration side effects)
