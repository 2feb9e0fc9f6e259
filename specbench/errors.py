"""Errors the CLI reports as one line with exit code 2 (defined here so commands and plugins need not
import the CLI, which imports them).

>>> issubclass(DatastoreError, ConfigError), str(UserError("model hash differs"))
(True, 'model hash differs')
"""
from __future__ import annotations

from specbench.config import ConfigError

__all__ = ["ConfigError", "DatastoreError", "UserError"]


class UserError(Exception):
    """A one-line error caused by the user's input (exit code 2)."""


class DatastoreError(ConfigError):
    """A missing, corrupt or mismatched datastore of any kind (one-line message for the CLI)."""
