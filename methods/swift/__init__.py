"""``swift``: SWIFT, on-the-fly self-speculative decoding (Xia et al., ICLR 2025): the target drafts with some of its
own layers skipped, and searches which to skip as it decodes. See ``README.md`` beside this file for the reference's
defaults and the deviations."""
from specbench_methods.swift import cost, method  # noqa: F401  (registration side effects)
