"""The draft budget's room (issue 88): how much of a method's draft a step verifies, on its own floor below the
decode loop: ``budget=auto`` (``auto.py``, with its prices ``step_costs.py``, its draft-or-skip choice
``draft_or_skip.py`` and ``draft_gains.py``, its acceptance counts ``acceptance_stats.py`` and its depth
``draft_depth.py``) and the label names (``names.py``). It reads draft trees from below (``specbench/tree/``) and
never the engine."""
