"""Draft trees (``draft_tree.py``), on the ground floor: the draft budget (``budget/``) and the engine both read them."""
