"""Drafting methods; each module registers itself with ``@register_method``."""
