"""Builders of the long-input tasks (``tasks/long_context.py``): the exact-length fitter, the sources read
from data we ship, and one module per entropy tier."""
