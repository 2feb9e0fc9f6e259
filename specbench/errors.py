"""Every error the CLI reports as one line with exit code 2, and the tuple of them it catches.

Defined here, at the ground floor, so that any module can raise them without importing the modules
that catch them (the CLI imports every command).

>>> issubclass(DatastoreError, ConfigError), str(UserError("model hash differs"))
(True, 'model hash differs')
>>> str(UnknownNameError("unknown method 'pdl'; did you mean 'pld'?"))
"unknown method 'pdl'; did you mean 'pld'?"
"""
from __future__ import annotations

import contextlib
import errno
import os
from typing import Iterator

__all__ = ["ConfigError", "DatastoreError", "DrafterError", "ModelLoadError", "TaskDataError", "USER_ERRORS", "UnknownNameError",
           "UserError", "WriteError", "write_error", "writing"]


class UserError(Exception):
    """A one-line error caused by the user's input (exit code 2)."""


class ConfigError(ValueError):
    """Invalid configuration value or key (reported as a one-line error by the CLI)."""


class UnknownNameError(KeyError):
    """An unknown registry key; ``str()`` is a one-line message with a "did you mean" hint."""

    def __str__(self) -> str:
        return str(self.args[0])


class TaskDataError(ValueError):
    """A task's data file is missing or malformed (one-line message for the CLI)."""


class DatastoreError(ConfigError):
    """A missing, corrupt or mismatched datastore of any kind (one-line message for the CLI)."""


class DrafterError(UserError):
    """A drafter broke the drafter contract: what its ``propose`` returned (ids outside the vocabulary, a list for
    a tree, a bad parent, ``draft_probs`` of another shape, a negative ``accept_depth``) or raised, in one line.
    The engine says what; the runner, which knows the method, prefixes its label (``run/method_faults.py``)."""


class ModelLoadError(RuntimeError):
    """The model could not be found, loaded or verified (one-line message for the CLI)."""


# why a write failed, in words, for the errors a full, read-only or restricted disk gives
WRITE_ERRNOS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENAMETOOLONG: "file name too long",
    errno.EFBIG: "file too large",
    errno.EISDIR: "a folder is in the way",  # (an output file's name taken by a folder)
    errno.EEXIST: "a file is in the way",  # (an output folder's name taken by a file)
}


class WriteError(UserError):
    """A file could not be written (disk full, read-only, permissions): ``"<reason> while writing <file>"``."""


def write_error(e: OSError, path: str | os.PathLike | None = None) -> WriteError | None:
    """The one-line ``WriteError`` for ``e`` (an OSError of ``WRITE_ERRNOS``), else None.

    >>> str(write_error(OSError(errno.ENOSPC, "No space left on device"), "run/records.jsonl"))
    'no space left on device while writing run/records.jsonl'
    """
    reason = WRITE_ERRNOS.get(e.errno or -1)
    if reason is None:
        return None
    return WriteError(f"{reason} while writing {path or e.filename or 'a file'}")


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Turn a disk-full / read-only / permission error inside the block into a ``WriteError`` naming ``path``."""
    try:
        yield
    except OSError as e:
        err = write_error(e, path)
        if err is None:
            raise
        raise err from None


# what the CLI prints as one line with exit code 2 (besides ``OSError``s that ``write_error`` names)
USER_ERRORS = (UserError, ConfigError, UnknownNameError, FileNotFoundError, NotADirectoryError, ModelLoadError,
               TaskDataError)
