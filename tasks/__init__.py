"""Task loaders; each module registers itself with ``@register_task``."""
