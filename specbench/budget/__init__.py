"""The draft budget's room (issue 88): how much of a method's draft a step verifies, on its own floor below the
decode loop. It holds the budget's label names today (``names.py``); the budget itself moves in from ``engine/``
in later steps."""
