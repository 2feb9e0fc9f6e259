"""The draft budget's labels: what ``--budget`` and a method label's ``budget=`` accept (verify each draft whole,
its paper's setting, or the part worth its cost here; an integer K, every draft cut to depth K, is parsed by
``config/method_labels.budget_of``), read by ``config/``,
``results/`` and ``reports/`` without importing the decode loop's budget.

>>> BUDGETS
('default', 'auto')
>>> RUN_BUDGETS  # (--budget both: each drafting method run both ways, side by side)
('default', 'auto', 'both')
"""
from __future__ import annotations

DEFAULT_BUDGET = "default"  # the method's own draft, as its paper verifies it
AUTO = "auto"  # draft or run plain, and how deep, priced on this machine (``budget/auto.py``'s DraftBudget)
BUDGETS = (DEFAULT_BUDGET, AUTO)
RUN_BUDGETS = (*BUDGETS, "both")  # --budget: both = each drafting method run both ways, side by side
