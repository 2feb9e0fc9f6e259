"""dflash's draft model, declared to device profiles (``specbench.api.register_draft_cost``): its shape is its config
without the training-only fields; a profile times the drafter with random weights (``checkpoint=random``, the quick
recipe's layers and block) at each draft depth."""
from __future__ import annotations

from specbench.api import config_shape, register_draft_cost

register_draft_cost("dflash", config_shape(), random_options={"checkpoint": "random"})
