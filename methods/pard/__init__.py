"""``pard``: PARD (parallel draft model adaptation, AMD-AIG-AIMA/PARD): a small draft adapted to guess K tokens in
one forward with mask tokens. See ``README.md`` beside this file for the reference's settings and the deviations."""
from specbench_methods.pard import cost, method  # noqa: F401  (registration side effects)
