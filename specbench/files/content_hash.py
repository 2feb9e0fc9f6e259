"""Content hashes of files (streamed sha256) and the check of a file against the hash fixed when it was made.

Every check reads the whole file: a size and modification time say nothing about the bytes (a byte
flipped in place with its mtime restored keeps both), so no hash is ever cached. Reading costs about
1 s per GB on this project's CPU (docs/how-it-measures.md, "Nothing silently wrong"): the embedded model's
538 MB about 0.5 s, a default REST datastore (34-234 MB) a fraction of that.

``verify_sha256`` is what loaders call: it streams the file, compares it with the reference hash and
notes the check in ``LEDGER`` (file, hash, bytes, seconds, what it was checked against), which a run
copies into its manifest, so the manifest records the hashes actually verified. A run started with
``--no-verify`` (``skipping_verification``) trusts the reference hashes instead of reading the files;
the ledger then says ``"skipped"`` for each.

>>> import tempfile
>>> p = Path(tempfile.mkdtemp(), "w.bin"); _ = p.write_bytes(b"abc")
>>> stream_sha256(p)[:12]
'ba7816bf8f01'
>>> verify_sha256(p, "ba7816bf8f01", "the example") == stream_sha256(p)
True
>>> verify_sha256(p, "0" * 64, "the example")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
specbench.files.content_hash.ContentMismatch: ... does not match the example (sha256 ba7816bf8f01... != 000000000000...)
"""
from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

BLOCK = 1 << 22


class ContentMismatch(ValueError):
    """A file's bytes do not hash to the reference (the caller adds what to delete or rebuild)."""


@dataclass(frozen=True)
class Check:
    """One file checked against its reference hash (``seconds`` 0 and ``skipped`` when not read)."""

    path: str
    sha256: str
    bytes: int
    seconds: float
    against: str
    skipped: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


LEDGER: list[Check] = []  # the checks made in this process since the last ``LEDGER.clear()``
_SKIP = [False]


@contextlib.contextmanager
def skipping_verification(skip: bool = True) -> Iterator[None]:
    """Within the block, ``verify_sha256`` trusts the reference hash instead of reading the file."""
    old, _SKIP[0] = _SKIP[0], skip
    try:
        yield
    finally:
        _SKIP[0] = old


def stream_sha256(path: str | Path) -> str:
    """Hex sha256 of the whole file, read in blocks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of the whole file (always read: see the module docstring)."""
    return stream_sha256(path)


def verify_sha256(path: str | Path, expected: str, against: str) -> str:
    """The file's full sha256 after checking that it starts with ``expected`` (a full hash or a prefix of
    at least 12 hex digits); ``ContentMismatch`` names the file and ``against`` otherwise.

    With verification skipped, returns ``expected`` unread (noted in ``LEDGER`` as skipped).
    """
    p = Path(path)
    size = p.stat().st_size
    if _SKIP[0]:
        LEDGER.append(Check(str(p), expected, size, 0.0, against, skipped=True))
        return expected
    t0 = time.perf_counter()
    digest = stream_sha256(p)
    seconds = round(time.perf_counter() - t0, 3)
    if len(expected) < 12 or not digest.startswith(expected.lower()):
        raise ContentMismatch(f"{p}: content does not match {against} (sha256 {digest[:12]}... != {expected[:12]}...)")
    LEDGER.append(Check(str(p), digest, size, seconds, against))
    return digest


def combined_sha256(digests: dict[str, str]) -> str:
    """One hex sha256 over (name, file hash) pairs in name order: the identity of a set of files.

    >>> combined_sha256({"b": "2", "a": "1"}) == combined_sha256({"a": "1", "b": "2"})
    True
    """
    h = hashlib.sha256()
    for name in sorted(digests):
        h.update(name.encode())
        h.update(digests[name].encode())
    return h.hexdigest()


def files_sha256(paths: list[Path], root: Path) -> str:
    """``combined_sha256`` of ``paths`` (named relative to ``root``), each file read in full."""
    return combined_sha256({str(p.relative_to(root)): stream_sha256(p) for p in paths})


def verify_checkpoint(weights: Path, expected: Any, method: str, against: str = "config.json's weights_sha256") -> None:
    """A trained checkpoint's file against the hash its metadata recorded when it was saved (``expected``;
    None for checkpoints saved before hashes were recorded: nothing to check). One-line ``ConfigError``."""
    from specbench.errors import ConfigError

    if expected is None:
        return
    try:
        verify_sha256(weights, str(expected), against)
    except ContentMismatch as e:
        raise ConfigError(f"{method}: {e} (corrupt); retrain it or delete {weights.parent}") from None


def verified_files() -> list[dict[str, Any]]:
    """The checks of this process as JSON rows for a manifest, the latest per file."""
    latest = {c.path: c for c in LEDGER}
    return [c.as_json() for c in latest.values()]
