"""Full content hashes of files (streamed sha256), cached by (path, size, mtime_ns) so each costs once.

The cache is ``$SPECBENCH_CACHE/hashes.json``; an entry counts only while the file's size and
modification time are unchanged, so an edited or overwritten file is hashed again.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); os.environ["SPECBENCH_CACHE"] = d
>>> p = Path(d, "w.bin"); _ = p.write_bytes(b"abc")
>>> file_sha256(p)[:12]
'ba7816bf8f01'
>>> del os.environ["SPECBENCH_CACHE"]
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from specbench.config import cache_dir

CACHE_FILE = "hashes.json"
BLOCK = 1 << 22


def _cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def _read_cache() -> dict[str, dict]:
    try:
        data = json.loads(_cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a missing or damaged cache only costs a re-hash
    return data if isinstance(data, dict) else {}


def _write_cache(data: dict[str, dict]) -> None:
    path = _cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache just means hashing again next time


def stream_sha256(path: str | Path) -> str:
    """Hex sha256 of the whole file, read in blocks (never cached)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of the whole file, from the cache when its size and mtime are unchanged."""
    p = Path(path).resolve()
    st = p.stat()
    key = str(p)
    cache = _read_cache()
    hit = cache.get(key)
    if isinstance(hit, dict) and hit.get("size") == st.st_size and hit.get("mtime_ns") == st.st_mtime_ns:
        return str(hit["sha256"])
    digest = stream_sha256(p)
    cache = _read_cache()  # re-read: another process may have added entries meanwhile
    cache = {k: v for k, v in cache.items() if os.path.exists(k)}  # forget deleted files (test folders)
    cache[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    _write_cache(cache)
    return digest


def files_sha256(paths: list[Path], root: Path) -> str:
    """One hex sha256 over the names (relative to ``root``) and full content hashes of ``paths``."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode())
        h.update(file_sha256(p).encode())
    return h.hexdigest()
