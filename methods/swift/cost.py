"""SWIFT drafts with the target's own layers skipped, declared to device profiles
(``specbench.api.register_draft_cost``, kind ``target``): its drafting seconds follow the target's T(1) from one
machine to another, so a profile times nothing of its own for it."""
from __future__ import annotations

from specbench.api import register_draft_cost

register_draft_cost("swift", lambda config: {}, kind="target")
